// Chapter 15: implicit GEMM, naive.
//
// What changed:  chapter 14's GEMM without its column matrix. Y (K x N*P*Q) = W (K x C*R*S) *
//                X_col (C*R*S x N*P*Q) is computed as a plain GEMM, one thread per element of Y
//                (row k, column j), but X_col is never stored: at each step kk of the dot product
//                the thread finds the element it needs with the coordinate maps (tut/conv/problem.hpp):
//                tap_coord(kk) = (c, r, s), then in_row / in_col give the input pixel of its output
//                pixel (n, p, q) = out_coord(j), found once, or 0 in the padding. W is the filter
//                as stored; Y's element (k, j) goes straight to y[n][k][p][q]. No workspace, one
//                kernel, the same loads as chapter 13 (a filter value and an input value per FMA).
// Prediction:    2x to 3x SLOWER than chapter 13. Both read two values per FMA, but chapter 13's
//                loops over c, r, s step through the filter window with additions; here every step
//                kk divides twice by runtime values (kk / (R*S), then by S) to find (c, r, s), and
//                a 32-bit integer division by a runtime value is some twenty instructions. About
//                55 instructions per FMA instead of about 23: the issue slots set the pace, at most
//                4/55 of a warp-wide FFMA per cycle, under 2% of the FP32 peak. The point of the
//                step is the form of the loop: it is Part I's GEMM loop, so Part I's tiling applies
//                to it, and chapter 16 moves the coordinate maps out of the inner loop.
// Metric:        instructions per FFMA, smsp__inst_executed.sum * 32 /
//                smsp__sass_thread_inst_executed_op_ffma_pred_on.sum: about 55 (chapter 13: about
//                23); smsp__issue_active.avg.pct_of_peak_sustained_active near 100%.
// Assumes:       NCHW x, KCRS w, NKPQ y, packed; any problem the harness accepts (padding,
//                stride, dilation); every tensor has fewer than 2^31 elements (int indexing); K at
//                most 65535 * BLOCK_M (grid.y).
#pragma once

#include "tut/conv/harness.cuh"

namespace ch15 {

// Block tile of Y (BLOCK_M rows = output channels, BLOCK_N columns = output pixels), one result
// per thread. A reader may try 8 x 32 (a warp along one row of Y); the static_asserts keep the
// mapping exact.
constexpr int BLOCK_M = 16;
constexpr int BLOCK_N = 16;
constexpr int NUM_THREADS = BLOCK_M * BLOCK_N;  // one thread per element of the Y tile
static_assert(NUM_THREADS <= 1024, "a block has at most 1024 threads");
static_assert(NUM_THREADS % 32 == 0, "whole warps");
static_assert(BLOCK_N % 32 == 0 || 32 % BLOCK_N == 0, "a warp covers whole rows of the Y tile, or lies in one");

// y = conv(x, w) as Y = W * X_col, X_col never stored.
__global__ void __launch_bounds__(NUM_THREADS) naive_implicit_gemm_kernel(tut::ConvProblem cp, const float* x,
                                                                          const float* w, float* y) {
  // The GEMM's sizes: Y is gemm_m x gemm_n, the dot products are gemm_k long.
  const int gemm_m = cp.gemm_m(), gemm_n = cp.gemm_n(), gemm_k = cp.gemm_k();

  const int tid = threadIdx.x;
  // This thread's result: element (thread_row, thread_col) of the block's Y tile. Consecutive
  // threads take consecutive columns j, i.e. consecutive output pixels q (coalesced).
  const int thread_row = tid / BLOCK_N;
  const int thread_col = tid % BLOCK_N;
  const int block_row = blockIdx.y * BLOCK_M;  // first row of Y (output channel) of this block
  const int block_col = blockIdx.x * BLOCK_N;  // first column of Y (output pixel) of this block
  const int row = block_row + thread_row, col = block_col + thread_col;
  if (row >= gemm_m || col >= gemm_n) return;  // the grid overhangs Y

  // Column j of X_col is one output pixel (n, p, q): the same at every step, found once.
  const tut::OutCoord o = tut::out_coord(cp, col);

  float acc = 0.0f;
  for (int kk = 0; kk < gemm_k; ++kk) {
    // Row kk of X_col is one filter tap (c, r, s): two integer divisions, at every step.
    const tut::TapCoord t = tut::tap_coord(cp, kk);
    const int ih = tut::in_row(cp, o.p, t.r), iw = tut::in_col(cp, o.q, t.s);
    // X_col(kk, j): the input pixel, or 0 in the padding (never read).
    const bool inside = ih >= 0 && ih < cp.h && iw >= 0 && iw < cp.w;
    const float x_val = inside ? x[((o.n * cp.c + t.c) * cp.h + ih) * cp.w + iw] : 0.0f;
    acc += w[row * gemm_k + kk] * x_val;  // W(k, kk) = w[k][c][r][s], the filter as stored
  }

  // Epilogue: Y(k, j) lives at y[n][k][p][q].
  y[tut::y_offset(cp, row, col)] = acc;
}

inline void naive_implicit_gemm(const tut::ConvProblem& cp, const tut::ConvArgs& a, cudaStream_t stream) {
  const dim3 block(NUM_THREADS);
  // Columns (N*P*Q, the big dimension) in grid.x, rows (K) in grid.y: at most 65535 rows of blocks.
  const dim3 grid(tut::ceil_div(cp.gemm_n(), BLOCK_N), tut::ceil_div(cp.gemm_m(), BLOCK_M));
  naive_implicit_gemm_kernel<<<grid, block, 0, stream>>>(cp, a.x, a.w, a.y);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch15
