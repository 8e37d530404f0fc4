// Chapter 29: SpMM, row per thread.
//
// What changed:  the second piece of the GCN layer, Y = A_hat Z (Z = X W, V x F_out), on its own.
//                A_hat is the V x V CSR matrix of tut/gcn/graph.hpp, one row per target node, every
//                row holding at least its diagonal. The obvious mapping: thread r owns row r, walks
//                its entries in stored order and, for each entry (j, a), adds a * Z[j][0..15] into
//                F_OUT = 16 accumulators in registers, which it stores once at the end. As a plain
//                loop: for r: for k in [indptr[r], indptr[r+1]): y[r][:] += values[k] * z[indices[k]][:].
// Prediction:    far slower than cuSPARSE, for two reasons. (1) The loads are uncoalesced: at each
//                step the 32 lanes of a warp read indices[k] and values[k] of 32 different rows, and
//                16 loads of 8 bytes each from 32 different rows of Z: a sector per active lane and
//                request, 8 bytes used of each 32-byte sector per load. (2) The tail. The default graph's
//                in-degree is a power law: 52% of the rows hold only their diagonal, the mean is 9.2
//                entries per row, the longest row 9782. A warp runs as many iterations as its
//                longest row: summed over the 8810 warps that is 1,310,181 iterations for 2,594,400
//                entries, 6.2% of the lanes busy on average. And the warp that holds the 9782-entry
//                row runs 9782 iterations alone, each waiting for an index (an L1 hit) and then a row
//                of Z (an L2 or DRAM round trip, some 300 to 600 cycles): 9782 * 300..600 cycles at 1.98 GHz
//                = 1.5 to 3.0 ms, while everything else is done early (the 8809 other warps, at most
//                3982 iterations each, run side by side). So: milliseconds, 1% to 2% of the copy
//                bandwidth (the 104.4 MB floor is 35 us), an order of magnitude or more behind
//                cuSPARSE, and the time is set by one row.
// Metric:        sm__cycles_active.avg.pct_of_peak_sustained_elapsed: a few % (for most of the run
//                131 of the 132 SMs have nothing to do); smsp__thread_inst_executed_per_inst_executed.ratio
//                (lanes active per warp instruction) about 32 * 0.062 = 2; global load requests
//                l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum about 1,310,181 warp iterations * 18
//                (an index, a value, 16 doubles of Z) = 23.6 M, each touching one sector per active lane.
// Assumes:       F_out = 16 (refuses others: the accumulators are a compile-time array); A_hat in
//                CSR with int indices (nnz < 2^31), column indices < V; Z and out V x 16, row-major,
//                packed, not overlapping; any V >= 1. Rows of any length, including 0 (stores zeros).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "tut/gcn/harness.cuh"

namespace ch29 {

// Features per row of Z and of the output: the accumulators are an array of this size, indexed by
// constants after unrolling, so they live in registers. Other F_out values are refused.
constexpr int F_OUT = 16;

// Threads per block, one row each. A reader may try 64 or 1024: the tail does not move.
constexpr int NUM_THREADS = 256;
static_assert(NUM_THREADS % 32 == 0 && NUM_THREADS <= 1024, "whole warps, at most 1024 threads");

// The one place a finished row leaves the kernel: F_OUT values of row `row`. A fused epilogue (bias,
// log_softmax: chapter 32) would transform `acc` here, before the store.
__device__ __forceinline__ void store_row(double* __restrict__ out, long long row, const double (&acc)[F_OUT]) {
  double* o = out + row * F_OUT;
#pragma unroll
  for (int c = 0; c < F_OUT; ++c) o[c] = acc[c];
}

// out = A_hat z, thread r computing row r. The entries of a row are visited in stored (ascending
// column) order, so each output is summed in the CPU reference's order.
__global__ void __launch_bounds__(NUM_THREADS)
    spmm_row_per_thread_kernel(int v, const int* __restrict__ indptr, const int* __restrict__ indices,
                               const double* __restrict__ values, const double* __restrict__ z,
                               double* __restrict__ out) {
  const long long row = static_cast<long long>(blockIdx.x) * NUM_THREADS + threadIdx.x;
  if (row >= v) return;

  double acc[F_OUT];
#pragma unroll
  for (int c = 0; c < F_OUT; ++c) acc[c] = 0.0;

  // Lane r of a warp reads row r's entries: 32 rows, 32 unrelated places in indices and values.
  const int begin = indptr[row], end = indptr[row + 1];
  for (int k = begin; k < end; ++k) {
    const int j = indices[k];
    const double a = values[k];
    const double* zj = z + static_cast<std::size_t>(j) * F_OUT;  // row j of Z: 128 bytes, gathered
#pragma unroll
    for (int c = 0; c < F_OUT; ++c) acc[c] += a * zj[c];
  }
  store_row(out, row, acc);
}

// One line for a size this step does not run, or nullptr.
inline const char* refuses(const tut::GcnProblem& p) {
  if (p.f_out != F_OUT) return "F_out must be 16 (valid: --out 16)";
  return nullptr;
}

// The launcher: ceil(V / 256) blocks of 256 threads (1102 on the default graph; V < 2^31 gives at
// most 2^23 blocks, far under grid.x's limit).
inline void spmm_row_per_thread(const tut::GcnProblem& p, const tut::GcnArgs& a, cudaStream_t stream) {
  if (p.v == 0) return;  // nothing to compute, and a grid of 0 blocks is a launch error
  const unsigned blocks = static_cast<unsigned>(tut::ceil_div<long long>(p.v, NUM_THREADS));
  spmm_row_per_thread_kernel<<<blocks, NUM_THREADS, 0, stream>>>(p.v, a.a.indptr, a.a.indices, a.a.values, a.z,
                                                                 a.out);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch29
