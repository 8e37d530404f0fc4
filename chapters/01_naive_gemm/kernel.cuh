// Chapter 01: the naive SGEMM.
//
// What changed:  nothing yet; this is the starting point. One thread computes one element of C
//                as a dot product of a row of A and a column of B, read straight from global memory.
// Prediction:    far below both ceilings. Threads are numbered so that threadIdx.x walks the rows
//                of C: the 32 threads of a warp read 32 different rows of A (addresses K*4 bytes
//                apart, one 32-byte sector each for 4 useful bytes) and write 32 different rows of C.
//                Each thread also loads 2K floats for 2K FLOPs: 0.25 FLOP per loaded byte, so even
//                a perfect cache could not feed the FMA units.
// Metric:        global load sectors per request (~32 for A, 1 for B: all lanes share B[k][col]);
//                L1/L2 hit rates carry what performance there is.
// Assumes:       row-major A (lda >= k), B (ldb >= n), C (ldc >= n); any M, N, K >= 1.
#pragma once

#include "tut/gemm/harness.cuh"

namespace ch01 {

// Threads per block in x (rows of C) and y (columns of C). 32 x 32 = 1024 threads, the most a
// block may have. A reader may try 16 x 16 or 32 x 8: the access pattern, not the block, is the
// problem here.
constexpr int BLOCK_X = 32;
constexpr int BLOCK_Y = 32;
static_assert(BLOCK_X * BLOCK_Y <= 1024, "a block has at most 1024 threads");
static_assert(BLOCK_X % 32 == 0, "warps are formed along x; keep BLOCK_X a multiple of 32");

// C = alpha * A * B + beta * C; with beta == 0, C is not read.
__global__ void naive_gemm_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                                  int ldb, float beta, float* C, int ldc) {
  // x -> row, y -> column: consecutive lanes of a warp get consecutive ROWS (the strided mapping).
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= M || col >= N) return;  // the grid overhangs C when M or N is not a multiple of the block

  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    acc += A[row * lda + k] * B[k * ldb + col];  // lane i reads row (row0 + i) of A: stride lda
  }
  float* c = &C[row * ldc + col];
  *c = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * *c;
}

inline void naive_gemm(const tut::GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream) {
  const dim3 block(BLOCK_X, BLOCK_Y);
  const dim3 grid(tut::ceil_div(p.m, BLOCK_X), tut::ceil_div(p.n, BLOCK_Y));
  naive_gemm_kernel<<<grid, block, 0, stream>>>(p.m, p.n, p.k, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch01
