// Chapter 02: global-memory coalescing.
//
// What changed:  the thread mapping of chapter 01, swapped: threadIdx.x now walks the COLUMNS of C
//                and threadIdx.y the rows. Nothing else; each thread still computes one element.
// Prediction:    several times faster (5x to 10x). Per k step, a warp of chapter 01 touched 32
//                sectors of A (one per row, 4 useful bytes in each 32) and 1 of B; now all 32 lanes
//                share one A[row][k] (1 sector, broadcast) and read 32 consecutive floats of B's row
//                k (128 bytes, 4 sectors, all useful): 33 sectors become 5. The stores of C become
//                one 128-byte line per warp instead of 32 scattered ones. Still 2 loads per FMA
//                (0.25 FLOP per loaded byte): the loads now hit L1, and L1 bandwidth is the ceiling.
// Metric:        sectors per request, l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum divided by
//                l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum: from ~16.5 (33 sectors over the
//                A and B requests) to ~2.5 (5 over 2).
// Assumes:       row-major A (lda >= k), B (ldb >= n), C (ldc >= n); any M, N, K >= 1.
#pragma once

#include "tut/gemm/harness.cuh"

namespace ch02 {

// Threads per block in x (columns of C) and y (rows of C). 32 x 32 = 1024 threads, the most a
// block may have. A reader may try 64 x 4 or 32 x 8: what matters is that a warp (32 consecutive
// threadIdx.x) lies along a row of C.
constexpr int BLOCK_X = 32;
constexpr int BLOCK_Y = 32;
static_assert(BLOCK_X * BLOCK_Y <= 1024, "a block has at most 1024 threads");
static_assert(BLOCK_X % 32 == 0, "warps are formed along x; keep BLOCK_X a multiple of 32");

// C = alpha * A * B + beta * C; with beta == 0, C is not read.
__global__ void coalesced_gemm_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                                      int ldb, float beta, float* C, int ldc) {
  // x -> column, y -> row: consecutive lanes of a warp get consecutive COLUMNS (the coalesced mapping).
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;  // the grid overhangs C when M or N is not a multiple of the block

  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    acc += A[row * lda + k] * B[k * ldb + col];  // lane i reads B[k][col0 + i]: consecutive; A[row][k]: one address
  }
  float* c = &C[row * ldc + col];
  *c = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * *c;
}

inline void coalesced_gemm(const tut::GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream) {
  const dim3 block(BLOCK_X, BLOCK_Y);
  // Columns in grid.x, rows in grid.y: at most 2^20 / BLOCK_Y = 32768 rows of blocks (limit 65535).
  const dim3 grid(tut::ceil_div(p.n, BLOCK_X), tut::ceil_div(p.m, BLOCK_Y));
  coalesced_gemm_kernel<<<grid, block, 0, stream>>>(p.m, p.n, p.k, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch02
