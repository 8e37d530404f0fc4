// Chapter 18: implicit GEMM, a cheap gather.
//
// What changed:  chapter 17's kernel, the same tiles and the same math, with a gather of X_col built
//                for that tile. Warp w copies whole rows w, w + 8 of the (BLOCK_K, BLOCK_N) input
//                tile, lane l the columns l, l + 32, l + 64, l + 96, so a thread decodes each of its
//                taps kk -> (c, r, s) once per K step for four columns (2 decodes per K step, not
//                8), by multiplication (FastDiv), not "/". Each output pixel (n, p, q) is decoded
//                once per block into a shared table, cols_s, read with one LDS.128 per column and
//                K step (kept in registers, those 4 x 3 values would spill beside 64 accumulators).
//                Bounds are one unsigned compare per axis; a missing column or tap is folded into
//                them. All loads of a K step are issued before its shared stores (the gather reads
//                its addresses from shared memory, and a shared store in between would serialize
//                the gathers).
// Prediction:    chapter 17 spends ~500 instructions per thread and K step on its 8 gathered elements
//                beside 1024 FFMA. Here: 8 predicated loads at ~8 integer instructions each, 4 LDS.128
//                of the column table and 2 tap decodes of ~12: ~100. The loop goes from ~1650 to
//                ~1250 instructions per K step, 82% FFMA (Part I's chapter 09 loop: 90%): ~1.3x
//                chapter 17 where the gather is the difference, about 10% below Part I's chapter 08
//                rate on the large layers. Layers with few tiles (c4, c5: under 100 blocks for 132
//                SMs) far lower.
// Metric:        smsp__inst_executed_pipe_fma over smsp__inst_executed (share of FFMA, ~82% from
//                ~62%); smsp__inst_executed.sum falls by the gather's share;
//                l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum: the transposed stores of
//                the filter tile conflict 4-way (chapter 19 removes that).
// Assumes:       any valid problem (any N, C, H, W, K, R, S, padding, stride, dilation); tensors below
//                2^31 elements. Any pointer works; the fast paths need C*R*S % 4 == 0 and w 16-byte
//                aligned (float4 loads of the filter), P*Q % 4 == 0 and y 16-byte aligned (float4
//                stores of the output). Shared memory: 2 x BLOCK_K x 128 floats + 128 x 16 bytes of
//                column table = 18 KB.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "tut/conv/harness.cuh"

namespace ch18 {

// Block tile of Y (BLOCK_M filters x BLOCK_N output pixels), the K step (BLOCK_K filter taps), the
// warp tile (WARP_M x WARP_N), the results per thread (THREAD_M x THREAD_N) and their sub-tiles
// (SUB_M x SUB_N). BLOCK_K = 16 rather than the classic 8: Part I measured 16 faster on H100 (fewer
// barriers per FMA), and here it also halves, per FMA, the tap decodes of the gather (a warp decodes
// one tap per row it copies). A reader may try BLOCK_K = 8 (one row per warp), or WARP_M = 64 with
// WARP_N = 32; the static_asserts keep the loops exact.
constexpr int BLOCK_M = 128;
constexpr int BLOCK_N = 128;
constexpr int BLOCK_K = 16;
constexpr int WARP_M = 32;
constexpr int WARP_N = 64;
constexpr int THREAD_M = 8;
constexpr int THREAD_N = 8;
constexpr int SUB_M = 4;
constexpr int SUB_N = 4;
constexpr int WARP_SIZE = 32;
static_assert(BLOCK_M % WARP_M == 0 && BLOCK_N % WARP_N == 0, "the warps split the block tile evenly");
static_assert(WARP_M % THREAD_M == 0 && WARP_N % THREAD_N == 0, "the lanes split the warp tile evenly");
static_assert(THREAD_M % SUB_M == 0 && THREAD_N % SUB_N == 0, "a thread's results are whole sub-tiles");
constexpr int LANES_M = WARP_M / THREAD_M;                  // 4 rows of lanes in a warp
constexpr int LANES_N = WARP_N / THREAD_N;                  // 8 columns of lanes
static_assert(LANES_M * LANES_N == WARP_SIZE, "the lanes of one warp cover its warp tile");
static_assert(LANES_M % 2 == 0, "the z-order stacks lanes in pairs of rows");
constexpr int WARPS_M = BLOCK_M / WARP_M;                   // 4 rows of warps in a block
constexpr int WARPS_N = BLOCK_N / WARP_N;                   // 2 columns of warps
constexpr int NUM_WARPS = WARPS_M * WARPS_N;                // 8
constexpr int NUM_THREADS = NUM_WARPS * WARP_SIZE;          // 256
static_assert(NUM_THREADS <= 1024, "a block has at most 1024 threads");
// Registers: THREAD_M * THREAD_N accumulators + fragments + the gather's column registers must fit
// in 65536 / (NUM_THREADS * MIN_BLOCKS_PER_SM) = 128 registers per thread, or the kernel spills.
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

// The filter tile's copy (A = W, BLOCK_M filters x BLOCK_K taps, each filter's taps contiguous in
// memory), as in Part I: thread tid copies the VEC taps (a_row + l * A_ROW_STEP, a_col .. a_col +
// VEC - 1), l < A_LOADS; consecutive threads take consecutive vectors along a filter (coalesced).
static_assert(BLOCK_K % VEC == 0, "filter-tile rows are whole float4s");
static_assert(NUM_THREADS % (BLOCK_K / VEC) == 0, "a pass of the copy covers whole filters");
constexpr int A_ROW_STEP = NUM_THREADS / (BLOCK_K / VEC);  // filters covered by one pass of all threads
static_assert(BLOCK_M % A_ROW_STEP == 0, "the passes cover the filter tile exactly");
constexpr int A_LOADS = BLOCK_M / A_ROW_STEP;

// The input tile's copy (B = X_col, BLOCK_K taps x BLOCK_N output pixels, gathered): warp w copies
// whole rows w, w + NUM_WARPS, ... of the tile, lane l the columns l, l + WARP_SIZE, ... of each.
// A warp's loads of one tap are then as contiguous as the image rows allow, and a lane decodes each
// of its taps once for all its B_COLS columns.
static_assert(BLOCK_N % WARP_SIZE == 0 && BLOCK_K % NUM_WARPS == 0, "the warps cover the input tile exactly");
constexpr int B_COLS = BLOCK_N / WARP_SIZE;   // 4 columns per thread, WARP_SIZE apart
constexpr int B_ROWS = BLOCK_K / NUM_WARPS;  // 2 rows per thread, NUM_WARPS apart

// An unsigned coordinate that no image contains: a column past N*P*Q gets it as its first input
// row, a tap past C*R*S as its column shift, so that every bounds check on them fails (below).
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
// window's origin, c*H*W + rd*W + sd. Plain-loop equivalent: tap_coord(kk) of problem.hpp.
struct Tap {
  unsigned offset, rd, sd;
};

__device__ __forceinline__ Tap decode_tap(const Geometry& g, int kk) {
  const int c = g.div_rs.div(kk);
  const int rs = kk - c * g.rs;
  const int r = g.div_s.div(rs);
  const int s = rs - r * g.s;
  const int rd = r * g.dil_h, sd = s * g.dil_w;
  Tap t{unsigned(c * g.hw + rd * g.w + sd), unsigned(rd), unsigned(sd)};
  if (kk >= g.taps) t.sd = FAR_OUTSIDE;  // a tap past C*R*S reads zeros
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

// Reads W[row][col .. col+3] (filter row, taps col .. col+3; ld = C*R*S), of which the first `valid`
// floats exist (the caller folds the row check in: valid <= 0 means none). Missing floats read as
// 0. VEC_A (ld % 4 == 0, col % 4 == 0, W 16-byte aligned): one 128-bit load, which then never
// crosses the end of a filter. Otherwise: one predicated scalar load per float. W is read only where
// valid > 0; the offset is unsigned 32-bit arithmetic (one IMAD.WIDE.U32 to an address), exact for
// every filter that exists.
template <bool VEC_A>
__device__ __forceinline__ float4 load4(const float* __restrict__ W, int ld, int row, int col, int valid) {
  const float* p = W + (unsigned(row) * unsigned(ld) + unsigned(col));  // wraps only where valid <= 0
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (VEC_A) {
    if (valid > 0) v = *reinterpret_cast<const float4*>(p);
  } else {
    v.x = valid > 0 ? p[0] : 0.0f;
    v.y = valid > 1 ? p[1] : 0.0f;
    v.z = valid > 2 ? p[2] : 0.0f;
    v.w = valid > 3 ? p[3] : 0.0f;
  }
  return v;
}

// Y = W * X_col, written to y in NKPQ order. vec_y (P*Q % 4 == 0, y 16-byte aligned): four
// consecutive columns of a sub-tile, starting at a multiple of 4, lie in one image and are
// contiguous in y, so they go out as one float4.
template <bool VEC_A>
__global__ void __launch_bounds__(NUM_THREADS, MIN_BLOCKS_PER_SM)
    warptile_implicit_gemm_kernel(const Geometry g, const float* __restrict__ x, const float* __restrict__ w,
                         float* __restrict__ y, bool vec_y) {
  __shared__ __align__(16) float Ws[BLOCK_K][BLOCK_M];  // (BLOCK_K, BLOCK_M) tile of W, tap-major (transposed)
  __shared__ __align__(16) float Xs[BLOCK_K][BLOCK_N];  // (BLOCK_K, BLOCK_N) tile of X_col, row-major
  __shared__ Column cols_s[BLOCK_N];                    // the block's columns of X_col, decoded

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
  // This thread's share of the filter-tile copy (see A_ROW_STEP above).
  const int a_row = tid / (BLOCK_K / VEC), a_col = (tid % (BLOCK_K / VEC)) * VEC;
  // This thread's share of the input-tile copy: rows b_row + i * NUM_WARPS, i < B_ROWS, and columns
  // b_col + j * WARP_SIZE, j < B_COLS.
  const int b_row = warp, b_col = lane;

  // The block's columns stay the same for the whole K loop: decode each once, for all the warps
  // that copy it, and keep them in shared memory, where they cost no registers.
  for (int j = tid; j < BLOCK_N; j += NUM_THREADS) cols_s[j] = decode_column(g, block_col + j);
  __syncthreads();  // the table is complete before the first copy reads it

  float acc[THREAD_M][THREAD_N] = {};  // registers: indexed only by unrolled loops
  float a_frag[THREAD_M];              // W[thread's filters][k]
  float b_frag[THREAD_N];              // X_col[k][thread's pixels]
  for (int kk0 = 0; kk0 < g.taps; kk0 += BLOCK_K) {  // move BLOCK_K taps along the reduction
    // Stage the tiles. Outside W and X_col we store zeros, so the math below needs no bounds checks
    // (a zero adds nothing to a dot product). All loads come before all stores: the gather's
    // addresses come from shared memory (the column table), and ptxas keeps a shared load that
    // follows a shared store in the program behind it, so a store between two gathers would make
    // each gather wait for the one before it.
    float4 a_ldg[A_LOADS];       // W[row][kk .. kk+3] of the filter tile
    float b_ldg[B_ROWS][B_COLS];  // X_col[kk][j] of the input tile
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
      const int row = block_row + a_row + l * A_ROW_STEP, kk = kk0 + a_col;
      a_ldg[l] = load4<VEC_A>(w, g.taps, row, kk, row < g.filters ? g.taps - kk : 0);
    }
    Column cols[B_COLS];
#pragma unroll
    for (int j = 0; j < B_COLS; ++j) cols[j] = cols_s[b_col + j * WARP_SIZE];
#pragma unroll
    for (int i = 0; i < B_ROWS; ++i) {
      const Tap t = decode_tap(g, kk0 + b_row + i * NUM_WARPS);  // once per row, for B_COLS columns
#pragma unroll
      for (int j = 0; j < B_COLS; ++j) b_ldg[i][j] = gather(x, g, cols[j], t);
    }
#pragma unroll
    for (int l = 0; l < A_LOADS; ++l) {
      // Transpose on the way in: W[row][kk .. kk+3] goes down a column of the tap-major tile.
      const int r = a_row + l * A_ROW_STEP;
      Ws[a_col + 0][r] = a_ldg[l].x;
      Ws[a_col + 1][r] = a_ldg[l].y;
      Ws[a_col + 2][r] = a_ldg[l].z;
      Ws[a_col + 3][r] = a_ldg[l].w;
    }
#pragma unroll
    for (int i = 0; i < B_ROWS; ++i) {
#pragma unroll
      for (int j = 0; j < B_COLS; ++j) Xs[b_row + i * NUM_WARPS][b_col + j * WARP_SIZE] = b_ldg[i][j];
    }
    __syncthreads();  // the tiles are complete before anyone reads them

#pragma unroll
    for (int k = 0; k < BLOCK_K; ++k) {
      // Fragments: SUBS_M + SUBS_N float4 shared loads, then THREAD_M * THREAD_N FMAs from registers.
#pragma unroll
      for (int im = 0; im < SUBS_M; ++im) {
        const float4 v = *reinterpret_cast<const float4*>(&Ws[k][thread_row + im * SUB_STRIDE_M]);
        a_frag[im * SUB_M + 0] = v.x;
        a_frag[im * SUB_M + 1] = v.y;
        a_frag[im * SUB_M + 2] = v.z;
        a_frag[im * SUB_M + 3] = v.w;
      }
#pragma unroll
      for (int jn = 0; jn < SUBS_N; ++jn) {
        const float4 v = *reinterpret_cast<const float4*>(&Xs[k][thread_col + jn * SUB_STRIDE_N]);
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
    __syncthreads();  // everyone is done reading before the next K step overwrites the tiles
  }

  // Epilogue: Y(row, j) goes to y[n][row][p][q], at y_col(j) + row * P*Q, with y_col(j) from the
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
          *reinterpret_cast<float4*>(&y[y_col[0] + row * g.pq]) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
          for (int j = 0; j < SUB_N; ++j) {
            if (y_col[j] >= 0) y[y_col[j] + row * g.pq] = v[j];
          }
        }
      }
    }
  }
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// grid.y holds at most MAX_GRID_Y row tiles; problems with more filters run in several launches.
constexpr int MAX_GRID_Y = 65535;

inline void warptile_implicit_gemm(const tut::ConvProblem& p, const tut::ConvArgs& a, cudaStream_t stream) {
  Geometry g = make_geometry(p);
  const dim3 block(NUM_THREADS);
  // float4 accesses need 16-byte aligned rows: every filter (C*R*S floats) for the loads of W, every
  // (n, k) plane of y (P*Q floats) for the stores. Decided once per launch; the kernel is compiled
  // for both answers of the first, and tests the second (once per sub-tile row) at run time.
  const bool vec_a = g.taps % VEC == 0 && aligned16(a.w);
  const bool vec_y = g.pq % VEC == 0 && aligned16(a.y);
  const auto kernel = vec_a ? warptile_implicit_gemm_kernel<true> : warptile_implicit_gemm_kernel<false>;
  // Output pixels in grid.x (N*P*Q < 2^31: at most 2^24 tiles), filters in grid.y. Each launch
  // takes up to MAX_GRID_Y row tiles, its own filters of w and planes of y (y_image_skip keeps the
  // full K); one launch for any K below 65535 * BLOCK_M.
  const int filters = g.filters;
  for (int row0 = 0; row0 < filters; row0 += MAX_GRID_Y * BLOCK_M) {
    g.filters = std::min(filters - row0, MAX_GRID_Y * BLOCK_M);
    const dim3 grid(tut::ceil_div(g.pixels, BLOCK_N), tut::ceil_div(g.filters, BLOCK_M));
    kernel<<<grid, block, 0, stream>>>(g, a.x, a.w + std::size_t(row0) * g.taps, a.y + std::size_t(row0) * g.pq,
                                       vec_y);
    TUT_CHECK_LAUNCH();
  }
}

}  // namespace ch18
