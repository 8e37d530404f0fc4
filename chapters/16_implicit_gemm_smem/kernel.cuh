// Chapter 16: implicit GEMM, shared-memory tiles.
//
// What changed:  chapter 03's idea applied to chapter 15's loop. The block walks the dot products in
//                K steps of BLOCK_K taps; at each step it stages a (BLOCK_M, BLOCK_K) tile of W (the
//                filter, read as stored) and a (BLOCK_K, BLOCK_N) tile of X_col (gathered from x
//                with the coordinate maps, zeros in the padding) in shared memory, one element of
//                each per thread, and then every thread does its BLOCK_K FMAs out of shared memory.
//                The coordinate maps move out of the inner loop into the copy: a thread gathers one
//                element of X_col per K step (one tap_coord per BLOCK_K FMAs, not one per FMA), and
//                the output pixel of the column it gathers is the same at every step, found once.
// Prediction:    3x to 6x over chapter 15, 1.5x to 2.5x over chapter 13, and still several times
//                slower than chapter 14. Per thread and K step: 16 FFMA, 4 LDS.128 of W's tile (one
//                row per half-warp, broadcast) and 16 LDS of X_col's, the copy (two global loads
//                and one tap_coord with its two divisions) and two barriers: about 8 instructions
//                per FMA instead of about 55, an issue ceiling of 4/8 warp-wide FFMAs per cycle,
//                12.5% of the FP32 peak. Shared memory allows a little more (about 1.5 wavefronts
//                per FFMA as in chapter 03: 1/6 of the peak), and the barriers, every 16 FMAs
//                (chapter 03: every 32), take their share: 6% to 10% of the peak.
// Metric:        instructions per FFMA, smsp__inst_executed.sum * 32 /
//                smsp__sass_thread_inst_executed_op_ffma_pred_on.sum: from about 55 to about 8;
//                l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum falls 16x;
//                l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum appears at about 1.5 per FFMA
//                instruction; smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio and
//                ..._mio_throttle_... rise.
// Assumes:       NCHW x, KCRS w, NKPQ y, packed; any problem the harness accepts (padding,
//                stride, dilation); every tensor has fewer than 2^31 elements (int indexing); K at
//                most 65535 * BLOCK_M (grid.y). Shared memory: 2 x 16 x 16 floats, 2 KiB.
#pragma once

#include "tut/conv/harness.cuh"

namespace ch16 {

// Block tile of Y (BLOCK_M rows = output channels, BLOCK_N columns = output pixels), one result
// per thread, and the K step (BLOCK_K filter taps). A reader may try 32 x 32 x 32 (1024 threads,
// chapter 03's shape) or BLOCK_K = 32 (two elements of each tile per thread); the static_asserts
// keep the copy loops exact.
constexpr int BLOCK_M = 16;
constexpr int BLOCK_N = 16;
constexpr int BLOCK_K = 16;
constexpr int NUM_THREADS = BLOCK_M * BLOCK_N;  // one thread per element of the Y tile
static_assert(NUM_THREADS <= 1024, "a block has at most 1024 threads");
static_assert(NUM_THREADS % 32 == 0, "whole warps");
static_assert(BLOCK_N % 32 == 0 || 32 % BLOCK_N == 0, "a warp covers whole rows of the Y tile, or lies in one");

// The tile copy: thread tid copies elements (a_row + l * A_ROW_STEP, a_col), l < A_LOADS, of W's
// tile (tile_row in the kernel), and likewise for X_col's; consecutive threads take consecutive
// columns (consecutive taps kk in w, consecutive output pixels j in x). Here that is one element of
// each tile per thread.
static_assert(NUM_THREADS % BLOCK_K == 0 && NUM_THREADS % BLOCK_N == 0, "a pass of the copy covers whole rows");
constexpr int A_ROW_STEP = NUM_THREADS / BLOCK_K;  // rows of W's tile covered by one pass of all threads
constexpr int B_ROW_STEP = NUM_THREADS / BLOCK_N;
static_assert(BLOCK_M % A_ROW_STEP == 0 && BLOCK_K % B_ROW_STEP == 0, "the passes cover the tiles exactly");
constexpr int A_LOADS = BLOCK_M / A_ROW_STEP;
constexpr int B_LOADS = BLOCK_K / B_ROW_STEP;

// y = conv(x, w) as Y = W * X_col, X_col never stored: gathered tile by tile into shared memory.
__global__ void __launch_bounds__(NUM_THREADS) smem_implicit_gemm_kernel(tut::ConvProblem cp, const float* x,
                                                                         const float* w, float* y) {
  __shared__ float Ws[BLOCK_M][BLOCK_K];  // (BLOCK_M, BLOCK_K) tile of W: output channels x taps, row-major like w
  __shared__ float Xs[BLOCK_K][BLOCK_N];  // (BLOCK_K, BLOCK_N) tile of X_col: taps x output pixels, gathered

  // The GEMM's sizes: Y is gemm_m x gemm_n, the dot products are gemm_k long.
  const int gemm_m = cp.gemm_m(), gemm_n = cp.gemm_n(), gemm_k = cp.gemm_k();

  const int tid = threadIdx.x;
  // This thread's result: element (thread_row, thread_col) of the block's Y tile. Consecutive
  // threads take consecutive columns j, i.e. consecutive output pixels q (coalesced).
  const int thread_row = tid / BLOCK_N;
  const int thread_col = tid % BLOCK_N;
  const int block_row = blockIdx.y * BLOCK_M;  // first row of Y (output channel) of this block
  const int block_col = blockIdx.x * BLOCK_N;  // first column of Y (output pixel) of this block
  // This thread's share of the tile copy (see A_ROW_STEP above).
  const int a_row = tid / BLOCK_K, a_col = tid % BLOCK_K;
  const int b_row = tid / BLOCK_N, b_col = tid % BLOCK_N;

  // Column j of X_col is one output pixel (n, p, q). The column this thread gathers, b_col of the
  // tile, is the same at every K step: its pixel is found once. Past gemm_n it is never read.
  const int copy_col = block_col + b_col;
  const tut::OutCoord o = tut::out_coord(cp, copy_col);

  float acc = 0.0f;
  for (int kk0 = 0; kk0 < gemm_k; kk0 += BLOCK_K) {  // move BLOCK_K taps right in W, BLOCK_K rows down in X_col
    // Stage the tiles. Outside W and X_col, and in the padding, we store zeros, so the math below
    // needs no bounds checks (a zero adds nothing to a dot product).
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
      const int tile_row = a_row + l * A_ROW_STEP;
      const int row = block_row + tile_row, kk = kk0 + a_col;
      Ws[tile_row][a_col] = (row < gemm_m && kk < gemm_k) ? w[row * gemm_k + kk] : 0.0f;  // W(k, kk) = w[k][c][r][s]
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
      const int tile_row = b_row + l * B_ROW_STEP;
      const int kk = kk0 + tile_row;
      // Row kk of X_col is one filter tap (c, r, s): two integer divisions, once per K step.
      const tut::TapCoord t = tut::tap_coord(cp, kk);
      const int ih = tut::in_row(cp, o.p, t.r), iw = tut::in_col(cp, o.q, t.s);
      // X_col(kk, j): the input pixel, or 0 past the matrix and in the padding (never read).
      const bool inside = kk < gemm_k && copy_col < gemm_n && ih >= 0 && ih < cp.h && iw >= 0 && iw < cp.w;
      Xs[tile_row][b_col] = inside ? x[((o.n * cp.c + t.c) * cp.h + ih) * cp.w + iw] : 0.0f;
    }
    __syncthreads();  // the tiles are complete before anyone reads them

#pragma unroll
    for (int k = 0; k < BLOCK_K; ++k) {
      acc += Ws[thread_row][k] * Xs[k][thread_col];  // Ws: one address per half-warp (broadcast); Xs: one row
    }
    __syncthreads();  // everyone is done reading before the next K step overwrites the tiles
  }

  // Epilogue: Y(k, j) lives at y[n][k][p][q]. No early return above: every thread must reach the
  // barriers, even those outside Y.
  const int row = block_row + thread_row, col = block_col + thread_col;
  if (row < gemm_m && col < gemm_n) y[tut::y_offset(cp, row, col)] = acc;
}

inline void smem_implicit_gemm(const tut::ConvProblem& cp, const tut::ConvArgs& a, cudaStream_t stream) {
  const dim3 block(NUM_THREADS);
  // Columns (N*P*Q, the big dimension) in grid.x, rows (K) in grid.y: at most 65535 rows of blocks.
  const dim3 grid(tut::ceil_div(cp.gemm_n(), BLOCK_N), tut::ceil_div(cp.gemm_m(), BLOCK_M));
  smem_implicit_gemm_kernel<<<grid, block, 0, stream>>>(cp, a.x, a.w, a.y);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch16
