// Chapter 27: skinny GEMM, K tiling.
//
// What changed:  chapter 26's thread per row, loading X in tiles of K_TILE = 16 consecutive values of
//                its row into registers (x_tile[16]), then the 16 x 16 outer product with rows k0 ..
//                k0 + 15 of W from shared memory: the write-up's best step. The 16 loads of a tile are
//                issued together, before the first of them is used: 16 loads in flight per thread
//                instead of one, 4 KB per warp (its 32 rows' next 128 bytes each). The code asks for
//                the next tile before multiplying the current one (PREFETCH = 1): written the plain
//                way (load a tile, multiply it; PREFETCH = 0), ptxas places each load some 60 to 80
//                instructions (about three values of k) ahead of its first use, and only about 3 are
//                in flight at a time. In the prefetching form it cannot: the loads feed the next
//                iteration, and ptxas issues all 16 together (right after the current tile's products,
//                cuobjdump shows). The last F_in % 16 values, if any, are done one at a time as in
//                chapter 26. VEC = 2 or 4 reads the tile with 16- or 32-byte loads (the write-up's
//                double2 and double4 versions; sm_90 has no 32-byte load, so VEC = 4 compiles to the
//                same LDG.E.128 pairs as VEC = 2).
// Prediction:    0.12 to 0.145 ms on the default problem, 75% to 90% of the copy bandwidth, faster
//                than chapter 26 by up to 2x (its latency gone; how much depends on chapter 26's L1
//                hits). 84 registers: 2 blocks of 256 per SM, 16 warps, 16 x 4 KB = 64 KB of X in
//                flight per SM, four times what Little's law asks (about 16 KB): DRAM is no longer
//                starved. The four loads of each 32-byte sector are in flight together, so its reuse
//                no longer depends on the sector staying in L1. What is left is L1 work: per warp and
//                k, 16 wavefronts of W broadcasts and 2 of X data, 72 wavefront cycles per row, 154 K
//                cycles per SM (78 us at 1.98 GHz, against 108 us of DRAM time at 3.0 TB/s); and
//                every load instruction of X touches 32 rows, 32 tag lookups for 256 bytes.
// Metric:        dram__throughput.avg.pct_of_peak_sustained_elapsed up from chapter 26; the long
//                scoreboard stall down; l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum /
//                l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum = 32 (VEC = 1, 2 and 4 alike);
//                l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum = 8810 * 128 = 1.13 M (VEC = 2 or 4:
//                0.56 M); l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum = 18.0 M, as chapter 26.
// Assumes:       F_out = 16 and F_in <= 384, as chapter 26 (refuses the rest); VEC = 2 or 4 also
//                need F_in a multiple of VEC (every row starts on a whole vector; refused otherwise).
//                Any V >= 0; x, w, out not overlapping.
#pragma once

#include <cstddef>

#include "tut/gcn/harness.cuh"

namespace ch27 {

// Threads per block: one row of X per thread. A reader may try 128 or 512.
constexpr int BLOCK_THREADS = 256;
static_assert(BLOCK_THREADS % 32 == 0 && BLOCK_THREADS <= 1024, "whole warps, at most 1024 threads");
// The sums of a row, in registers: the width of H is fixed at compile time.
constexpr int F_OUT = 16;
// W lives in shared memory, F_in x F_OUT doubles; a block gets 48 KB without opting in.
constexpr int MAX_W_BYTES = 48 * 1024;
constexpr int MAX_F_IN = MAX_W_BYTES / (F_OUT * static_cast<int>(sizeof(double)));  // 384
static_assert(MAX_F_IN == 384, "48 KB holds 384 rows of 16 doubles");
// K_TILE consecutive values of the thread's row are loaded into registers before any of them is
// used: K_TILE loads in flight per thread. A reader may try 4, 8 or 32 (registers grow with it).
constexpr int K_TILE = 16;
// Doubles per load of X: 1 (scalar loads, the default), 2 (16-byte loads) or 4 (32-byte loads, the
// source's double4 version). scripts/variant.sh flips it: VEC=4 builds the double4 variant.
constexpr int VEC = 1;
static_assert(VEC == 1 || VEC == 2 || VEC == 4, "1, 2 or 4 doubles per load");
static_assert(K_TILE % VEC == 0, "a tile of X is whole vectors");

// 1: the code asks for the next tile before multiplying the current one; those loads feed the next
// iteration, so ptxas keeps all K_TILE of them together (it issues them right after the products).
// 0: the write-up's loop as written, load a tile then multiply it; ptxas then moves each load down to
// about three values of k before its first use, and only about 3 are in flight at a time (the README).
// scripts/variant.sh PREFETCH=0 VEC=4 builds the write-up's double4 version.
constexpr int PREFETCH = 1;
static_assert(PREFETCH == 0 || PREFETCH == 1, "on or off");

// VEC consecutive doubles, aligned to their size: one load instruction for VEC = 1 and 2 (LDG.E.64,
// LDG.E.128). sm_90 has no 32-byte load: VEC = 4 becomes two LDG.E.128, the same code as VEC = 2.
struct alignas(VEC * sizeof(double)) XVec {
  double v[VEC];
};

// t[kk] = x_row[k0 + kk] for kk < K_TILE: K_TILE / VEC independent loads, none waited for here.
__device__ __forceinline__ void load_tile(double (&t)[K_TILE], const double* __restrict__ x_row, int k0) {
#pragma unroll
  for (int kk = 0; kk < K_TILE; kk += VEC) {
    const XVec v = *reinterpret_cast<const XVec*>(x_row + k0 + kk);  // a warp: 32 rows 1 KB apart
#pragma unroll
    for (int e = 0; e < VEC; ++e) t[kk + e] = v.v[e];
  }
}

// acc[j] += t[kk] * w_rows[kk][j] for kk < K_TILE, j < F_OUT, kk ascending for every j: the outer
// product of K_TILE values of the row with the K_TILE x 16 slice of W in shared memory (broadcasts).
__device__ __forceinline__ void outer_product(double (&acc)[F_OUT], const double (&t)[K_TILE], const double* w_rows) {
#pragma unroll
  for (int kk = 0; kk < K_TILE; ++kk) {
#pragma unroll
    for (int j = 0; j < F_OUT; ++j) acc[j] += t[kk] * w_rows[kk * F_OUT + j];
  }
}

// out = x * w, one thread per row of x, W staged in shared memory. As plain loops, for each row r:
//   acc[0..15] = 0;  for (k < f_in) for (j < 16) acc[j] += x[r][k] * w[k][j];  out[r][0..15] = acc
__global__ void __launch_bounds__(BLOCK_THREADS)
    xw_k_tiling_kernel(const double* __restrict__ x, const double* __restrict__ w, double* __restrict__ out, int v,
                       int f_in) {
  extern __shared__ double w_s[];  // W, f_in x F_OUT, row-major, as in global memory
  // The block copies W, consecutive threads taking consecutive doubles (coalesced, no bank conflict).
  for (int i = threadIdx.x; i < f_in * F_OUT; i += BLOCK_THREADS) w_s[i] = w[i];
  __syncthreads();  // W complete before anyone reads it

  const long long r = static_cast<long long>(blockIdx.x) * BLOCK_THREADS + threadIdx.x;
  if (r >= v) return;  // after the barrier: every thread helped copy W
  const double* x_row = x + static_cast<std::size_t>(r) * f_in;  // row r of X: f_in doubles

  double acc[F_OUT];  // row r of H, in registers (every index a constant after unrolling)
#pragma unroll
  for (int j = 0; j < F_OUT; ++j) acc[j] = 0.0;

  // Whole tiles of K_TILE values of the row, then the K_TILE x 16 outer product with rows k0 ..
  // k0 + K_TILE - 1 of W. Plain loops, per tile: for (kk < K_TILE) x_tile[kk] = x[r][k0 + kk];
  // for (kk < K_TILE) for (j < 16) acc[j] += x_tile[kk] * w[k0 + kk][j].
  const int k_full = f_in - f_in % K_TILE;  // the tiles below; the rest, if any, after them
  if constexpr (PREFETCH) {
    double x_tile[K_TILE];  // registers: every index a constant after unrolling
    if (k_full > 0) load_tile(x_tile, x_row, 0);
    for (int k0 = 0; k0 < k_full; k0 += K_TILE) {
      double x_next[K_TILE] = {};  // the next tile: its K_TILE loads stay together
      if (k0 + K_TILE < k_full) load_tile(x_next, x_row, k0 + K_TILE);
      outer_product(acc, x_tile, w_s + k0 * F_OUT);
#pragma unroll
      for (int kk = 0; kk < K_TILE; ++kk) x_tile[kk] = x_next[kk];
    }
  } else {
    for (int k0 = 0; k0 < k_full; k0 += K_TILE) {
      double x_tile[K_TILE];
      load_tile(x_tile, x_row, k0);
      outer_product(acc, x_tile, w_s + k0 * F_OUT);
    }
  }
  // The last F_in % K_TILE values (none for F_in = 128), one at a time as in chapter 26.
  for (int k = k_full; k < f_in; ++k) {
    const double x_rk = x_row[k];
#pragma unroll
    for (int j = 0; j < F_OUT; ++j) acc[j] += x_rk * w_s[k * F_OUT + j];
  }

#pragma unroll
  for (int j = 0; j < F_OUT; ++j) out[static_cast<std::size_t>(r) * F_OUT + j] = acc[j];
}

// One line for a size this step does not run, or nullptr.
inline const char* refuses(const tut::GcnProblem& p) {
  if (p.f_out != F_OUT) return "F_out must be 16: the sums of a row are 16 registers (valid: --out 16)";
  if (p.f_in > MAX_F_IN) return "F_in must be at most 384: W is staged whole in 48 KB of shared memory (valid: --in 1..384)";
  // The vector variants read whole, aligned vectors: every row of X must start on one.
  if (VEC == 2 && p.f_in % 2 != 0) return "with VEC = 2, F_in must be even (valid: --in 2, 4, ..., 384)";
  if (VEC == 4 && p.f_in % 4 != 0) return "with VEC = 4, F_in must be a multiple of 4 (valid: --in 4, 8, ..., 384)";
  return nullptr;
}

inline void xw_k_tiling(const tut::GcnProblem& p, const tut::GcnArgs& a, cudaStream_t stream) {
  if (p.v == 0) return;  // no rows, and a grid of 0 blocks is a launch error
  const unsigned blocks = static_cast<unsigned>(tut::ceil_div(static_cast<long long>(p.v),
                                                              static_cast<long long>(BLOCK_THREADS)));
  const std::size_t w_bytes = static_cast<std::size_t>(p.f_in) * F_OUT * sizeof(double);  // 16 KB for F_in = 128
  xw_k_tiling_kernel<<<blocks, BLOCK_THREADS, w_bytes, stream>>>(a.x, a.w, a.out, p.v, p.f_in);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch27
