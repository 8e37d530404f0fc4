// Timing with CUDA events: warm-up runs first, then each timed run measured on its own, with L2
// flushed before it, so no run starts with its inputs already in cache (docs/measuring.md).
#pragma once

#include <functional>
#include <vector>

#include "tut/core/device_buffer.cuh"
#include "tut/core/stats.hpp"

namespace tut {

// Evicts the previous run's data from L2 by reading a buffer twice the L2 size. Reading (not
// memset) leaves L2 full of clean lines, so the timed kernel pays no write-back for the flush.
class L2Flusher {
 public:
  explicit L2Flusher(std::size_t l2_bytes);
  void flush(cudaStream_t stream);
  std::size_t bytes() const { return buf_.bytes(); }

 private:
  DeviceBuffer<float4> buf_;
  DeviceBuffer<float> sink_;
};

// Bytes L2Flusher(l2_bytes) allocates, for the memory check before allocating.
std::size_t l2_flusher_bytes(std::size_t l2_bytes);

struct TimingPlan {
  int warmup = 5;
  int iters = 20;
};

// Runs `launch` plan.warmup times untimed, then plan.iters times, each timed with a pair of CUDA
// events. `before_each` (may be empty) runs before every run, outside the timed region (e.g. to
// restore C when beta != 0). Returns the timed durations in milliseconds.
std::vector<double> time_runs(const std::function<void(cudaStream_t)>& launch,
                              const std::function<void(cudaStream_t)>& before_each, const TimingPlan& plan,
                              L2Flusher& flusher, cudaStream_t stream);

// The device-to-device copy bandwidth, the ceiling of a bandwidth-bound step (docs/measuring.md):
// cudaMemcpyAsync of `bytes` from one buffer to another, timed like a step (plan, L2 flushed),
// rate = bytes read + bytes written over the median time. kCopyProbeBytes is large enough that the
// copy streams from DRAM (5x the H100's L2) and small enough to sit beside any problem.
constexpr std::size_t kCopyProbeBytes = std::size_t(256) << 20;
struct CopyBandwidth {
  std::size_t bytes = 0;  // copied (read once, written once)
  TimeStats t;
  double gbps() const { return t.median > 0 ? 2.0 * double(bytes) / (t.median * 1e-3) / 1e9 : 0.0; }
};
CopyBandwidth measure_copy_bandwidth(std::size_t bytes, const TimingPlan& plan, L2Flusher& flusher, cudaStream_t stream);

}  // namespace tut
