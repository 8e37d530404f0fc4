// Chapter 17: implicit GEMM, thread + warp tiles.
//
// What changed:  chapter 16's implicit GEMM gets the blocking of Part I's chapters 05 to 09, as one
//                step because each of them was measured there: a 128 x 128 x 16 block tile; 8 x 8
//                results per thread as four 4 x 4 sub-tiles, laid out in 32 x 64 warp tiles with
//                z-order lanes; float4 shared loads from a tap-major (transposed) filter tile, copied
//                with float4 global loads; the column-wise serpentine FMA order. The gather of X_col
//                stays chapter 16's: thread t copies column t % 128 of the (BLOCK_K, BLOCK_N) input
//                tile, rows t / 128, + 2, ..., + 14, each element on its own (tap_coord's two
//                divisions per element, four signed bounds tests, each load's store to shared memory
//                written right after it, though ptxas issues the loads first); the column's output
//                pixel is found once per thread.
// Prediction:    most of Part I's gain from its chapter 03 to 08, again, for the math: a thread does
//                64 FMAs per 4 LDS.128, where chapter 16 did two shared loads per FMA. But the gather
//                now weighs as much as the math: per thread and K step, 8 elements at about 60
//                instructions each (two integer divisions of ~20, the window arithmetic, the bounds,
//                the address) is ~500 instructions beside 1024 FFMA: ~1650 per K step, ~62% FFMA
//                (Part I's chapter 09 loop: 90%). So 4x to 6x chapter 16, and about 60% of the
//                FP32 peak at best; the small-image layers lower (under 100 blocks for 132 SMs).
// Metric:        smsp__inst_executed_pipe_fma over smsp__inst_executed (share of FFMA, ~60%);
//                smsp__inst_executed.sum per FFMA instruction; the gather's integer instructions
//                (smsp__inst_executed_pipe_alu, _fmaheavy) that chapter 18 then removes.
// Assumes:       any valid problem (any N, C, H, W, K, R, S, padding, stride, dilation); tensors below
//                2^31 elements. Any pointer works; the fast paths need C*R*S % 4 == 0 and w 16-byte
//                aligned (float4 loads of the filter), P*Q % 4 == 0 and y 16-byte aligned (float4
//                stores of the output). Shared memory: 2 x BLOCK_K x 128 floats = 16 KB.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tut/conv/harness.cuh"

namespace ch17 {

// Block tile of Y (BLOCK_M filters x BLOCK_N output pixels), the K step (BLOCK_K filter taps), the
// warp tile (WARP_M x WARP_N), the results per thread (THREAD_M x THREAD_N) and their sub-tiles
// (SUB_M x SUB_N). BLOCK_K = 16 rather than the classic 8: Part I measured 16 faster on H100 (fewer
// barriers per FMA). A reader may try WARP_M = 64 with WARP_N = 32; the static_asserts keep the
// loops exact.
constexpr int BLOCK_M = 128;
constexpr int BLOCK_N = 128;
constexpr int BLOCK_K = 16;
constexpr int WARP_M = 32;
constexpr int WARP_N = 64;
constexpr int THREAD_M = 8;
constexpr int THREAD_N = 8;
constexpr int SUB_M = 4;
constexpr int SUB_N = 4;
constexpr int WARP_SIZE = 32;
static_assert(BLOCK_M % WARP_M == 0 && BLOCK_N % WARP_N == 0, "the warps split the block tile evenly");
static_assert(WARP_M % THREAD_M == 0 && WARP_N % THREAD_N == 0, "the lanes split the warp tile evenly");
static_assert(THREAD_M % SUB_M == 0 && THREAD_N % SUB_N == 0, "a thread's results are whole sub-tiles");
constexpr int LANES_M = WARP_M / THREAD_M;                  // 4 rows of lanes in a warp
constexpr int LANES_N = WARP_N / THREAD_N;                  // 8 columns of lanes
static_assert(LANES_M * LANES_N == WARP_SIZE, "the lanes of one warp cover its warp tile");
static_assert(LANES_M % 2 == 0, "the z-order stacks lanes in pairs of rows");
constexpr int WARPS_M = BLOCK_M / WARP_M;                   // 4 rows of warps in a block
constexpr int WARPS_N = BLOCK_N / WARP_N;                   // 2 columns of warps
constexpr int NUM_WARPS = WARPS_M * WARPS_N;                // 8
constexpr int NUM_THREADS = NUM_WARPS * WARP_SIZE;          // 256
static_assert(NUM_THREADS <= 1024, "a block has at most 1024 threads");
// Registers: THREAD_M * THREAD_N accumulators + fragments + the gather's column registers must fit
// in 65536 / (NUM_THREADS * MIN_BLOCKS_PER_SM) = 128 registers per thread, or the kernel spills.
constexpr int MIN_BLOCKS_PER_SM = 2;
// A thread's sub-tiles: SUBS_M x SUBS_N of them, SUB_STRIDE_M rows and SUB_STRIDE_N columns apart,
// inside its warp tile (chapter 08). The SUB_M values a thread needs from a row of the tap-major
// filter tile, and the SUB_N from a row of the input tile, are one float4 each.
constexpr int SUBS_M = THREAD_M / SUB_M;
constexpr int SUBS_N = THREAD_N / SUB_N;
constexpr int SUB_STRIDE_M = LANES_M * SUB_M;  // 16
constexpr int SUB_STRIDE_N = LANES_N * SUB_N;  // 32

// 128-bit accesses move VEC floats.
constexpr int VEC = 4;
static_assert(SUB_M == VEC && SUB_N == VEC, "a sub-tile row is one float4");

// The filter tile's copy (A = W, BLOCK_M filters x BLOCK_K taps, each filter's taps contiguous in
// memory), as in Part I: thread tid copies the VEC taps (a_row + l * A_ROW_STEP, a_col .. a_col +
// VEC - 1), l < A_LOADS; consecutive threads take consecutive vectors along a filter (coalesced).
static_assert(BLOCK_K % VEC == 0, "filter-tile rows are whole float4s");
static_assert(NUM_THREADS % (BLOCK_K / VEC) == 0, "a pass of the copy covers whole filters");
constexpr int A_ROW_STEP = NUM_THREADS / (BLOCK_K / VEC);  // filters covered by one pass of all threads
static_assert(BLOCK_M % A_ROW_STEP == 0, "the passes cover the filter tile exactly");
constexpr int A_LOADS = BLOCK_M / A_ROW_STEP;

// The input tile's copy (B = X_col, BLOCK_K taps x BLOCK_N output pixels, gathered), as chapter 16
// does it: thread tid copies the elements (b_row + l * B_ROW_STEP, b_col), l < B_LOADS; consecutive
// threads take consecutive columns (consecutive output pixels: as contiguous in x as the image rows
// allow).
static_assert(NUM_THREADS % BLOCK_N == 0, "a pass of the copy covers whole rows of the input tile");
constexpr int B_ROW_STEP = NUM_THREADS / BLOCK_N;  // 2 rows of the input tile per pass of all threads
static_assert(BLOCK_K % B_ROW_STEP == 0, "the passes cover the input tile exactly");
constexpr int B_LOADS = BLOCK_K / B_ROW_STEP;      // 8 elements per thread and K step

// Reads W[row][col .. col+3] (filter row, taps col .. col+3; ld = C*R*S), of which the first `valid`
// floats exist (the caller folds the row check in: valid <= 0 means none). Missing floats read as
// 0. VEC_A (ld % 4 == 0, col % 4 == 0, W 16-byte aligned): one 128-bit load, which then never
// crosses the end of a filter. Otherwise: one predicated scalar load per float. W is read only where
// valid > 0; the offset is unsigned 32-bit arithmetic (one IMAD.WIDE.U32 to an address), exact for
// every filter that exists.
template <bool VEC_A>
__device__ __forceinline__ float4 load4(const float* __restrict__ W, int ld, int row, int col, int valid) {
  const float* p = W + (unsigned(row) * unsigned(ld) + unsigned(col));  // wraps only where valid <= 0
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (VEC_A) {
    if (valid > 0) v = *reinterpret_cast<const float4*>(p);
  } else {
    v.x = valid > 0 ? p[0] : 0.0f;
    v.y = valid > 1 ? p[1] : 0.0f;
    v.z = valid > 2 ? p[2] : 0.0f;
    v.w = valid > 3 ? p[3] : 0.0f;
  }
  return v;
}

// Y = W * X_col, written to y in NKPQ order. `filters`: the rows of Y this launch computes (w and y
// start at its first). vec_y (P*Q % 4 == 0, y 16-byte aligned): four consecutive columns of a
// sub-tile, starting at a multiple of 4, lie in one image and are contiguous in y, so they go out as
// one float4.
template <bool VEC_A>
__global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS_PER_SM)
    warptile_implicit_gemm_kernel(const tut::ConvProblem cp, int filters, const float* __restrict__ x,
                                  const float* __restrict__ w, float* __restrict__ y, bool vec_y) {
  __shared__ __align__(16) float Ws[BLOCK_K][BLOCK_M];  // (BLOCK_K, BLOCK_M) tile of W, tap-major (transposed)
  __shared__ __align__(16) float Xs[BLOCK_K][BLOCK_N];  // (BLOCK_K, BLOCK_N) tile of X_col, row-major

  // The GEMM's sizes: Y is filters x gemm_n, the dot products are gemm_k long.
  const int gemm_n = cp.gemm_n(), gemm_k = cp.gemm_k();

  const int tid = threadIdx.x;
  // This thread's results: acc[m][n] is element (thread_row + row_of(m), thread_col + col_of(n)) of
  // the block's Y tile, where, as plain loops,
  //   for (im < SUBS_M) for (i < SUB_M):  m = im * SUB_M + i,  row_of(m) = im * SUB_STRIDE_M + i
  //   for (jn < SUBS_N) for (j < SUB_N):  n = jn * SUB_N + j,  col_of(n) = jn * SUB_STRIDE_N + j
  // Warps in a WARPS_M x WARPS_N grid, row-major; lanes in a LANES_M x LANES_N grid in z-order:
  // as plain loops, for (rh < LANES_M / 2) for (c < LANES_N) for (rl < 2), lane number
  // rh * 2 * LANES_N + c * 2 + rl gets (lane_row, lane_col) = (rh * 2 + rl, c). Lanes n and n^1
  // then share a column (same X_col addresses), n and n^2 a row (same filter addresses).
  const int warp = tid / WARP_SIZE, lane = tid % WARP_SIZE;
  const int warp_row = warp / WARPS_N, warp_col = warp % WARPS_N;
  const int lane_row = (lane / (2 * LANES_N)) * 2 + lane % 2;
  const int lane_col = (lane / 2) % LANES_N;
  const int thread_row = warp_row * WARP_M + lane_row * SUB_M;
  const int thread_col = warp_col * WARP_N + lane_col * SUB_N;
  const int block_row = blockIdx.y * BLOCK_M;  // first filter (row of Y and of W) of this block
  const int block_col = blockIdx.x * BLOCK_N;  // first output pixel (column of Y and of X_col)
  // This thread's share of the filter-tile copy (see A_ROW_STEP above) and of the input tile's.
  const int a_row = tid / (BLOCK_K / VEC), a_col = (tid % (BLOCK_K / VEC)) * VEC;
  const int b_row = tid / BLOCK_N, b_col = tid % BLOCK_N;

  // The column this thread gathers is the same at every K step: its output pixel is found once
  // (chapter 16). Past gemm_n it is never read.
  const int copy_col = block_col + b_col;
  const tut::OutCoord o = tut::out_coord(cp, copy_col < gemm_n ? copy_col : 0);

  float acc[THREAD_M][THREAD_N] = {};  // registers: indexed only by unrolled loops
  float a_frag[THREAD_M];              // W[thread's filters][k]
  float b_frag[THREAD_N];              // X_col[k][thread's pixels]
  for (int kk0 = 0; kk0 < gemm_k; kk0 += BLOCK_K) {  // move BLOCK_K taps along the reduction
    // Stage the tiles. Outside W and X_col, and in the padding, we store zeros, so the math below
    // needs no bounds checks (a zero adds nothing to a dot product).
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
      const int row = block_row + a_row + l * A_ROW_STEP, kk = kk0 + a_col;
      const float4 v = load4<VEC_A>(w, gemm_k, row, kk, row < filters ? gemm_k - kk : 0);
      // Transpose on the way in: W[row][kk .. kk+3] goes down a column of the tap-major tile.
      const int r = a_row + l * A_ROW_STEP;
      Ws[a_col + 0][r] = v.x;
      Ws[a_col + 1][r] = v.y;
      Ws[a_col + 2][r] = v.z;
      Ws[a_col + 3][r] = v.w;
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
      const int tile_row = b_row + l * B_ROW_STEP;
      const int kk = kk0 + tile_row;
      // Row kk of X_col is one filter tap (c, r, s): two integer divisions, per element.
      const tut::TapCoord t = tut::tap_coord(cp, kk);
      const int ih = tut::in_row(cp, o.p, t.r), iw = tut::in_col(cp, o.q, t.s);
      // X_col(kk, j): the input pixel, or 0 past the matrix and in the padding.
      const bool inside = kk < gemm_k && copy_col < gemm_n && ih >= 0 && ih < cp.h && iw >= 0 && iw < cp.w;
      Xs[tile_row][b_col] = inside ? x[((o.n * cp.c + t.c) * cp.h + ih) * cp.w + iw] : 0.0f;
    }
    __syncthreads();  // the tiles are complete before anyone reads them

#pragma unroll
    for (int k = 0; k < BLOCK_K; ++k) {
      // Fragments: SUBS_M + SUBS_N float4 shared loads, then THREAD_M * THREAD_N FMAs from registers.
#pragma unroll
      for (int im = 0; im < SUBS_M; ++im) {
        const float4 v = *reinterpret_cast<const float4*>(&Ws[k][thread_row + im * SUB_STRIDE_M]);
        a_frag[im * SUB_M + 0] = v.x;
        a_frag[im * SUB_M + 1] = v.y;
        a_frag[im * SUB_M + 2] = v.z;
        a_frag[im * SUB_M + 3] = v.w;
      }
#pragma unroll
      for (int jn = 0; jn < SUBS_N; ++jn) {
        const float4 v = *reinterpret_cast<const float4*>(&Xs[k][thread_col + jn * SUB_STRIDE_N]);
        b_frag[jn * SUB_N + 0] = v.x;
        b_frag[jn * SUB_N + 1] = v.y;
        b_frag[jn * SUB_N + 2] = v.z;
        b_frag[jn * SUB_N + 3] = v.w;
      }
      // The outer product a_frag x b_frag, in serpentine order down the columns (chapter 09):
      // consecutive FMAs share b_frag[n] along a column and a_frag[m] where one column turns into
      // the next.
#pragma unroll
      for (int n = 0; n < THREAD_N; ++n) {
#pragma unroll
        for (int j = 0; j < THREAD_M; ++j) {
          const int m = (n % 2 == 0) ? j : THREAD_M - 1 - j;
          acc[m][n] += a_frag[m] * b_frag[n];
        }
      }
    }
    __syncthreads();  // everyone is done reading before the next K step overwrites the tiles
  }

  // Epilogue: Y(row, j) goes to y[n][row][p][q] (y_offset). No early return above: every thread must
  // reach the barriers, even those outside Y. Offsets as int: y has fewer than 2^31 elements (the
  // harness checks).
  const int pq = cp.p * cp.q;
#pragma unroll
  for (int jn = 0; jn < SUBS_N; ++jn) {
    const int col0 = block_col + thread_col + jn * SUB_STRIDE_N;  // a multiple of SUB_N
    const int n0 = col0 / pq;
    const int y0 = n0 * cp.k * pq + (col0 - n0 * pq);  // y_offset(0, col0): Y(row, col0) is at y0 + row * P*Q
#pragma unroll
    for (int im = 0; im < SUBS_M; ++im) {
#pragma unroll
      for (int i = 0; i < SUB_M; ++i) {
        const int row = block_row + thread_row + im * SUB_STRIDE_M + i;
        if (row >= filters) continue;
        const float* v = &acc[im * SUB_M + i][jn * SUB_N];
        if (vec_y && col0 < gemm_n) {  // P*Q % 4 == 0: all SUB_N columns exist and are contiguous
          *reinterpret_cast<float4*>(&y[y0 + row * pq]) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
          for (int j = 0; j < SUB_N; ++j) {
            if (col0 + j < gemm_n) y[tut::y_offset(cp, row, col0 + j)] = v[j];
          }
        }
      }
    }
  }
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// grid.y holds at most MAX_GRID_Y row tiles; problems with more filters run in several launches.
constexpr int MAX_GRID_Y = 65535;

inline void warptile_implicit_gemm(const tut::ConvProblem& p, const tut::ConvArgs& a, cudaStream_t stream) {
  const dim3 block(NUM_THREADS);
  // float4 accesses need 16-byte aligned rows: every filter (C*R*S floats) for the loads of W, every
  // (n, k) plane of y (P*Q floats) for the stores. Decided once per launch; the kernel is compiled
  // for both answers of the first, and tests the second (once per sub-tile row) at run time.
  const int taps = p.gemm_k(), pq = p.p * p.q;
  const bool vec_a = taps % VEC == 0 && aligned16(a.w);
  const bool vec_y = pq % VEC == 0 && aligned16(a.y);
  const auto kernel = vec_a ? warptile_implicit_gemm_kernel<true> : warptile_implicit_gemm_kernel<false>;
  // Output pixels in grid.x (N*P*Q < 2^31: at most 2^24 tiles), filters in grid.y. Each launch
  // takes up to MAX_GRID_Y row tiles, its own filters of w and planes of y (y_offset keeps the full
  // K); one launch for any K below 65535 * BLOCK_M.
  for (int row0 = 0; row0 < p.k; row0 += MAX_GRID_Y * BLOCK_M) {
    const int filters = std::min(p.k - row0, MAX_GRID_Y * BLOCK_M);
    const dim3 grid(tut::ceil_div(p.gemm_n(), BLOCK_N), tut::ceil_div(filters, BLOCK_M));
    kernel<<<grid, block, 0, stream>>>(p, filters, a.x, a.w + std::size_t(row0) * taps,
                                       a.y + std::size_t(row0) * pq, vec_y);
    TUT_CHECK_LAUNCH();
  }
}

}  // namespace ch17
