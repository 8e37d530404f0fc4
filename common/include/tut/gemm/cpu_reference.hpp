// The CPU reference: the GEMM in float64, the plain triple loop. Slow, simple and obviously
// right; used to check cuBLAS on small problems and by the unit tests.
#pragma once

#include "tut/gemm/problem.hpp"

namespace tut {

// out[i*ldc + j] = alpha * sum_k A[i*lda + k] * B[k*ldb + j] + beta * C_in[i*ldc + j], in double.
// With beta == 0, C_in is not read (it may be null), as in BLAS.
void gemm_cpu_f64(const GemmProblem& p, const float* A, const float* B, const float* C_in, double* out);

}  // namespace tut
