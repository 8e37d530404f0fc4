// Chapter 13: direct convolution.
//
// What changed:  nothing yet; this is the starting point of Part II. One thread computes one output
//                element y[n][k][p][q] as the sum over its C x R x S filter taps, reading the input
//                and the filter straight from global memory. The threads are numbered along the
//                output as it lies in memory (NKPQ), so consecutive lanes of a warp take consecutive
//                q: the warp's stores are coalesced, its filter loads are one address (broadcast),
//                and its input loads, at stride 1, are 32 consecutive floats of one or two rows.
// Prediction:    a few percent of the FP32 peak (3% to 5%). Every FMA needs two load instructions
//                (w and x) and, for a 3x3 filter, about 23 instructions in all: index arithmetic,
//                the padding tests and the loop (the compiler unrolls the s loop by 4 for a runtime
//                S, and a 3-tap row runs only the remainder). An SM issues at most 4 instructions
//                per cycle, so at most 4/23 of a warp-wide FFMA per cycle, against the 4 of the
//                peak: 4.3%. The loads hit L1 (a 3x3 filter reads each input pixel up to 9 times
//                per output channel), and at that pace they ask for about half of the one
//                wavefront per cycle L1 can serve: the issue slots, not DRAM or L1, set the pace.
// Metric:        smsp__issue_active.avg.pct_of_peak_sustained_active near 100% while
//                sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active stays low;
//                instructions per FFMA, smsp__inst_executed.sum * 32 /
//                smsp__sass_thread_inst_executed_op_ffma_pred_on.sum, about 23 for 3x3;
//                l1tex__t_sector_hit_rate.pct high.
// Assumes:       NCHW x, KCRS w, NKPQ y, packed; any problem the harness accepts (padding,
//                stride, dilation); every tensor has fewer than 2^31 elements (int indexing).
#pragma once

#include <cstdint>

#include "tut/conv/harness.cuh"

namespace ch13 {

// Threads per block, along the flattened output. Any multiple of 32 up to 1024 works; a reader
// may try 128 or 1024 and see that the block size hardly matters here.
constexpr int NUM_THREADS = 256;
static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "whole warps, at most 1024 threads");

// y = conv(x, w): one thread per element of y.
__global__ void __launch_bounds__(NUM_THREADS) direct_conv_kernel(tut::ConvProblem cp, const float* x, const float* w,
                                                                  float* y) {
  // This thread's output element, numbered as y lies in memory: idx is also its offset in y. In
  // 64 bits first: the last block may run past 2^31 even though y has fewer elements.
  const std::int64_t flat = std::int64_t(blockIdx.x) * NUM_THREADS + threadIdx.x;
  const std::int64_t y_elems = std::int64_t(cp.n) * cp.k * cp.p * cp.q;
  if (flat >= y_elems) return;  // the grid overhangs y
  const int idx = static_cast<int>(flat);
  // Unflatten; as plain loops, for (n < N) for (k < K) for (p < P) for (q < Q) idx = ((n*K + k)*P + p)*Q + q.
  // Consecutive lanes: consecutive q (a warp covers one or two rows p of one (n, k) plane).
  const int q = idx % cp.q;
  int rest = idx / cp.q;
  const int p = rest % cp.p;
  rest /= cp.p;
  const int k = rest % cp.k;
  const int n = rest / cp.k;

  float acc = 0.0f;
  for (int c = 0; c < cp.c; ++c) {
    for (int r = 0; r < cp.r; ++r) {
      const int ih = tut::in_row(cp, p, r);  // p*stride_h - pad_h + r*dil_h
      if (ih < 0 || ih >= cp.h) continue;    // this filter row lies in the padding: it adds zeros
      for (int s = 0; s < cp.s; ++s) {
        const int iw = tut::in_col(cp, q, s);  // q*stride_w - pad_w + s*dil_w: lane to lane, + stride_w
        if (iw < 0 || iw >= cp.w) continue;
        // w[k][c][r][s]: the same address for a whole warp (one k): a broadcast.
        // x[n][c][ih][iw]: consecutive lanes, consecutive iw (stride 1): coalesced.
        acc += w[((k * cp.c + c) * cp.r + r) * cp.s + s] * x[((n * cp.c + c) * cp.h + ih) * cp.w + iw];
      }
    }
  }
  y[idx] = acc;  // consecutive lanes, consecutive addresses
}

inline void direct_conv(const tut::ConvProblem& cp, const tut::ConvArgs& a, cudaStream_t stream) {
  const std::int64_t y_elems = cp.y_elems();  // < 2^31: at most 2^23 blocks of 256, within grid.x's 2^31 - 1
  const dim3 block(NUM_THREADS);
  const dim3 grid(static_cast<unsigned>(tut::ceil_div<std::int64_t>(y_elems, NUM_THREADS)));
  direct_conv_kernel<<<grid, block, 0, stream>>>(cp, a.x, a.w, a.y);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch13
