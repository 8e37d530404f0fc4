// Chapter 20: implicit GEMM, double buffering.
//
// What changed:  Part I's chapter 09, on chapter 19's kernel: two shared buffers per tile, and the
//                copy split into a "global load" stage that reads the NEXT K step into registers
//                (a_ldg, b_ldg) before the math on the current buffer, and a "shared store" stage
//                that writes them into the other buffer after it; one __syncthreads per K step
//                instead of two. Filter rows past K are clamped to ones that exist (they feed only
//                results that are never stored), the taps are checked only in a last, partial K step
//                peeled off the loop, and the final K step is peeled too, so the loop body has no
//                bounds check and no branch. And the tile now fits the layer: the launcher picks the
//                block tile (128 x 128, or 64 x 256 when K = 64 would leave half a 128-row tile
//                idle) and a split of the reduction across blocks (split-K, for grids that would not
//                fill the GPU, like r50_c5's 4 x 13 = 52 tiles on 132 SMs) from the problem and the
//                GPU's SM count and occupancy. Split-K sums its partial outputs in a fixed order in a
//                second kernel: deterministic, no atomics.
// Tile rule:     (plan()) for each shape and each split count S <= 32, with the SM count and the
//                shape's blocks per SM (occ) from the CUDA runtime: units = tiles x S blocks, the
//                busiest SM runs b = ceil(units / SMs) of them, in floor(b / occ) full rounds plus,
//                for the rest, a partial round of (b % occ) / (0.8 occ) of a full one (at most 1);
//                a round costs ceil(K steps / S) + 2 K steps; splitting adds 5 K steps per unit and
//                slot (the partial tile written and read back) and 1 for the second launch. Times
//                are weighted by occ x BLOCK_M x BLOCK_N to compare shapes; the least wins, ties go
//                to 128 x 128 and to fewer splits. No table of GPUs or layers.
// Prediction:    on seed_3x3 (3136 tiles, no split), 10% to 20% over chapter 19, as in Part I: the
//                gather's loads (8 per thread and K step, from L1/L2) are in flight during 1024
//                FMAs instead of exposed before a barrier, and the loop is ~1250 instructions per
//                K step, ~82% of them FFMA (Part I's chapter 09: 90%). At Part I's issue rate that
//                is 42-46 TFLOP/s. On layers with few tiles, far more: r50_c5_3x3 runs 5 splits x
//                52 tiles = 260 blocks instead of 52, r50_c4_3x3 4 x 98; r50_conv1 and r50_c2_3x3
//                run half the blocks of a 128 x 128 tile grid, none of them half idle.
// Metric:        smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active (waiting on
//                global loads) and ..._barrier_per_issue_active shrink;
//                sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active rises; on c4/c5,
//                sm__cycles_active.avg over sm__cycles_elapsed.max (SMs busy) rises toward 100%.
// Assumes:       any valid problem (any N, C, H, W, K, R, S, padding, stride, dilation); tensors below
//                2^31 elements. Any pointer works; the fast paths need C*R*S even and w 8-byte aligned
//                (float2 loads of the filter, 128 x 128 tiles), P*Q % 4 == 0 and y 16-byte aligned
//                (float4 stores of the output). Shared memory: 2 x BLOCK_K x ((BLOCK_M + 4) +
//                BLOCK_N) floats + BLOCK_N x 16 bytes: 34.5 KB (128 x 128) or 44.5 KB (64 x 256).
//                Split-K needs a workspace of splits x N*K*P*Q floats (double_buffered_implicit_gemm_workspace).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tut/conv/harness.cuh"

namespace ch20 {

// The block tile of Y (BLOCK_M filters x BLOCK_N output pixels) is now a template parameter of the
// kernel, chosen per problem by the launcher (plan() below): 128 x 128, or 64 x 256 for layers with
// few filters. Both have NUM_WARPS warps of the same warp tile, so everything below except the
// kernel's few shape-dependent sizes is shared. The K step (BLOCK_K filter taps), the warp tile
// (WARP_M x WARP_N), the results per thread (THREAD_M x THREAD_N) and their sub-tiles (SUB_M x SUB_N)
// are as in chapter 19. BLOCK_K = 16 rather than the classic 8: Part I measured 16 faster on H100,
// and here it also halves, per FMA, the tap decodes of the gather. A reader may try WARP_M = 64 with
// WARP_N = 32; BLOCK_K = 8 stops at a static_assert (the 64 x 256 shape's filter copy would have no
// whole vector per thread). The static_asserts keep the loops exact.
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
constexpr int LANES_M = WARP_M / THREAD_M;                  // 4 rows of lanes in a warp
constexpr int LANES_N = WARP_N / THREAD_N;                  // 8 columns of lanes
static_assert(LANES_M * LANES_N == WARP_SIZE, "the lanes of one warp cover its warp tile");
static_assert(LANES_M % 2 == 0, "the z-order stacks lanes in pairs of rows");
constexpr int NUM_WARPS = 8;                                // per block, for every tile shape
constexpr int NUM_THREADS = NUM_WARPS * WARP_SIZE;          // 256
static_assert(NUM_THREADS <= 1024, "a block has at most 1024 threads");
// Registers: THREAD_M * THREAD_N accumulators + fragments + the staging registers of the next K
// step must fit in 65536 / (NUM_THREADS * MIN_BLOCKS_PER_SM) = 128 registers per thread, or the
// kernel spills.
constexpr int MIN_BLOCKS_PER_SM = 2;
// A thread's sub-tiles: SUBS_M x SUBS_N of them, SUB_STRIDE_M rows and SUB_STRIDE_N columns apart,
// inside its warp tile (chapter 08). The SUB_M values a thread needs from a row of the tap-major
// filter tile, and the SUB_N from a row of the input tile, are one float4 each.
constexpr int SUBS_M = THREAD_M / SUB_M;
constexpr int SUBS_N = THREAD_N / SUB_N;
constexpr int SUB_STRIDE_M = LANES_M * SUB_M;  // 16
constexpr int SUB_STRIDE_N = LANES_N * SUB_N;  // 32

// 128-bit accesses move VEC floats.
constexpr int VEC = 4;
static_assert(SUB_M == VEC && SUB_N == VEC, "a sub-tile row is one float4");

// Padding of each row of the tap-major filter tile, in floats (chapter 19). With BLOCK_M = 64 the
// padded row is 68 floats, 17 bank groups of 16 bytes: again one group further on per row.
constexpr int A_PAD = 4;
static_assert(A_PAD % VEC == 0, "padded rows must keep float4 accesses 16-byte aligned");

// The filter tile's copy (A = W, BLOCK_M filters x BLOCK_K taps, each filter's taps contiguous in
// memory): thread tid copies a block of VEC filters (a_row .. a_row + VEC - 1) x A_VEC_K taps
// (a_col .. a_col + A_VEC_K - 1): VEC loads of A_VEC_K floats along the filters, then A_VEC_K
// float4 stores across them. Lanes, as plain loops: for (mh) for (kb < A_BLOCKS_K) for (ml <
// A_VEC_K), lane number (mh * A_BLOCKS_K + kb) * A_VEC_K + ml takes filter quad mb = mh * A_VEC_K +
// ml and tap block kb. A store of tap a_col + c then lands in 16-byte bank group (A_VEC_K * kb + c +
// mb) mod 8 (each padded row starts one group further on): A_VEC_K quads x 8 / A_VEC_K tap blocks
// fill the 8 groups in each quarter-warp. A warp's load reads 4 filters x BLOCK_K taps, 64 bytes
// each. A_VEC_K = BLOCK_M * BLOCK_K / (NUM_THREADS * VEC), computed in the kernel: 2 taps per thread
// for BLOCK_M = 128, 1 for 64 (then the lanes of a quarter-warp take 8 tap blocks of one filter quad).

// The input tile's copy (B = X_col, BLOCK_K taps x BLOCK_N output pixels, gathered): warp w copies
// whole rows w, w + NUM_WARPS, ... of the tile, lane l the columns l, l + WARP_SIZE, ... of each.
// A warp's loads of one tap are then as contiguous as the image rows allow, and a lane decodes each
// of its taps once for all its B_COLS = BLOCK_N / WARP_SIZE columns (4 or 8).
static_assert(BLOCK_K % NUM_WARPS == 0, "the warps cover the input tile's rows exactly");
constexpr int B_ROWS = BLOCK_K / NUM_WARPS;  // 2 rows per thread, NUM_WARPS apart

// An unsigned coordinate that no image contains: a column past N*P*Q gets it as its first input
// row, a tap past C*R*S as its column shift, so that every bounds check on them fails (below).
// (With the clamping below, only the last, partial K step uses the second.)
constexpr unsigned FAR_OUTSIDE = 1u << 31;

// x / d for 0 <= x < 2^31 and a divisor d >= 1 fixed for the launch: one multiply-high, one add,
// one shift, where "/" by a runtime int costs about 20 instructions. With l = ceil(log2 d) and
// mul = floor(2^32 * (2^l - d) / d) + 1 (computed once on the host), x / d == (umulhi(x, mul) + x)
// >> l (Granlund and Montgomery, "Division by invariant integers using multiplication", 1994). The
// sum stays below 2^32 because umulhi(x, mul) < x < 2^31.
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

// The problem as the kernel reads it: sizes, and the products and divisors it needs, computed once
// on the host. Kernel parameters live in the constant bank, so none of these costs a register.
// GEMM view: Y (filters x pixels) = W (filters x taps) * X_col (taps x pixels).
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

// One column j of X_col and Y (output pixel n, p, q), as the gather and the epilogue need it: the
// first input row and column its window touches, ih0 = p*stride_h - pad_h and iw0 = q*stride_w -
// pad_w (either may be negative); the offset in x of (n, 0, ih0, iw0); and y_offset(0, j) = j + n *
// (K - 1) * P*Q, where Y(k, j) is stored at y_offset(0, j) + k * P*Q (-1: past N*P*Q, not stored).
// Unsigned: the offset of a pixel in the padding may be negative or wrap, but only in-bounds taps
// are read, and for them base + tap offset (mod 2^32) is the true offset, below 2^31. 16 bytes:
// one LDS.128 reads a column.
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

// One row kk of X_col (filter tap c, r, s), as the gather needs it: the input row and column it
// shifts the window by, rd = r*dil_h and sd = s*dil_w, and the offset of (c, rd, sd) from a
// window's origin, c*H*W + rd*W + sd. Plain-loop equivalent: tap_coord(kk) of problem.hpp. Only a
// K step that crosses C*R*S (k_tail) checks kk.
struct Tap {
  unsigned offset, rd, sd;
};

__device__ __forceinline__ Tap decode_tap(const Geometry& g, int kk, bool k_tail) {
  const int c = g.div_rs.div(kk);
  const int rs = kk - c * g.rs;
  const int r = g.div_s.div(rs);
  const int s = rs - r * g.s;
  const int rd = r * g.dil_h, sd = s * g.dil_w;
  Tap t{unsigned(c * g.hw + rd * g.w + sd), unsigned(rd), unsigned(sd)};
  if (k_tail && kk >= g.taps) t.sd = FAR_OUTSIDE;  // a tap past C*R*S reads zeros
  return t;
}

// X_col(kk, j): x[n][c][ih0 + rd][iw0 + sd], or 0 in the padding. One unsigned compare per axis
// covers both sides (a negative coordinate is a huge unsigned one). The two tests are joined with
// "&", not "&&": a short-circuit makes ptxas branch around the load instead of predicating it, and
// a branch is a wall it does not schedule other loads across.
__device__ __forceinline__ float gather(const float* __restrict__ x, const Geometry& g, const Column& col,
                                        const Tap& t) {
  const bool inside = (col.ih0 + t.rd < unsigned(g.h)) & (col.iw0 + t.sd < unsigned(g.w));
  float v = 0.0f;
  if (inside) v = x[col.base + t.offset];
  return v;
}

// N consecutive floats, aligned to their size: one N * 32-bit load.
template <int N>
struct alignas(sizeof(float) * N) Floats {
  float v[N];
};

// Reads W[row][col .. col+A_VEC_K-1] (filter row, taps; ld = C*R*S), of which the first `valid`
// floats exist (valid <= 0: none; the constant A_VEC_K, inlined, leaves no check). Missing floats
// read as 0. VEC_A (ld % A_VEC_K == 0, W aligned to A_VEC_K floats): one vector load, which then
// never crosses the end of a filter. Otherwise: one predicated scalar load per float. No branches,
// and nothing here uses a loaded value, so no instruction waits for one before the store stage. The
// offset is unsigned 32-bit arithmetic (one IMAD.WIDE.U32 to an address), exact for every filter.
template <bool VEC_A, int A_VEC_K>
__device__ __forceinline__ Floats<A_VEC_K> load_taps(const float* __restrict__ W, int ld, int row, int col,
                                                     int valid) {
  const float* p = W + (unsigned(row) * unsigned(ld) + unsigned(col));
  Floats<A_VEC_K> v;
  if (VEC_A) {
    v = Floats<A_VEC_K>{};
    if (valid > 0) v = *reinterpret_cast<const Floats<A_VEC_K>*>(p);
  } else {
#pragma unroll
    for (int c = 0; c < A_VEC_K; ++c) v.v[c] = valid > c ? p[c] : 0.0f;
  }
  return v;
}

// Y = W * X_col, or the part of it that the taps [blockIdx.z * split_taps, + split_taps) contribute,
// written in NKPQ order to y + blockIdx.z * split_stride (split-K: the launcher sums the parts).
// vec_y (P*Q % 4 == 0, y 16-byte aligned): four consecutive columns of a sub-tile, starting at a
// multiple of 4, lie in one image and are contiguous in y, so they go out as one float4.
template <int BLOCK_M, int BLOCK_N, bool VEC_A>
__global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS_PER_SM)
    double_buffered_implicit_gemm_kernel(const Geometry g, const float* __restrict__ x, const float* __restrict__ w,
                                float* __restrict__ y, bool vec_y, int split_taps, std::size_t split_stride) {
  // The sizes that depend on the tile shape (chapter 19 has them at namespace scope).
  constexpr int WARPS_M = BLOCK_M / WARP_M;  // 4 or 2 rows of warps
  constexpr int WARPS_N = BLOCK_N / WARP_N;  // 2 or 4 columns of warps
  static_assert(BLOCK_M % WARP_M == 0 && BLOCK_N % WARP_N == 0, "the warps split the block tile evenly");
  static_assert(WARPS_M * WARPS_N == NUM_WARPS, "every tile shape has NUM_WARPS warps");
  static_assert((BLOCK_M + A_PAD) % VEC == 0, "padded rows must keep float4 accesses 16-byte aligned");
  constexpr int A_VEC_K = BLOCK_M * BLOCK_K / (NUM_THREADS * VEC);  // taps per thread in the filter copy
  static_assert(A_VEC_K * VEC * NUM_THREADS == BLOCK_M * BLOCK_K, "the threads split the filter tile exactly");
  static_assert(BLOCK_K % A_VEC_K == 0, "tap blocks cover a filter's row of the tile exactly");
  constexpr int A_BLOCKS_K = BLOCK_K / A_VEC_K;  // tap blocks along a filter
  static_assert(A_BLOCKS_K * A_VEC_K >= 8, "a quarter-warp's stores cover 8 bank groups");
  static_assert(BLOCK_N % WARP_SIZE == 0, "the warps cover the input tile's columns exactly");
  constexpr int B_COLS = BLOCK_N / WARP_SIZE;  // columns per thread in the input copy, WARP_SIZE apart

  // Two buffers of each tile: the block computes on Ws[buf], Xs[buf] while the next K step is
  // written into Ws[buf ^ 1], Xs[buf ^ 1].
  __shared__ __align__(16) float Ws[2][BLOCK_K][BLOCK_M + A_PAD];  // (BLOCK_K, BLOCK_M) tiles of W, tap-major, padded
  __shared__ __align__(16) float Xs[2][BLOCK_K][BLOCK_N];          // (BLOCK_K, BLOCK_N) tiles of X_col, row-major
  __shared__ Column cols_s[BLOCK_N];                               // the block's columns of X_col, decoded

  const int tid = threadIdx.x;
  // This thread's results: acc[m][n] is element (thread_row + row_of(m), thread_col + col_of(n)) of
  // the block's Y tile, where, as plain loops,
  //   for (im < SUBS_M) for (i < SUB_M):  m = im * SUB_M + i,  row_of(m) = im * SUB_STRIDE_M + i
  //   for (jn < SUBS_N) for (j < SUB_N):  n = jn * SUB_N + j,  col_of(n) = jn * SUB_STRIDE_N + j
  // Warps in a WARPS_M x WARPS_N grid, row-major; lanes in a LANES_M x LANES_N grid in z-order:
  // as plain loops, for (rh < LANES_M / 2) for (c < LANES_N) for (rl < 2), lane number
  // rh * 2 * LANES_N + c * 2 + rl gets (lane_row, lane_col) = (rh * 2 + rl, c). Lanes n and n^1
  // then share a column (same X_col addresses), n and n^2 a row (same filter addresses).
  const int warp = tid / WARP_SIZE, lane = tid % WARP_SIZE;
  const int warp_row = warp / WARPS_N, warp_col = warp % WARPS_N;
  const int lane_row = (lane / (2 * LANES_N)) * 2 + lane % 2;
  const int lane_col = (lane / 2) % LANES_N;
  const int thread_row = warp_row * WARP_M + lane_row * SUB_M;
  const int thread_col = warp_col * WARP_N + lane_col * SUB_N;
  const int block_row = blockIdx.y * BLOCK_M;  // first filter (row of Y and of W) of this block
  const int block_col = blockIdx.x * BLOCK_N;  // first output pixel (column of Y and of X_col)
  // This block's share of the reduction: taps [k_begin, k_end), whole K steps except at C*R*S.
  const int k_begin = blockIdx.z * split_taps;
  const int k_end = min(g.taps, k_begin + split_taps);
  float* __restrict__ out = y + blockIdx.z * split_stride;
  // This thread's share of the filter-tile copy (see A_VEC_K above): filters a_row .. a_row + VEC - 1,
  // taps a_col .. a_col + A_VEC_K - 1.
  const int a_ml = tid % A_VEC_K, a_kb = (tid / A_VEC_K) % A_BLOCKS_K, a_mh = tid / (A_VEC_K * A_BLOCKS_K);
  const int a_row = (a_mh * A_VEC_K + a_ml) * VEC, a_col = a_kb * A_VEC_K;
  // This thread's share of the input-tile copy: rows b_row + i * NUM_WARPS, i < B_ROWS, and columns
  // b_col + j * WARP_SIZE, j < B_COLS.
  const int b_row = warp, b_col = lane;

  // The block's columns stay the same for the whole K loop: decode each once, for all the warps
  // that copy it, and keep them in shared memory, where they cost no registers.
  for (int j = tid; j < BLOCK_N; j += NUM_THREADS) cols_s[j] = decode_column(g, block_col + j);

  // Bounds of the filter copy along the filters, settled once: filter i feeds only row i of Y, so a
  // row past K feeds results the epilogue never stores; it need not read zeros, only memory that
  // exists. The copy reads filter min(row, K - 1) instead. (Columns past N*P*Q already cost nothing:
  // their first input row lies outside every image.) Only the taps still need zeros, in the last K
  // step.
  int a_row_g[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) a_row_g[i] = min(block_row + a_row + i, g.filters - 1);

  // Global-load stage: this thread's share of the tiles at tap offset kk0, into registers. Only a K
  // step that crosses C*R*S (k_tail) checks the taps: past it both tiles read zeros, so the math
  // needs no bounds checks. All loads come before all stores (chapter 18 says why).
  Floats<A_VEC_K> a_ldg[VEC];   // W[row][kk .. kk+A_VEC_K-1] of the filter tile, VEC rows
  float b_ldg[B_ROWS][B_COLS];  // X_col[kk][j] of the input tile
  auto load_tiles = [&](int kk0, bool k_tail) {
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      const int kk = kk0 + a_col;
      a_ldg[i] = load_taps<VEC_A, A_VEC_K>(w, g.taps, a_row_g[i], kk, k_tail ? g.taps - kk : A_VEC_K);
    }
    Column cols[B_COLS];
#pragma unroll
    for (int j = 0; j < B_COLS; ++j) cols[j] = cols_s[b_col + j * WARP_SIZE];
#pragma unroll
    for (int i = 0; i < B_ROWS; ++i) {
      const Tap t = decode_tap(g, kk0 + b_row + i * NUM_WARPS, k_tail);  // once per row, for B_COLS columns
#pragma unroll
      for (int j = 0; j < B_COLS; ++j) b_ldg[i][j] = gather(x, g, cols[j], t);
    }
  };
  // Shared-store stage: those registers into buffer `buf`. load_tiles and store_tiles are inlined
  // with constant arguments, so each call site compiles to straight-line code without the checks it
  // does not need.
  auto store_tiles = [&](int buf) {
#pragma unroll
    for (int c = 0; c < A_VEC_K; ++c) {
      // Transpose in registers: tap a_col + c of the VEC filters goes along a row of the tap-major
      // tile, one float4.
      *reinterpret_cast<float4*>(&Ws[buf][a_col + c][a_row]) =
          make_float4(a_ldg[0].v[c], a_ldg[1].v[c], a_ldg[2].v[c], a_ldg[3].v[c]);
    }
#pragma unroll
    for (int i = 0; i < B_ROWS; ++i) {
#pragma unroll
      for (int j = 0; j < B_COLS; ++j) Xs[buf][b_row + i * NUM_WARPS][b_col + j * WARP_SIZE] = b_ldg[i][j];
    }
  };

  float acc[THREAD_M][THREAD_N] = {};  // registers: indexed only by unrolled loops
  float a_frag[THREAD_M];              // W[thread's filters][k]
  float b_frag[THREAD_N];              // X_col[k][thread's pixels]

  // The math of one K step on buffer `buf`: for each k, fragments, then the outer product.
  auto compute_step = [&](int buf) {
#pragma unroll
    for (int k = 0; k < BLOCK_K; ++k) {
      // Fragments: SUBS_M + SUBS_N float4 shared loads, then THREAD_M * THREAD_N FMAs from registers.
#pragma unroll
      for (int im = 0; im < SUBS_M; ++im) {
        const float4 v = *reinterpret_cast<const float4*>(&Ws[buf][k][thread_row + im * SUB_STRIDE_M]);
        a_frag[im * SUB_M + 0] = v.x;
        a_frag[im * SUB_M + 1] = v.y;
        a_frag[im * SUB_M + 2] = v.z;
        a_frag[im * SUB_M + 3] = v.w;
      }
#pragma unroll
      for (int jn = 0; jn < SUBS_N; ++jn) {
        const float4 v = *reinterpret_cast<const float4*>(&Xs[buf][k][thread_col + jn * SUB_STRIDE_N]);
        b_frag[jn * SUB_N + 0] = v.x;
        b_frag[jn * SUB_N + 1] = v.y;
        b_frag[jn * SUB_N + 2] = v.z;
        b_frag[jn * SUB_N + 3] = v.w;
      }
      // The outer product a_frag x b_frag, in serpentine order down the columns (chapter 09):
      // consecutive FMAs share b_frag[n] along a column and a_frag[m] where one column turns into
      // the next.
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

  __syncthreads();  // the column table is complete before the first copy reads it
  // Prologue: the first K step goes straight through both stages into buffer 0.
  load_tiles(k_begin, true);
  store_tiles(0);
  __syncthreads();

  int buf = 0;  // the buffer holding the K step being computed
  // kk0 is the NEXT K step's offset. The loop runs while that step lies wholly inside this block's
  // taps; every split but the last ends on a whole K step.
  int kk0 = k_begin + BLOCK_K;
  for (; kk0 + BLOCK_K <= k_end; kk0 += BLOCK_K) {
    load_tiles(kk0, false);  // issue the next step's global loads; nothing waits for them...
    compute_step(buf);      // ...during the math on this step...
    store_tiles(buf ^ 1);   // ...until they go into the other buffer, free since the last barrier
    // One barrier per K step: buf ^ 1 is complete before anyone computes on it, and everyone is done
    // reading buf before the next K step stores into it.
    __syncthreads();
    buf ^= 1;
  }
  if (kk0 < k_end) {  // a last, partial K step (C*R*S % BLOCK_K != 0): the same, with the taps checked
    load_tiles(kk0, true);
    compute_step(buf);
    store_tiles(buf ^ 1);
    __syncthreads();
    buf ^= 1;
  }
  compute_step(buf);  // the last K step: nothing left to load

  // Epilogue: Y(row, j) goes to out[n][row][p][q], at y_col(j) + row * P*Q, with y_col(j) from the
  // column table (-1: past N*P*Q, not stored). No early return above: every thread must reach the
  // barriers, even those outside Y.
#pragma unroll
  for (int jn = 0; jn < SUBS_N; ++jn) {
    int y_col[SUB_N];
#pragma unroll
    for (int j = 0; j < SUB_N; ++j) y_col[j] = cols_s[thread_col + jn * SUB_STRIDE_N + j].y;
#pragma unroll
    for (int im = 0; im < SUBS_M; ++im) {
#pragma unroll
      for (int i = 0; i < SUB_M; ++i) {
        const int row = block_row + thread_row + im * SUB_STRIDE_M + i;
        if (row >= g.filters) continue;
        const float* v = &acc[im * SUB_M + i][jn * SUB_N];
        if (vec_y && y_col[0] >= 0) {  // all SUB_N columns exist and are contiguous
          *reinterpret_cast<float4*>(&out[y_col[0] + row * g.pq]) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
          for (int j = 0; j < SUB_N; ++j) {
            if (y_col[j] >= 0) out[y_col[j] + row * g.pq] = v[j];
          }
        }
      }
    }
  }
}

// Split-K's second pass: y[i] = part[0][i] + part[1][i] + ... + part[splits - 1][i], always in that
// order, so every run gives the same bits (no atomics, whose order would vary). Each thread sums
// VEC consecutive outputs, with float4 accesses when vec (count % 4 == 0, both pointers aligned).
__global__ void __launch_bounds__(NUM_THREADS)
    sum_splits_kernel(const float* __restrict__ part, float* __restrict__ y, int count, int splits, bool vec) {
  const int i0 = (blockIdx.x * NUM_THREADS + threadIdx.x) * VEC;
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

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// ---- The tile rule: which shape, how many splits --------------------------------------------------
// A launch runs units = tiles x splits blocks, where tiles = ceil(K / BLOCK_M) * ceil(N*P*Q /
// BLOCK_N) and each unit does steps = ceil(ceil(C*R*S / BLOCK_K) / splits) K steps. The GPU holds
// slots = SMs x occ blocks at once (SM count and occ from the CUDA runtime, per shape). The rule
// picks the (shape, splits) with the least modelled time, counted in K steps of a full SM:
//   the busiest SM runs b = ceil(units / SMs) blocks, occ at a time: floor(b / occ) full rounds and,
//   for the b % occ left over, a partial round that takes (b % occ) / (occ * PARTIAL_EFFICIENCY)
//   of a full one (a lone block cannot keep an SM fully busy; at most 1). Each round costs steps +
//   BLOCK_OVERHEAD_STEPS (the first load and the epilogue, which nothing overlaps). Splitting adds
//   SPLIT_STEPS per unit and slot (the partial tile is written and read back once) and
//   SPLIT_LAUNCH_STEPS for the second kernel.
// Times of different shapes are compared per SM, so each is weighted by occ * BLOCK_M * BLOCK_N
// (the FMAs an SM's round performs per K step). Ties go to the larger filter tile and to fewer
// splits. These constants model any recent GPU; none is tuned to one.
constexpr double BLOCK_OVERHEAD_STEPS = 2.0;
constexpr double PARTIAL_EFFICIENCY = 0.8;
// 8 bytes per result (written, then read) against BLOCK_K = 16 FMAs per result and K step, at about
// 10 FP32 FMAs per byte of DRAM bandwidth (H100: 33.5 T FMA/s, 3.35 TB/s): 8 * 10 / 16 = 5.
constexpr double SPLIT_STEPS = 5.0;
// A kernel launch behind another costs a few microseconds, about one K step of a full SM.
constexpr double SPLIT_LAUNCH_STEPS = 1.0;
constexpr int MAX_SPLITS = 32;

struct Plan {
  int shape = 0;   // index into SHAPES
  int splits = 1;  // blocks along the reduction, each with split_taps taps
  int split_taps = 0;
};
struct Shape {
  int block_m, block_n;
};
constexpr Shape SHAPES[] = {{128, 128}, {64, 256}};
constexpr int NUM_SHAPES = sizeof(SHAPES) / sizeof(SHAPES[0]);

// The kernel instance for a shape and the filter copy's vector width (64 x 256 copies one tap per
// filter, so its loads are scalar either way). Three instances in all, plus sum_splits_kernel.
using KernelFn = void (*)(const Geometry, const float*, const float*, float*, bool, int, std::size_t);
inline KernelFn kernel_for(int shape, bool vec_a) {
  if (shape == 1) return double_buffered_implicit_gemm_kernel<64, 256, false>;
  if (vec_a) return double_buffered_implicit_gemm_kernel<128, 128, true>;
  return double_buffered_implicit_gemm_kernel<128, 128, false>;
}

// The device's SM count and each shape's blocks per SM, queried once per device.
struct DeviceFacts {
  int sms = 0;
  int occ[NUM_SHAPES] = {};
};
inline const DeviceFacts& device_facts() {
  static tut::PerDevice<DeviceFacts> cache;
  return cache.get([](int device, DeviceFacts& facts) {
    TUT_CUDA_CHECK(cudaDeviceGetAttribute(&facts.sms, cudaDevAttrMultiProcessorCount, device));
    for (int s = 0; s < NUM_SHAPES; ++s) {
      const KernelFn kernel = kernel_for(s, false);
      TUT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&facts.occ[s], kernel, NUM_THREADS, 0));
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
      time *= double(occ) * SHAPES[s].block_m * SHAPES[s].block_n;
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
inline std::size_t double_buffered_implicit_gemm_workspace(const tut::ConvProblem& p) {
  const Plan pl = plan(p);
  return pl.splits > 1 ? std::size_t(pl.splits) * std::size_t(p.y_elems()) * sizeof(float) : 0;
}

// grid.y holds at most MAX_GRID_Y row tiles; problems with more filters run in several launches.
constexpr int MAX_GRID_Y = 65535;

inline void double_buffered_implicit_gemm(const tut::ConvProblem& p, const tut::ConvArgs& a, cudaStream_t stream) {
  Geometry g = make_geometry(p);
  const Plan pl = plan(p, a.workspace != nullptr);
  const int block_m = SHAPES[pl.shape].block_m, block_n = SHAPES[pl.shape].block_n;
  const dim3 block(NUM_THREADS);
  // With splits, each split writes a whole partial y into the workspace; sum_splits_kernel adds them.
  float* out = pl.splits > 1 ? static_cast<float*>(a.workspace) : a.y;
  const std::size_t split_stride = pl.splits > 1 ? std::size_t(p.y_elems()) : 0;
  // Vector accesses need aligned rows: every filter (C*R*S floats) aligned to A_VEC_K = 2 floats for
  // the loads of W (128 x 128 only), every (n, k) plane of y (P*Q floats) to 16 bytes for the
  // stores. Decided once per launch; the kernel is compiled for both answers of the first, and
  // tests the second (once per sub-tile row) at run time.
  const bool vec_a = g.taps % 2 == 0 && reinterpret_cast<std::uintptr_t>(a.w) % sizeof(Floats<2>) == 0;
  const bool vec_y = g.pq % VEC == 0 && aligned16(out);
  const KernelFn kernel = kernel_for(pl.shape, vec_a);
  // Output pixels in grid.x (N*P*Q < 2^31: at most 2^24 tiles), filters in grid.y, splits in grid.z
  // (at most MAX_SPLITS). Each launch takes up to MAX_GRID_Y row tiles, its own filters of w and
  // planes of y (y_image_skip keeps the full K); one launch for any K below 65535 * 64.
  const int filters = g.filters;
  for (int row0 = 0; row0 < filters; row0 += MAX_GRID_Y * block_m) {
    g.filters = std::min(filters - row0, MAX_GRID_Y * block_m);
    const dim3 grid(tut::ceil_div(g.pixels, block_n), tut::ceil_div(g.filters, block_m), pl.splits);
    kernel<<<grid, block, 0, stream>>>(g, a.x, a.w + std::size_t(row0) * g.taps, out + std::size_t(row0) * g.pq,
                                       vec_y, pl.split_taps, split_stride);
    TUT_CHECK_LAUNCH();
  }
  if (pl.splits > 1) {
    const int count = int(p.y_elems());
    const bool vec = count % VEC == 0 && aligned16(out) && aligned16(a.y);
    const int blocks = tut::ceil_div(tut::ceil_div(count, VEC), NUM_THREADS);
    sum_splits_kernel<<<blocks, NUM_THREADS, 0, stream>>>(out, a.y, count, pl.splits, vec);
    TUT_CHECK_LAUNCH();
  }
}

}  // namespace ch20
