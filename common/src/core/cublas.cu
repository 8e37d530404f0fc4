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

}  // namespace tut
