#include "tut/core/cudnn.cuh"

namespace tut {

void cudnn_check(cudnnStatus_t st, const char* expr, const char* file, int line) {
  if (st != CUDNN_STATUS_SUCCESS) {
    throw CudaError(std::string("cuDNN error ") + cudnnGetErrorString(st) + " in " + expr + " at " + file + ":" +
                    std::to_string(line));
  }
}

cudnnHandle_t cudnn_handle() {
  struct Holder {
    cudnnHandle_t h = nullptr;
    Holder() { TUT_CUDNN_CHECK(cudnnCreate(&h)); }
    ~Holder() { cudnnDestroy(h); }
  };
  static Holder holder;
  return holder.h;
}

std::string cudnn_version_text() {
  const std::size_t v = cudnnGetVersion();  // major*10000 + minor*100 + patch (cuDNN 9)
  return "cuDNN " + std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

}  // namespace tut
