// Chapter 05: 2D register tiling.
//
// What changed:  each thread computes an 8 x 8 block of results (THREAD_M x THREAD_N) as a sum of
//                outer products: per k it loads THREAD_M values of A's column k and THREAD_N values
//                of B's row k into registers and does THREAD_M * THREAD_N FMAs with them. The block
//                tile grows to 128 x 128 x 16 with 256 threads, each copying 8 elements of each tile.
//                A thread's 8 x 8 is four 4 x 4 sub-tiles spaced 64 rows / 64 columns apart rather
//                than one contiguous block (see SUB_STRIDE_M below for why).
// Prediction:    about 2x over chapter 04. Per k a thread does 64 FMAs for 16 shared loads, 0.25
//                loads per FMA instead of 1.125. Those loads are not yet conflict-free: in a warp,
//                lanes tx and tx + 8 read B at addresses 32 floats apart, and the two rows of
//                threads read A at addresses 32 floats apart, so every load is 2-way conflicted:
//                32 wavefronts per 64 FFMA instructions, a shared-memory ceiling near 1/2 of FP32
//                peak (chapters 06 and 07 remove it). Global traffic per FMA halves again: a
//                128 x 128 tile reads (128 + 128) * 16 floats per 128 * 128 * 16 FMAs.
//                BLOCK_K = 16 rather than the classic 8: the same FMAs per K step of a thread
//                doubled for the same two barriers and the same loop overhead (measured: README).
// Metric:        smsp__inst_executed_pipe_lsu.sum per smsp__inst_executed_pipe_fma.sum: from ~1.1
//                to ~0.25; l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum now nonzero
//                (about as many conflict wavefronts as load wavefronts).
// Assumes:       row-major A (lda >= k), B (ldb >= n), C (ldc >= n); any M, N, K >= 1.
#pragma once

#include "tut/gemm/harness.cuh"

namespace ch05 {

// Block tile of C (BLOCK_M x BLOCK_N), the K step (BLOCK_K), the results per thread
// (THREAD_M x THREAD_N) and their sub-tiles (SUB_M x SUB_N). A reader may try BLOCK_K = 8, or
// THREAD_M = THREAD_N = 4 (1024 threads) together with MIN_BLOCKS_PER_SM = 1 (two blocks of 1024 threads
// leave 32 registers per thread, and the kernel spills); the static_asserts keep the copy loops exact.
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
// the same rows + 64, and likewise for columns. With this spacing the SUB_N values a thread needs
// from a row of B are adjacent (one float4 in chapter 06), and a warp's 16 lanes along N read B
// 4 floats apart (2-way bank conflict) instead of 8 apart (4-way) as one contiguous 8 x 8 would.
constexpr int SUBS_M = THREAD_M / SUB_M;
constexpr int SUBS_N = THREAD_N / SUB_N;
constexpr int SUB_STRIDE_M = THREADS_M * SUB_M;  // 64
constexpr int SUB_STRIDE_N = THREADS_N * SUB_N;  // 64

// The tile copy: thread tid copies elements (a_row + l * A_ROW_STEP, a_col), l < A_LOADS, of A's tile,
// and likewise for B; consecutive threads take consecutive columns (coalesced).
static_assert(NUM_THREADS % BLOCK_K == 0 && NUM_THREADS % BLOCK_N == 0, "a pass of the copy covers whole rows");
constexpr int A_ROW_STEP = NUM_THREADS / BLOCK_K;  // rows of A's tile covered by one pass of all threads
constexpr int B_ROW_STEP = NUM_THREADS / BLOCK_N;
static_assert(BLOCK_M % A_ROW_STEP == 0 && BLOCK_K % B_ROW_STEP == 0, "the passes cover the tiles exactly");
constexpr int A_LOADS = BLOCK_M / A_ROW_STEP;
constexpr int B_LOADS = BLOCK_K / B_ROW_STEP;

// C = alpha * A * B + beta * C; with beta == 0, C is not read.
__global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS_PER_SM)
    blocktile_2d_gemm_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                             float beta, float* C, int ldc) {
  __shared__ float As[BLOCK_M][BLOCK_K];  // (BLOCK_M, BLOCK_K) tile of A, row-major like A
  __shared__ float Bs[BLOCK_K][BLOCK_N];  // (BLOCK_K, BLOCK_N) tile of B, row-major like B

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
  const int a_row = tid / BLOCK_K, a_col = tid % BLOCK_K;
  const int b_row = tid / BLOCK_N, b_col = tid % BLOCK_N;

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
      As[r][a_col] = (row < M && k < K) ? A[row * lda + k] : 0.0f;
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
      const int r = b_row + l * B_ROW_STEP;
      const int k = k0 + r, col = block_col + b_col;
      Bs[r][b_col] = (k < K && col < N) ? B[k * ldb + col] : 0.0f;
    }
    __syncthreads();  // the tiles are complete before anyone reads them

#pragma unroll
    for (int k = 0; k < BLOCK_K; ++k) {
      // Fragments: THREAD_M + THREAD_N shared loads, then THREAD_M * THREAD_N FMAs from registers.
#pragma unroll
      for (int im = 0; im < SUBS_M; ++im) {
#pragma unroll
        for (int i = 0; i < SUB_M; ++i) a_frag[im * SUB_M + i] = As[thread_row + im * SUB_STRIDE_M + i][k];
      }
#pragma unroll
      for (int jn = 0; jn < SUBS_N; ++jn) {
#pragma unroll
        for (int j = 0; j < SUB_N; ++j) b_frag[jn * SUB_N + j] = Bs[k][thread_col + jn * SUB_STRIDE_N + j];
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

  // Epilogue. No early return above: every thread must reach the barriers, even those outside C.
#pragma unroll
  for (int im = 0; im < SUBS_M; ++im) {
#pragma unroll
    for (int i = 0; i < SUB_M; ++i) {
      const int row = block_row + thread_row + im * SUB_STRIDE_M + i;
      if (row >= M) continue;
#pragma unroll
      for (int jn = 0; jn < SUBS_N; ++jn) {
#pragma unroll
        for (int j = 0; j < SUB_N; ++j) {
          const int col = block_col + thread_col + jn * SUB_STRIDE_N + j;
          if (col >= N) continue;
          const float v = acc[im * SUB_M + i][jn * SUB_N + j];
          float* c = &C[row * ldc + col];
          *c = (beta == 0.0f) ? alpha * v : alpha * v + beta * *c;
        }
      }
    }
  }
}

inline void blocktile_2d_gemm(const tut::GemmProblem& p, const float* A, const float* B, float* C,
                              cudaStream_t stream) {
  const dim3 block(NUM_THREADS);
  // Columns in grid.x, rows in grid.y: at most 2^20 / BLOCK_M = 8192 rows of blocks (limit 65535).
  const dim3 grid(tut::ceil_div(p.n, BLOCK_N), tut::ceil_div(p.m, BLOCK_M));
  blocktile_2d_gemm_kernel<<<grid, block, 0, stream>>>(p.m, p.n, p.k, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch05
