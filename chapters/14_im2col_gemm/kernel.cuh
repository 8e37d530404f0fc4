// Chapter 14: im2col + GEMM.
//
// What changed:  the convolution becomes a matrix product that Part I already solves. Three kernels
//                instead of one: (1) im2col writes the column matrix X_col (C*R*S rows, N*P*Q
//                columns, row-major) into the workspace: row kk = (c*R + r)*S + s, column
//                j = (n*P + p)*Q + q holds the input pixel that filter tap kk meets at output pixel
//                j, or 0 in the padding; (2) chapter 09's double-buffered GEMM, included, not
//                copied, computes Y' = W * X_col (K x N*P*Q) into a second part of the workspace,
//                with the filter as it lies in memory as W (K x C*R*S, row-major); (3) a permute
//                writes y[n][k][p][q] = Y'[k][(n*P + p)*Q + q]. The workspace holds X_col, R*S
//                times the input at stride 1, and Y', the output again (workspace_bytes below).
// Prediction:    10x to 15x faster than chapter 13 on the 3x3 layers. The FLOPs now run at GEMM
//                speed: M = K, N = N*P*Q, K = C*R*S is a well-shaped GEMM (seed_3x3: 128 x 401408
//                x 576, one row of 3136 tiles of 128 x 128, 12 waves of two blocks on 132 SMs):
//                59.2 GFLOP at three quarters of the FP32 peak is 1.2 ms. The price is traffic the
//                convolution never needs: X_col written and read back (2 x 882 MiB for seed_3x3),
//                Y' written and read back (2 x 196 MiB), 2450 MiB in all against the 294 MiB of
//                x, w and y. im2col and the permute move 1372 MiB of it, at least 0.43 ms at the
//                DRAM's 3.35 TB/s, with nothing to overlap: a quarter to a third of the time.
// Metric:        per kernel (nsys or ncu's per-launch rows): im2col and the permute at
//                dram__throughput.avg.pct_of_peak_sustained_elapsed near 90%; the GEMM with
//                sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active near chapter 09's;
//                dram__bytes.sum over the three about 8x the step's min_bytes.
// Assumes:       NCHW x, KCRS w, NKPQ y, packed; any problem the harness accepts (padding,
//                stride, dilation) whose X_col has fewer than 2^31 elements (workspace_bytes
//                refuses others: the GEMM indexes with int). The workspace starts 256-byte
//                aligned (cudaMalloc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "../09_double_buffering/kernel.cuh"  // ch09::double_buffered_gemm, used as it is
#include "tut/conv/harness.cuh"
#include "tut/core/args.hpp"  // tut::ArgError

namespace ch14 {

// Threads per block of the two copy kernels. Any multiple of 32 up to 1024 works: both are plain
// streams through memory, one element (permute) or one filter window (im2col) per thread.
constexpr int IM2COL_THREADS = 256;
constexpr int PERMUTE_THREADS = 256;
static_assert(IM2COL_THREADS % 32 == 0 && IM2COL_THREADS <= 1024, "whole warps, at most 1024 threads");
static_assert(PERMUTE_THREADS % 32 == 0 && PERMUTE_THREADS <= 1024, "whole warps, at most 1024 threads");
// Each buffer of the workspace starts on this boundary (bytes): chapter 09's float4 path needs 16,
// and 256 keeps every row start of a matrix whose row length is a multiple of 64 floats on its own
// 128-byte line.
constexpr std::size_t WORKSPACE_ALIGN = 256;
static_assert(WORKSPACE_ALIGN % 16 == 0, "float4 accesses need 16-byte aligned buffers");
// The Part I GEMM indexes its matrices with int.
constexpr std::int64_t MAX_GEMM_ELEMS = std::int64_t(1) << 31;

// Bytes of X_col (C*R*S x N*P*Q floats), rounded up to WORKSPACE_ALIGN: Y' starts right after.
inline std::size_t x_col_bytes(const tut::ConvProblem& cp) {
  const std::size_t bytes = sizeof(float) * std::size_t(cp.gemm_k()) * std::size_t(cp.gemm_n());
  return tut::ceil_div(bytes, WORKSPACE_ALIGN) * WORKSPACE_ALIGN;
}

// The workspace this step needs: X_col, then Y' (K x N*P*Q floats). The harness allocates it,
// reports its size and passes it as ConvArgs::workspace. Throws tut::ArgError (exit code 2) when
// either matrix would be too large for the GEMM's int indexing.
inline std::size_t workspace_bytes(const tut::ConvProblem& cp) {
  const std::int64_t col_elems = std::int64_t(cp.gemm_k()) * cp.gemm_n();
  const std::int64_t y_gemm_elems = std::int64_t(cp.gemm_m()) * cp.gemm_n();
  if (col_elems >= MAX_GEMM_ELEMS) {
    throw tut::ArgError("--layer/--shape: im2col's column matrix would have " + std::to_string(col_elems) +
                        " elements (valid: fewer than 2^31 for this step)");
  }
  if (y_gemm_elems >= MAX_GEMM_ELEMS) {  // the harness already keeps y, of the same size, below 2^31
    throw tut::ArgError("--layer/--shape: the GEMM's output would have " + std::to_string(y_gemm_elems) +
                        " elements (valid: fewer than 2^31 for this step)");
  }
  const std::size_t y_gemm_bytes = sizeof(float) * std::size_t(y_gemm_elems);
  return x_col_bytes(cp) + tut::ceil_div(y_gemm_bytes, WORKSPACE_ALIGN) * WORKSPACE_ALIGN;
}

// X_col[kk][j] = x at the pixel that tap kk = (c*R + r)*S + s meets at output pixel
// j = (n*P + p)*Q + q, or 0 in the padding. One thread per (c, j): it finds its output pixel once
// and writes the R*S rows of channel c in column j. As plain loops:
//   for (c < C) for (j < N*P*Q) for (r < R) for (s < S)  X_col[(c*R + r)*S + s][j] = X_col(kk, j)
__global__ void __launch_bounds__(IM2COL_THREADS) im2col_kernel(tut::ConvProblem cp, const float* x, float* x_col) {
  const int gemm_n = cp.gemm_n();  // N*P*Q: the columns of X_col
  const std::int64_t flat = std::int64_t(blockIdx.x) * IM2COL_THREADS + threadIdx.x;
  if (flat >= std::int64_t(cp.c) * gemm_n) return;  // the grid overhangs the C x N*P*Q windows
  const int idx = static_cast<int>(flat);           // < C*N*P*Q <= the elements of X_col < 2^31
  // Consecutive lanes, consecutive j: the writes below are coalesced, and so (stride 1) are the reads.
  const int c = idx / gemm_n;
  const int j = idx - c * gemm_n;
  const tut::OutCoord o = tut::out_coord(cp, j);
  const float* x_nc = x + (o.n * cp.c + c) * cp.h * cp.w;  // the (H, W) plane of image n, channel c
  float* col = x_col + c * cp.r * cp.s * gemm_n + j;       // X_col[c*R*S][j]: row kk is kk*N*P*Q further
  for (int r = 0; r < cp.r; ++r) {
    const int ih = tut::in_row(cp, o.p, r);
    const bool row_inside = ih >= 0 && ih < cp.h;
    for (int s = 0; s < cp.s; ++s) {
      const int iw = tut::in_col(cp, o.q, s);
      *col = (row_inside && iw >= 0 && iw < cp.w) ? x_nc[ih * cp.w + iw] : 0.0f;  // the padding is stored as 0
      col += gemm_n;  // next row of X_col
    }
  }
}

// y[n][k][p][q] = Y'[k][(n*P + p)*Q + q]. One thread per element of y, numbered as y lies in
// memory. Within one (n, k) the P*Q elements are contiguous on both sides (a row segment of Y'),
// so reads and writes are both coalesced; only a warp that straddles two (n, k) planes splits.
__global__ void __launch_bounds__(PERMUTE_THREADS) permute_kernel(tut::ConvProblem cp, const float* y_gemm, float* y) {
  const int pq = cp.p * cp.q;
  const std::int64_t flat = std::int64_t(blockIdx.x) * PERMUTE_THREADS + threadIdx.x;
  if (flat >= std::int64_t(cp.n) * cp.k * pq) return;
  const int idx = static_cast<int>(flat);  // < the elements of y < 2^31
  // As plain loops, for (n < N) for (k < K) for (i < P*Q) idx = (n*K + k)*P*Q + i.
  const int i = idx % pq;
  const int nk = idx / pq;
  const int k = nk % cp.k;
  const int n = nk / cp.k;
  y[idx] = y_gemm[k * cp.gemm_n() + n * pq + i];
}

inline void im2col_gemm_conv(const tut::ConvProblem& cp, const tut::ConvArgs& a, cudaStream_t stream) {
  float* x_col = static_cast<float*>(a.workspace);            // (C*R*S, N*P*Q), row-major
  float* y_gemm = x_col + x_col_bytes(cp) / sizeof(float);    // (K, N*P*Q), row-major, WORKSPACE_ALIGN-aligned

  // (1) im2col: one thread per (c, j); C*N*P*Q < 2^31 threads, so grid.x (limit 2^31 - 1) fits.
  const std::int64_t windows = std::int64_t(cp.c) * cp.gemm_n();
  im2col_kernel<<<static_cast<unsigned>(tut::ceil_div<std::int64_t>(windows, IM2COL_THREADS)), IM2COL_THREADS, 0,
                  stream>>>(cp, a.x, x_col);
  TUT_CHECK_LAUNCH();

  // (2) Y' = W * X_col: M = K, N = N*P*Q, K = C*R*S, all packed (lda = C*R*S, ldb = ldc = N*P*Q).
  // The launcher checks its own launch.
  const tut::GemmProblem gemm = tut::GemmProblem::packed(cp.gemm_m(), cp.gemm_n(), cp.gemm_k(), 1.0f, 0.0f);
  ch09::double_buffered_gemm(gemm, a.w, x_col, y_gemm, stream);

  // (3) the permute back to NKPQ.
  permute_kernel<<<static_cast<unsigned>(tut::ceil_div<std::int64_t>(cp.y_elems(), PERMUTE_THREADS)),
                   PERMUTE_THREADS, 0, stream>>>(cp, y_gemm, a.y);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch14
