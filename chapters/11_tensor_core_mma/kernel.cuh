// Chapter 11: tensor cores (TF32 mma.sync).
//
// What changed:  the math. Chapter 09's block computes a 128 x 128 tile of C with FMAs, 8 x 8 per
//                thread; here each warp hands 16 x 8 x 8 pieces of its product to the tensor cores
//                with mma.sync.aligned.m16n8k8 (TF32 in, FP32 accumulate), a 64 x 64 warp tile as
//                4 x 8 of them. Three things follow from the instruction:
//                1. Fragments. mma.sync fixes which lane holds which element (README, fragments.png):
//                   lane (g = lane / 4, t = lane % 4) holds A(g, t), A(g + 8, t), A(g, t + 4),
//                   A(g + 8, t + 4) of a 16 x 8 slice of A, B(t, g), B(t + 4, g) of an 8 x 8 slice of B,
//                   and C(g, 2t), C(g, 2t + 1), C(g + 8, 2t), C(g + 8, 2t + 1). Both tiles now stay
//                   row-major in shared memory (no transpose on the way in): A's fragments come
//                   from ldmatrix.x4, one instruction per 16 x 8 slice; B's columns are permuted
//                   (and its 16-byte chunks swizzled) so that a lane's 8 values of a row are two
//                   conflict-free 16-byte loads. No bank conflicts on either.
//                2. Rounding. The tensor cores read TF32 (10 fraction bits); each fragment element is
//                   rounded to nearest after its shared load, with one integer add (to_tf32).
//                3. Feeding. One SM's tensor cores do in one K step what its FMA units did in ten, so
//                   the copy must keep up: the block tile grows to 128 x 256 (8 warps, each 64 x 64),
//                   BLOCK_K to 32, and the copy becomes cp.async (global to shared without
//                   registers, 16 bytes at a time) into a ring of STAGES buffers, STAGES - 1 K steps
//                   ahead of the math, a K step's copies spread over its slices of math, one
//                   barrier per K step.
// Prediction:    the tensor cores raise the ceiling from the FMA units' 67 TFLOP/s to 535 (dense TF32
//                at 1980 MHz); mma.sync issues them at about 60% of that on this GPU, and the block's
//                traffic from L2 (48 KB per K step for 2^20 multiply-adds: 6 TB/s at 260 TFLOP/s) is the
//                next wall. Expect 250-300 TFLOP/s at 4096^3: 60-75% of cuBLAS TF32, 5x chapter 09
//                (measured: 168 TFLOP/s, 42%; the README says why).
// Metric:        sm__pipe_tensor_op_hmma_cycles_active (tensor pipe busy) rises from 0 to most cycles;
//                sm__inst_executed_pipe_fma falls by the factor of the math moved.
// Assumes:       row-major A (lda >= k), B (ldb >= n), C (ldc >= n); any M, N, K >= 1. The fast copy
//                needs lda and ldb multiples of 4 and 16-byte aligned A and B; otherwise the copy moves
//                4 bytes at a time. Shared memory: STAGES x (BLOCK_M x (BLOCK_K + A_PAD) + BLOCK_K x
//                BLOCK_N) floats, 150 KB with 3 stages: one block per SM.
#pragma once

#include <cstdint>

#include "tut/gemm/harness.cuh"

namespace ch11 {

// Block tile of C (BLOCK_M x BLOCK_N), the K step (BLOCK_K), the warp tile (WARP_M x WARP_N) and the
// tensor-core instruction's shape (MMA_M x MMA_N x MMA_K, fixed by m16n8k8).
constexpr int BLOCK_M = 128;
constexpr int BLOCK_N = 256;
constexpr int BLOCK_K = 32;
constexpr int WARP_M = 64;
constexpr int WARP_N = 64;
constexpr int MMA_M = 16;
constexpr int MMA_N = 8;
constexpr int MMA_K = 8;
constexpr int STAGES = 3;  // buffers in the ring: STAGES - 1 K steps in flight during the math
constexpr int WARP_SIZE = 32;
static_assert(BLOCK_M % WARP_M == 0 && BLOCK_N % WARP_N == 0, "the warps split the block tile evenly");
static_assert(WARP_M % MMA_M == 0 && WARP_N % MMA_N == 0 && BLOCK_K % MMA_K == 0, "whole instructions");
constexpr int WARPS_M = BLOCK_M / WARP_M;                   // 2 rows of warps
constexpr int WARPS_N = BLOCK_N / WARP_N;                   // 4 columns of warps
constexpr int NUM_THREADS = WARPS_M * WARPS_N * WARP_SIZE;  // 256
constexpr int TILES_M = WARP_M / MMA_M;                     // 4 instruction tiles down a warp tile
constexpr int TILES_N = WARP_N / MMA_N;                     // 8 across
// Registers: 4 x 8 x 4 = 128 accumulators + two sets of fragments (16 of A and 16 of B each) +
// addresses fit in the 255 a thread may have; with 256 threads that is one block per SM (65536
// registers), which the shared memory of 3 stages asks for anyway.
constexpr int MIN_BLOCKS_PER_SM = 1;

// Shared layouts (README, "Fragments from shared memory").
// A's tile is row-major with rows A_LD = BLOCK_K + 4 = 36 floats long, and its fragments come from
// ldmatrix.x4: each of the four 8 x 4 pieces of a 16 x 8 slice is 8 rows of 16 bytes, which the
// instruction delivers exactly as mma wants them (lane (g, t) gets row g, word t). Row r starts at
// bank 4r, so the 8 rows of a piece cover all 32 banks once: no conflict.
// B's tile is row-major with rows BLOCK_N floats long, its 16-byte chunks swizzled: chunk c of row k
// is stored at chunk c ^ swz(k), swz(k) = (k & 1) | (k & 2) << 1. The columns of B a warp feeds to
// its 8 instruction tiles are permuted (tile j, fragment column g = warp column 8g + j), so that
// each lane's 8 values of one row are two consecutive chunks: two 16-byte loads per row instead of
// eight 4-byte ones, and the swizzle spreads each quarter-warp's chunks over all 32 banks.
constexpr int A_PAD = 4;
constexpr int A_LD = BLOCK_K + A_PAD;  // 36
constexpr int B_LD = BLOCK_N;          // 256
static_assert(A_LD % 32 == 4, "the 8 rows of an ldmatrix piece start on 8 different bank quads");
static_assert(A_LD % 4 == 0 && B_LD % 32 == 0, "16-byte aligned rows; B's rows start at bank 0");
static_assert(WARP_N == 8 * MMA_N, "a lane's 8 values per row of B are two whole chunks");
__host__ __device__ constexpr int swz(int k) { return (k & 1) | ((k & 2) << 1); }
constexpr int A_STAGE = BLOCK_M * A_LD;  // floats per buffer
constexpr int B_STAGE = BLOCK_K * B_LD;
constexpr std::size_t SMEM_BYTES = std::size_t(STAGES) * (A_STAGE + B_STAGE) * sizeof(float);
static_assert(SMEM_BYTES <= 227 * 1024, "an H100 block has at most 227 KB of shared memory");

// The tile copy, one 16-byte vector (VEC floats) per cp.async: thread tid copies vectors
// (a_row + l * A_ROW_STEP, a_col .. a_col + 3), l < A_LOADS, of A's tile, and likewise for B;
// consecutive threads take consecutive vectors along a row (coalesced).
constexpr int VEC = 4;
static_assert(BLOCK_K % VEC == 0 && BLOCK_N % VEC == 0, "tile rows are whole vectors");
constexpr int A_ROW_STEP = NUM_THREADS / (BLOCK_K / VEC);  // 32 rows of A's tile per pass
constexpr int B_ROW_STEP = NUM_THREADS / (BLOCK_N / VEC);  // 4 rows of B's tile per pass
static_assert(BLOCK_M % A_ROW_STEP == 0 && BLOCK_K % B_ROW_STEP == 0, "the passes cover the tiles exactly");
constexpr int A_LOADS = BLOCK_M / A_ROW_STEP;  // 4
constexpr int B_LOADS = BLOCK_K / B_ROW_STEP;  // 8

// cp.async: copies `bytes` (0 to 16) from global to shared memory without passing through
// registers and fills the rest of the 16 (or 4) bytes with zeros. The copy completes
// asynchronously; cp_async_wait<n> waits until at most n committed groups are still in flight.
// `src` must be a valid address even when bytes == 0 (nothing is read then).
__device__ __forceinline__ void cp_async16(float* dst, const float* src, int bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void cp_async4(float* dst, const float* src, int bytes) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// FP32 -> TF32, rounded to nearest, ties away from zero: half a unit of the last kept bit (bit 13)
// added to the bits, the carry doing the rounding (into the exponent too, up to infinity). The
// tensor cores read the top 19 bits of each operand and ignore the low 13, so those need no
// clearing: one integer add. (cvt.rna.tf32.f32 gives the same bits for finite x but compiles to a
// compare and a predicated add, twice the instructions, to keep NaN payloads; our inputs have none.)
__device__ __forceinline__ std::uint32_t to_tf32(float x) { return __float_as_uint(x) + 0x1000u; }

// d += a * b for one 16 x 8 x 8 slice: a 16 x 8 of A (4 registers per lane), b 8 x 8 of B (2),
// d 16 x 8 of C (4 FP32), in the lane layouts described at the top (row.col: A row-major, B
// column-major as the instruction sees them; the layouts are of the registers, not of memory).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// C = alpha * A * B + beta * C; with beta == 0, C is not read.
template <bool ALIGNED>
__global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS_PER_SM)
    mma_gemm_kernel(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, float beta,
                    float* C, int ldc) {
  // The ring: stage s holds A's tile (BLOCK_M x BLOCK_K, row-major, rows A_LD long) at
  // smem + s * A_STAGE and B's (BLOCK_K x BLOCK_N, row-major, rows B_LD long) after all of A's.
  extern __shared__ __align__(16) float smem[];
  float* As = smem;
  float* Bs = smem + STAGES * A_STAGE;

  const int tid = threadIdx.x;
  const int warp = tid / WARP_SIZE, lane = tid % WARP_SIZE;
  const int warp_row = warp / WARPS_N, warp_col = warp % WARPS_N;
  const int g = lane / 4, t = lane % 4;  // the lane's group and its place in the group (fragments)
  const int block_row = blockIdx.y * BLOCK_M;
  const int block_col = blockIdx.x * BLOCK_N;
  const int a_row = tid / (BLOCK_K / VEC), a_col = (tid % (BLOCK_K / VEC)) * VEC;
  const int b_row = tid / (BLOCK_N / VEC), b_col = (tid % (BLOCK_N / VEC)) * VEC;

  // Bounds of the copy along M and N, settled once: a row of A past M, or columns of B past N, copy
  // zero bytes (the destination is zero-filled). Source addresses are clamped so that even those
  // point into the matrices.
  int a_row_g[A_LOADS];
  bool a_row_ok[A_LOADS];
#pragma unroll
  for (int l = 0; l < A_LOADS; ++l) {
    const int r = block_row + a_row + l * A_ROW_STEP;
    a_row_ok[l] = r < M;
    a_row_g[l] = min(r, M - 1);
  }
  const int b_col_g = block_col + b_col;
  const int b_cols = min(max(N - b_col_g, 0), VEC);  // columns of this thread's vector that exist
  // A 16-byte copy needs a 16-byte aligned source even when it reads nothing: clamp to the last
  // whole vector (lda, ldb multiples of 4 keep those aligned).
  const int last_k = ALIGNED ? (K - 1) / VEC * VEC : K - 1;
  const int b_col_src = min(b_col_g, ALIGNED ? (N - 1) / VEC * VEC : N - 1);

  // The fast copy of a K step wholly inside K: sources at K offset 0 (rows clamped into A) and the
  // bytes each 16-byte copy moves (16 inside M and N, fewer at N's edge, 0 past them), fixed once.
  const float* a_src[A_LOADS];
  int a_bytes[A_LOADS];
#pragma unroll
  for (int l = 0; l < A_LOADS; ++l) {
    a_src[l] = A + std::size_t(a_row_g[l]) * lda + a_col;
    a_bytes[l] = a_row_ok[l] ? 16 : 0;
  }
  const float* b_src = B + std::size_t(b_row) * ldb + b_col_src;
  const int b_bytes = b_cols * 4;

  // The copies of a whole K step, spread over the slices of the math: before slice `part`, copies
  // SHARE * part .. SHARE * part + SHARE - 1 of the A_LOADS + B_LOADS (A's first). Issued all at
  // once, twelve copies with their address arithmetic queue up in the load/store unit behind the
  // fragment loads, and the warp stalls until the unit has taken their operands; three at a time
  // slip in between the tensor-core instructions (README, "How it got here").
  constexpr int COPIES = A_LOADS + B_LOADS;
  constexpr int PARTS = BLOCK_K / MMA_K;
  static_assert(COPIES % PARTS == 0, "the copies split evenly over the slices");
  constexpr int SHARE = COPIES / PARTS;
  auto load_part = [&](int stage, int step, int part) {
    const int k0 = step * BLOCK_K;
    float* as = As + stage * A_STAGE;
    float* bs = Bs + stage * B_STAGE;
#pragma unroll
    for (int c = 0; c < SHARE; ++c) {
      const int idx = part * SHARE + c;
      if (idx < A_LOADS) {
        cp_async16(&as[(a_row + idx * A_ROW_STEP) * A_LD + a_col], a_src[idx] + k0, a_bytes[idx]);
      } else {
        const int l = idx - A_LOADS;
        const int r = b_row + l * B_ROW_STEP;
        cp_async16(&bs[r * B_LD + ((b_col / VEC) ^ swz(r)) * VEC], b_src + std::size_t(k0 + l * B_ROW_STEP) * ldb,
                   b_bytes);
      }
    }
  };

  // Issue the copy of K step `step` into stage `stage`: every element past K, M or N arrives as 0,
  // so the math needs no bounds checks (a zero adds nothing).
  auto load_stage = [&](int stage, int step) {
    const int k0 = step * BLOCK_K;
    float* as = As + stage * A_STAGE;
    float* bs = Bs + stage * B_STAGE;
    if (ALIGNED && k0 + BLOCK_K <= K) {  // all K steps but a last, partial one: no K checks
#pragma unroll
      for (int part = 0; part < PARTS; ++part) load_part(stage, step, part);
      return;
    }
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
      const int r = a_row + l * A_ROW_STEP;
      const int k = k0 + a_col;
      const int ks = min(max(K - k, 0), VEC);  // floats of the vector inside K
      const int n = a_row_ok[l] ? ks : 0;
      const float* src = A + std::size_t(a_row_g[l]) * lda + min(k, last_k);
      if (ALIGNED) {
        cp_async16(&as[r * A_LD + a_col], src, n * 4);
      } else {
#pragma unroll
        for (int v = 0; v < VEC; ++v) cp_async4(&as[r * A_LD + a_col + v], src + (v < n ? v : 0), v < n ? 4 : 0);
      }
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; ++l) {
      const int r = b_row + l * B_ROW_STEP;
      const int k = k0 + r;
      const int n = k < K ? b_cols : 0;
      const float* src = B + std::size_t(min(k, K - 1)) * ldb + b_col_src;
      float* dst = &bs[r * B_LD + ((b_col / VEC) ^ swz(r)) * VEC];  // chunk b_col / 4, swizzled
      if (ALIGNED) {
        cp_async16(dst, src, n * 4);
      } else {
#pragma unroll
        for (int v = 0; v < VEC; ++v) cp_async4(dst + v, src + (v < n ? v : 0), v < n ? 4 : 0);
      }
    }
  };

  // acc[i][j][r]: register r of instruction tile (i, j) of this warp: C row warp_row * WARP_M +
  // i * MMA_M + g (+ 8 for r >= 2), column warp_col * WARP_N + 8 * (2t + (r & 1)) + j (the permuted
  // columns: this lane's 16 columns of a row are 16t .. 16t + 15 of the warp tile).
  float acc[TILES_M][TILES_N][4] = {};

  // Where this lane's fragment loads start. ldmatrix: lane l names row (l % 8) + 8 * ((l / 8) % 2),
  // column 4 * (l / 16) of a 16 x 8 slice (pieces 0..3 = a0..a3). B: row t (and t + 4), chunks
  // 2g and 2g + 1 of the warp's 16, swizzled (swz(t + 4) == swz(t), and kk is a multiple of 8).
  const int a_ld_row = warp_row * WARP_M + lane % 8 + 8 * ((lane / 8) % 2);
  const int a_ld_col = 4 * (lane / 16);
  const int b_chunk0 = warp_col * (WARP_N / VEC) + ((2 * g) ^ swz(t));
  const int b_chunk1 = warp_col * (WARP_N / VEC) + ((2 * g + 1) ^ swz(t));

  // Fragments of slice kk of stage `stage`: a[i] for the 4 instruction rows, b[j] for the 8 columns.
  auto load_fragments = [&](int stage, int kk, std::uint32_t (&a)[TILES_M][4], std::uint32_t (&b)[TILES_N][2]) {
    const float* as = As + stage * A_STAGE;
#pragma unroll
    for (int i = 0; i < TILES_M; ++i) {
      const unsigned addr =
          static_cast<unsigned>(__cvta_generic_to_shared(&as[(a_ld_row + i * MMA_M) * A_LD + kk + a_ld_col]));
      asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                   : "=r"(a[i][0]), "=r"(a[i][1]), "=r"(a[i][2]), "=r"(a[i][3])
                   : "r"(addr));
#pragma unroll
      for (int r = 0; r < 4; ++r) a[i][r] = to_tf32(__uint_as_float(a[i][r]));
    }
    const float* bs = Bs + stage * B_STAGE + (kk + t) * B_LD;
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // h = 0: B(t, .) -> b[j][0]; h = 1: B(t + 4, .) -> b[j][1]
      const float4 lo = *reinterpret_cast<const float4*>(&bs[h * 4 * B_LD + b_chunk0 * VEC]);
      const float4 hi = *reinterpret_cast<const float4*>(&bs[h * 4 * B_LD + b_chunk1 * VEC]);
      const float v[TILES_N] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
      for (int j = 0; j < TILES_N; ++j) b[j][h] = to_tf32(v[j]);
    }
  };

  // The math of one K step on stage `stage`: BLOCK_K / MMA_K slices of 4 x 8 instructions each, the
  // fragments of slice kk + 1 loaded while slice kk's instructions run.
  auto compute_stage = [&](int stage, auto&& before_slice) {
    std::uint32_t a[2][TILES_M][4], b[2][TILES_N][2];
    load_fragments(stage, 0, a[0], b[0]);
#pragma unroll
    for (int s = 0; s < BLOCK_K / MMA_K; ++s) {
      before_slice(s);
      if (s + 1 < BLOCK_K / MMA_K) load_fragments(stage, (s + 1) * MMA_K, a[(s + 1) % 2], b[(s + 1) % 2]);
#pragma unroll
      for (int i = 0; i < TILES_M; ++i) {
#pragma unroll
        for (int j = 0; j < TILES_N; ++j) mma_tf32(acc[i][j], a[s % 2][i], b[s % 2][j]);
      }
    }
  };

  // The pipeline. Prologue: K steps 0 .. STAGES - 2 in flight, one commit group each (empty groups
  // past the last K step keep the count uniform).
  const int steps = (K + BLOCK_K - 1) / BLOCK_K;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < steps) load_stage(s, s);
    cp_async_commit();
  }
  for (int step = 0; step < steps; ++step) {
    // Wait for K step `step` (at most STAGES - 2 younger groups may still be in flight); the barrier
    // makes every thread's copies visible to all and says everyone is done with step - 1's stage,
    // which the next copy overwrites.
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    // The copy of K step `next` into the stage step - 1 used: spread over this step's slices when
    // it is a whole K step (the fast path), all at once when it is the last, partial one. One
    // commit group per K step either way.
    const int next = step + STAGES - 1;
    const bool spread = ALIGNED && (next + 1) * BLOCK_K <= K;
    if (next < steps && !spread) load_stage(next % STAGES, next);
    compute_stage(step % STAGES, [&](int part) {
      if (next < steps && spread) load_part(next % STAGES, next, part);
    });
    cp_async_commit();
  }
  cp_async_wait<0>();  // nothing left in flight when the block exits (empty groups only)

  // Epilogue: thanks to the permuted columns, each lane holds 16 consecutive columns of a row of C
  // (16t .. 16t + 15 of the warp tile: register r & 1 = 0 gives the first 8, over j, and 1 the next
  // 8), stored as four float4 where C's rows allow it.
  const bool vec_c = ALIGNED && (ldc % VEC == 0) && (reinterpret_cast<std::uintptr_t>(C) % 16 == 0);
#pragma unroll
  for (int i = 0; i < TILES_M; ++i) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = block_row + warp_row * WARP_M + i * MMA_M + g + 8 * h;
      if (row >= M) continue;
      float* c_row = C + std::size_t(row) * ldc;
#pragma unroll
      for (int q = 0; q < 4; ++q) {  // four runs of 4 columns: 16t + 4q .. 16t + 4q + 3
        const int col = block_col + warp_col * WARP_N + 16 * t + 4 * q;
        float v[VEC];
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const int c = 4 * q + e;  // column 16t + c: register (c / 8) of tile j = c % 8
          v[e] = alpha * acc[i][c % 8][2 * h + c / 8];
        }
        if (vec_c && col + VEC <= N) {
          float4* p = reinterpret_cast<float4*>(c_row + col);
          if (beta != 0.0f) {
            const float4 c = *p;
            v[0] += beta * c.x;
            v[1] += beta * c.y;
            v[2] += beta * c.z;
            v[3] += beta * c.w;
          }
          *p = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
          for (int e = 0; e < VEC; ++e) {
            if (col + e < N) c_row[col + e] = (beta == 0.0f) ? v[e] : v[e] + beta * c_row[col + e];
          }
        }
      }
    }
  }
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

inline void mma_gemm(const tut::GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream) {
  const dim3 block(NUM_THREADS);
  const dim3 grid(tut::ceil_div(p.n, BLOCK_N), tut::ceil_div(p.m, BLOCK_M));
  // 16-byte copies need every row start 16-byte aligned: lda and ldb multiples of 4, aligned A, B.
  const bool aligned = p.lda % VEC == 0 && p.ldb % VEC == 0 && aligned16(A) && aligned16(B);
  const auto kernel = aligned ? mma_gemm_kernel<true> : mma_gemm_kernel<false>;
  // More than 48 KB of dynamic shared memory must be asked for, once per kernel.
  static const bool opted_in = [] {
    for (auto k : {mma_gemm_kernel<true>, mma_gemm_kernel<false>}) {
      TUT_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(SMEM_BYTES)));
    }
    return true;
  }();
  (void)opted_in;
  kernel<<<grid, block, SMEM_BYTES, stream>>>(p.m, p.n, p.k, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch11
