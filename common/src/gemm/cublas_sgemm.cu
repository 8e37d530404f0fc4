#include <cublas_v2.h>

#include <memory>
#include <string>

#include "tut/gemm/harness.cuh"

namespace tut {

namespace {

void cublas_check(cublasStatus_t st, const char* expr, const char* file, int line) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    throw CudaError(std::string("cuBLAS error ") + cublasGetStatusName(st) + " (" + cublasGetStatusString(st) +
                    ") in " + expr + " at " + file + ":" + std::to_string(line));
  }
}
#define TUT_CUBLAS_CHECK(expr) cublas_check((expr), #expr, __FILE__, __LINE__)

struct HandleDeleter {
  void operator()(cublasContext* h) const { cublasDestroy(h); }
};

cublasHandle_t handle() {
  static std::unique_ptr<cublasContext, HandleDeleter> h = [] {
    cublasHandle_t raw = nullptr;
    TUT_CUBLAS_CHECK(cublasCreate(&raw));
    // Default math mode: with CUBLAS_COMPUTE_32F below, no TF32 or other reduced precision.
    TUT_CUBLAS_CHECK(cublasSetMathMode(raw, CUBLAS_DEFAULT_MATH));
    return std::unique_ptr<cublasContext, HandleDeleter>(raw);
  }();
  return h.get();
}

}  // namespace

const char* cublas_sgemm_name() { return "cuBLAS FP32 (no TF32)"; }

void cublas_sgemm(const GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream) {
  cublasHandle_t h = handle();
  TUT_CUBLAS_CHECK(cublasSetStream(h, stream));
  // cuBLAS is column-major. A row-major (m x n) C is a column-major (n x m) C^T, and
  // C^T = alpha * B^T * A^T + beta * C^T: pass B first, then A, with n and m swapped.
  TUT_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, p.n, p.m, p.k, &p.alpha, B, CUDA_R_32F, p.ldb, A,
                                CUDA_R_32F, p.lda, &p.beta, C, CUDA_R_32F, p.ldc, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
}

}  // namespace tut
