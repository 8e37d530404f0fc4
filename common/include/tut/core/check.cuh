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
