// Every CUDA runtime call and every kernel launch is checked. A failure throws tut::CudaError with
// the call, file and line; the harness prints it and exits with code 4.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace tut {

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void cuda_check(cudaError_t err, const char* expr, const char* file, int line) {
  if (err != cudaSuccess) {
    throw CudaError(std::string("CUDA error ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ") in " +
                    expr + " at " + file + ":" + std::to_string(line));
  }
}

// Integer division rounded up: the number of tiles of size b that cover a.
template <class T>
__host__ __device__ constexpr T ceil_div(T a, T b) {
  return (a + b - 1) / b;
}

}  // namespace tut

#define TUT_CUDA_CHECK(expr) ::tut::cuda_check((expr), #expr, __FILE__, __LINE__)
// After a <<<...>>> launch: catches bad launch configurations at once; errors raised while the
// kernel runs surface at the next synchronizing call, which is checked too.
#define TUT_CHECK_LAUNCH() ::tut::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

namespace tut {

// Something worked out once per CUDA device (the SM count, occupancies, a kernel's shared-memory opt-in):
// get(fill) runs fill(device, value) the first time it is asked on the current device, and again only
// when the current device has changed; then it returns the value. A fill that throws leaves the device
// unrecorded, so the next call tries again.
template <class T>
class PerDevice {
 public:
  template <class Fill>
  const T& get(Fill&& fill) {
    int device = 0;
    TUT_CUDA_CHECK(cudaGetDevice(&device));
    if (device != device_) {
      fill(device, value_);
      device_ = device;
    }
    return value_;
  }

 private:
  int device_ = -1;
  T value_{};
};

// The current device's SM count, asked once per device.
inline int sm_count() {
  static PerDevice<int> cache;
  return cache.get([](int device, int& sms) {
    TUT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  });
}

}  // namespace tut
