// Chapter 07: bank-conflict padding.
//
// What changed:  each row of the k-major A tile in shared memory is padded from BLOCK_M = 128 to
//                BLOCK_M + A_PAD = 132 floats. Nothing else.
// Prediction:    a few percent at most; the point is to see the conflict counter go to zero. In
//                chapter 06 a warp's transposed store As[a_col + c][r] has 16 consecutive rows r
//                and two values of a_col (0 and 4) whose addresses are 4 * 128 floats apart: the
//                same bank, so every one of the 4 scalar stores per tile is 2-way conflicted.
//                With rows of 132 floats the a_col = 4 half moves 4 * 132 = 528 = 16 (mod 32) banks
//                away and the 32 lanes hit 32 distinct banks. That saves 4 of the ~108 shared-memory
//                wavefronts a warp spends per K step (8 k x 12 for loads; 8 + 4 for the stores of A
//                and B, which become 4 + 4).
//                132 keeps every row 16-byte aligned (528 bytes), so the float4 loads of the inner
//                loop stay legal and stay conflict-free.
// Metric:        l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum: to ~0;
//                l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum: down ~33% (12 -> 8 per warp
//                and K step).
// Note:          the arithmetic above is that of BLOCK_K = 8. With BLOCK_K = 16 a warp's store has 8 rows
//                and a_col = 0, 4, 8, 12: 4-way conflicted with 128 floats per row, 2-way with 132 (rows
//                8 apart are 8 * 132 = 1056 = 0 (mod 32) banks apart); per warp and K step 40 -> 24
//                store wavefronts. No padding that keeps rows 16-byte aligned does better (README).
// Assumes:       row-major A (lda >= k), B (ldb >= n), C (ldc >= n); any M, N, K >= 1. Any leading
//                dimension and pointer work; the fast path needs them multiples of 4 / 16 bytes.
#pragma once

#include <cstdint>

#include "tut/gemm/harness.cuh"

namespace ch07 {

// Block tile of C (BLOCK_M x BLOCK_N), the K step (BLOCK_K), the results per thread
// (THREAD_M x THREAD_N) and their sub-tiles (SUB_M x SUB_N). A reader may try BLOCK_K = 8; the
// static_asserts keep the copy loops exact.
constexpr int BLOCK_M = 128;
constexpr int BLOCK_N = 128;
constexpr int BLOCK_K = 16;
constexpr int THREAD_M = 8;
constexpr int THREAD_N = 8;
constexpr int SUB_M = 4;
constexpr int SUB_N = 4;
static_assert(BLOCK_M % THREAD_M == 0 && BLOCK_N % THREAD_N == 0, "the threads split the block tile evenly");
static_assert(THREAD_M % SUB_M == 0 && THREAD_N % SUB_N == 0, "a thread's results are whole sub-tiles");
constexpr int THREADS_M = BLOCK_M / THREAD_M;       // 16 rows of threads
constexpr int THREADS_N = BLOCK_N / THREAD_N;       // 16 columns of threads
constexpr int NUM_THREADS = THREADS_M * THREADS_N;  // 256
static_assert(NUM_THREADS <= 1024, "a block has at most 1024 threads");
// Registers: THREAD_M * THREAD_N accumulators + fragments must fit in 65536 / (NUM_THREADS *
// MIN_BLOCKS_PER_SM) = 128 registers per thread, or the kernel spills.
constexpr int MIN_BLOCKS_PER_SM = 2;
// A thread's sub-tiles: SUBS_M x SUBS_N of them, SUB_STRIDE_M rows and SUB_STRIDE_N columns apart.
// Thread (ty, tx) of the THREADS_M x THREADS_N grid owns block-tile rows ty*SUB_M .. ty*SUB_M+3 and
// the same rows + 64, and likewise for columns. With this spacing the SUB_M values a thread needs
// from a row of the k-major A tile, and the SUB_N from a row of B, are one float4 each.
constexpr int SUBS_M = THREAD_M / SUB_M;
constexpr int SUBS_N = THREAD_N / SUB_N;
constexpr int SUB_STRIDE_M = THREADS_M * SUB_M;  // 64
constexpr int SUB_STRIDE_N = THREADS_N * SUB_N;  // 64

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
    padded_gemm_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                       float beta, float* C, int ldc) {
  __shared__ __align__(16) float As[BLOCK_K][BLOCK_M + A_PAD];  // (BLOCK_K, BLOCK_M) tile of A, k-major, padded
  __shared__ __align__(16) float Bs[BLOCK_K][BLOCK_N];  // (BLOCK_K, BLOCK_N) tile of B, row-major like B

  const int tid = threadIdx.x;
  // This thread's results: acc[m][n] is element (thread_row + row_of(m), thread_col + col_of(n)) of
  // the block's C tile, where, as plain loops,
  //   for (im < SUBS_M) for (i < SUB_M):  m = im * SUB_M + i,  row_of(m) = im * SUB_STRIDE_M + i
  //   for (jn < SUBS_N) for (j < SUB_N):  n = jn * SUB_N + j,  col_of(n) = jn * SUB_STRIDE_N + j
  const int thread_row = (tid / THREADS_N) * SUB_M;
  const int thread_col = (tid % THREADS_N) * SUB_N;
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
      // The outer product a_frag x b_frag.
#pragma unroll
      for (int m = 0; m < THREAD_M; ++m) {
#pragma unroll
        for (int n = 0; n < THREAD_N; ++n) acc[m][n] += a_frag[m] * b_frag[n];
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

inline void padded_gemm(const tut::GemmProblem& p, const float* A, const float* B, float* C,
                        cudaStream_t stream) {
  const dim3 block(NUM_THREADS);
  // Columns in grid.x, rows in grid.y: at most 2^20 / BLOCK_M = 8192 rows of blocks (limit 65535).
  const dim3 grid(tut::ceil_div(p.n, BLOCK_N), tut::ceil_div(p.m, BLOCK_M));
  // float4 accesses need every row start 16-byte aligned: leading dimensions multiples of 4 and
  // aligned base pointers. Decided once per launch; the kernel is compiled for both answers.
  const bool aligned = p.lda % VEC == 0 && p.ldb % VEC == 0 && p.ldc % VEC == 0 && aligned16(A) && aligned16(B) &&
                       aligned16(C);
  const auto kernel = aligned ? padded_gemm_kernel<true> : padded_gemm_kernel<false>;
  kernel<<<grid, block, 0, stream>>>(p.m, p.n, p.k, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch07
