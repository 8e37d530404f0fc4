// Chapter 03: shared-memory tiling.
//
// What changed:  the block stages a (BLOCK_M, BLOCK_K) tile of A and a (BLOCK_K, BLOCK_N) tile of B in
//                shared memory, one element per thread, then runs the dot products out of shared
//                memory. The block is now a flat list of threads (blockDim.x only) and we choose the
//                2D mapping ourselves; consecutive threads still walk columns, as in chapter 02.
// Prediction:    1.3x to 2x over chapter 02, less than the drop in global loads suggests. Each
//                element of A and B is now fetched from global memory once per block instead of once
//                per thread that needs it: global loads per FMA go from 2 to 2/32. But chapter 02 was
//                already served mostly by L1, and the inner loop still issues 2 shared loads per FMA
//                (A[row][k] broadcast, B[k][col] one 128-byte row: 1 wavefront each). Shared memory
//                returns 128 bytes per cycle per SM, 1 wavefront, while the 4 schedulers could issue
//                4 FFMA per cycle: the ceiling is 1/8 of FP32 peak.
// Metric:        l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum falls ~32x (2 requests per FFMA
//                instruction become 2 per 32); l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
//                appears at ~2 per FFMA instruction.
// Assumes:       row-major A (lda >= k), B (ldb >= n), C (ldc >= n); any M, N, K >= 1.
#pragma once

#include "tut/gemm/harness.cuh"

namespace ch03 {

// Block tile of C (BLOCK_M x BLOCK_N, one result per thread) and the K step (BLOCK_K). A reader may
// try 16 x 16 x 16 (256 threads); the static_asserts keep the copy loops exact.
constexpr int BLOCK_M = 32;
constexpr int BLOCK_N = 32;
constexpr int BLOCK_K = 32;
constexpr int NUM_THREADS = BLOCK_M * BLOCK_N;  // one thread per element of the C tile
static_assert(NUM_THREADS <= 1024, "a block has at most 1024 threads");
static_assert(BLOCK_N % 32 == 0, "a warp must lie in one row of the C tile: keep BLOCK_N a multiple of 32");

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
__global__ void __launch_bounds__(NUM_THREADS) smem_gemm_kernel(int M, int N, int K, float alpha, const float* A,
                                                                int lda, const float* B, int ldb, float beta, float* C,
                                                                int ldc) {
  __shared__ float As[BLOCK_M][BLOCK_K];  // (BLOCK_M, BLOCK_K) tile of A, row-major like A
  __shared__ float Bs[BLOCK_K][BLOCK_N];  // (BLOCK_K, BLOCK_N) tile of B, row-major like B

  const int tid = threadIdx.x;
  // This thread's result: element (thread_row, thread_col) of the block's C tile.
  const int thread_row = tid / BLOCK_N;
  const int thread_col = tid % BLOCK_N;
  const int block_row = blockIdx.y * BLOCK_M;  // first row of C (and of A) of this block
  const int block_col = blockIdx.x * BLOCK_N;  // first column of C (and of B) of this block
  // This thread's share of the tile copy (see A_ROW_STEP above).
  const int a_row = tid / BLOCK_K, a_col = tid % BLOCK_K;
  const int b_row = tid / BLOCK_N, b_col = tid % BLOCK_N;

  float acc = 0.0f;
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
      acc += As[thread_row][k] * Bs[k][thread_col];  // As: one address per warp (broadcast); Bs: one row
    }
    __syncthreads();  // everyone is done reading before the next K step overwrites the tiles
  }

  // Epilogue. No early return above: every thread must reach the barriers, even those outside C.
  const int row = block_row + thread_row, col = block_col + thread_col;
  if (row < M && col < N) {
    float* c = &C[row * ldc + col];
    *c = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * *c;
  }
}

inline void smem_gemm(const tut::GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream) {
  const dim3 block(NUM_THREADS);
  // Columns in grid.x, rows in grid.y: at most 2^20 / BLOCK_M = 32768 rows of blocks (limit 65535).
  const dim3 grid(tut::ceil_div(p.n, BLOCK_N), tut::ceil_div(p.m, BLOCK_M));
  smem_gemm_kernel<<<grid, block, 0, stream>>>(p.m, p.n, p.k, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch03
