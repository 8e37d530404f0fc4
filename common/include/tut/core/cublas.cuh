// cuBLAS for every family: one handle per process, every call checked, and the row-major GEMMs the
// families call (GEMM's baselines, conv's im2col route, GCN's X W). A failure throws tut::CudaError
// with the call, file and line (the harness exits with code 4).
#pragma once

#include <cublas_v2.h>

#include <string>

#include "tut/core/check.cuh"
#include "tut/core/verify.hpp"  // Math

namespace tut {

void cublas_check(cublasStatus_t st, const char* expr, const char* file, int line);

// The process's handle, in the default math mode (no TF32 or other reduced precision unless a
// call's compute type asks for it). The caller sets its stream before each call.
cublasHandle_t cublas_handle();

// "cuBLAS 13.0.2"
std::string cublas_version_text();

// C = alpha * A * B + beta * C for row-major matrices on `stream`: A is (m, k) with leading dimension
// lda >= k, B (k, n) with ldb >= n, C (m, n) with ldc >= n; device pointers. With beta == 0, C is
// not read (BLAS semantics). FP32 in and out; `math` picks the compute type: Math::Tf32 is
// CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores, A and B rounded to TF32), any other CUBLAS_COMPUTE_32F
// (true FP32, no TF32).
void cublas_gemm_f32(int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                     float* C, int ldc, Math math, cudaStream_t stream);
// The float64 version (cublasDgemm), for Part III. (Named, not overloaded, like fill_uniform_f64.)
void cublas_gemm_f64(int m, int n, int k, double alpha, const double* A, int lda, const double* B, int ldb,
                     double beta, double* C, int ldc, cudaStream_t stream);

}  // namespace tut

#define TUT_CUBLAS_CHECK(expr) ::tut::cublas_check((expr), #expr, __FILE__, __LINE__)
