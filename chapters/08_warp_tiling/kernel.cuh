// Chapter 08: warp tiling.
//
// What changed:  only the map from a thread to its results. The block's 8 warps form a 4 x 2 grid,
//                each owning a contiguous WARP_M x WARP_N = 32 x 64 warp tile; the 32 lanes of a
//                warp form a 4 x 8 grid in z-order (lanes 2i and 2i+1 stacked vertically), and a
//                thread's four 4 x 4 sub-tiles are now 16 rows / 32 columns apart, inside its warp
//                tile, instead of 64 / 64 apart across the whole block tile. And the order of
//                the 64 FMAs of the outer product: row m of the accumulators runs n forwards when m is
//                even and backwards when m is odd, so each FMA shares an operand register with the
//                one before it (a_frag[m] along a row, b_frag[n] at the turn), which the operand
//                reuse cache can serve instead of the register file.
// Prediction:    5% to 15% over chapter 07. A float4 shared load returns 512 bytes to a warp: 4
//                wavefronts at 128 bytes per cycle, or 2 when lane pairs (n, n^1) or (n, n^2) all
//                read identical addresses (NVIDIA documents this for sm_70 - sm_75; we assume sm_90
//                behaves alike, and the metric will tell). In chapter 07 only the A loads qualify
//                (both lanes of a pair sit in the same row of threads); the B loads, 16 lanes along
//                N, do not: 2 x 2 + 2 x 4 = 12 wavefronts per k and warp. In z-order, (n, n^1) share
//                a column (B qualifies) and (n, n^2) share a row (A qualifies): 8 wavefronts. At full
//                FMA rate an SM's 4 schedulers issue 4 x 64 FFMA per k in 64 cycles and need 48 of the
//                64 possible wavefronts in chapter 07 (a busy, contended pipe), 32 now. The warp
//                tile also shrinks what a warp reads per k from 36 distinct float4 to 24.
//                The FMA order adds nothing to count; whether the register file's banks were a
//                limit is what the dispatch stall and the SASS's .reuse flags will tell.
// Metric:        l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum: down ~33%;
//                smsp__average_warp_latency_issue_stalled_mio_throttle (or the "MIO Throttle" and
//                "Short Scoreboard" stall reasons in ncu's warp-state section) should fall;
//                ..._stalled_dispatch_stall_per_issue_active (register-bank conflicts among
//                others) should fall with the FMA order.
// Assumes:       row-major A (lda >= k), B (ldb >= n), C (ldc >= n); any M, N, K >= 1. Any leading
//                dimension and pointer work; the fast path needs them multiples of 4 / 16 bytes.
#pragma once

#include <cstdint>

#include "tut/gemm/harness.cuh"

namespace ch08 {

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
// `valid` floats exist (the caller folds the row check in: valid <= 0 means none). Missing floats
// read as 0. No branches: every load is predicated, so a warp never splits on the matrix edge.
// ALIGNED (ld % 4 == 0, col % 4 == 0, X 16-byte aligned): one 128-bit load whenever any of the four
// exist. Past the last column it reads up to 3 floats of the row's padding (a row is ld >= 4 *
// ceil(cols / 4) floats long, as BLAS defines the array), and zeroes them. Otherwise: one
// predicated scalar load per float. X is indexed only when valid > 0 (no int overflow).
template <bool ALIGNED>
__device__ __forceinline__ float4 load4(const float* X, int ld, int row, int col, int valid) {
  const float* p = X + (valid > 0 ? row * ld + col : 0);
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (ALIGNED) {
    if (valid > 0) v = *reinterpret_cast<const float4*>(p);
    if (valid < 2) v.y = 0.0f;
    if (valid < 3) v.z = 0.0f;
    if (valid < 4) v.w = 0.0f;
  } else {
    v.x = valid > 0 ? p[0] : 0.0f;
    v.y = valid > 1 ? p[1] : 0.0f;
    v.z = valid > 2 ? p[2] : 0.0f;
    v.w = valid > 3 ? p[3] : 0.0f;
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
    warptile_gemm_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                         float beta, float* C, int ldc) {
  __shared__ __align__(16) float As[BLOCK_K][BLOCK_M + A_PAD];  // (BLOCK_K, BLOCK_M) tile of A, k-major, padded
  __shared__ __align__(16) float Bs[BLOCK_K][BLOCK_N];  // (BLOCK_K, BLOCK_N) tile of B, row-major like B

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

  float acc[THREAD_M][THREAD_N] = {};  // registers: indexed only by unrolled loops
  float a_frag[THREAD_M];              // A[thread's rows][k]
  float b_frag[THREAD_N];              // B[k][thread's columns]
  for (int k0 = 0; k0 < K; k0 += BLOCK_K) {  // move BLOCK_K columns right in A, BLOCK_K rows down in B
    // Stage the tiles. Outside the matrices we store zeros, so the math below needs no bounds checks
    // (a zero adds nothing to a dot product).
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
      const int r = a_row + l * A_ROW_STEP;
      const int row = block_row + r, k = k0 + a_col;
      const float4 v = load4<ALIGNED>(A, lda, row, k, row < M ? K - k : 0);
      // Transpose on the way in: A[row][k .. k+3] goes down a column of the k-major tile.
      As[a_col + 0][r] = v.x;
      As[a_col + 1][r] = v.y;
      As[a_col + 2][r] = v.z;
      As[a_col + 3][r] = v.w;
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
      const int r = b_row + l * B_ROW_STEP;
      const int k = k0 + r, col = block_col + b_col;
      *reinterpret_cast<float4*>(&Bs[r][b_col]) = load4<ALIGNED>(B, ldb, k, col, k < K ? N - col : 0);
    }
    __syncthreads();  // the tiles are complete before anyone reads them

#pragma unroll
    for (int k = 0; k < BLOCK_K; ++k) {
      // Fragments: SUBS_M + SUBS_N float4 shared loads, then THREAD_M * THREAD_N FMAs from registers.
#pragma unroll
      for (int im = 0; im < SUBS_M; ++im) {
        const float4 v = *reinterpret_cast<const float4*>(&As[k][thread_row + im * SUB_STRIDE_M]);
        a_frag[im * SUB_M + 0] = v.x;
        a_frag[im * SUB_M + 1] = v.y;
        a_frag[im * SUB_M + 2] = v.z;
        a_frag[im * SUB_M + 3] = v.w;
      }
#pragma unroll
      for (int jn = 0; jn < SUBS_N; ++jn) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[k][thread_col + jn * SUB_STRIDE_N]);
        b_frag[jn * SUB_N + 0] = v.x;
        b_frag[jn * SUB_N + 1] = v.y;
        b_frag[jn * SUB_N + 2] = v.z;
        b_frag[jn * SUB_N + 3] = v.w;
      }
      // The outer product a_frag x b_frag, in serpentine order: consecutive FMAs share a_frag[m]
      // along a row and b_frag[n] where one row turns into the next.
#pragma unroll
      for (int m = 0; m < THREAD_M; ++m) {
#pragma unroll
        for (int j = 0; j < THREAD_N; ++j) {
          const int n = (m % 2 == 0) ? j : THREAD_N - 1 - j;
          acc[m][n] += a_frag[m] * b_frag[n];
        }
      }
    }
    __syncthreads();  // everyone is done reading before the next K step overwrites the tiles
  }

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

inline void warptile_gemm(const tut::GemmProblem& p, const float* A, const float* B, float* C,
                          cudaStream_t stream) {
  const dim3 block(NUM_THREADS);
  // Columns in grid.x, rows in grid.y: at most 2^20 / BLOCK_M = 8192 rows of blocks (limit 65535).
  const dim3 grid(tut::ceil_div(p.n, BLOCK_N), tut::ceil_div(p.m, BLOCK_M));
  // float4 accesses need every row start 16-byte aligned: leading dimensions multiples of 4 and
  // aligned base pointers. Decided once per launch; the kernel is compiled for both answers.
  const bool aligned = p.lda % VEC == 0 && p.ldb % VEC == 0 && p.ldc % VEC == 0 && aligned16(A) && aligned16(B) &&
                       aligned16(C);
  const auto kernel = aligned ? warptile_gemm_kernel<true> : warptile_gemm_kernel<false>;
  kernel<<<grid, block, 0, stream>>>(p.m, p.n, p.k, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch08
