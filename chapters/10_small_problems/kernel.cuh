// Chapter 10: small and odd problems.
//
// What changed:  chapter 09's kernel runs in three tile shapes (128 x 128, 128 x 64, 64 x 64:
//                template parameters; each warp still computes a 32 x 64 tile, so the smaller shapes
//                have fewer warps and more blocks per SM) and, as a second instance, over a range of
//                K (blockIdx.z = the split: split-K). With several splits, each block writes its
//                partial tile to a workspace and counts itself in on an arrival counter; the block
//                that arrives last adds the partial tiles in the fixed order split 0, 1, 2, ... and
//                runs the epilogue. No atomic touches a result, so every run gives the same bits. The
//                one-split instances compile to chapter 09's loop, instruction for instruction. The
//                launcher chooses the shape and the split per problem (Planner::choose, below), from
//                M, N, K, the SM count, the FMA rate and each shape's blocks per SM, all read from
//                the CUDA runtime.
// Rule:          for every shape and split count S (1 .. 32, at most the K steps), count the blocks
//                (tiles x S), the blocks a wave holds (SMs x blocks per SM) and the rounds the
//                busiest SM runs; a round costs its K steps plus overheads, at the rate the SM's
//                schedulers reach with the warps it holds then (1 - (1 - r)^(warps / 4)); split-K
//                adds the partial tiles' traffic and the last block's reads. The least modelled time
//                wins; ties go to the larger tile and to fewer splits. The constants are properties
//                of this kernel (the README derives or measures each); no table of GPUs or sizes.
// Prediction:    large squares (2048^3 and up) stay on 128 x 128 with one split: chapter 09's speed.
//                1024^3: 64 tiles of 128 x 128 fill 64 of 132 SMs with one block of 8 warps each;
//                4 splits make 256 blocks, one wave at 2 per SM: about 2x chapter 09 (modelled 87.6
//                -> 44.2 us), ahead of cuBLAS. Deep K (1024 x 1024 x 16384) the same way (2.3x);
//                narrow N (16384 x 128) gets 2 splits, 512^3 128 x 64 tiles with 4 splits (3.6x).
// Metric:        sm__cycles_active.avg / sm__cycles_elapsed.avg, the share of the kernel's time the
//                average SM has a block, rises toward 100% where chapter 09 left SMs idle.
// Assumes:       row-major A (lda >= k), B (ldb >= n), C (ldc >= n); any M, N, K >= 1, any leading
//                dimension and pointer (the fast path needs them multiples of 4 / 16 bytes), as in
//                chapter 09. Split-K needs a workspace of S x tiles x BLOCK_M x BLOCK_N floats plus
//                one int per tile (Planner::workspace_bytes), zeroed before the first launch; every
//                launch leaves the counters zero again, so launches on one stream may share it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tut/core/device_facts.hpp"
#include "tut/gemm/harness.cuh"

namespace ch10 {

// The K step (BLOCK_K), the warp tile (WARP_M x WARP_N), the results per thread (THREAD_M x
// THREAD_N) and their sub-tiles (SUB_M x SUB_N), as in chapter 09. The block tile (BLOCK_M x
// BLOCK_N) is now a template parameter: it sets the number of warps, and the rest follows (struct
// Tile below). A reader may add a shape to SHAPES (say 64 x 128); the static_asserts keep it exact.
constexpr int BLOCK_K = 16;
constexpr int WARP_M = 32;
constexpr int WARP_N = 64;
constexpr int THREAD_M = 8;
constexpr int THREAD_N = 8;
constexpr int SUB_M = 4;
constexpr int SUB_N = 4;
constexpr int WARP_SIZE = 32;
static_assert(WARP_M % THREAD_M == 0 && WARP_N % THREAD_N == 0, "the lanes split the warp tile evenly");
static_assert(THREAD_M % SUB_M == 0 && THREAD_N % SUB_N == 0, "a thread's results are whole sub-tiles");
constexpr int LANES_M = WARP_M / THREAD_M;  // 4 rows of lanes in a warp
constexpr int LANES_N = WARP_N / THREAD_N;  // 8 columns of lanes
static_assert(LANES_M * LANES_N == WARP_SIZE, "the lanes of one warp cover its warp tile");
static_assert(LANES_M % 2 == 0, "the z-order stacks lanes in pairs of rows");
// Every shape aims at the same 16 warps per SM as chapter 09 (two blocks of 8 warps): then every
// thread has the same 65536 / (16 x 32) = 128 registers for the same 8 x 8 results, and the loop
// compiles to the same instructions whatever the shape (one exception: Tile::MIN_BLOCKS_PER_SM).
constexpr int WARPS_PER_SM = 16;
constexpr int SUBS_M = THREAD_M / SUB_M;
constexpr int SUBS_N = THREAD_N / SUB_N;
constexpr int SUB_STRIDE_M = LANES_M * SUB_M;  // 16
constexpr int SUB_STRIDE_N = LANES_N * SUB_N;  // 32

// 128-bit accesses move VEC floats.
constexpr int VEC = 4;
static_assert(SUB_M == VEC && SUB_N == VEC, "a sub-tile row is one float4");

// Padding of each row of the k-major A tile, in floats (chapter 07).
constexpr int A_PAD = 4;

// What a block tile of BLOCK_M x BLOCK_N implies: its warps and threads, its blocks per SM, and its
// share of the tile copy (thread tid copies the VEC floats (a_row + l * A_ROW_STEP, a_col .. a_col +
// VEC - 1), l < A_LOADS, of A's tile, and likewise for B; consecutive threads take consecutive
// vectors along a row).
template <int BLOCK_M, int BLOCK_N>
struct Tile {
  static_assert(BLOCK_M % WARP_M == 0 && BLOCK_N % WARP_N == 0, "the warps split the block tile evenly");
  static constexpr int WARPS_M = BLOCK_M / WARP_M;
  static constexpr int WARPS_N = BLOCK_N / WARP_N;
  static constexpr int WARPS = WARPS_M * WARPS_N;
  static constexpr int NUM_THREADS = WARPS * WARP_SIZE;  // 256, 128 or 64
  static_assert(WARPS_PER_SM % WARPS == 0, "whole blocks make up the warps of an SM");
  // 2 or 8 blocks per SM: 128 registers a thread. Except 128 x 64: its copy stages six float4 per
  // thread (128 x 128: four), and at 128 registers ptxas spills inside the loop (the build refuses
  // it); at 3 blocks per SM (12 warps) it has 168 registers and uses 149, with no spill.
  static constexpr int MIN_BLOCKS_PER_SM = (BLOCK_M == 128 && BLOCK_N == 64) ? 3 : WARPS_PER_SM / WARPS;
  static_assert((BLOCK_M + A_PAD) % VEC == 0, "padded rows must keep float4 loads 16-byte aligned");
  static_assert(BLOCK_K % VEC == 0 && BLOCK_N % VEC == 0, "tile rows are whole float4s");
  static_assert(NUM_THREADS % (BLOCK_K / VEC) == 0 && NUM_THREADS % (BLOCK_N / VEC) == 0,
                "a pass of the copy covers whole rows");
  static constexpr int A_ROW_STEP = NUM_THREADS / (BLOCK_K / VEC);
  static constexpr int B_ROW_STEP = NUM_THREADS / (BLOCK_N / VEC);
  static_assert(BLOCK_M % A_ROW_STEP == 0 && BLOCK_K % B_ROW_STEP == 0, "the passes cover the tiles exactly");
  static constexpr int A_LOADS = BLOCK_M / A_ROW_STEP;  // 2, 4, 4 float4 per thread and K step
  static constexpr int B_LOADS = BLOCK_K / B_ROW_STEP;  // 2, 2, 4
};

// A thread's results as float4s: the partial tile a split writes is THREAD_M * THREAD_N / VEC
// float4s per thread, stored thread-interleaved (float4 v of thread tid at v * NUM_THREADS + tid),
// so every store and load of it is coalesced and needs no bounds check.
constexpr int ACC_VECS = THREAD_M * THREAD_N / VEC;  // 16

// Reads X[row][col .. col+3], as in chapter 09.
template <bool ALIGNED>
__device__ __forceinline__ float4 load4(const float* X, int ld, int row, int col, int valid) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (ALIGNED) {
    if (valid > 0) v = *reinterpret_cast<const float4*>(&X[row * ld + col]);
  } else {
    if (valid > 0) v.x = X[row * ld + col];
    if (valid > 1) v.y = X[row * ld + col + 1];
    if (valid > 2) v.z = X[row * ld + col + 2];
    if (valid > 3) v.w = X[row * ld + col + 3];
  }
  return v;
}

// C[row][col .. col+3] = alpha * acc (+ beta * C when beta != 0), as in chapter 09.
template <bool ALIGNED>
__device__ __forceinline__ void store4(float* C, int ldc, int row, int col, int valid, float4 acc, float alpha,
                                       float beta) {
  if (valid <= 0) return;
  float* p = &C[row * ldc + col];
  float4 out = make_float4(alpha * acc.x, alpha * acc.y, alpha * acc.z, alpha * acc.w);
  if (ALIGNED && valid >= VEC) {
    if (beta != 0.0f) {
      const float4 c = *reinterpret_cast<const float4*>(p);
      out.x += beta * c.x;
      out.y += beta * c.y;
      out.z += beta * c.z;
      out.w += beta * c.w;
    }
    *reinterpret_cast<float4*>(p) = out;
    return;
  }
  p[0] = (beta == 0.0f) ? out.x : out.x + beta * p[0];
  if (valid > 1) p[1] = (beta == 0.0f) ? out.y : out.y + beta * p[1];
  if (valid > 2) p[2] = (beta == 0.0f) ? out.z : out.z + beta * p[2];
  if (valid > 3) p[3] = (beta == 0.0f) ? out.w : out.w + beta * p[3];
}

__device__ __forceinline__ float4 add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// C = alpha * A * B + beta * C; with beta == 0, C is not read. With SPLIT, split s = blockIdx.z of
// gridDim.z computes the K steps [s * k_steps / S, (s + 1) * k_steps / S) of its tile (k_steps =
// ceil(K / BLOCK_K), S = gridDim.z: the splits differ by at most one K step and none is empty);
// `partials` holds S x tiles partial tiles and `arrivals` one counter per tile (zero on entry, zero
// again on exit). Without SPLIT (one split, gridDim.z = 1) the kernel is chapter 09's, instruction
// for instruction: the loop's bound is then K itself, a kernel parameter, where a split's bound
// k_end takes a register, and at 128 registers one more live value reschedules the whole loop.
// The block's work is a device function, gemm_block, so that a later chapter can run it over a batch
// of problems (chapter 22: blockIdx.z picks the problem; the one-split instance never reads blockIdx.z).
template <int BLOCK_M, int BLOCK_N, bool SPLIT, bool ALIGNED>
__device__ __forceinline__ void gemm_block(int M, int N, int K, float alpha, const float* A, int lda, const float* B,
                                           int ldb, float beta, float* C, int ldc, float4* partials, int* arrivals) {
  using T = Tile<BLOCK_M, BLOCK_N>;
  constexpr int NUM_THREADS = T::NUM_THREADS, WARPS_N = T::WARPS_N;
  constexpr int A_ROW_STEP = T::A_ROW_STEP, B_ROW_STEP = T::B_ROW_STEP;
  constexpr int A_LOADS = T::A_LOADS, B_LOADS = T::B_LOADS;
  // Two buffers of each tile: the block computes on As[buf], Bs[buf] while the next K step is
  // written into As[buf ^ 1], Bs[buf ^ 1].
  __shared__ __align__(16) float As[2][BLOCK_K][BLOCK_M + A_PAD];  // (BLOCK_K, BLOCK_M) tiles of A, k-major, padded
  __shared__ __align__(16) float Bs[2][BLOCK_K][BLOCK_N];          // (BLOCK_K, BLOCK_N) tiles of B, row-major
  __shared__ int arrived_last;                                     // split-K: this block sums the partials

  const int tid = threadIdx.x;
  // This thread's results and lanes, as in chapter 09.
  const int warp = tid / WARP_SIZE, lane = tid % WARP_SIZE;
  const int warp_row = warp / WARPS_N, warp_col = warp % WARPS_N;
  const int lane_row = (lane / (2 * LANES_N)) * 2 + lane % 2;
  const int lane_col = (lane / 2) % LANES_N;
  const int thread_row = warp_row * WARP_M + lane_row * SUB_M;
  const int thread_col = warp_col * WARP_N + lane_col * SUB_N;
  const int block_row = blockIdx.y * BLOCK_M;  // first row of C (and of A) of this block
  const int block_col = blockIdx.x * BLOCK_N;  // first column of C (and of B) of this block
  // This thread's share of the tile copy.
  const int a_row = tid / (BLOCK_K / VEC), a_col = (tid % (BLOCK_K / VEC)) * VEC;
  const int b_row = tid / (BLOCK_N / VEC), b_col = (tid % (BLOCK_N / VEC)) * VEC;
  // This block's range of K: whole K steps, the last split ending at K itself.
  const int k_steps = (K + BLOCK_K - 1) / BLOCK_K;
  const int k_begin = SPLIT ? (blockIdx.z * k_steps / gridDim.z) * BLOCK_K : 0;
  const int k_end = SPLIT ? min(K, ((blockIdx.z + 1) * k_steps / gridDim.z) * BLOCK_K) : K;

  // Bounds of the tile copy along M and N, settled once (chapter 09).
  int a_row_g[A_LOADS];
#pragma unroll
  for (int l = 0; l < A_LOADS; ++l) a_row_g[l] = min(block_row + a_row + l * A_ROW_STEP, M - 1);
  const int b_valid = N - (block_col + b_col);
  const int b_col_g = ALIGNED ? min(block_col + b_col, (N - 1) / VEC * VEC) : block_col + b_col;

  // Global-load stage, as in chapter 09.
  float4 a_ldg[A_LOADS];
  float4 b_ldg[B_LOADS];
  auto load_tiles = [&](int k0, bool k_tail) {
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
      const int k = k0 + a_col;
      a_ldg[l] = load4<ALIGNED>(A, lda, a_row_g[l], k, k_tail ? K - k : VEC);
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
      const int k = k0 + b_row + l * B_ROW_STEP;
      const int cols = ALIGNED ? VEC : b_valid;
      b_ldg[l] = load4<ALIGNED>(B, ldb, k, b_col_g, (!k_tail || k < K) ? cols : 0);
    }
  };
  // Shared-store stage, as in chapter 09.
  auto store_tiles = [&](int buf, int k0, bool k_tail) {
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
      const int r = a_row + l * A_ROW_STEP;
      if (ALIGNED && k_tail) {  // floats past K read from the row's padding: zero them (B's rows
                                // there are 0, but padding may hold anything, NaN included)
        const int valid = K - (k0 + a_col);
        if (valid < 2) a_ldg[l].y = 0.0f;
        if (valid < 3) a_ldg[l].z = 0.0f;
        if (valid < 4) a_ldg[l].w = 0.0f;
      }
      As[buf][a_col + 0][r] = a_ldg[l].x;
      As[buf][a_col + 1][r] = a_ldg[l].y;
      As[buf][a_col + 2][r] = a_ldg[l].z;
      As[buf][a_col + 3][r] = a_ldg[l].w;
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
      *reinterpret_cast<float4*>(&Bs[buf][b_row + l * B_ROW_STEP][b_col]) = b_ldg[l];
    }
  };

  float acc[THREAD_M][THREAD_N] = {};  // registers: indexed only by unrolled loops
  float a_frag[THREAD_M];              // A[thread's rows][k]
  float b_frag[THREAD_N];              // B[k][thread's columns]

  // The math of one K step on buffer `buf`, as in chapter 09.
  auto compute_step = [&](int buf) {
#pragma unroll
    for (int k = 0; k < BLOCK_K; ++k) {
#pragma unroll
      for (int im = 0; im < SUBS_M; ++im) {
        const float4 v = *reinterpret_cast<const float4*>(&As[buf][k][thread_row + im * SUB_STRIDE_M]);
        a_frag[im * SUB_M + 0] = v.x;
        a_frag[im * SUB_M + 1] = v.y;
        a_frag[im * SUB_M + 2] = v.z;
        a_frag[im * SUB_M + 3] = v.w;
      }
#pragma unroll
      for (int jn = 0; jn < SUBS_N; ++jn) {
        const float4 v = *reinterpret_cast<const float4*>(&Bs[buf][k][thread_col + jn * SUB_STRIDE_N]);
        b_frag[jn * SUB_N + 0] = v.x;
        b_frag[jn * SUB_N + 1] = v.y;
        b_frag[jn * SUB_N + 2] = v.z;
        b_frag[jn * SUB_N + 3] = v.w;
      }
#pragma unroll
      for (int n = 0; n < THREAD_N; ++n) {
#pragma unroll
        for (int j = 0; j < THREAD_M; ++j) {
          const int m = (n % 2 == 0) ? j : THREAD_M - 1 - j;
          acc[m][n] += a_frag[m] * b_frag[n];
        }
      }
    }
  };

  // Prologue: this split's first K step goes straight through both stages into buffer 0.
  load_tiles(k_begin, true);
  store_tiles(0, k_begin, true);
  __syncthreads();

  int buf = 0;  // the buffer holding the K step being computed
  // k0 is the NEXT K step's offset. The loop runs while that step lies wholly inside this split.
  int k0 = k_begin + BLOCK_K;
  for (; k0 + BLOCK_K <= k_end; k0 += BLOCK_K) {
    load_tiles(k0, false);            // issue the next step's global loads; nothing waits for them...
    compute_step(buf);                // ...during the math on this step...
    store_tiles(buf ^ 1, k0, false);  // ...until they go into the other buffer, free since the last barrier
    // One barrier per K step: buf ^ 1 is complete before anyone computes on it, and everyone is done
    // reading buf before the next K step stores into it.
    __syncthreads();
    buf ^= 1;
  }
  if (k0 < k_end) {  // a last, partial K step: only in the last split, when K % BLOCK_K != 0
    load_tiles(k0, true);
    compute_step(buf);
    store_tiles(buf ^ 1, k0, true);
    __syncthreads();
    buf ^= 1;
  }
  compute_step(buf);  // the last K step: nothing left to load

  // The epilogue of one of this thread's float4s of results: v is row v / 2 of acc, columns
  // (v % 2) * 4 .. + 3 (chapter 09's sub-tile rows). C = alpha * x (+ beta * C), the row checked.
  auto store_vec = [&](int v, float4 x) {
    const int m = v / (THREAD_N / VEC), jn = v % (THREAD_N / VEC);
    const int row = block_row + thread_row + (m / SUB_M) * SUB_STRIDE_M + m % SUB_M;
    if (row >= M) return;
    const int col = block_col + thread_col + jn * SUB_STRIDE_N;
    store4<ALIGNED>(C, ldc, row, col, N - col, x, alpha, beta);
  };

  if constexpr (SPLIT) {
    // Split-K. 1. Publish this split's partial tile, then count this block in on the tile's counter.
    // Each thread's __threadfence() makes its stores visible to the whole GPU before the barrier;
    // the counter is incremented after the barrier, so whoever sees the count sees the partials.
    const int tile = blockIdx.y * gridDim.x + blockIdx.x;
    const std::size_t tile_stride = std::size_t(gridDim.x) * gridDim.y * (ACC_VECS * NUM_THREADS);  // one split
    float4* const mine = partials + std::size_t(tile) * (ACC_VECS * NUM_THREADS) + tid;  // split 0's, this thread's
#pragma unroll
    for (int v = 0; v < ACC_VECS; ++v) {
      const float* a4 = &acc[v / (THREAD_N / VEC)][(v % (THREAD_N / VEC)) * VEC];
      __stcg(&mine[blockIdx.z * tile_stride + v * NUM_THREADS], make_float4(a4[0], a4[1], a4[2], a4[3]));
    }
    __threadfence();
    __syncthreads();
    if (tid == 0) {
      // The block that brings the count to `splits` is the last: every other partial is complete.
      // It resets the counter for the next launch (no other block of this launch touches it again).
      arrived_last = atomicAdd(&arrivals[tile], 1) == int(gridDim.z) - 1;
      if (arrived_last) {
        arrivals[tile] = 0;
        __threadfence();  // order the count (and the reset) before the reads of the partials below
      }
    }
    __syncthreads();
    if (!arrived_last) return;  // the whole block leaves together: no barrier follows
    // 2. The last block adds the partial tiles in split order, 0 + 1 + ... + (S - 1), reading its
    // own back like the others (from L2 with __ldcg: L1 may not have seen the other blocks' stores),
    // and stores each sum at once. The order never depends on which block arrived last, so the
    // result is the same in every run. acc is free now: CHUNK float4 sums at a time, with
    // CHUNK x SPLITS_IN_FLIGHT loads in flight, so the S partials cost ceil(S / SPLITS_IN_FLIGHT)
    // L2 round trips per chunk instead of S.
    constexpr int CHUNK = 4, SPLITS_IN_FLIGHT = 4;
    const int splits = gridDim.z;
#pragma unroll
    for (int v0 = 0; v0 < ACC_VECS; v0 += CHUNK) {
      float4 sum[CHUNK];
      for (int s0 = 0; s0 < splits; s0 += SPLITS_IN_FLIGHT) {
        // One L2 round trip: the next SPLITS_IN_FLIGHT partials of the chunk, all loads issued
        // before any is used (predicated past the last split), then added in split order.
        float4 x[SPLITS_IN_FLIGHT][CHUNK];
#pragma unroll
        for (int u = 0; u < SPLITS_IN_FLIGHT; ++u) {
#pragma unroll
          for (int c = 0; c < CHUNK; ++c) {
            if (s0 + u < splits) x[u][c] = __ldcg(&mine[(s0 + u) * tile_stride + (v0 + c) * NUM_THREADS]);
          }
        }
#pragma unroll
        for (int u = 0; u < SPLITS_IN_FLIGHT; ++u) {
#pragma unroll
          for (int c = 0; c < CHUNK; ++c) {
            if (s0 + u == 0) {
              sum[c] = x[u][c];
            } else if (s0 + u < splits) {
              sum[c] = add4(sum[c], x[u][c]);
            }
          }
        }
      }
#pragma unroll
      for (int c = 0; c < CHUNK; ++c) store_vec(v0 + c, sum[c]);
    }
  } else {
    // Epilogue, as in chapter 09: alpha, beta and the store, once per output.
#pragma unroll
    for (int v = 0; v < ACC_VECS; ++v) {
      const float* a4 = &acc[v / (THREAD_N / VEC)][(v % (THREAD_N / VEC)) * VEC];
      store_vec(v, make_float4(a4[0], a4[1], a4[2], a4[3]));
    }
  }
}
template <int BLOCK_M, int BLOCK_N, bool SPLIT, bool ALIGNED>
__global__ void __launch_bounds__(Tile<BLOCK_M, BLOCK_N>::NUM_THREADS, Tile<BLOCK_M, BLOCK_N>::MIN_BLOCKS_PER_SM)
    split_k_gemm_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
                        float beta, float* C, int ldc, float4* partials, int* arrivals) {
  gemm_block<BLOCK_M, BLOCK_N, SPLIT, ALIGNED>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, partials, arrivals);
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// ---- The shapes and the rule ----------------------------------------------------------------------

struct Shape {
  int block_m, block_n;
  const char* name;
  int threads;  // Tile<block_m, block_n>::NUM_THREADS
};
constexpr Shape SHAPES[] = {{128, 128, "128x128", Tile<128, 128>::NUM_THREADS},
                            {128, 64, "128x64", Tile<128, 64>::NUM_THREADS},
                            {64, 64, "64x64", Tile<64, 64>::NUM_THREADS}};
constexpr int NUM_SHAPES = sizeof(SHAPES) / sizeof(SHAPES[0]);
constexpr int MAX_SPLITS = 32;

// The rule's model of a plan's time (the README derives it and checks it against --explain):
//   the busiest SM runs b = ceil(blocks / SMs) blocks, occ at a time (occ: the CUDA runtime's
//   occupancy for the shape): floor(b / occ) full rounds, then one round of b % occ;
//   a round of n blocks takes (K steps + ROUND_OVERHEAD_STEPS [+ SPLIT_STEPS]) x n x W / (R x u),
//     W = BLOCK_M x BLOCK_N x BLOCK_K x (1 + COPY_COST x (1 / BLOCK_M + 1 / BLOCK_N)): a block's K
//         step in FMAs, plus the tile copy (BLOCK_M + BLOCK_N floats per BLOCK_M x BLOCK_N FMAs
//         per k) at COPY_COST FMAs a float; x (1 + SPLIT_LOOP_SLOWDOWN) for a split instance;
//     R = FP32 lanes x clock: the SM's FMA rate;
//     u = 1 - (1 - WARP_ISSUE)^(warps / SCHEDULERS): the share of cycles the SM's schedulers
//         issue, when each of the n x warps warps is ready in a given cycle with chance WARP_ISSUE;
//   split-K adds SPLIT_STEPS per round and, at the end, the last block's reads of the partials:
//   ceil(S / SPLITS_PER_TRIP) L2 round trips for each of its REDUCE_CHUNKS chunks.
// The constants describe this kernel, not one GPU; the README measures the two that are not
// counted from the code (WARP_ISSUE, COPY_COST) and shows the rule's choices do not hinge on them.
constexpr int SCHEDULERS = 4;               // warp schedulers per SM (Volta to Hopper)
constexpr double WARP_ISSUE = 0.57;         // chance that one warp of this kernel can issue in a cycle
constexpr double COPY_COST = 4.0;           // issue and memory cost of copying one float, in FMAs
constexpr double ROUND_OVERHEAD_STEPS = 1.0;  // the first tile load (nothing overlaps it) and the epilogue
constexpr double SPLIT_STEPS = 1.0;         // the partial tile written, and read back by one block in S
constexpr double L2_ROUND_TRIP_US = 0.5;    // a load that misses L1 under load, with the queueing
// The split instances' loop runs this much slower per K step than the others (chapter 09's): its
// bound k_end takes a register, and at 128 registers ptxas schedules the loop differently (same
// 1135 instructions, other order). Measured: 2.806 against 2.718 ms at 4096^3 (README).
constexpr double SPLIT_LOOP_SLOWDOWN = 0.03;
constexpr int REDUCE_CHUNKS = 4;            // ACC_VECS / CHUNK in the kernel's reduction
constexpr int SPLITS_PER_TRIP = 4;          // SPLITS_IN_FLIGHT in the kernel's reduction

// The kernel for a shape, split or not, and the alignment test's answer: twelve instances in all.
using KernelFn = void (*)(int, int, int, float, const float*, int, const float*, int, float, float*, int, float4*,
                          int*);
template <int BLOCK_M, int BLOCK_N>
KernelFn kernel_of(bool split, bool aligned) {
  if (split) {
    return aligned ? split_k_gemm_kernel<BLOCK_M, BLOCK_N, true, true> : split_k_gemm_kernel<BLOCK_M, BLOCK_N, true, false>;
  }
  return aligned ? split_k_gemm_kernel<BLOCK_M, BLOCK_N, false, true> : split_k_gemm_kernel<BLOCK_M, BLOCK_N, false, false>;
}
inline KernelFn kernel_for(int shape, bool split, bool aligned) {
  switch (shape) {
    case 0: return kernel_of<128, 128>(split, aligned);
    case 1: return kernel_of<128, 64>(split, aligned);
    default: return kernel_of<64, 64>(split, aligned);
  }
}

// The device's SM count, FMA rate and each shape's blocks per SM (the CUDA runtime's occupancy
// calculator: registers, shared memory and threads), read once per device.
struct DeviceFacts {
  int sms = 0;
  double fma_per_us_per_sm = 0;  // FP32 FMA lanes x clock
  int blocks_per_sm[NUM_SHAPES][2] = {};  // [shape][split]
};
inline const DeviceFacts& device_facts() {
  static tut::PerDevice<DeviceFacts> cache;
  return cache.get([](int device, DeviceFacts& facts) {
    cudaDeviceProp prop{};
    TUT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    int clock_khz = 0;
    TUT_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
    facts.sms = prop.multiProcessorCount;
    const int lanes = tut::fp32_lanes_per_sm(prop.major, prop.minor);
    facts.fma_per_us_per_sm = double(lanes > 0 ? lanes : 128) * clock_khz / 1e3;
    for (int s = 0; s < NUM_SHAPES; ++s) {
      for (int split = 0; split < 2; ++split) {  // the aligned instances (the unaligned ones fit alike)
        int& occ = facts.blocks_per_sm[s][split];
        TUT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel_for(s, split, true), SHAPES[s].threads, 0));
        occ = std::max(occ, 1);
      }
    }
  });
}

class Planner : public tut::GemmPlanner {
 public:
  std::vector<std::string> tile_names() const override {
    std::vector<std::string> names;
    for (const Shape& s : SHAPES) names.push_back(s.name);
    return names;
  }

  int max_splits(const tut::GemmProblem& p) const override {
    return int(std::min<long long>(MAX_SPLITS, tut::ceil_div<long long>(p.k, BLOCK_K)));
  }

  // The rule: the wave arithmetic of every shape and split count, the least modelled time.
  tut::GemmWaves waves(const tut::GemmProblem& p, tut::GemmChoice c) const override {
    const DeviceFacts& d = device_facts();
    const Shape& shape = SHAPES[c.tile];
    const int occ = d.blocks_per_sm[c.tile][c.splits > 1 ? 1 : 0];
    const int warps = shape.threads / WARP_SIZE;
    tut::GemmWaves w;
    w.tiles = tut::ceil_div<long long>(p.m, shape.block_m) * tut::ceil_div<long long>(p.n, shape.block_n);
    w.blocks = w.tiles * c.splits;
    w.blocks_per_sm = occ;
    w.sms = d.sms;
    w.k_steps = tut::ceil_div<long long>(tut::ceil_div<long long>(p.k, BLOCK_K), c.splits);
    // The busiest SM runs b blocks: floor(b / occ) full rounds of occ blocks, then one of b % occ.
    const long long b = tut::ceil_div<long long>(w.blocks, d.sms);
    const double steps = double(w.k_steps) + ROUND_OVERHEAD_STEPS + (c.splits > 1 ? SPLIT_STEPS : 0.0);
    const double fmas_per_step = double(shape.block_m) * shape.block_n * BLOCK_K *
                                 (1.0 + COPY_COST * (1.0 / shape.block_m + 1.0 / shape.block_n)) *
                                 (c.splits > 1 ? 1.0 + SPLIT_LOOP_SLOWDOWN : 1.0);
    auto round_us = [&](long long n) {
      const double issuing = 1.0 - std::pow(1.0 - WARP_ISSUE, double(n * warps) / SCHEDULERS);
      return double(n) * steps * fmas_per_step / (d.fma_per_us_per_sm * issuing);
    };
    w.model_us = double(b / occ) * round_us(occ) + (b % occ ? round_us(b % occ) : 0.0);
    if (c.splits > 1) {
      w.model_us += REDUCE_CHUNKS * tut::ceil_div(c.splits, SPLITS_PER_TRIP) * L2_ROUND_TRIP_US;
    }
    return w;
  }

  tut::GemmChoice choose(const tut::GemmProblem& p, tut::GemmChoice forced) const override {
    if (forced.tile >= 0 && forced.splits >= 1) return forced;
    tut::GemmChoice best;
    double best_us = 0;
    for (int t = 0; t < NUM_SHAPES; ++t) {  // larger tiles first: they win ties
      if (forced.tile >= 0 && t != forced.tile) continue;
      for (int s = 1; s <= max_splits(p); ++s) {  // fewer splits first: they win ties
        if (forced.splits >= 1 && s != forced.splits) continue;
        const double us = waves(p, tut::GemmChoice{t, s}).model_us;
        if (best.tile < 0 || us < best_us) {
          best = tut::GemmChoice{t, s};
          best_us = us;
        }
      }
    }
    return best;
  }

  // The workspace of a split plan: the partial tiles (S x tiles x BLOCK_M x BLOCK_N floats, a
  // multiple of 16 bytes), then one arrival counter per tile.
  static std::size_t tiles_of(const tut::GemmProblem& p, const Shape& shape) {
    return std::size_t(tut::ceil_div(p.m, shape.block_m)) * tut::ceil_div(p.n, shape.block_n);
  }
  static std::size_t partials_bytes(const tut::GemmProblem& p, tut::GemmChoice c) {
    const Shape& shape = SHAPES[c.tile];
    return std::size_t(c.splits) * tiles_of(p, shape) * shape.block_m * shape.block_n * sizeof(float);
  }
  std::size_t workspace_bytes(const tut::GemmProblem& p, tut::GemmChoice c) const override {
    if (c.splits <= 1) return 0;
    return partials_bytes(p, c) + tiles_of(p, SHAPES[c.tile]) * sizeof(int);
  }

  void launch(const tut::GemmProblem& p, tut::GemmChoice c, const float* A, const float* B, float* C,
              void* workspace, cudaStream_t stream) const override {
    const Shape& shape = SHAPES[c.tile];
    // Columns in grid.x, rows in grid.y (at most 2^20 / 64 = 16384 rows of blocks), splits in grid.z.
    const dim3 grid(tut::ceil_div(p.n, shape.block_n), tut::ceil_div(p.m, shape.block_m), c.splits);
    const bool aligned = p.lda % VEC == 0 && p.ldb % VEC == 0 && p.ldc % VEC == 0 && aligned16(A) && aligned16(B) &&
                         aligned16(C);
    float4* partials = nullptr;
    int* arrivals = nullptr;
    if (c.splits > 1) {
      partials = static_cast<float4*>(workspace);
      arrivals = reinterpret_cast<int*>(static_cast<char*>(workspace) + partials_bytes(p, c));
    }
    kernel_for(c.tile, c.splits > 1, aligned)<<<grid, shape.threads, 0, stream>>>(
        p.m, p.n, p.k, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc, partials, arrivals);
    TUT_CHECK_LAUNCH();
  }
};

inline const Planner& planner() {
  static const Planner instance;
  return instance;
}

}  // namespace ch10
