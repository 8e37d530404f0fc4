// Chapter 09: double buffering.
//
// What changed:  two shared buffers for each tile, and the tile copy split into two stages held
//                apart in time: the "global load" stage reads the NEXT K step's float4s into
//                registers (a_ldg, b_ldg) before the block computes on the current buffer, and the
//                "shared store" stage writes them into the other buffer after the math. One
//                __syncthreads per K step instead of two. With the copy now overlapped, what is
//                left in the loop besides copy and math is bounds checking, and it goes too: rows
//                of A past M and columns of B past N are clamped to ones that exist (they only feed
//                results that are never stored), K is checked only in a last, partial K step
//                peeled off the loop, and the zeroing of a vector's floats past K happens there, in
//                the store stage, so that nothing waits for a global load before the math. The
//                final K step (nothing left to load) is peeled too: the loop body has no branch
//                and no bounds check. The outer product keeps chapter 08's serpentine order but
//                runs it down the columns, which measured faster here (README, tuning run 14).
// Prediction:    10% to 15% over chapter 08, to within a few percent of cuBLAS. In chapter 08 every
//                K step ends with the whole block waiting on global loads (hundreds of cycles from
//                L2) that only the other resident block can cover, plus a second barrier. Now the
//                loads for step k+1 are in flight during the 16 x 64 = 1024 FMAs of step k, so their
//                latency is hidden inside the block, and the only stall left per K step is one
//                barrier.
// Metric:        smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active (waiting on
//                global loads) and ..._barrier_per_issue_active shrink;
//                sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active rises toward 80%.
// Assumes:       row-major A (lda >= k), B (ldb >= n), C (ldc >= n); any M, N, K >= 1. Any leading
//                dimension and pointer work; the fast path needs them multiples of 4 / 16 bytes.
//                Shared memory: 2 x (BLOCK_K x (BLOCK_M + A_PAD) + BLOCK_K x BLOCK_N) floats, 32.5 KB.
#pragma once

#include <cstdint>

#include "tut/gemm/harness.cuh"

namespace ch09 {

// Block tile of C (BLOCK_M x BLOCK_N), the K step (BLOCK_K), the warp tile (WARP_M x WARP_N), the
// results per thread (THREAD_M x THREAD_N) and their sub-tiles (SUB_M x SUB_N). A reader may try
// BLOCK_K = 8, or WARP_M = 64 with WARP_N = 32 (8 x 4 lanes); the static_asserts keep the loops exact.
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
constexpr int NUM_THREADS = WARPS_M * WARPS_N * WARP_SIZE;  // 256
static_assert(NUM_THREADS <= 1024, "a block has at most 1024 threads");
// Registers: THREAD_M * THREAD_N accumulators + fragments must fit in 65536 / (NUM_THREADS *
// MIN_BLOCKS_PER_SM) = 128 registers per thread, or the kernel spills.
constexpr int MIN_BLOCKS_PER_SM = 2;
// A thread's sub-tiles: SUBS_M x SUBS_N of them, SUB_STRIDE_M rows and SUB_STRIDE_N columns apart.
// Lane (lr, lc) of the LANES_M x LANES_N grid owns warp-tile rows lr*SUB_M .. lr*SUB_M+3 and the
// same rows + 16, and likewise for columns (+ 32): the sub-tiles tile the warp tile, so a warp's
// loads of a row of A's or B's tile cover one contiguous stretch. The SUB_M values a thread needs
// from a row of the k-major A tile, and the SUB_N from a row of B, are still one float4 each.
constexpr int SUBS_M = THREAD_M / SUB_M;
constexpr int SUBS_N = THREAD_N / SUB_N;
constexpr int SUB_STRIDE_M = LANES_M * SUB_M;  // 16
constexpr int SUB_STRIDE_N = LANES_N * SUB_N;  // 32

// 128-bit accesses move VEC floats.
constexpr int VEC = 4;
static_assert(SUB_M == VEC && SUB_N == VEC, "a sub-tile row is one float4");

// Padding of each row of the k-major A tile, in floats. A reader may try 0 (chapter 06), 1 (breaks
// the float4 alignment: the static_assert stops it), 4 or 8, and watch the store conflicts.
constexpr int A_PAD = 4;
static_assert((BLOCK_M + A_PAD) % VEC == 0, "padded rows must keep float4 loads 16-byte aligned");

// The tile copy, one float4 at a time: thread tid copies the VEC floats (a_row + l * A_ROW_STEP,
// a_col .. a_col + VEC - 1), l < A_LOADS, of A's tile, and likewise for B; consecutive threads take
// consecutive vectors along a row (coalesced).
static_assert(BLOCK_K % VEC == 0 && BLOCK_N % VEC == 0, "tile rows are whole float4s");
static_assert(NUM_THREADS % (BLOCK_K / VEC) == 0 && NUM_THREADS % (BLOCK_N / VEC) == 0,
              "a pass of the copy covers whole rows");
constexpr int A_ROW_STEP = NUM_THREADS / (BLOCK_K / VEC);  // rows of A's tile covered by one pass of all threads
constexpr int B_ROW_STEP = NUM_THREADS / (BLOCK_N / VEC);
static_assert(BLOCK_M % A_ROW_STEP == 0 && BLOCK_K % B_ROW_STEP == 0, "the passes cover the tiles exactly");
constexpr int A_LOADS = BLOCK_M / A_ROW_STEP;
constexpr int B_LOADS = BLOCK_K / B_ROW_STEP;

// Reads X[row][col .. col+3] of a row-major matrix with leading dimension ld, of which the first
// `valid` floats exist (valid <= 0: none; the constant VEC, inlined, leaves no check). Missing floats
// read as 0, except that the ALIGNED vector read (ld % 4 == 0, col % 4 == 0, X 16-byte aligned)
// may return up to 3 floats of the row's padding past the last column (a row is ld >= 4 *
// ceil(cols / 4) floats long, as BLAS defines the array): the caller zeroes those where they
// matter, past K, in the store stage. No branches: every load is predicated, and nothing here uses
// a loaded value, so no instruction waits for one before the store stage. X is indexed only when
// valid > 0 (no int overflow).
template <bool ALIGNED>
__device__ __forceinline__ float4 load4(const float* X, int ld, int row, int col, int valid) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (ALIGNED) {
    if (valid > 0) v = *reinterpret_cast<const float4*>(&X[row * ld + col]);
  } else {
    if (valid > 0) v.x = X[row * ld + col];
    if (valid > 1) v.y = X[row * ld + col + 1];
    if (valid > 2) v.z = X[row * ld + col + 2];
    if (valid > 3) v.w = X[row * ld + col + 3];
  }
  return v;
}

// C[row][col .. col+3] = alpha * acc (+ beta * C when beta != 0) for the first `valid` of the four
// (the caller has checked the row; valid <= 0: none). With beta == 0, C is not read. Vector access
// as in load4.
template <bool ALIGNED>
__device__ __forceinline__ void store4(float* C, int ldc, int row, int col, int valid, float4 acc, float alpha,
                                       float beta) {
  if (valid <= 0) return;
  float* p = &C[row * ldc + col];
  float4 out = make_float4(alpha * acc.x, alpha * acc.y, alpha * acc.z, alpha * acc.w);
  if (ALIGNED && valid >= VEC) {
    if (beta != 0.0f) {
      const float4 c = *reinterpret_cast<const float4*>(p);
      out.x += beta * c.x;
      out.y += beta * c.y;
      out.z += beta * c.z;
      out.w += beta * c.w;
    }
    *reinterpret_cast<float4*>(p) = out;
    return;
  }
  p[0] = (beta == 0.0f) ? out.x : out.x + beta * p[0];
  if (valid > 1) p[1] = (beta == 0.0f) ? out.y : out.y + beta * p[1];
  if (valid > 2) p[2] = (beta == 0.0f) ? out.z : out.z + beta * p[2];
  if (valid > 3) p[3] = (beta == 0.0f) ? out.w : out.w + beta * p[3];
}

// C = alpha * A * B + beta * C; with beta == 0, C is not read.
template <bool ALIGNED>
__global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS_PER_SM)
    double_buffered_gemm_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                                float beta, float* C, int ldc) {
  // Two buffers of each tile: the block computes on As[buf], Bs[buf] while the next K step is
  // written into As[buf ^ 1], Bs[buf ^ 1].
  __shared__ __align__(16) float As[2][BLOCK_K][BLOCK_M + A_PAD];  // (BLOCK_K, BLOCK_M) tiles of A, k-major, padded
  __shared__ __align__(16) float Bs[2][BLOCK_K][BLOCK_N];          // (BLOCK_K, BLOCK_N) tiles of B, row-major

  const int tid = threadIdx.x;
  // This thread's results: acc[m][n] is element (thread_row + row_of(m), thread_col + col_of(n)) of
  // the block's C tile, where, as plain loops,
  //   for (im < SUBS_M) for (i < SUB_M):  m = im * SUB_M + i,  row_of(m) = im * SUB_STRIDE_M + i
  //   for (jn < SUBS_N) for (j < SUB_N):  n = jn * SUB_N + j,  col_of(n) = jn * SUB_STRIDE_N + j
  // Warps in a WARPS_M x WARPS_N grid, row-major; lanes in a LANES_M x LANES_N grid in z-order:
  // as plain loops, for (rh < LANES_M / 2) for (c < LANES_N) for (rl < 2), lane number
  // rh * 2 * LANES_N + c * 2 + rl gets (lane_row, lane_col) = (rh * 2 + rl, c). Lanes n and n^1
  // then share a column (same B addresses), n and n^2 a row (same A addresses).
  const int warp = tid / WARP_SIZE, lane = tid % WARP_SIZE;
  const int warp_row = warp / WARPS_N, warp_col = warp % WARPS_N;
  const int lane_row = (lane / (2 * LANES_N)) * 2 + lane % 2;
  const int lane_col = (lane / 2) % LANES_N;
  const int thread_row = warp_row * WARP_M + lane_row * SUB_M;
  const int thread_col = warp_col * WARP_N + lane_col * SUB_N;
  const int block_row = blockIdx.y * BLOCK_M;  // first row of C (and of A) of this block
  const int block_col = blockIdx.x * BLOCK_N;  // first column of C (and of B) of this block
  // This thread's share of the tile copy (see A_ROW_STEP above).
  const int a_row = tid / (BLOCK_K / VEC), a_col = (tid % (BLOCK_K / VEC)) * VEC;
  const int b_row = tid / (BLOCK_N / VEC), b_col = (tid % (BLOCK_N / VEC)) * VEC;

  // Bounds of the tile copy along M and N, settled once. Row i of A feeds only row i of C, and
  // column j of B only column j of C: rows past M and columns past N feed results the epilogue
  // never stores, so they need not read zeros, only memory that exists. The copy reads row
  // min(row, M - 1) of A instead, and (aligned path) the last float4 of B's rows instead of one
  // past N. The unaligned path reads B float by float and keeps the count of its columns that
  // exist (b_valid <= 0: none). Only K still needs zeros, in the last K step.
  int a_row_g[A_LOADS];
#pragma unroll
  for (int l = 0; l < A_LOADS; ++l) a_row_g[l] = min(block_row + a_row + l * A_ROW_STEP, M - 1);
  const int b_valid = N - (block_col + b_col);
  const int b_col_g = ALIGNED ? min(block_col + b_col, (N - 1) / VEC * VEC) : block_col + b_col;

  // Global-load stage: this thread's float4s of the tiles at K offset k0, into registers. Only a
  // K step that crosses K (k_tail) checks K: past it both tiles read zeros, so the math needs no
  // bounds checks (a zero adds nothing). Full K steps load with no check at all.
  float4 a_ldg[A_LOADS];
  float4 b_ldg[B_LOADS];
  auto load_tiles = [&](int k0, bool k_tail) {
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
      const int k = k0 + a_col;
      a_ldg[l] = load4<ALIGNED>(A, lda, a_row_g[l], k, k_tail ? K - k : VEC);
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
      const int k = k0 + b_row + l * B_ROW_STEP;
      const int cols = ALIGNED ? VEC : b_valid;
      b_ldg[l] = load4<ALIGNED>(B, ldb, k, b_col_g, (!k_tail || k < K) ? cols : 0);
    }
  };
  // Shared-store stage: those registers (loaded for K offset k0) into buffer `buf`.
  // k_tail, load_tiles and store_tiles are inlined with constant arguments, so each call site
  // compiles to straight-line code without the checks it does not need.
  auto store_tiles = [&](int buf, int k0, bool k_tail) {
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
      // Transpose on the way in: A[row][k .. k+3] goes down a column of the k-major tile.
      const int r = a_row + l * A_ROW_STEP;
      if (ALIGNED && k_tail) {  // floats past K read from the row's padding: zero them (B's rows
                                // there are 0, but padding may hold anything, NaN included)
        const int valid = K - (k0 + a_col);
        if (valid < 2) a_ldg[l].y = 0.0f;
        if (valid < 3) a_ldg[l].z = 0.0f;
        if (valid < 4) a_ldg[l].w = 0.0f;
      }
      As[buf][a_col + 0][r] = a_ldg[l].x;
      As[buf][a_col + 1][r] = a_ldg[l].y;
      As[buf][a_col + 2][r] = a_ldg[l].z;
      As[buf][a_col + 3][r] = a_ldg[l].w;
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
      *reinterpret_cast<float4*>(&Bs[buf][b_row + l * B_ROW_STEP][b_col]) = b_ldg[l];
    }
  };

  float acc[THREAD_M][THREAD_N] = {};  // registers: indexed only by unrolled loops
  float a_frag[THREAD_M];              // A[thread's rows][k]
  float b_frag[THREAD_N];              // B[k][thread's columns]

  // The math of one K step on buffer `buf`: for each k, fragments, then the outer product.
  auto compute_step = [&](int buf) {
#pragma unroll
    for (int k = 0; k < BLOCK_K; ++k) {
      // Fragments: SUBS_M + SUBS_N float4 shared loads, then THREAD_M * THREAD_N FMAs from registers.
#pragma unroll
      for (int im = 0; im < SUBS_M; ++im) {
        const float4 v = *reinterpret_cast<const float4*>(&As[buf][k][thread_row + im * SUB_STRIDE_M]);
        a_frag[im * SUB_M + 0] = v.x;
        a_frag[im * SUB_M + 1] = v.y;
        a_frag[im * SUB_M + 2] = v.z;
        a_frag[im * SUB_M + 3] = v.w;
      }
#pragma unroll
      for (int jn = 0; jn < SUBS_N; ++jn) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[buf][k][thread_col + jn * SUB_STRIDE_N]);
        b_frag[jn * SUB_N + 0] = v.x;
        b_frag[jn * SUB_N + 1] = v.y;
        b_frag[jn * SUB_N + 2] = v.z;
        b_frag[jn * SUB_N + 3] = v.w;
      }
      // The outer product a_frag x b_frag, in serpentine order down the columns: consecutive FMAs
      // share b_frag[n] along a column and a_frag[m] where one column turns into the next.
#pragma unroll
      for (int n = 0; n < THREAD_N; ++n) {
#pragma unroll
        for (int j = 0; j < THREAD_M; ++j) {
          const int m = (n % 2 == 0) ? j : THREAD_M - 1 - j;
          acc[m][n] += a_frag[m] * b_frag[n];
        }
      }
    }
  };

  // Prologue: the first K step goes straight through both stages into buffer 0.
  load_tiles(0, true);
  store_tiles(0, 0, true);
  __syncthreads();

  int buf = 0;  // the buffer holding the K step being computed
  // k0 is the NEXT K step's offset: BLOCK_K columns right in A, BLOCK_K rows down in B. The loop
  // runs while that step lies wholly inside K.
  int k0 = BLOCK_K;
  for (; k0 + BLOCK_K <= K; k0 += BLOCK_K) {
    load_tiles(k0, false);            // issue the next step's global loads; nothing waits for them...
    compute_step(buf);                // ...during the math on this step...
    store_tiles(buf ^ 1, k0, false);  // ...until they go into the other buffer, free since the last barrier
    // One barrier per K step: buf ^ 1 is complete before anyone computes on it, and everyone is done
    // reading buf before the next K step stores into it.
    __syncthreads();
    buf ^= 1;
  }
  if (k0 < K) {  // a last, partial K step (K % BLOCK_K != 0): the same, with K checked
    load_tiles(k0, true);
    compute_step(buf);
    store_tiles(buf ^ 1, k0, true);
    __syncthreads();
    buf ^= 1;
  }
  compute_step(buf);  // the last K step: nothing left to load

  // Epilogue, one float4 per sub-tile row. No early return above: every thread must reach the
  // barriers, even those outside C.
#pragma unroll
  for (int im = 0; im < SUBS_M; ++im) {
#pragma unroll
    for (int i = 0; i < SUB_M; ++i) {
      const int row = block_row + thread_row + im * SUB_STRIDE_M + i;
      if (row >= M) continue;
      const float* acc_row = acc[im * SUB_M + i];
#pragma unroll
      for (int jn = 0; jn < SUBS_N; ++jn) {
        const int col = block_col + thread_col + jn * SUB_STRIDE_N;
        const float* v4 = &acc_row[jn * SUB_N];
        const float4 v = make_float4(v4[0], v4[1], v4[2], v4[3]);
        store4<ALIGNED>(C, ldc, row, col, N - col, v, alpha, beta);
      }
    }
  }
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

inline void double_buffered_gemm(const tut::GemmProblem& p, const float* A, const float* B, float* C,
                          cudaStream_t stream) {
  const dim3 block(NUM_THREADS);
  // Columns in grid.x, rows in grid.y: at most 2^20 / BLOCK_M = 8192 rows of blocks (limit 65535).
  const dim3 grid(tut::ceil_div(p.n, BLOCK_N), tut::ceil_div(p.m, BLOCK_M));
  // float4 accesses need every row start 16-byte aligned: leading dimensions multiples of 4 and
  // aligned base pointers. Decided once per launch; the kernel is compiled for both answers.
  const bool aligned = p.lda % VEC == 0 && p.ldb % VEC == 0 && p.ldc % VEC == 0 && aligned16(A) && aligned16(B) &&
                       aligned16(C);
  const auto kernel = aligned ? double_buffered_gemm_kernel<true> : double_buffered_gemm_kernel<false>;
  kernel<<<grid, block, 0, stream>>>(p.m, p.n, p.k, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch09
