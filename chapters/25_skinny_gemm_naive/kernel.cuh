// Chapter 25: skinny GEMM, naive.
//
// What changed:  the first step of Part III: H = X W, X of V x F_in doubles (V = 281903, F_in = 128),
//                W of F_in x F_out (F_out = 16), both row-major. One thread per row r of X computes
//                the F_out values of row r of H, the plain triple loop with the reduction innermost:
//                for each column j, out[r][j] = 0, then out[r][j] += X[r][k] * W[k][j] for k = 0 ..
//                F_in - 1, the sum kept in global memory, not in a register. The pointers carry no
//                __restrict__, so the compiler must assume that a store to out may change X or W:
//                every step stores the running sum (it forwards the stored value rather than reading
//                it back, but it must store it), and no load of a later step may move above that
//                store. That read-modify-write in global memory is the point of the step.
// Prediction:    milliseconds: 2 to 5 ms on the default problem, 20 to 50 times the memory floor
//                (X read once and H written once, 324.8 MB, 0.108 ms at 3.0 TB/s). Per thread,
//                F_in * F_out = 2048 steps of: load X[r][k], load W[k][j], DFMA, store out[r][j];
//                the next step's loads are issued only after the store (they might alias it), and
//                its DFMA waits for them. A warp's load of X touches 32 rows 1 KB apart (32 sectors,
//                8 bytes used of each), its store 32 rows 128 bytes apart (32 sectors): 18.0 M warp
//                stores, 577 M sectors of 8-byte partial writes to L2, where H needs 1.1 M. And j is
//                the outer loop: each thread sweeps its 1 KB row of X 16 times. 270,336 threads fit
//                on the GPU at once (2048 per SM), 96% of the rows, so each sweep of j streams nearly
//                all of X (288.6 MB, against a 50 MB L2) again: up to 16 * 288.6 MB = 4.6 GB of DRAM
//                reads, 1.5 ms at 3.0 TB/s, on top of the L1 and L2 work of the scattered stores.
// Metric:        l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum / l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
//                = 32 (581.8 M sectors in 18.2 M requests, the zeroing stores included);
//                l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / ..._requests_... = 16.5 (32 for X,
//                1 for W: a broadcast); dram__bytes_read.sum several GB, up to 4.6 GB; stall reason:
//                smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio.
// Assumes:       any V >= 0, F_in >= 1, F_out >= 1 with V x F_in and V x F_out below 2^31 elements
//                (the harness checks); out does not overlap X or W (the compiler cannot know it,
//                which is what makes the step slow, but the results assume it).
#pragma once

#include <cstddef>

#include "tut/gcn/harness.cuh"

namespace ch25 {

// Threads per block: one row of X per thread. A reader may try 128 or 512.
constexpr int BLOCK_THREADS = 256;
static_assert(BLOCK_THREADS % 32 == 0 && BLOCK_THREADS <= 1024, "whole warps, at most 1024 threads");

// out = x * w, one thread per row of x. As plain loops, for each row r:
//   for (j < f_out) { out[r][j] = 0; for (k < f_in) out[r][j] += x[r][k] * w[k][j]; }
__global__ void __launch_bounds__(BLOCK_THREADS)
    xw_naive_kernel(const double* x, const double* w, double* out, int v, int f_in, int f_out) {
  const long long r = static_cast<long long>(blockIdx.x) * BLOCK_THREADS + threadIdx.x;
  if (r >= v) return;  // the last block overhangs V
  const double* x_row = x + static_cast<std::size_t>(r) * f_in;   // row r of X: f_in doubles
  double* out_row = out + static_cast<std::size_t>(r) * f_out;    // row r of H: f_out doubles
  for (int j = 0; j < f_out; ++j) {
    out_row[j] = 0.0;  // out is poisoned (NaN) before a checked run: start from zero
    for (int k = 0; k < f_in; ++k) {
      out_row[j] += x_row[k] * w[static_cast<std::size_t>(k) * f_out + j];  // sum in global memory
    }
  }
}

// Every size runs: one thread per row, any F_in and F_out.
inline const char* refuses(const tut::GcnProblem&) { return nullptr; }

inline void xw_naive(const tut::GcnProblem& p, const tut::GcnArgs& a, cudaStream_t stream) {
  if (p.v == 0) return;  // no rows, and a grid of 0 blocks is a launch error
  // V < 2^31 rows, 256 per block: at most 2^23 blocks, far under grid.x's 2^31 - 1.
  const unsigned blocks = static_cast<unsigned>(tut::ceil_div(static_cast<long long>(p.v), 
                                                              static_cast<long long>(BLOCK_THREADS)));
  xw_naive_kernel<<<blocks, BLOCK_THREADS, 0, stream>>>(a.x, a.w, a.out, p.v, p.f_in, p.f_out);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch25
