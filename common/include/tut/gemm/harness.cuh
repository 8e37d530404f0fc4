// The GEMM harness: everything a Part I chapter needs that is not its own kernel. A chapter's
// main.cu is one call:
//
//   int main(int argc, char** argv) {
//     return tut::gemm_main(argc, argv, {TUT_STEP_NAME, TUT_STEP_TITLE, my_launcher});
//   }
//
// (TUT_STEP_NAME and TUT_STEP_TITLE come from the chapter's tut_add_chapter line in CMake.)
#pragma once

#include <cuda_runtime.h>

#include "tut/core/check.cuh"
#include "tut/gemm/problem.hpp"

namespace tut {

// Computes C = alpha*A*B + beta*C for the row-major problem p on `stream`. A, B and C are device
// pointers. With beta == 0, C must not be read (BLAS semantics: it may hold NaN). A launcher checks
// its launches with TUT_CHECK_LAUNCH().
using GemmLauncher = void (*)(const GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream);

struct GemmStep {
  const char* name;   // "01_naive_gemm"
  const char* title;  // "naive"
  GemmLauncher launch;
};

// Parses the flags, checks and times the step against cuBLAS, prints the report, appends the CSV
// row; or runs the self-test. Returns the process exit code (see --help).
int gemm_main(int argc, char** argv, const GemmStep& step);

// The baseline: cuBLAS SGEMM with CUBLAS_COMPUTE_32F (true FP32, no TF32), on a process-wide handle.
void cublas_sgemm(const GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream);
const char* cublas_sgemm_name();  // "cuBLAS FP32 (no TF32)"

}  // namespace tut
