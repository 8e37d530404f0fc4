// Chapter 04: 1D register tiling.
//
// What changed:  each thread computes THREAD_M results stacked in one column of C instead of one.
//                In the inner loop it loads B[k][col] from shared memory once into a register and
//                uses it for all THREAD_M products. The block tile grows to 64 x 64 and the K step
//                shrinks to 8, so the tiles are still one element per thread (512 threads).
// Prediction:    2x to 3x over chapter 03. Per k step a warp now issues 1 shared load of B and
//                THREAD_M = 8 broadcast loads of A for 8 FFMA: 9 wavefronts per 8 FFMA instead of 2
//                per 1. At 1 wavefront per cycle per SM against 4 FFMA issue slots, the shared-memory
//                ceiling rises from 1/8 to 1/4.5 of FP32 peak, and the load instructions per FFMA
//                drop from 2 to 1.125.
// Metric:        l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum per FFMA instruction
//                (smsp__inst_executed_pipe_fma.sum): from ~2 to ~1.1.
// Assumes:       row-major A (lda >= k), B (ldb >= n), C (ldc >= n); any M, N, K >= 1.
#pragma once

#include "tut/gemm/harness.cuh"

namespace ch04 {

// Block tile of C (BLOCK_M x BLOCK_N), the K step (BLOCK_K) and the results per thread (THREAD_M,
// one column). A reader may try THREAD_M = 16, BLOCK_K = 16, or THREAD_M = 4 together with BLOCK_K = 16
// (1024 threads need a 64 x 16 tile of A to copy one element each); the static_asserts keep the copy
// loops exact.
constexpr int BLOCK_M = 64;
constexpr int BLOCK_N = 64;
constexpr int BLOCK_K = 8;
constexpr int THREAD_M = 8;
static_assert(BLOCK_M % THREAD_M == 0, "the threads of a column split BLOCK_M evenly");
constexpr int NUM_THREADS = (BLOCK_M / THREAD_M) * BLOCK_N;  // THREAD_M results per thread
static_assert(NUM_THREADS <= 1024, "a block has at most 1024 threads");
static_assert(BLOCK_N % 32 == 0, "a warp must lie in one row of threads: keep BLOCK_N a multiple of 32");

// The tile copy: thread tid copies elements (a_row + l * A_ROW_STEP, a_col), l < A_LOADS, of A's tile,
// and likewise for B; consecutive threads take consecutive columns (coalesced). Here that is one
// element of each tile per thread; later chapters need several.
static_assert(NUM_THREADS % BLOCK_K == 0 && NUM_THREADS % BLOCK_N == 0, "a pass of the copy covers whole rows");
constexpr int A_ROW_STEP = NUM_THREADS / BLOCK_K;  // rows of A's tile covered by one pass of all threads
constexpr int B_ROW_STEP = NUM_THREADS / BLOCK_N;
static_assert(BLOCK_M % A_ROW_STEP == 0 && BLOCK_K % B_ROW_STEP == 0, "the passes cover the tiles exactly");
constexpr int A_LOADS = BLOCK_M / A_ROW_STEP;
constexpr int B_LOADS = BLOCK_K / B_ROW_STEP;

// C = alpha * A * B + beta * C; with beta == 0, C is not read.
__global__ void __launch_bounds__(NUM_THREADS) blocktile_1d_gemm_kernel(int M, int N, int K, float alpha,
                                                                        const float* A, int lda, const float* B,
                                                                        int ldb, float beta, float* C, int ldc) {
  __shared__ float As[BLOCK_M][BLOCK_K];  // (BLOCK_M, BLOCK_K) tile of A, row-major like A
  __shared__ float Bs[BLOCK_K][BLOCK_N];  // (BLOCK_K, BLOCK_N) tile of B, row-major like B

  const int tid = threadIdx.x;
  // This thread's results: rows thread_row .. thread_row + THREAD_M - 1 of column thread_col of the
  // block's C tile. A warp spans 32 columns of one row of threads.
  const int thread_row = (tid / BLOCK_N) * THREAD_M;
  const int thread_col = tid % BLOCK_N;
  const int block_row = blockIdx.y * BLOCK_M;  // first row of C (and of A) of this block
  const int block_col = blockIdx.x * BLOCK_N;  // first column of C (and of B) of this block
  // This thread's share of the tile copy (see A_ROW_STEP above).
  const int a_row = tid / BLOCK_K, a_col = tid % BLOCK_K;
  const int b_row = tid / BLOCK_N, b_col = tid % BLOCK_N;

  float acc[THREAD_M] = {};  // registers: indexed only by unrolled loops
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
      const float b = Bs[k][thread_col];  // one shared load, reused THREAD_M times from a register
#pragma unroll
      for (int i = 0; i < THREAD_M; ++i) {
        acc[i] += As[thread_row + i][k] * b;  // As: one address per warp (broadcast)
      }
    }
    __syncthreads();  // everyone is done reading before the next K step overwrites the tiles
  }

  // Epilogue. No early return above: every thread must reach the barriers, even those outside C.
  const int col = block_col + thread_col;
#pragma unroll
  for (int i = 0; i < THREAD_M; ++i) {
    const int row = block_row + thread_row + i;
    if (row < M && col < N) {
      float* c = &C[row * ldc + col];
      *c = (beta == 0.0f) ? alpha * acc[i] : alpha * acc[i] + beta * *c;
    }
  }
}

inline void blocktile_1d_gemm(const tut::GemmProblem& p, const float* A, const float* B, float* C,
                              cudaStream_t stream) {
  const dim3 block(NUM_THREADS);
  // Columns in grid.x, rows in grid.y: at most 2^20 / BLOCK_M = 16384 rows of blocks (limit 65535).
  const dim3 grid(tut::ceil_div(p.n, BLOCK_N), tut::ceil_div(p.m, BLOCK_M));
  blocktile_1d_gemm_kernel<<<grid, block, 0, stream>>>(p.m, p.n, p.k, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch04
