#include "tut/core/cublas.cuh"

#include <memory>

namespace tut {

void cublas_check(cublasStatus_t st, const char* expr, const char* file, int line) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    throw CudaError(std::string("cuBLAS error ") + cublasGetStatusName(st) + " (" + cublasGetStatusString(st) +
                    ") in " + expr + " at " + file + ":" + std::to_string(line));
  }
}

namespace {
struct HandleDeleter {
  void operator()(cublasContext* h) const { cublasDestroy(h); }
};
}  // namespace

cublasHandle_t cublas_handle() {
  static std::unique_ptr<cublasContext, HandleDeleter> h = [] {
    cublasHandle_t raw = nullptr;
    TUT_CUBLAS_CHECK(cublasCreate(&raw));
    TUT_CUBLAS_CHECK(cublasSetMathMode(raw, CUBLAS_DEFAULT_MATH));
    return std::unique_ptr<cublasContext, HandleDeleter>(raw);
  }();
  return h.get();
}

std::string cublas_version_text() {
  int v = 0;
  TUT_CUBLAS_CHECK(cublasGetVersion(cublas_handle(), &v));  // major*10000 + minor*100 + patch
  return "cuBLAS " + std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

// cuBLAS is column-major. A row-major (m x n) C is a column-major (n x m) C^T, and
// C^T = alpha * B^T * A^T + beta * C^T: the two GEMMs below pass B first, then A, with n and m swapped.

void cublas_gemm_f32(int m, int n, int k, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                     float* C, int ldc, Math math, cudaStream_t stream) {
  const cublasComputeType_t compute = math == Math::Tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublasHandle_t h = cublas_handle();
  TUT_CUBLAS_CHECK(cublasSetStream(h, stream));
  TUT_CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, B, CUDA_R_32F, ldb, A, CUDA_R_32F, lda,
                                &beta, C, CUDA_R_32F, ldc, compute, CUBLAS_GEMM_DEFAULT));
}

void cublas_gemm_f64(int m, int n, int k, double alpha, const double* A, int lda, const double* B, int ldb,
                     double beta, double* C, int ldc, cudaStream_t stream) {
  cublasHandle_t h = cublas_handle();
  TUT_CUBLAS_CHECK(cublasSetStream(h, stream));
  TUT_CUBLAS_CHECK(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, B, ldb, A, lda, &beta, C, ldc));
}

}  // namespace tut
