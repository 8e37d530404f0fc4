// Chapter 31: LogSoftmax.
//
// What changed:  the third piece of the GCN layer, out = log_softmax(Z) row by row, on its own
//                (no bias: chapter 32 adds it). Per row of F values, the stable form:
//                  m = max_c z_c,  s = sum_c exp(z_c - m),  out_c = (z_c - m) - log(s).
//                Against the naive mapping, one thread per row (the harness's second baseline), a
//                row is owned by a lane group of GROUP lanes (the next power of two >= F, at most
//                32), one value per lane: for F = 16 a warp holds two rows, and each of its loads
//                and stores is the two rows' 256 contiguous bytes. The max and the sum are
//                butterfly reductions with __shfl_xor_sync inside the group (log2(GROUP) steps),
//                after which every lane holds m and s. Each lane owns ROWS_PER_LANE = 4 rows, all
//                four loads issued before the first shuffle, and the log of the four sums is
//                computed once per group, not once per lane and row: lane c takes row c % 4 and
//                hands its log to the others with a shuffle. Rows longer than 32 values go to a
//                second kernel, a warp per row.
// Prediction:    memory-bound, at least 80% of the copy bandwidth measured in the same run. Default
//                graph: Z read + out written = 2 * 281903 * 16 * 8 B = 72.2 MB, 24.1 us at 3.0 TB/s.
//                The instructions are not the bound, but not far below it (cuobjdump -sass, sm_90):
//                a warp's 8 rows (2 per load, 4 loads) execute 478 instructions, 130 of them on the
//                FP64 pipe (an exp is 15, a log 30, a max step 1 DSETP, a sum step 1 DADD).
//                Per SM sub-partition (528 on 132 SMs): 281903 / 8 / 528 = 66.7 warps of 8 rows,
//                66.7 * 478 = 31,900 issue cycles, 16.1 us at 1.98 GHz (67% of the memory time);
//                the FP64 pipe, 16 lanes per sub-partition, 2 cycles per warp instruction:
//                66.7 * 130 * 2 = 17,300 cycles, 8.8 us (36%). With a log per lane and row (the
//                obvious code) the same counts are 695 and 220: 23.4 us of issue, as long as the
//                memory time; sharing the log is what keeps it clear.
// Metric:        dram__throughput.avg.pct_of_peak_sustained_elapsed near the copy kernel's;
//                l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
//                = 8 (256 B per request; the naive mapping: 32); sm__inst_executed_pipe_fp64 /
//                smsp__inst_executed = 130 / 478 = 0.27; smsp__issue_active.avg.pct_of_peak_sustained_active
//                about 0.67 times the DRAM's share of its peak.
// Assumes:       Z and out V x F, row-major, packed, not overlapping; any V >= 0 and F >= 1 (refuses
//                only F < 1); finite inputs whose row max minus row min does not overflow (|z| < 8e307:
//                1e300 and -1e300 in one row are fine). V * F may exceed 2^31 (64-bit offsets).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>

#include "tut/gcn/harness.cuh"

namespace ch31 {

// Threads per block, and rows per lane group. A block of NUM_THREADS lanes holds NUM_THREADS / GROUP
// groups; each group owns ROWS_PER_LANE rows, NUM_THREADS / GROUP rows apart, so that a warp's groups
// are on consecutive rows at every step (one contiguous load per warp). 40 registers per thread: 6
// blocks of 256 per SM, 1536 threads with 4 loads of 8 bytes each in flight, 48 KB per SM (a DRAM
// latency of ~1 us at 3 TB/s needs ~23 KB per SM). A reader may try ROWS_PER_LANE = 1 (12 KB per
// SM, and no log sharing) or 8 (more registers, fewer blocks).
constexpr int NUM_THREADS = 256;
constexpr int ROWS_PER_LANE = 4;
constexpr int WARP_SIZE = 32;
constexpr unsigned FULL_MASK = 0xffffffffu;
static_assert(NUM_THREADS % WARP_SIZE == 0, "whole warps");
static_assert(NUM_THREADS <= 1024, "a block has at most 1024 threads");
// The widest row the lane-group kernel holds, one value per lane; wider rows take the wide kernel.
constexpr int MAX_GROUP = WARP_SIZE;

// Butterfly reductions inside aligned groups of GROUP lanes: after log2(GROUP) steps every lane of the
// group holds the group's max (sum). Lane i and lane i ^ offset combine the same two values (a + b ==
// b + a exactly in IEEE arithmetic), so every lane ends with the same bits: all lanes of a row then
// subtract the same log(s), and the result does not depend on which lane computed what.
template <int GROUP>
__device__ __forceinline__ double group_max(double v) {
#pragma unroll
  for (int offset = GROUP / 2; offset > 0; offset /= 2) {
    const double other = __shfl_xor_sync(FULL_MASK, v, offset);
    v = other > v ? other : v;  // a compare and two selects; fmax also handles NaN: two more
  }
  return v;
}

template <int GROUP>
__device__ __forceinline__ double group_sum(double v) {
#pragma unroll
  for (int offset = GROUP / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(FULL_MASK, v, offset);
  return v;
}

// out = log_softmax(z) for rows of f <= GROUP values: lane c of a group holds column c of its row (lanes
// c >= f hold -inf, whose exp is 0: they change neither the max nor the sum). As plain loops, for each
// row r:  m = max_c z[r][c];  s = sum_c exp(z[r][c] - m);  out[r][c] = (z[r][c] - m) - log(s).
template <int GROUP>
__global__ void __launch_bounds__(NUM_THREADS) log_softmax_kernel(const double* __restrict__ z,
                                                                  double* __restrict__ out, int v, int f) {
  static_assert(GROUP >= 1 && GROUP <= MAX_GROUP && (GROUP & (GROUP - 1)) == 0, "a power of two up to a warp");
  constexpr int GROUPS_PER_BLOCK = NUM_THREADS / GROUP;
  constexpr int ROWS_PER_BLOCK = GROUPS_PER_BLOCK * ROWS_PER_LANE;
  const int col = threadIdx.x % GROUP;        // this lane's column
  const int group = threadIdx.x / GROUP;      // consecutive groups of a warp: consecutive rows
  const long long first_row = static_cast<long long>(blockIdx.x) * ROWS_PER_BLOCK + group;

  // All ROWS_PER_LANE loads first, independent of each other: ROWS_PER_LANE * 8 bytes in flight per
  // lane. A lane past the row, or a row past V, holds -inf and never stores. Every lane stays to the
  // end: the shuffles need all 32 lanes of the warp (FULL_MASK), even those of a row past V.
  double x[ROWS_PER_LANE];
#pragma unroll
  for (int i = 0; i < ROWS_PER_LANE; ++i) {
    const long long row = first_row + static_cast<long long>(i) * GROUPS_PER_BLOCK;
    x[i] = (row < v && col < f) ? z[row * f + col] : -INFINITY;
  }

  // The max and the sum of exps of each row, by butterflies inside the group.
  double shifted[ROWS_PER_LANE], sum[ROWS_PER_LANE];
#pragma unroll
  for (int i = 0; i < ROWS_PER_LANE; ++i) {
    const double m = group_max<GROUP>(x[i]);  // a finite row has a finite max
    shifted[i] = x[i] - m;                    // <= 0: exp cannot overflow; the max's own term is exp(0) = 1
    sum[i] = group_sum<GROUP>(exp(shifted[i]));  // in [1, f]: its log is finite, in [0, log f]
  }

  // log(sum), shared. Every lane of a group holds the same sum[i], and a warp instruction costs the
  // same whether one lane or 32 need its result: ROWS_PER_LANE logs computed by every lane would be
  // ROWS_PER_LANE log sequences per warp. Instead lane c computes the log of the group's row
  // c % ROWS_PER_LANE only, one sequence for all of them (LOG_ROUNDS of them when the group has fewer
  // lanes than rows), and the other lanes fetch it with a shuffle inside the group.
  double log_sum[ROWS_PER_LANE];
  constexpr int LOG_ROUNDS = (ROWS_PER_LANE + GROUP - 1) / GROUP;
#pragma unroll
  for (int round = 0; round < LOG_ROUNDS; ++round) {
    const int mine = round * GROUP + col;  // the row whose log this lane computes in this round
    double s = 1.0;                        // a lane without a row takes log(1): harmless
#pragma unroll
    for (int i = 0; i < ROWS_PER_LANE; ++i) s = (i == mine) ? sum[i] : s;  // selects, not local memory
    const double l = log(s);
#pragma unroll
    for (int i = round * GROUP; i < ROWS_PER_LANE && i < (round + 1) * GROUP; ++i)
      log_sum[i] = __shfl_sync(FULL_MASK, l, i - round * GROUP, GROUP);  // from lane i of this group
  }

#pragma unroll
  for (int i = 0; i < ROWS_PER_LANE; ++i) {
    const long long row = first_row + static_cast<long long>(i) * GROUPS_PER_BLOCK;
    // (z - m) - log(s), not z - (m + log(s)): that would lose log(s) against a large m (1e300).
    if (row < v && col < f) out[row * f + col] = shifted[i] - log_sum[i];
  }
}

// Rows of more than MAX_GROUP values: a warp per row, lane l taking columns l, l + 32, ... in three
// sweeps (the max; the sum of exps; the results). The row is read from memory once: the second and
// third sweeps find it in L1 (a warp's row of F doubles, 8F bytes, is still there). Not the fast path
// of any problem in this part (F_out = 16); it is here so that the step refuses no F.
__global__ void __launch_bounds__(NUM_THREADS) log_softmax_wide_kernel(const double* __restrict__ z,
                                                                       double* __restrict__ out, int v, int f) {
  constexpr int WARPS_PER_BLOCK = NUM_THREADS / WARP_SIZE;
  const int lane = threadIdx.x % WARP_SIZE;
  const long long row = static_cast<long long>(blockIdx.x) * WARPS_PER_BLOCK + threadIdx.x / WARP_SIZE;
  if (row >= v) return;  // a whole warp leaves together: the shuffles below see all 32 lanes
  const double* zr = z + row * f;
  double* outr = out + row * f;

  double m = -INFINITY;
  for (int c = lane; c < f; c += WARP_SIZE) m = fmax(m, zr[c]);
  m = group_max<WARP_SIZE>(m);
  double s = 0.0;
  for (int c = lane; c < f; c += WARP_SIZE) s += exp(zr[c] - m);
  s = group_sum<WARP_SIZE>(s);
  const double log_s = log(s);
  for (int c = lane; c < f; c += WARP_SIZE) outr[c] = (zr[c] - m) - log_s;
}

// One line for a size this step does not run, or nullptr. Every F >= 1 runs: F <= 32 in lane groups,
// wider rows in the wide kernel.
inline const char* refuses(const tut::GcnProblem& p) {
  if (p.f_out < 1) return "F_out must be at least 1 (valid: --out 1 and up)";
  return nullptr;
}

template <int GROUP>
inline void launch_groups(const tut::GcnProblem& p, const tut::GcnArgs& a, cudaStream_t stream) {
  constexpr long long ROWS_PER_BLOCK = static_cast<long long>(NUM_THREADS / GROUP) * ROWS_PER_LANE;
  // V < 2^31 rows in blocks of >= 32 rows: at most 2^26 blocks, far under grid.x's 2^31 - 1.
  const unsigned blocks = static_cast<unsigned>(tut::ceil_div(static_cast<long long>(p.v), ROWS_PER_BLOCK));
  log_softmax_kernel<GROUP><<<blocks, NUM_THREADS, 0, stream>>>(a.z, a.out, p.v, p.f_out);
  TUT_CHECK_LAUNCH();
}

// The launcher: the group is the next power of two >= F (F = 16: GROUP = 16, two rows per warp, 64 rows
// per block, 4405 blocks on the default graph); F > 32: the wide kernel, 8 rows per block.
inline void log_softmax(const tut::GcnProblem& p, const tut::GcnArgs& a, cudaStream_t stream) {
  if (p.v == 0) return;  // nothing to compute, and a grid of 0 blocks is a launch error
  const int f = p.f_out;
  if (f <= 1) {
    launch_groups<1>(p, a, stream);
  } else if (f <= 2) {
    launch_groups<2>(p, a, stream);
  } else if (f <= 4) {
    launch_groups<4>(p, a, stream);
  } else if (f <= 8) {
    launch_groups<8>(p, a, stream);
  } else if (f <= 16) {
    launch_groups<16>(p, a, stream);
  } else if (f <= MAX_GROUP) {
    launch_groups<32>(p, a, stream);
  } else {
    constexpr int WARPS_PER_BLOCK = NUM_THREADS / WARP_SIZE;
    const unsigned blocks =
        static_cast<unsigned>(tut::ceil_div(static_cast<long long>(p.v), static_cast<long long>(WARPS_PER_BLOCK)));
    log_softmax_wide_kernel<<<blocks, NUM_THREADS, 0, stream>>>(a.z, a.out, p.v, p.f_out);
    TUT_CHECK_LAUNCH();
  }
}

}  // namespace ch31
