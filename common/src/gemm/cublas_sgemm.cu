#include <string>

#include "tut/core/cublas.cuh"
#include "tut/gemm/harness.cuh"

namespace tut {

const char* cublas_sgemm_name() { return "cuBLAS FP32 (no TF32)"; }

namespace {

void cublas_gemm(const GemmProblem& p, const float* A, const float* B, float* C, cublasComputeType_t compute,
                 cudaStream_t stream) {
  cublasHandle_t h = cublas_handle();
  TUT_CUBLAS_CHECK(cublasSetStream(h, stream));
  // cuBLAS is column-major. A row-major (m x n) C is a column-major (n x m) C^T, and
  // C^T = alpha * B^T * A^T + beta * C^T: pass B first, then A, with n and m swapped.
  TUT_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k, &p.alpha, B, CUDA_R_32F, p.ldb, A,
                                CUDA_R_32F, p.lda, &p.beta, C, CUDA_R_32F, p.ldc, compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

void cublas_sgemm(const GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream) {
  cublas_gemm(p, A, B, C, CUBLAS_COMPUTE_32F, stream);
}

const char* cublas_tf32_name() { return "cuBLAS TF32 (CUBLAS_COMPUTE_32F_FAST_TF32)"; }

// FP32 in and out; the tensor cores round A and B to TF32 and sum in FP32.
void cublas_tf32_gemm(const GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream) {
  cublas_gemm(p, A, B, C, CUBLAS_COMPUTE_32F_FAST_TF32, stream);
}

}  // namespace tut
