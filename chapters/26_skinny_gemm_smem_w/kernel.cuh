// Chapter 26: skinny GEMM, registers + W in shared memory.
//
// What changed:  chapter 25's thread per row, with its two global read-modify-write streams gone:
//                - the F_OUT = 16 sums of a row live in registers, acc[16], and are stored once, at
//                  the end: 16 stores per row instead of 2048 + 16;
//                - the loops are swapped, k outside, j inside (an outer product): the thread loads
//                  X[r][k] once and multiplies it by row k of W, 16 DFMAs; each element of X is read
//                  once, not F_out = 16 times;
//                - W (F_in x 16 doubles, 16 KB for F_in = 128) is copied whole into shared memory by
//                  each block; every lane of a warp then reads the same W[k][j], a broadcast.
//                The k loop runs one step at a time (#pragma unroll 1): one load of X in flight per
//                thread, as the write-up's kernel wrote it. Chapter 27 changes exactly that.
// Prediction:    0.13 to 0.25 ms on the default problem, 45% to 85% of the copy bandwidth: more than
//                ten times faster than chapter 25 (no store inside the loop, X read once instead of 16
//                times), but bound by latency. 62 registers: 4 blocks of 256 threads per SM, 32 warps.
//                Each k is a load of X[r][k] that its 16 DFMAs wait for, and the next load is issued
//                only after them. One k in four starts a new 32-byte sector of the row, from DRAM; the
//                other three hit L1 only if the sector is still there: a warp's 32 rows are 32 lines,
//                32 warps keep 1024 lines (128 KB) live in an L1 of about 150 KB, at a 1 KB stride that
//                crowds its sets. Hits: at most 32 warps * 1 KB = 32 KB of sectors in flight per SM,
//                near what Little's law needs (about 16 KB at 3 TB/s and 700 ns), plus a tail of about
//                one warp lifetime (128 dependent loads) when the last of 2.09 waves of blocks runs.
//                Misses: every load goes to L2, 4 x 288.6 MB of L2 sectors. Shared memory, either way:
//                per warp and k, 8 broadcast LDS.128 of W, 2 wavefronts each: 64 wavefront cycles per
//                row, 137 K cycles per SM, 69 us at 1.98 GHz.
// Metric:        l1tex__t_sector_hit_rate.pct (75% at best: three loads in four hit);
//                lts__t_sectors_srcunit_tex_op_read.sum between 9.0 M (X's sectors once) and 36.1 M;
//                smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio the largest
//                stall; l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum = 8810 warps * 128 k * 16
//                = 18.0 M.
// Assumes:       F_out = 16 (the accumulators are registers, sized at compile time) and F_in <=
//                MAX_F_IN = 384 (W must fit the 48 KB of shared memory a block gets without opt-in);
//                refuses anything else. Any V >= 0; x, w, out not overlapping.
#pragma once

#include <cstddef>

#include "tut/gcn/harness.cuh"

namespace ch26 {

// Threads per block: one row of X per thread. A reader may try 128 or 512.
constexpr int BLOCK_THREADS = 256;
static_assert(BLOCK_THREADS % 32 == 0 && BLOCK_THREADS <= 1024, "whole warps, at most 1024 threads");
// The sums of a row, in registers: the width of H is fixed at compile time.
constexpr int F_OUT = 16;
// W lives in shared memory, F_in x F_OUT doubles; a block gets 48 KB without opting in.
constexpr int MAX_W_BYTES = 48 * 1024;
constexpr int MAX_F_IN = MAX_W_BYTES / (F_OUT * static_cast<int>(sizeof(double)));  // 384
static_assert(MAX_F_IN == 384, "48 KB holds 384 rows of 16 doubles");

// out = x * w, one thread per row of x, W staged in shared memory. As plain loops, for each row r:
//   acc[0..15] = 0;  for (k < f_in) for (j < 16) acc[j] += x[r][k] * w[k][j];  out[r][0..15] = acc
__global__ void __launch_bounds__(BLOCK_THREADS)
    xw_smem_w_kernel(const double* __restrict__ x, const double* __restrict__ w, double* __restrict__ out, int v,
                     int f_in) {
  extern __shared__ double w_s[];  // W, f_in x F_OUT, row-major, as in global memory
  // The block copies W, consecutive threads taking consecutive doubles (coalesced, no bank conflict).
  for (int i = threadIdx.x; i < f_in * F_OUT; i += BLOCK_THREADS) w_s[i] = w[i];
  __syncthreads();  // W complete before anyone reads it

  const long long r = static_cast<long long>(blockIdx.x) * BLOCK_THREADS + threadIdx.x;
  if (r >= v) return;  // after the barrier: every thread helped copy W
  const double* x_row = x + static_cast<std::size_t>(r) * f_in;  // row r of X: f_in doubles

  double acc[F_OUT];  // row r of H, in registers (every index a constant after unrolling)
#pragma unroll
  for (int j = 0; j < F_OUT; ++j) acc[j] = 0.0;

  // One k at a time: left alone, the compiler unrolls this loop by 8 and issues some loads of X a
  // few steps ahead. Getting loads ahead is the next chapter's idea; here each load is waited for
  // before the next one is issued.
#pragma unroll 1
  for (int k = 0; k < f_in; ++k) {
    const double x_rk = x_row[k];  // a warp: 32 rows 1 KB apart, 8 bytes of each
#pragma unroll
    for (int j = 0; j < F_OUT; ++j) acc[j] += x_rk * w_s[k * F_OUT + j];  // W[k][j]: a broadcast
  }

#pragma unroll
  for (int j = 0; j < F_OUT; ++j) out[static_cast<std::size_t>(r) * F_OUT + j] = acc[j];
}

// One line for a size this step does not run, or nullptr.
inline const char* refuses(const tut::GcnProblem& p) {
  if (p.f_out != F_OUT) return "F_out must be 16: the sums of a row are 16 registers (valid: --out 16)";
  if (p.f_in > MAX_F_IN) return "F_in must be at most 384: W is staged whole in 48 KB of shared memory (valid: --in 1..384)";
  return nullptr;
}

inline void xw_smem_w(const tut::GcnProblem& p, const tut::GcnArgs& a, cudaStream_t stream) {
  if (p.v == 0) return;  // no rows, and a grid of 0 blocks is a launch error
  const unsigned blocks = static_cast<unsigned>(tut::ceil_div(static_cast<long long>(p.v),
                                                              static_cast<long long>(BLOCK_THREADS)));
  const std::size_t w_bytes = static_cast<std::size_t>(p.f_in) * F_OUT * sizeof(double);  // 16 KB for F_in = 128
  xw_smem_w_kernel<<<blocks, BLOCK_THREADS, w_bytes, stream>>>(a.x, a.w, a.out, p.v, p.f_in);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch26
