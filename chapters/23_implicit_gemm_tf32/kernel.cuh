// Chapter 23: implicit GEMM on tensor cores (TF32).
//
// What changed:  chapter 20's kernel with its inner product moved from the FMA units to the tensor
//                cores: a warp's piece of the block tile is 4 x 8 (or 4 x 4) tiles of
//                mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, Part I's chapter 11 math
//                (warp-level mma.sync, fragments loaded by hand from shared memory; chapter 12's
//                TMA + wgmma wants each operand as a box of a tensor in memory, and the gathered input
//                is not one). Tensor cores finish a K step ~8x faster than the FMA units, so the copy
//                must keep up: BLOCK_K 16 -> 32, and chapter 20's two buffers with a register
//                prefetch become a STAGES = 3 deep cp.async pipeline (global -> shared with no
//                registers in between; the padding of the gather is cp.async's zero-fill). Filter
//                fragments come in with ldmatrix (one instruction per 16 x 8 A fragment), input
//                fragments with 16-byte loads from rows whose 32-pixel chunks are stored transposed
//                (x_slot: one load gives the B value of 4 MMA tiles, no bank conflict). Rounding to
//                TF32 (round to nearest): the filter tile with cvt.rna in shared memory, once per
//                block, by the thread that copied it; the input values in registers as they are
//                loaded into fragments. Accumulators stay in the mma's C-fragment layout; chapter
//                20's guarded epilogue stores them (float2 where it can). Chapter 20's tile rule
//                (tile shape x split-K from the SM count and occupancy) with this kernel's shapes,
//                128 x 128 as 2 x 2 warps of 64 x 64 and 64 x 128 as 1 x 4 warps of 64 x 32, and
//                their cost per K step counted in instructions instead of FMAs.
// Prediction:    (written before the first measurement) seed_3x3 is 28.9 M mma instructions; at a
//                third of the tensor cores' mma.sync rate (~0.3 mma per clock per SM, ~150 TFLOP/s)
//                that is ~0.4 ms: 3x chapter 20 (1.285 ms) and faster than cuDNN's default math
//                (0.50 ms as first measured, in one process). The smaller layers gain
//                less: their time goes to the gather, the first loads, the epilogue and split-K's
//                second pass, which the tensor cores do not speed up. Geometric mean over the
//                layer table: >= 1.0x cuDNN with default math (TF32), timed in the same process.
// Metric:        sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active (tensor pipe)
//                rises from ~0 to tens of percent while sm__pipe_fma_cycles_active falls to the
//                address arithmetic.
// Assumes:       any valid problem (any N, C, H, W, K, R, S, padding, stride, dilation); tensors below
//                2^31 elements. Any pointer works; the fast paths need C*R*S % 4 == 0 and w 16-byte
//                aligned (16-byte cp.async of the filter), P*Q even and y 8-byte aligned (float2 stores
//                of the output). Shared memory (dynamic): STAGES x (BLOCK_M x (BLOCK_K + 4) +
//                BLOCK_K x (BLOCK_N + 8)) floats + BLOCK_N x 16 bytes: 107 KiB (128 x 128) or 80 KiB
//                (64 x 128), two blocks per SM. Split-K needs a workspace of splits x N*K*P*Q floats
//                (tf32_implicit_gemm_workspace). Sm_80 or newer (cp.async, TF32 mma).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tut/conv/harness.cuh"

namespace ch23 {

// The block tile of Y (BLOCK_M filters x BLOCK_N output pixels) is a template parameter, chosen per
// problem by the launcher (plan()): 128 x 128 as 2 x 2 warps of 64 x 64, or 64 x 128 as 1 x 4 warps
// of 64 x 32 (layers with 64 filters). Every warp computes its WARP_M x WARP_N piece as MMA tiles of
// MMA_M x MMA_N, MMA_K taps at a time; BLOCK_K taps per pipeline stage. A reader may try
// WARP_N_LARGE = 32 (8 warps of 64 x 32 in the 128 x 128 tile: measured 3% slower on seed_3x3) or
// STAGES = 4 (one block per SM for 128 x 128: see the shared-memory sizes).
constexpr int BLOCK_K = 32;
constexpr int WARP_M = 64;
constexpr int WARP_N_LARGE = 64;  // the warp tile's width in the 128 x 128 shape: 2 x 2 warps
constexpr int WARP_N_SMALL = 32;  // ... in the 64 x 128 shape: 1 x 4 warps
constexpr int MMA_M = 16, MMA_N = 8, MMA_K = 8;  // mma.sync.m16n8k8 with TF32 inputs
constexpr int WARP_SIZE = 32;
constexpr int STAGES = 3;
static_assert(WARP_M % MMA_M == 0 && BLOCK_K % MMA_K == 0, "MMA tiles cover the warp tile and the K step");
static_assert(WARP_N_LARGE % WARP_SIZE == 0 && WARP_N_SMALL % WARP_SIZE == 0, "warp tiles are whole 32-pixel chunks");
static_assert(STAGES >= 2, "the pipeline needs a stage to fill while one is computed");
// Registers: a 64 x 64 warp tile holds 128 accumulators per thread, plus fragments (16 + 16) and the
// gather's coordinates: within the 255 that two blocks of 128 threads per SM allow.
constexpr int MIN_BLOCKS_PER_SM = 2;

// The shared tiles and their padding, in floats (why: the fragment loads, below).
//   Ws[m][k], a filter's BLOCK_K taps along a row of BLOCK_K + A_PAD = 36 floats: rows 144 bytes
//   apart, so the 8 rows of a 16-byte-wide ldmatrix matrix start in 8 different 16-byte bank groups.
//   Xs[k][n], a tap's BLOCK_N pixels along a row of BLOCK_N + B_PAD floats, each 32-pixel chunk
//   stored transposed (x_slot below): pixel 8a + b of the chunk (a < 4, b < 8) at slot 4b + a. Lane
//   (g, t) of an mma needs pixel g of MMA tiles jn = 0..3 of a chunk, pixels g, 8 + g, 16 + g, 24 + g:
//   now one 16-byte load, slots 4g .. 4g + 3. With B_PAD = 8 the rows are 2 bank groups apart, and
//   the 8 lanes of each quarter-warp, t = 0..3 and two g, read groups 2t + g: all 8 differ.
constexpr int A_PAD = 4;
constexpr int B_PAD = 8;
constexpr int A_LD = BLOCK_K + A_PAD;
static_assert(A_LD % 4 == 0 && (A_LD / 4) % 2 == 1, "rows of Ws are 16-byte aligned, an odd number of groups apart");
static_assert(B_PAD % 32 == 8, "rows of Xs are 2 bank groups apart");

// The slot of pixel p (0 <= p < BLOCK_N) in a row of Xs: within each chunk of 32, 8a + b -> 4b + a.
// A warp's 32 gathers of one tap, pixels l = 0..31 of a chunk, land in slots 4(l % 8) + l / 8: all
// 32 banks, no conflict.
__host__ __device__ constexpr int x_slot(int p) { return (p & ~31) | ((p & 7) << 2) | ((p >> 3) & 3); }

// 128-bit copies move VEC floats.
constexpr int VEC = 4;
static_assert(BLOCK_K % VEC == 0, "a filter's row of the tile is whole 16-byte chunks");

// An unsigned coordinate that no image contains: a column past N*P*Q gets it as its first input
// row, a tap past the block's taps as its column shift, so that every bounds check on them fails.
constexpr unsigned FAR_OUTSIDE = 1u << 31;

// x / d for 0 <= x < 2^31 and a divisor d >= 1 fixed for the launch (chapter 20).
struct FastDiv {
  int d = 1;
  unsigned mul = 1;
  int shift = 0;
  FastDiv() = default;
  explicit FastDiv(int divisor) : d(divisor) {
    while ((std::int64_t(1) << shift) < d) ++shift;
    mul = unsigned(((std::uint64_t(1) << 32) * ((std::uint64_t(1) << shift) - d)) / d + 1);
  }
  __device__ __forceinline__ int div(int x) const { return int((__umulhi(unsigned(x), mul) + unsigned(x)) >> shift); }
};

// The problem as the kernel reads it (chapter 20). GEMM view: Y (filters x pixels) = W (filters x
// taps) * X_col (taps x pixels).
struct Geometry {
  int filters, pixels, taps;  // K, N*P*Q, C*R*S
  int h, w, hw, chw;          // input extents
  int s, rs;                  // taps per filter row, per channel
  int dil_h, dil_w, stride_h, stride_w, pad_h, pad_w;
  int q, pq;                  // output extents
  int y_image_skip;           // (K - 1) * P * Q: y_offset(k, j) = j + n * y_image_skip + k * P * Q
  FastDiv div_rs, div_s, div_pq, div_q;
};

inline Geometry make_geometry(const tut::ConvProblem& p) {
  Geometry g;
  g.filters = p.gemm_m();
  g.pixels = p.gemm_n();
  g.taps = p.gemm_k();
  g.h = p.h;
  g.w = p.w;
  g.hw = p.h * p.w;
  g.chw = p.c * p.h * p.w;
  g.s = p.s;
  g.rs = p.r * p.s;
  g.dil_h = p.dil_h;
  g.dil_w = p.dil_w;
  g.stride_h = p.stride_h;
  g.stride_w = p.stride_w;
  g.pad_h = p.pad_h;
  g.pad_w = p.pad_w;
  g.q = p.q;
  g.pq = p.p * p.q;
  g.y_image_skip = (p.k - 1) * p.p * p.q;
  g.div_rs = FastDiv(g.rs);
  g.div_s = FastDiv(g.s);
  g.div_pq = FastDiv(g.pq);
  g.div_q = FastDiv(g.q);
  return g;
}

// One column j of X_col and Y (output pixel n, p, q), decoded once per block (chapter 20).
struct __align__(16) Column {
  unsigned base, ih0, iw0;
  int y;
};

// Plain-loop equivalent: out_coord(j), in_row(p, 0), in_col(q, 0) and y_offset(0, j) of problem.hpp.
__device__ __forceinline__ Column decode_column(const Geometry& g, int j) {
  if (j >= g.pixels) return Column{0u, FAR_OUTSIDE, 0u, -1};  // a column past N*P*Q reads zeros
  const int n = g.div_pq.div(j);
  const int pq = j - n * g.pq;
  const int p = g.div_q.div(pq);
  const int q = pq - p * g.q;
  const unsigned ih0 = unsigned(p * g.stride_h - g.pad_h), iw0 = unsigned(q * g.stride_w - g.pad_w);
  return Column{unsigned(n) * unsigned(g.chw) + ih0 * unsigned(g.w) + iw0, ih0, iw0, j + n * g.y_image_skip};
}

// One row kk of X_col (filter tap c, r, s). Plain-loop equivalent: tap_coord(kk) of problem.hpp.
// Every call checks kk against the block's last tap (k_end): one compare per tap and K step, shared
// by the thread's B_COLS columns, so the pipeline needs no peeled tail (chapter 20 peeled it).
struct Tap {
  unsigned offset, rd, sd;
};

__device__ __forceinline__ Tap decode_tap(const Geometry& g, int kk, int k_end) {
  const int c = g.div_rs.div(kk);
  const int rs = kk - c * g.rs;
  const int r = g.div_s.div(rs);
  const int s = rs - r * g.s;
  const int rd = r * g.dil_h, sd = s * g.dil_w;
  Tap t{unsigned(c * g.hw + rd * g.w + sd), unsigned(rd), unsigned(sd)};
  if (kk >= k_end) t.sd = FAR_OUTSIDE;  // a tap past the block's share reads zeros
  return t;
}

// ---- The PTX this chapter adds -----------------------------------------------------------------
// cp.async: copies `bytes` (4 or 16) from global to shared memory without passing through
// registers; src_bytes < bytes fills the rest with zeros (src_bytes = 0: all zeros, nothing read).
// .ca caches the 4-byte gathers in L1 (neighbouring taps read the same lines), .cg the filter in L2
// only. A thread's copies complete in the groups it commits; wait_group<N> waits until at most N of
// its groups are still in flight. The "memory" clobbers keep the compiler from moving shared-memory
// accesses across them.
__device__ __forceinline__ void cp_async_4(unsigned dst, const float* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_16(unsigned dst, const float* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// FP32 -> TF32, round to nearest with ties away from zero: the 13 low bits of the result are zero.
// (The tensor cores would otherwise just drop those bits: truncation, twice the error.) On sm_90
// this is three instructions: a test for infinity or NaN, an add of half a TF32 unit (bit 12) to
// the magnitude, and a mask that clears the 13 low bits.
__device__ __forceinline__ float to_tf32(float v) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
  return __uint_as_float(r);
}

// The same rounding for a value that goes straight into an mma operand, in one instruction: the
// tensor core reads only the top 19 bits of a .tf32 operand, so the mask is not needed, and adding
// bit 12 carries into bit 13 exactly when cvt.rna would round up. The test is not needed either for
// finite values and infinities (0x7f800000 + 0x1000 still reads as infinity); only a NaN whose 10
// top fraction bits are all ones could carry into the sign. As a plain add, the result lands
// directly in the register pair the mma wants (the predicated add of cvt.rna updates its register in
// place, and ptxas then copies every value into its pair: two moves per mma, measured in the SASS).
__device__ __forceinline__ unsigned tf32_operand(float v) { return __float_as_uint(v) + 0x1000u; }

// ldmatrix.x4: the 32 lanes name the rows of four 8 x 16-byte matrices (lane l: matrix l / 8, row
// l % 8); lane l receives, from each matrix, 4 bytes of row l / 4 at column l % 4. Read as 32-bit
// TF32 values, an 8 x 16-byte matrix is 8 rows x 4 taps, and those are exactly the positions of the
// mma's A fragment (below).
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// D = A * B + D for one 16 x 8 tile, 8 taps deep. With g = lane / 4 and t = lane % 4 (PTX ISA,
// "Matrix Fragments for mma.m16n8k8", .tf32):
//   a[0] = A(g, t)   a[1] = A(g + 8, t)   a[2] = A(g, t + 4)   a[3] = A(g + 8, t + 4)
//   b[0] = B(t, g)   b[1] = B(t + 4, g)
//   d[0] = D(g, 2t)  d[1] = D(g, 2t + 1)  d[2] = D(g + 8, 2t)  d[3] = D(g + 8, 2t + 1)
__device__ __forceinline__ void mma_tf32(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ unsigned smem_addr(const void* p) { return unsigned(__cvta_generic_to_shared(p)); }

// X_col(kk, j) into shared memory at dst: x[n][c][ih0 + rd][iw0 + sd], or 0 in the padding (chapter
// 20's test, then a zero-filling copy that reads nothing). The address of a padding element is
// replaced by x itself, so that no copy ever names memory outside x.
__device__ __forceinline__ void gather_async(unsigned dst, const float* __restrict__ x, const Geometry& g,
                                             const Column& col, const Tap& t) {
  const bool inside = (col.ih0 + t.rd < unsigned(g.h)) & (col.iw0 + t.sd < unsigned(g.w));
  cp_async_4(dst, x + (inside ? col.base + t.offset : 0u), inside ? 4 : 0);
}

// The shared memory of one block of shape BLOCK_M x BLOCK_N: STAGES of each tile, then the columns.
// Xs rows hold the slots x_slot(p) (a permutation of 0 .. BLOCK_N - 1), then the padding.
template <int BLOCK_M, int BLOCK_N>
struct SharedLayout {
  static constexpr int B_LD = BLOCK_N + B_PAD;
  static constexpr int W_STAGE = BLOCK_M * A_LD;   // floats of one stage of Ws
  static constexpr int X_STAGE = BLOCK_K * B_LD;   // floats of one stage of Xs
  static constexpr std::size_t W_OFFSET = 0;
  static constexpr std::size_t X_OFFSET = W_OFFSET + std::size_t(STAGES) * W_STAGE * sizeof(float);
  static constexpr std::size_t COLS_OFFSET = X_OFFSET + std::size_t(STAGES) * X_STAGE * sizeof(float);
  static constexpr std::size_t BYTES = COLS_OFFSET + std::size_t(BLOCK_N) * sizeof(Column);
  static_assert(X_OFFSET % 16 == 0 && COLS_OFFSET % 16 == 0, "every array starts 16-byte aligned");
};

// Y = W * X_col, or the part of it that the taps [blockIdx.z * split_taps, + split_taps) contribute,
// written in NKPQ order to y + blockIdx.z * split_stride (split-K: the launcher sums the parts).
// vec_y (P*Q even, y 8-byte aligned): two consecutive columns 2t, 2t + 1 of a C fragment lie in one
// image and are contiguous in y, so they go out as one float2.
template <int BLOCK_M, int BLOCK_N, int WARP_N, bool VEC_A>
__global__ void __launch_bounds__((BLOCK_M / WARP_M) * (BLOCK_N / WARP_N) * WARP_SIZE, MIN_BLOCKS_PER_SM)
    tf32_implicit_gemm_kernel(const Geometry g, const float* __restrict__ x, const float* __restrict__ w,
                              float* __restrict__ y, bool vec_y, int split_taps, std::size_t split_stride) {
  // The sizes that depend on the tile shape.
  constexpr int WARPS_M = BLOCK_M / WARP_M;  // 2 or 1 rows of warps
  constexpr int WARPS_N = BLOCK_N / WARP_N;  // 2 or 4 columns of warps
  constexpr int FRAGS_M = WARP_M / MMA_M;    // 4 MMA tiles down a warp tile
  constexpr int FRAGS_N = WARP_N / MMA_N;    // 8 or 4 across
  constexpr int CHUNKS_N = WARP_N / WARP_SIZE;  // 32-pixel chunks of Xs per warp tile (x_slot)
  constexpr int NUM_WARPS = WARPS_M * WARPS_N;
  constexpr int NUM_THREADS = NUM_WARPS * WARP_SIZE;
  static_assert(BLOCK_M % WARP_M == 0 && BLOCK_N % WARP_N == 0, "the warps split the block tile evenly");
  using L = SharedLayout<BLOCK_M, BLOCK_N>;
  constexpr int B_LD = L::B_LD;
  // The filter copy: A_COPIES copies of A_VEC floats per thread, A_VEC = 4 (16-byte chunks, VEC_A)
  // or 1. A_PER_ROW consecutive threads copy one filter's BLOCK_K contiguous taps (8 chunks of 16
  // bytes, or a warp of floats); the next A_ROW_STEP filters go to the next threads.
  constexpr int A_VEC = VEC_A ? VEC : 1;
  constexpr int A_PER_ROW = BLOCK_K / A_VEC;
  constexpr int A_ROW_STEP = NUM_THREADS / A_PER_ROW;
  constexpr int A_COPIES = BLOCK_M / A_ROW_STEP;
  static_assert(NUM_THREADS % A_PER_ROW == 0 && BLOCK_M % A_ROW_STEP == 0, "the threads split the filter tile exactly");
  // The input copy (chapter 20's): warp w gathers rows (taps) w, w + NUM_WARPS, ... of the tile,
  // lane l the columns l, l + WARP_SIZE, ...: a warp's copies of one tap are 32 consecutive pixels,
  // which land in the 32 slots of one chunk of Xs (x_slot).
  static_assert(BLOCK_K % NUM_WARPS == 0 && BLOCK_N % WARP_SIZE == 0, "the warps cover the input tile exactly");
  constexpr int B_ROWS = BLOCK_K / NUM_WARPS;  // 8 taps per thread with 4 warps
  constexpr int B_COLS = BLOCK_N / WARP_SIZE;  // 4 columns per thread

  extern __shared__ __align__(16) unsigned char smem[];
  float* const Ws = reinterpret_cast<float*>(smem + L::W_OFFSET);  // [STAGES][BLOCK_M][A_LD]: W, filter-major
  float* const Xs = reinterpret_cast<float*>(smem + L::X_OFFSET);  // [STAGES][BLOCK_K][B_LD]: X_col, tap-major
  Column* const cols_s = reinterpret_cast<Column*>(smem + L::COLS_OFFSET);  // the block's columns, decoded

  const int tid = threadIdx.x;
  const int warp = tid / WARP_SIZE, lane = tid % WARP_SIZE;
  const int warp_row = warp / WARPS_N, warp_col = warp % WARPS_N;
  const int g8 = lane / 4, t4 = lane % 4;  // the mma's groupID and threadID_in_group
  const int block_row = blockIdx.y * BLOCK_M;  // first filter (row of Y and of W) of this block
  const int block_col = blockIdx.x * BLOCK_N;  // first output pixel (column of Y and of X_col)
  // This block's share of the reduction: taps [k_begin, k_end), whole K steps except at C*R*S.
  const int k_begin = blockIdx.z * split_taps;
  const int k_end = min(g.taps, k_begin + split_taps);
  const int k_steps = (k_end - k_begin + BLOCK_K - 1) / BLOCK_K;
  float* __restrict__ out = y + blockIdx.z * split_stride;

  for (int j = tid; j < BLOCK_N; j += NUM_THREADS) cols_s[j] = decode_column(g, block_col + j);

  // This thread's share of the filter copy: filters a_row + i * A_ROW_STEP (i < A_COPIES) of the
  // tile, taps a_k .. a_k + A_VEC - 1 of each K step. Filter rows past K are clamped to K - 1
  // (chapter 20): they feed only results that are never stored.
  const int a_row = tid / A_PER_ROW, a_k = (tid % A_PER_ROW) * A_VEC;
  auto a_offset = [&](int i, int kk) {  // offset of W(block_row + a_row + i * A_ROW_STEP, kk) in w
    return unsigned(min(block_row + a_row + i * A_ROW_STEP, g.filters - 1)) * unsigned(g.taps) + unsigned(kk);
  };
  const int b_row = warp, b_col = lane;  // this thread's first tap and first column of the input tile
  const int b_slot = x_slot(b_col);      // ...and that column's slot; column b_col + j * 32 is at b_slot + j * 32

  // Global -> shared, asynchronously: this thread's share of both tiles of the K step at taps kk0..,
  // into stage `st`. A filter chunk past k_end is zero-filled (C*R*S % 4 == 0 with VEC_A, and split
  // boundaries are whole K steps, so a chunk is wholly in or out); a tap past it reads zeros.
  auto load_tiles = [&](int st, int kk0) {
    float* ws = Ws + st * L::W_STAGE;
    const int kk = kk0 + a_k;
    const bool in = kk < k_end;
#pragma unroll
    for (int i = 0; i < A_COPIES; ++i) {
      const unsigned dst = smem_addr(ws + (a_row + i * A_ROW_STEP) * A_LD + a_k);
      const float* src = w + (in ? a_offset(i, kk) : 0u);
      if (VEC_A) {
        cp_async_16(dst, src, in ? 16 : 0);
      } else {
        cp_async_4(dst, src, in ? 4 : 0);
      }
    }
    float* xs = Xs + st * L::X_STAGE;
    Column cols[B_COLS];
#pragma unroll
    for (int j = 0; j < B_COLS; ++j) cols[j] = cols_s[b_col + j * WARP_SIZE];
#pragma unroll
    for (int i = 0; i < B_ROWS; ++i) {
      const int row = b_row + i * NUM_WARPS;
      const Tap t = decode_tap(g, kk0 + row, k_end);  // once per row, for B_COLS columns
#pragma unroll
      for (int j = 0; j < B_COLS; ++j) gather_async(smem_addr(xs + row * B_LD + b_slot + j * WARP_SIZE), x, g, cols[j], t);
    }
  };

  // FP32 -> TF32, the filter tile in shared memory: by the thread that copied the values (its own
  // copies are visible to it after cp_async_wait; nobody else's are, until the barrier), once per
  // block. Read by WARPS_N warps, through ldmatrix, its values would cost WARPS_N roundings each in
  // registers. The input tile is rounded in registers instead, after each fragment load (compute_step):
  // WARPS_M roundings per value (2 or 1), and no second pass over shared memory, whose bandwidth is
  // what the mma loop runs short of.
  auto round_tiles = [&](int st) {
    float* ws = Ws + st * L::W_STAGE;
#pragma unroll
    for (int i = 0; i < A_COPIES; ++i) {
      float* p = ws + (a_row + i * A_ROW_STEP) * A_LD + a_k;
      if (VEC_A) {
        float4 v = *reinterpret_cast<float4*>(p);
        v = make_float4(to_tf32(v.x), to_tf32(v.y), to_tf32(v.z), to_tf32(v.w));
        *reinterpret_cast<float4*>(p) = v;
      } else {
        *p = to_tf32(*p);
      }
    }
  };

  // acc[im][jn]: the C fragment of MMA tile (im, jn) of this warp's tile, rows (filters) warp_row *
  // WARP_M + im * MMA_M + {g8, g8 + 8}, columns (pixels) warp_col * WARP_N + jn * MMA_N + 2 * t4 + {0, 1}.
  float acc[FRAGS_M][FRAGS_N][4] = {};
  // ldmatrix's row for this lane (see ldmatrix_x4): matrices 0..3 are A's (rows 0-7, taps 0-3),
  // (rows 8-15, taps 0-3), (rows 0-7, taps 4-7), (rows 8-15, taps 4-7), which lands a[0..3] as the mma
  // wants them.
  const int ld_row = warp_row * WARP_M + lane % 8 + 8 * ((lane / 8) % 2);
  const int ld_k = 4 * (lane / 16);

  // The math of one K step on stage `st`: per MMA_K taps, FRAGS_M ldmatrix.x4 for the filter
  // fragments, 2 x CHUNKS_N 16-byte loads for the input fragments (each the b[0] or b[1] of 4 MMA
  // tiles: x_slot), rounded to TF32, then FRAGS_M x FRAGS_N mma.
  auto compute_step = [&](int st) {
    const float* ws = Ws + st * L::W_STAGE;
    const float* xs = Xs + st * L::X_STAGE;
#pragma unroll
    for (int k = 0; k < BLOCK_K; k += MMA_K) {
      unsigned a[FRAGS_M][4], b[FRAGS_N][2];
#pragma unroll
      for (int im = 0; im < FRAGS_M; ++im) ldmatrix_x4(a[im], smem_addr(ws + (ld_row + im * MMA_M) * A_LD + k + ld_k));
#pragma unroll
      for (int c = 0; c < CHUNKS_N; ++c) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // X_col(k + t4, n) for b[.][0], X_col(k + t4 + 4, n) for b[.][1]
          const float4 v =
              *reinterpret_cast<const float4*>(xs + (k + t4 + 4 * h) * B_LD + warp_col * WARP_N + c * WARP_SIZE + 4 * g8);
          b[4 * c + 0][h] = tf32_operand(v.x);  // pixel g8 of MMA tile 4c
          b[4 * c + 1][h] = tf32_operand(v.y);  // pixel 8 + g8
          b[4 * c + 2][h] = tf32_operand(v.z);
          b[4 * c + 3][h] = tf32_operand(v.w);
        }
      }
#pragma unroll
      for (int im = 0; im < FRAGS_M; ++im) {
#pragma unroll
        for (int jn = 0; jn < FRAGS_N; ++jn) mma_tf32(acc[im][jn], a[im], b[jn]);
      }
    }
  };

  __syncthreads();  // the column table is complete before the first copy reads it
  // Prologue: the first STAGES - 1 K steps in flight, one commit group each (empty past the end, so
  // that the group count stays the same in every thread and every iteration).
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < k_steps) load_tiles(s, k_begin + s * BLOCK_K);
    cp_async_commit();
  }
  int st = 0;                  // the stage holding the K step being computed
  int st_load = STAGES - 1;    // the stage the next copy goes to
  for (int step = 0; step < k_steps; ++step) {
    cp_async_wait<STAGES - 2>();  // this thread's copies of K step `step` have landed...
    round_tiles(st);              // ...its filter values are rounded to TF32 in place...
    // ...and after the barrier everyone's are. Everyone is also done computing the previous K step,
    // whose stage, st_load, the next copy overwrites. One barrier per K step.
    __syncthreads();
    const int next = step + STAGES - 1;
    if (next < k_steps) load_tiles(st_load, k_begin + next * BLOCK_K);
    cp_async_commit();
    compute_step(st);  // the copies of the next STAGES - 1 K steps are in flight meanwhile
    st = st == STAGES - 1 ? 0 : st + 1;
    st_load = st_load == STAGES - 1 ? 0 : st_load + 1;
  }

  // Epilogue (chapter 20's, on the C-fragment layout): Y(row, j) goes to out[n][row][p][q], at
  // y_col(j) + row * P*Q, with y_col(j) from the column table (-1: past N*P*Q, not stored). Each
  // warp store writes 8 filters x 8 consecutive pixels: 8 fully used 32-byte sectors.
#pragma unroll
  for (int jn = 0; jn < FRAGS_N; ++jn) {
    const int c0 = warp_col * WARP_N + jn * MMA_N + 2 * t4;
    const int y0 = cols_s[c0].y, y1 = cols_s[c0 + 1].y;
#pragma unroll
    for (int im = 0; im < FRAGS_M; ++im) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = block_row + warp_row * WARP_M + im * MMA_M + g8 + 8 * h;
        if (row >= g.filters) continue;
        const float v0 = acc[im][jn][2 * h], v1 = acc[im][jn][2 * h + 1];
        if (vec_y && y0 >= 0) {  // both columns exist and are contiguous
          *reinterpret_cast<float2*>(&out[y0 + row * g.pq]) = make_float2(v0, v1);
        } else {
          if (y0 >= 0) out[y0 + row * g.pq] = v0;
          if (y1 >= 0) out[y1 + row * g.pq] = v1;
        }
      }
    }
  }
}

// Split-K's second pass (chapter 20): y[i] = part[0][i] + part[1][i] + ... in that order, every run.
constexpr int SUM_THREADS = 256;
__global__ void __launch_bounds__(SUM_THREADS)
    sum_splits_kernel(const float* __restrict__ part, float* __restrict__ y, int count, int splits, bool vec) {
  const int i0 = (blockIdx.x * SUM_THREADS + threadIdx.x) * VEC;
  if (i0 >= count) return;
  if (vec) {
    float4 sum = *reinterpret_cast<const float4*>(&part[i0]);
    for (int s = 1; s < splits; ++s) {
      const float4 v = *reinterpret_cast<const float4*>(&part[std::size_t(s) * count + i0]);
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    *reinterpret_cast<float4*>(&y[i0]) = sum;
  } else {
    for (int i = i0; i < min(i0 + VEC, count); ++i) {
      float sum = part[i];
      for (int s = 1; s < splits; ++s) sum += part[std::size_t(s) * count + i];
      y[i] = sum;
    }
  }
}

inline bool aligned(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

// ---- The tile rule: which shape, how many splits (chapter 20's, with this kernel's costs) ---------
// The busiest SM runs b = ceil(tiles x splits / SMs) blocks, occ at a time (occ from the CUDA
// runtime, per shape): floor(b / occ) full rounds and a partial one for the rest, which takes
// (b % occ) / (occ * PARTIAL_EFFICIENCY) of a full round (at most 1). A round costs its K steps +
// BLOCK_OVERHEAD_STEPS; a split adds SPLIT_STEPS per block per slot and SPLIT_LAUNCH_STEPS. To
// compare shapes, a round's K step is weighted by what it costs an SM: occ x the instructions a
// block issues per K step (Shape::issue). Chapter 20 weighted it by the FMAs, occ x BLOCK_M x
// BLOCK_N, which were nearly all of its loop; here the mma are 15% of the instructions and the
// tensor pipe is not what runs out (busy 39% of the time on seed_3x3): the gather, the fragment
// loads and the address arithmetic are, and a 64 x 128 tile pays nearly as many of them per warp as
// a 128 x 128 one for half the mma. The least time wins; ties go to the larger filter tile and to
// fewer splits.
constexpr double BLOCK_OVERHEAD_STEPS = 2.0;
// 1: a K step weighed by the instructions it issues (Shape::issue); 0: by its multiply-adds,
// BLOCK_M x BLOCK_N, as chapter 20 (and this chapter's first version) did.
constexpr int WEIGH_BY_ISSUE = 1;
constexpr double PARTIAL_EFFICIENCY = 0.8;
// A split's partial result is written and read back: 8 bytes against BLOCK_K = 32 multiply-adds per
// result and K step. At ~150 TFLOP/s of TF32 (75 T multiply-adds/s) and ~3 TB/s of DRAM, a byte
// costs as long as 25 multiply-adds: 8 x 25 / 32 = 6.25, about 6 K steps. (Chapter 20: 5, at FMA speed
// and BLOCK_K = 16.)
constexpr double SPLIT_STEPS = 6.0;
constexpr double SPLIT_LAUNCH_STEPS = 1.0;
constexpr int MAX_SPLITS = 32;

struct Plan {
  int shape = 0;   // index into SHAPES
  int splits = 1;  // blocks along the reduction, each with split_taps taps
  int split_taps = 0;
};
struct Shape {
  int block_m, block_n, warp_n;
  // Instructions one block issues per K step: the main loop's SASS instructions (cuobjdump -sass,
  // from the cp.async wait to the loop's branch back; 16-byte filter copies) times its warps. Count
  // them again after changing the kernel: 854 x 4 warps for 128 x 128 (128 of them mma per warp),
  // 676 x 4 for 64 x 128 (64 mma): per multiply-add, the small tile costs 1.58x as much.
  int issue;
};
constexpr Shape SHAPES[] = {{128, 128, WARP_N_LARGE, 854 * 4}, {64, 128, WARP_N_SMALL, 676 * 4}};
constexpr int NUM_SHAPES = sizeof(SHAPES) / sizeof(SHAPES[0]);

using KernelFn = void (*)(const Geometry, const float*, const float*, float*, bool, int, std::size_t);
template <int BM, int BN, int WN>
constexpr int threads_of() {
  return (BM / WARP_M) * (BN / WN) * WARP_SIZE;
}
struct Instance {
  KernelFn fn;
  int threads;
  std::size_t smem;
};
// The kernel instance for a shape and the filter copy (16-byte chunks or floats): four in all.
inline Instance kernel_for(int shape, bool vec_a) {
  if (shape == 1) {
    return {vec_a ? tf32_implicit_gemm_kernel<64, 128, WARP_N_SMALL, true>
                  : tf32_implicit_gemm_kernel<64, 128, WARP_N_SMALL, false>,
            threads_of<64, 128, WARP_N_SMALL>(), SharedLayout<64, 128>::BYTES};
  }
  return {vec_a ? tf32_implicit_gemm_kernel<128, 128, WARP_N_LARGE, true>
                : tf32_implicit_gemm_kernel<128, 128, WARP_N_LARGE, false>,
          threads_of<128, 128, WARP_N_LARGE>(), SharedLayout<128, 128>::BYTES};
}

// The device's SM count and each shape's blocks per SM, queried once per device. The kernels' shared
// memory is over the 48 KiB a launch gets by default: each instance is allowed its size first.
struct DeviceFacts {
  int sms = 0;
  int occ[NUM_SHAPES] = {};
};
inline const DeviceFacts& device_facts() {
  static tut::PerDevice<DeviceFacts> cache;
  return cache.get([](int device, DeviceFacts& facts) {
    TUT_CUDA_CHECK(cudaDeviceGetAttribute(&facts.sms, cudaDevAttrMultiProcessorCount, device));
    for (int s = 0; s < NUM_SHAPES; ++s) {
      for (bool vec_a : {false, true}) {
        const Instance k = kernel_for(s, vec_a);
        TUT_CUDA_CHECK(cudaFuncSetAttribute(k.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(k.smem)));
      }
      const Instance k = kernel_for(s, false);
      TUT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&facts.occ[s], k.fn, k.threads, k.smem));
      facts.occ[s] = std::max(facts.occ[s], 1);
    }
  });
}

// allow_splits = false: one split only (no workspace to hold the partial outputs).
inline Plan plan(const tut::ConvProblem& p, bool allow_splits = true) {
  const DeviceFacts& d = device_facts();
  const long long k_steps = tut::ceil_div(p.gemm_k(), BLOCK_K);
  Plan best;
  double best_time = 0.0;
  for (int s = 0; s < NUM_SHAPES; ++s) {
    const long long tiles = tut::ceil_div<long long>(p.gemm_m(), SHAPES[s].block_m) *
                            tut::ceil_div<long long>(p.gemm_n(), SHAPES[s].block_n);
    const int occ = d.occ[s];
    const long long max_splits = allow_splits ? std::min<long long>(MAX_SPLITS, k_steps) : 1;
    for (long long splits = 1; splits <= max_splits; ++splits) {
      const long long steps = tut::ceil_div(k_steps, splits);
      if (tut::ceil_div(k_steps, steps) != splits) continue;  // the same split as a smaller count
      const long long units = tiles * splits;
      const long long b = tut::ceil_div<long long>(units, d.sms);
      const double rounds = double(b / occ) + std::min(1.0, double(b % occ) / (occ * PARTIAL_EFFICIENCY));
      double time = rounds * (double(steps) + BLOCK_OVERHEAD_STEPS);
      if (splits > 1) time += SPLIT_STEPS * double(units) / (double(d.sms) * occ) + SPLIT_LAUNCH_STEPS;
      time *= double(occ) * (WEIGH_BY_ISSUE ? SHAPES[s].issue : SHAPES[s].block_m * SHAPES[s].block_n);
      if (best_time == 0.0 || time < best_time) {
        best_time = time;
        best.shape = s;
        best.splits = int(splits);
        best.split_taps = int(steps) * BLOCK_K;
      }
    }
  }
  return best;
}

// Scratch for split-K: one partial y per split.
inline std::size_t tf32_implicit_gemm_workspace(const tut::ConvProblem& p) {
  const Plan pl = plan(p);
  return pl.splits > 1 ? std::size_t(pl.splits) * std::size_t(p.y_elems()) * sizeof(float) : 0;
}

// grid.y holds at most MAX_GRID_Y row tiles; problems with more filters run in several launches.
constexpr int MAX_GRID_Y = 65535;

inline void tf32_implicit_gemm(const tut::ConvProblem& p, const tut::ConvArgs& a, cudaStream_t stream) {
  Geometry g = make_geometry(p);
  const Plan pl = plan(p, a.workspace != nullptr);
  const int block_m = SHAPES[pl.shape].block_m, block_n = SHAPES[pl.shape].block_n;
  float* out = pl.splits > 1 ? static_cast<float*>(a.workspace) : a.y;
  const std::size_t split_stride = pl.splits > 1 ? std::size_t(p.y_elems()) : 0;
  // 16-byte filter copies need every filter (C*R*S floats) to start 16-byte aligned; float2 stores
  // need every (n, k) plane of y (P*Q floats) 8-byte aligned.
  const bool vec_a = g.taps % VEC == 0 && aligned(a.w, 16);
  const bool vec_y = g.pq % 2 == 0 && aligned(out, 8);
  const Instance k = kernel_for(pl.shape, vec_a);
  const int filters = g.filters;
  for (int row0 = 0; row0 < filters; row0 += MAX_GRID_Y * block_m) {
    g.filters = std::min(filters - row0, MAX_GRID_Y * block_m);
    const dim3 grid(tut::ceil_div(g.pixels, block_n), tut::ceil_div(g.filters, block_m), pl.splits);
    k.fn<<<grid, k.threads, k.smem, stream>>>(g, a.x, a.w + std::size_t(row0) * g.taps, out + std::size_t(row0) * g.pq,
                                              vec_y, pl.split_taps, split_stride);
    TUT_CHECK_LAUNCH();
  }
  if (pl.splits > 1) {
    const int count = int(p.y_elems());
    const bool vec = count % VEC == 0 && aligned(out, 16) && aligned(a.y, 16);
    const int blocks = tut::ceil_div(tut::ceil_div(count, VEC), SUM_THREADS);
    sum_splits_kernel<<<blocks, SUM_THREADS, 0, stream>>>(out, a.y, count, pl.splits, vec);
    TUT_CHECK_LAUNCH();
  }
}

}  // namespace ch23
