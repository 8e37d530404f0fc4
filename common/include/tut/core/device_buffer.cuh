// A typed device allocation that frees itself (RAII), move-only.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "tut/core/check.cuh"

namespace tut {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count_ > 0) TUT_CUDA_CHECK(cudaMalloc(&ptr_, count_ * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);  // no throw from a destructor; a failing free is reported by the next call
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) cudaFree(ptr_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      count_ = std::exchange(o.count_, 0);
    }
    return *this;
  }

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

  void upload(const T* host) { TUT_CUDA_CHECK(cudaMemcpy(ptr_, host, bytes(), cudaMemcpyHostToDevice)); }
  void download(T* host) const { TUT_CUDA_CHECK(cudaMemcpy(host, ptr_, bytes(), cudaMemcpyDeviceToHost)); }
  // The whole buffer, copied to a new host vector.
  std::vector<T> download() const {
    std::vector<T> host(count_);
    download(host.data());
    return host;
  }
  void copy_from(const DeviceBuffer& src, cudaStream_t stream) {
    TUT_CUDA_CHECK(cudaMemcpyAsync(ptr_, src.ptr_, bytes(), cudaMemcpyDeviceToDevice, stream));
  }
  // Every byte set to `byte`; 0xFF makes every float a NaN (the poison pattern).
  void fill_bytes(int byte, cudaStream_t stream) { TUT_CUDA_CHECK(cudaMemsetAsync(ptr_, byte, bytes(), stream)); }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace tut
