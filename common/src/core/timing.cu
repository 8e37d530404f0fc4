#include "tut/core/timing.cuh"

namespace tut {

namespace {

// Reads every element (through L2) and writes one value only if the sum is exactly 123.0 (never,
// for the zero-filled buffer), so the compiler cannot drop the loads.
__global__ void l2_flush_kernel(const float4* __restrict__ buf, std::size_t n, float* sink) {
  float acc = 0.f;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float4 v = buf[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 123.0f) *sink = acc;
}

}  // namespace

std::size_t l2_flusher_bytes(std::size_t l2_bytes) {
  const std::size_t bytes = 2 * (l2_bytes > 0 ? l2_bytes : std::size_t(64) << 20);
  return (bytes + sizeof(float4) - 1) / sizeof(float4) * sizeof(float4) + sizeof(float);
}

L2Flusher::L2Flusher(std::size_t l2_bytes)
    : buf_((l2_flusher_bytes(l2_bytes) - sizeof(float)) / sizeof(float4)), sink_(1) {
  TUT_CUDA_CHECK(cudaMemset(buf_.data(), 0, buf_.bytes()));
}

void L2Flusher::flush(cudaStream_t stream) {
  constexpr int kThreads = 512;
  constexpr int kBlocks = 1024;
  l2_flush_kernel<<<kBlocks, kThreads, 0, stream>>>(buf_.data(), buf_.size(), sink_.data());
  TUT_CHECK_LAUNCH();
}

std::vector<double> time_runs(const std::function<void(cudaStream_t)>& launch,
                              const std::function<void(cudaStream_t)>& before_each, const TimingPlan& plan,
                              L2Flusher& flusher, cudaStream_t stream) {
  for (int i = 0; i < plan.warmup; ++i) {
    if (before_each) before_each(stream);
    launch(stream);
  }
  TUT_CUDA_CHECK(cudaStreamSynchronize(stream));

  cudaEvent_t start, stop;
  TUT_CUDA_CHECK(cudaEventCreate(&start));
  TUT_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<double> ms;
  ms.reserve(plan.iters);
  try {
    for (int i = 0; i < plan.iters; ++i) {
      if (before_each) before_each(stream);
      flusher.flush(stream);
      TUT_CUDA_CHECK(cudaEventRecord(start, stream));
      launch(stream);
      TUT_CUDA_CHECK(cudaEventRecord(stop, stream));
      TUT_CUDA_CHECK(cudaEventSynchronize(stop));
      float t = 0.f;
      TUT_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
      ms.push_back(t);
    }
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  TUT_CUDA_CHECK(cudaEventDestroy(start));
  TUT_CUDA_CHECK(cudaEventDestroy(stop));
  return ms;
}

CopyBandwidth measure_copy_bandwidth(std::size_t bytes, const TimingPlan& plan, L2Flusher& flusher, cudaStream_t stream) {
  DeviceBuffer<char> src(bytes), dst(bytes);
  TUT_CUDA_CHECK(cudaMemsetAsync(src.data(), 0, bytes, stream));
  CopyBandwidth c;
  c.bytes = bytes;
  c.t = summarize(time_runs(
      [&](cudaStream_t s) {
        TUT_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, s));
      },
      nullptr, plan, flusher, stream));
  return c;
}

}  // namespace tut
