// Chapter 32: the fused GCN layer.
//
// What changed:  the whole layer, out = log_softmax(A_hat (X W) + b), in the fewest passes over
//                memory. One pass is impossible: row v of the output needs H = X W for every
//                neighbour of v, and any node's H may be needed by a warp anywhere in the grid, so
//                H must be complete before the SpMM reads it. Two passes, then:
//                (1) chapter 28's skinny GEMM (its default: one block per 32-row tile, 4 blocks per
//                    SM, each warp copying and multiplying its quarter of F_in, X's copies marked
//                    evict-first in L2, so that X does not push H's lines out while pass 1 runs:
//                    6.5 us; it does not keep H in L2 for pass 2, measured; and with the .L2::128B
//                    prefetch-size hint: 1.6 us) writes H (V x 16 doubles) into the step's workspace;
//                (2) chapter 30's SpMM (the long rows listed as pieces; one kernel runs
//                    long-row warps and short-row warps of 16 rows, a warp walking 32-entry chunks as
//                    16 pairs) reads H, and where a row is finished it becomes
//                    out = log_softmax(row + b) before its one store. Y = A_hat H and the biased rows
//                    never reach memory. A short-row warp does not transform a row at its last
//                    entry: it stages the row in shared memory (one 8-byte store per lane) and, after
//                    its stream, runs the epilogue for its 16 rows together, 8 lanes per row and 2
//                    features per lane, 4 rows per warp instruction, one log per lane for the 16
//                    rows. Long rows (1.7% of the rows, 4,736 on the default graph) take the
//                    epilogue one row at a time, both halves of the warp computing it side by side.
//                (3) no plan kernel: chapter 30's list of long-row pieces is written by pass 1, one
//                    warp of each block listing its tile's 32 rows while the block's copies of X are
//                    in flight. The launches: pass 1, pass 2. No reset of the list's counters
//                    between layers: each layer leaves them at zero (pass 2's last long-row warp to
//                    read the list's length sets it back to 0; pass 1 zeroes pass 2's ticket).
// Prediction:    the floor (gcn_layer_cost: X, W, b and A_hat read once, out written once) is
//                357.0 MB, 119 us at 3.0 TB/s. The two passes add H's round trip, 36.1 MB written
//                and 36.1 MB read: 429.2 MB (1.20x) if H goes through DRAM, nearer 357 MB the more
//                of it pass 2 finds in L2. Pass 1 moves 324.8 MB at the copy rate, as chapter 28:
//                0.10 to 0.11 ms. Pass 2 is chapter 30's kernel, 104.4 MB of minimum traffic but
//                bound by its gathers (332 MB of 128-byte rows of H from L2 or L1) and its issue
//                slots (about 22 M warp instructions), plus the epilogue: 504 instructions per
//                short-row warp of 16 rows (cuobjdump -sass, executed path; 207 on the FP64 pipe,
//                8 exps and one log per lane), 17,619 warps, 8.9 M instructions, 8.5 us of issue
//                over 528 schedulers at 1.98 GHz if none of it hid behind the gathers; the long
//                rows' 4,736 x 181 = 0.86 M more. (Per row where it ends: 181 per row, 2,896 per
//                warp of 16 rows, 51 M in all.) Pass 2: chapter 30's time plus 3 to 9 us. Pass 1
//                plus pass 2: 0.155 to 0.19 ms, 1.3x to 1.6x the floor's time.
// Metric:        dram__bytes_read.sum + dram__bytes_write.sum over the step's kernels between 357 MB
//                (H kept in L2) and 429 MB (H through DRAM); lts__t_sector_hit_rate.pct of
//                spmm_kernel above chapter 30's (H's first touches hit too); smsp__inst_executed.sum
//                of spmm_kernel: chapter 30's plus about 9.8 M; gpu__time_duration.sum of
//                xw_coalesced_kernel against chapter 28's kernel and of spmm_kernel against
//                chapter 30's.
// Assumes:       F_in = 128 and F_out = 16 (both passes are compiled for them; refuses anything
//                else); A_hat square, CSR with int indices (nnz < 2^31), column indices < V; any
//                V >= 0 and rows of any length, including 0; x, w, out and the workspace 16-byte
//                aligned (cudaMalloc'd), not overlapping; finite inputs; a GPU that gives a block
//                49,664 bytes of dynamic shared memory (sm_80 or newer, which the L2 hint needs too).
//                Workspace (workspace()): H (V x 16 doubles, 36.1 MB on the default graph) then
//                three counters and chapter 30's piece list (6.7 MB); zeroed before the first
//                launch (the harness does), left so by every launch. Registers (-Xptxas -v, sm_90):
//                pass 1 100, spmm_kernel 64 (its cap); no spills.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include <cuda/atomic>

#include "tut/gcn/harness.cuh"

namespace ch32 {

// The problem this step is compiled for: X is V x F_IN, W is F_IN x F_OUT, H and out V x F_OUT.
constexpr int F_IN = 128;
constexpr int F_OUT = 16;
constexpr int WARP_SIZE = 32;
constexpr unsigned FULL_MASK = 0xffffffffu;
// 16-byte accesses move two doubles.
constexpr int VEC = 2;

// ====================================================================================================
// Pass 1: H = X W, chapter 28's kernel as its defaults configure it (PERSISTENT = 0: one block per
// tile, one tile buffer); the persistent path, which those defaults do not compile, is left out.
// ====================================================================================================
namespace xw {

// The block: NUM_WARPS warps share a tile of TILE_ROWS rows of X; warp w multiplies the columns
// k in [w * K_PER_WARP, (w + 1) * K_PER_WARP) of it (a quarter of F_in) into partial sums, and it is
// also the warp that copies that quarter (and the same quarter of W's rows) into shared memory: a warp
// waits for its own copies only, never for the other warps', until the partial sums meet. One block
// per tile (8810 blocks on the default graph); BLOCKS_PER_SM of them resident per SM, the block
// scheduler refilling an SM as blocks finish. EVICT_FIRST = 1: the copies of X carry an L2 evict-first
// policy (X is read once; H, written by this pass and read by the next, and W stay). PREFETCH_128B = 1:
// they also carry the .L2::128B prefetch-size hint (whole lines from DRAM).
constexpr int TILE_ROWS = 32;
constexpr int THREAD_ROWS = 4;
constexpr int BLOCKS_PER_SM = 4;
constexpr int EVICT_FIRST = 1;
constexpr int PREFETCH_128B = 1;
constexpr int NUM_WARPS = 4;
constexpr int BLOCK_THREADS = NUM_WARPS * WARP_SIZE;  // 128
constexpr int K_PER_WARP = F_IN / NUM_WARPS;          // 32
static_assert(F_IN % NUM_WARPS == 0 && K_PER_WARP % 2 == 0, "each warp takes whole pairs of k");

// A lane's block of H: THREAD_ROWS rows LANE_ROWS apart and THREAD_COLS adjacent columns. The lanes
// of a warp form LANE_ROWS x LANE_COLS groups and cover TILE_ROWS x F_OUT, the whole tile of H.
constexpr int THREAD_COLS = 4;
constexpr int LANE_ROWS = TILE_ROWS / THREAD_ROWS;  // 8
constexpr int LANE_COLS = F_OUT / THREAD_COLS;      // 4
static_assert(LANE_ROWS * LANE_COLS == WARP_SIZE, "the lanes of a warp cover the tile of H");
static_assert(LANE_ROWS == 8 && LANE_COLS == 4, "lane_row / lane_col below are written for 8 x 4");
static_assert(THREAD_COLS == 4, "a lane's columns are two double2");

// Shared layout of a tile, in doubles. A row is padded by X_PAD doubles: 1040 bytes, 65 16-byte bank
// groups, so that rows r and r + 1 start one group apart (mod 8). A warp's 16-byte load of X reads the
// same k of 8 consecutive rows: 8 different groups. Unpadded, the 8 rows would all start in group 0.
constexpr int X_PAD = 2;
constexpr int X_STRIDE = F_IN + X_PAD;  // 130
static_assert(X_PAD % VEC == 0, "padded rows keep 16-byte alignment");
// After its products, warp w writes its partial sums (TILE_ROWS x F_OUT, H's layout) over the first
// F_OUT columns of its own quarter of the tile: nobody else reads that quarter, and it is no longer
// needed. No separate buffer for the partial sums.
static_assert(F_OUT <= K_PER_WARP, "a warp's partial sums fit in its quarter of the tile");

// A warp's copy of its quarter of a tile: 16 chunks of 16 bytes per row; lane l takes chunk l % 16 of
// rows l / 16, + 2, + 4, ...: one copy instruction of a warp is two row pieces of 256 contiguous,
// 256-byte aligned bytes: 4 lines, 16 sectors, every byte used. W's quarter (K_PER_WARP rows of W,
// 4 KB contiguous): 256 chunks, lane l taking l, l + 32, ...
constexpr int Q_CHUNKS_PER_ROW = K_PER_WARP / VEC;                       // 16
constexpr int Q_ROWS_PER_COPY = WARP_SIZE / Q_CHUNKS_PER_ROW;            // 2
constexpr int X_CHUNKS_PER_LANE = TILE_ROWS / Q_ROWS_PER_COPY;           // 16
constexpr int W_CHUNKS_PER_LANE = K_PER_WARP * F_OUT / VEC / WARP_SIZE;  // 8
static_assert(WARP_SIZE % Q_CHUNKS_PER_ROW == 0 && TILE_ROWS % Q_ROWS_PER_COPY == 0, "a warp covers its quarter exactly");
static_assert((K_PER_WARP * F_OUT / VEC) % WARP_SIZE == 0, "a warp covers its quarter of W exactly");

// The sums of the tile of H: TILE_ROWS * F_OUT / VEC double2, H_CHUNKS_PER_THREAD per thread.
constexpr int H_CHUNKS_PER_THREAD = TILE_ROWS * F_OUT / VEC / BLOCK_THREADS;  // 2
static_assert((TILE_ROWS * F_OUT / VEC) % BLOCK_THREADS == 0, "the threads cover a tile of H exactly");

struct SharedStorage {
  double x[TILE_ROWS * X_STRIDE];  // the tile of X, rows padded: 33,280 bytes
  double w[F_IN * F_OUT];          // W, as in global memory: 16,384 bytes
};
constexpr std::size_t SMEM_BYTES = sizeof(SharedStorage);  // 49,664
static_assert(SMEM_BYTES * BLOCKS_PER_SM + 1024 * BLOCKS_PER_SM <= 233472, "BLOCKS_PER_SM blocks fit in 228 KB");

// ---- cp.async: global -> shared copies that do not pass through registers ----------------------------
// An L2 policy for data read once: evict first (createpolicy makes the 64-bit descriptor).
__device__ __forceinline__ unsigned long long evict_first_policy() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
// 16 bytes from src to dst (shared), or 16 zero bytes when !valid (src is then not read, but must be a
// valid address). .cg: cached in L2 only, not in L1 (X is read once).
__device__ __forceinline__ void cp_async_16(double* dst, const double* src, bool valid) {
  const unsigned dst_shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst_shared), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
// The same with an L2 policy: with evict_first, the L2 lines it brings in are the first to go, so that
// they do not push out H's lines (read back by pass 2) or W.
__device__ __forceinline__ void cp_async_16(double* dst, const double* src, bool valid, unsigned long long policy) {
  const unsigned dst_shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst_shared), "l"(src),
               "r"(valid ? 16 : 0), "l"(policy)
               : "memory");
}
// The copies of X: with the policy (EVICT_FIRST) and with the prefetch-size hint .L2::128B
// (PREFETCH_128B; SASS: LDGSTS.E.BYPASS.LTC128B.128), a hint that L2 fetch the data around each copy's
// 16 bytes at the granularity of 128 bytes. A warp's copy instruction asks for whole lines anyway, so
// no more bytes come from DRAM; measured, the DRAM runs busier with it and the kernel faster (README).
__device__ __forceinline__ void copy_x_16(double* dst, const double* src, bool valid, unsigned long long policy) {
  const unsigned dst_shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if constexpr (EVICT_FIRST && PREFETCH_128B)
    asm volatile("cp.async.cg.shared.global.L2::cache_hint.L2::128B [%0], [%1], 16, %2, %3;\n" ::"r"(dst_shared),
                 "l"(src), "r"(valid ? 16 : 0), "l"(policy)
                 : "memory");
  else if constexpr (EVICT_FIRST)
    cp_async_16(dst, src, valid, policy);
  else if constexpr (PREFETCH_128B)
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(dst_shared), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
  else
    cp_async_16(dst, src, valid);
}
// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until all of this thread's copies have landed.
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

// One 16-byte store of two doubles (dst 16-byte aligned). Written in PTX because the compiler splits
// the assignment of a double2 through a pointer into two 8-byte stores (st.global.f64 twice).
__device__ __forceinline__ void store_16(double* dst, double2 v) {
  asm volatile("st.global.v2.f64 [%0], {%1, %2};\n" ::"l"(dst), "d"(v.x), "d"(v.y) : "memory");
}

// Warp `warp` issues the copy of its quarter (columns warp * 32 .. + 31) of the tile whose first row is
// row0 into xs (rows padded to X_STRIDE). Rows at or past v are filled with zeros. Plain loop:
// for (row < TILE_ROWS) for (col in the quarter) xs[row][col] = row0 + row < v ? x[row0 + row][col] : 0.
__device__ __forceinline__ void copy_quarter(double* xs, const double* __restrict__ x, long long row0, int v, int warp,
                                             int lane, unsigned long long policy) {
  const int col = warp * K_PER_WARP + (lane % Q_CHUNKS_PER_ROW) * VEC;  // the same column in every row
  const int rows = static_cast<int>(min(static_cast<long long>(TILE_ROWS), v - row0));  // rows that exist, >= 1
  const double* src = x + static_cast<std::size_t>(row0) * F_IN + col;  // row row0 exists: row0 < v
#pragma unroll
  for (int i = 0; i < X_CHUNKS_PER_LANE; ++i) {
    const int row = lane / Q_CHUNKS_PER_ROW + i * Q_ROWS_PER_COPY;
    const bool valid = row < rows;
    double* dst = xs + row * X_STRIDE + col;
    const double* from = src + (valid ? row : 0) * F_IN;  // a missing row: zeros, read from row row0
    copy_x_16(dst, from, valid, policy);
  }
}

// Lane -> (lane_row, lane_col), a 8 x 4 arrangement with two properties: lanes n and n ^ 1 share a
// lane_row (their 16-byte loads of X ask for the same address) and lanes n and n ^ 2 share a lane_col
// (their loads of W do), the two pairings under which shared memory can return two lanes' registers in
// one pass. lane_col takes lane bits 0 and 2, lane_row bits 1, 3 and 4.
__device__ __forceinline__ int lane_col_of(int lane) { return (lane & 1) | ((lane >> 1) & 2); }
__device__ __forceinline__ int lane_row_of(int lane) { return ((lane >> 1) & 1) | ((lane >> 2) & 6); }

// The warp's products for the tile: rows lane_row + 8 i (i < THREAD_ROWS), columns 4 lane_col .. + 3,
// k in the warp's quarter, two k at a time: THREAD_ROWS loads of X and 4 of W, 16-byte each, then
// 8 THREAD_ROWS DFMAs. Every sum adds its k in ascending order. Then the partial sums overwrite the
// start of the warp's own quarter.
__device__ __forceinline__ void multiply_quarter(double* xs, const double* ws, int warp, int lane_row, int lane_col) {
  const double* xq = xs + lane_row * X_STRIDE + warp * K_PER_WARP;
  const double* wq = ws + warp * K_PER_WARP * F_OUT + lane_col * THREAD_COLS;
  double acc[THREAD_ROWS][THREAD_COLS];
#pragma unroll
  for (int i = 0; i < THREAD_ROWS; ++i) {
#pragma unroll
    for (int j = 0; j < THREAD_COLS; ++j) acc[i][j] = 0.0;
  }
#pragma unroll
  for (int k = 0; k < K_PER_WARP; k += 2) {
    double2 xv[THREAD_ROWS];
#pragma unroll
    for (int i = 0; i < THREAD_ROWS; ++i) xv[i] = *reinterpret_cast<const double2*>(xq + i * LANE_ROWS * X_STRIDE + k);
    const double2 w0a = *reinterpret_cast<const double2*>(wq + k * F_OUT);
    const double2 w0b = *reinterpret_cast<const double2*>(wq + k * F_OUT + 2);
    const double2 w1a = *reinterpret_cast<const double2*>(wq + (k + 1) * F_OUT);
    const double2 w1b = *reinterpret_cast<const double2*>(wq + (k + 1) * F_OUT + 2);
#pragma unroll
    for (int i = 0; i < THREAD_ROWS; ++i) {
      acc[i][0] += xv[i].x * w0a.x;
      acc[i][1] += xv[i].x * w0a.y;
      acc[i][2] += xv[i].x * w0b.x;
      acc[i][3] += xv[i].x * w0b.y;
      acc[i][0] += xv[i].y * w1a.x;
      acc[i][1] += xv[i].y * w1a.y;
      acc[i][2] += xv[i].y * w1b.x;
      acc[i][3] += xv[i].y * w1b.y;
    }
  }
  __syncwarp();  // every lane of the warp is done reading the quarter before any lane overwrites it
  double* part = xs + warp * K_PER_WARP + lane_col * THREAD_COLS;
#pragma unroll
  for (int i = 0; i < THREAD_ROWS; ++i) {
    double* p = part + (lane_row + i * LANE_ROWS) * X_STRIDE;
    *reinterpret_cast<double2*>(p) = make_double2(acc[i][0], acc[i][1]);
    *reinterpret_cast<double2*>(p + 2) = make_double2(acc[i][2], acc[i][3]);
  }
}

// After a barrier: the four warps' partial sums added in a fixed order (the same bits on every run),
// ((p0 + p1) + p2) + p3, and the tile of H stored. Thread tid takes double2 number q = tid + 128 m
// (row q / 8, columns 2 (q % 8) and + 1); a warp stores 512 contiguous bytes.
__device__ __forceinline__ void sum_and_store(const double* xs, double* __restrict__ out, long long row0, int v,
                                              int tid) {
#pragma unroll
  for (int m = 0; m < H_CHUNKS_PER_THREAD; ++m) {
    const int q = tid + m * BLOCK_THREADS;
    const int row = q / (F_OUT / VEC), col = (q % (F_OUT / VEC)) * VEC;
    const double* p = xs + row * X_STRIDE + col;
    double2 sum = *reinterpret_cast<const double2*>(p);
#pragma unroll
    for (int ww = 1; ww < NUM_WARPS; ++ww) {
      const double2 t = *reinterpret_cast<const double2*>(p + ww * K_PER_WARP);
      sum.x += t.x;
      sum.y += t.y;
    }
    if (row0 + row < v) store_16(out + static_cast<std::size_t>(row0 + row) * F_OUT + col, sum);
  }
}

// (Pass 1's kernel and launcher follow pass 2's types below: its blocks also write pass 2's list.)

}  // namespace xw

// ====================================================================================================
// Pass 2: out = log_softmax(A_hat H + b), chapter 30's SpMM kernel (its list of pieces written by
// pass 1) with the bias and the log_softmax where rows are finished. F_out is 16 here (the step refuses others), so every lane
// of a half-warp holds a feature: feat = lane % 16, and a row of H is 128 bytes.
// ====================================================================================================
namespace spmm {

// Lanes per row: half a warp, one feature each, so that the gather of a row of H (16 doubles,
// 128 bytes) is one coalesced load. The two halves of a warp take alternate entries of one stream.
constexpr int GROUP = 16;
static_assert(GROUP == F_OUT, "one feature per lane of a half-warp");
static_assert(2 * GROUP == WARP_SIZE, "two halves per warp");
constexpr unsigned ROW_BYTES = F_OUT * sizeof(double);  // 128

// Entries of A_hat loaded at once by a warp, one per lane: a chunk, walked as CHUNK / 2 pairs.
constexpr int CHUNK = WARP_SIZE;
constexpr int PAIRS = CHUNK / 2;
// Pairs whose rows of H a warp gathers before the first FMA that needs one: 2 * IN_FLIGHT rows of
// H (128 bytes each) in flight per warp. 16: the whole chunk.
constexpr int IN_FLIGHT = 16;
static_assert(PAIRS % IN_FLIGHT == 0, "a chunk is whole batches of pairs");

// The short-row warps. A warp takes ROWS_PER_WARP consecutive rows; rows longer than LONG_ROW entries
// are left to the long-row warps, so a warp's stream holds at most ROWS_PER_WARP * LONG_ROW entries.
constexpr int ROWS_PER_WARP = 16;
constexpr int LONG_ROW = 64;
static_assert(ROWS_PER_WARP + 1 <= WARP_SIZE, "one lane per row pointer");
// The first step of the binary search over a warp's rows: the largest power of 2 below ROWS_PER_WARP.
constexpr int search_top(int rows) { return rows <= 2 ? 1 : 2 * search_top((rows + 1) / 2); }
constexpr int SEARCH_TOP = search_top(ROWS_PER_WARP);
static_assert(SEARCH_TOP < ROWS_PER_WARP || ROWS_PER_WARP == 1, "the search starts inside the rows");
static_assert(2 * SEARCH_TOP >= ROWS_PER_WARP, "the steps reach the last row");

// The long-row warps: a piece of a long row is PIECE_CHUNKS chunks, SEGMENT entries.
// LONG_WARPS_PER_SM of them per SM, persistent, take the pieces.
constexpr int PIECE_CHUNKS = 16;
constexpr int SEGMENT = CHUNK * PIECE_CHUNKS;  // 512 entries
constexpr int LONG_WARPS_PER_SM = 16;
static_assert(SEGMENT > LONG_ROW, "a long row has at least one piece of SEGMENT entries or fewer");

// One warp per block (no block-wide synchronization anywhere), RESIDENT_WARPS per SM setting the
// register cap through __launch_bounds__: 32 warps, 64 registers each.
constexpr int BLOCK_WARPS = 1;
constexpr int RESIDENT_WARPS = 32;
constexpr int THREADS = BLOCK_WARPS * WARP_SIZE;
constexpr int MIN_BLOCKS = RESIDENT_WARPS / BLOCK_WARPS;
static_assert(RESIDENT_WARPS % BLOCK_WARPS == 0 && THREADS <= 1024, "whole blocks of whole warps");

// The short rows' epilogue: a finished row is staged in shared memory, and the warp's 16 rows are
// transformed together after its stream, each row held by 8 lanes, 2 adjacent features per lane (one
// 16-byte load, one 16-byte store): a warp takes 4 rows at once, in 4 rounds for its 16 rows.
constexpr int LANES_PER_ROW = F_OUT / VEC;                  // 8
constexpr int ROWS_AT_ONCE = WARP_SIZE / LANES_PER_ROW;     // 4
constexpr int ROUNDS = ROWS_PER_WARP / ROWS_AT_ONCE;        // 4
static_assert(ROWS_PER_WARP % ROWS_AT_ONCE == 0, "whole rounds");
static_assert(ROUNDS <= LANES_PER_ROW, "one log per lane covers the warp's rows");

// One piece of a long row, as plan_tile lists it: the row, its first piece's slot in the list
// (a row's pieces are consecutive), where the row starts in A_hat and how many entries it has.
struct alignas(16) Piece {
  int row;
  int first;
  int begin;
  int len;
};
static_assert(sizeof(Piece) == 16, "one 16-byte load per piece");

// The pass's scratch memory, written by pass 1 (plan_tile) and read by spmm_kernel.
struct Workspace {
  int* num_pieces;   // pieces listed by pass 1 (0 before it: the last layer's pass 2 left it so)
  int* ticket;       // pieces handed out after each long-row warp's first (pass 1 sets it to 0)
  int* readers;      // long-row warps that have read num_pieces (the last sets both back to 0)
  Piece* pieces;     // the list
  int* done;         // at a row's first piece: how many of its pieces are finished
  double* partials;  // GROUP sums per piece, for rows of more than one piece
};

// Pieces the list can hold: each long row has at most len / SEGMENT + 1 of them, and there are at
// most nnz / (LONG_ROW + 1) long rows.
inline long long max_pieces(const tut::GcnProblem& p) { return p.nnz / SEGMENT + p.nnz / (LONG_ROW + 1) + 1; }

constexpr std::size_t WORKSPACE_ALIGN = 256;
constexpr std::size_t align_up(std::size_t bytes) {
  return (bytes + WORKSPACE_ALIGN - 1) / WORKSPACE_ALIGN * WORKSPACE_ALIGN;
}

// The three counters, then the three arrays, each 256-byte aligned.
constexpr int NUM_COUNTERS = 3;
inline std::size_t workspace(const tut::GcnProblem& p) {
  const std::size_t n = static_cast<std::size_t>(max_pieces(p));
  return align_up(NUM_COUNTERS * sizeof(int)) + align_up(n * sizeof(Piece)) + align_up(n * sizeof(int)) +
         align_up(n * GROUP * sizeof(double));
}

inline Workspace carve(void* base, const tut::GcnProblem& p) {
  const std::size_t n = static_cast<std::size_t>(max_pieces(p));
  char* at = static_cast<char*>(base);
  Workspace ws;
  ws.num_pieces = reinterpret_cast<int*>(at);
  ws.ticket = ws.num_pieces + 1;
  ws.readers = ws.num_pieces + 2;
  at += align_up(NUM_COUNTERS * sizeof(int));
  ws.pieces = reinterpret_cast<Piece*>(at);
  at += align_up(n * sizeof(Piece));
  ws.done = reinterpret_cast<int*>(at);
  at += align_up(n * sizeof(int));
  ws.partials = reinterpret_cast<double*>(at);
  return ws;
}

// ---- The epilogue: out = log_softmax(y + b), stable form ---------------------------------------------
//   t_c = y_c + b_c,  m = max_c t_c,  s = sum_c exp(t_c - m) (in [1, 16]: the max's own term is 1),
//   out_c = (t_c - m) - log(s)   (not t_c - (m + log(s)): that would lose log(s) against a large m).
// Max and sum are xor butterflies: every lane of a row ends with the same bits.

// Butterflies over aligned groups of `lanes` lanes (the whole warp takes part).
template <int LANES>
__device__ __forceinline__ double row_max(double v) {
#pragma unroll
  for (int d = LANES / 2; d > 0; d /= 2) {
    const double other = __shfl_xor_sync(FULL_MASK, v, d);
    v = other > v ? other : v;
  }
  return v;
}
template <int LANES>
__device__ __forceinline__ double row_sum(double v) {
#pragma unroll
  for (int d = LANES / 2; d > 0; d /= 2) v += __shfl_xor_sync(FULL_MASK, v, d);
  return v;
}

// One row, chapter 30's store_row with the epilogue in front: called by the whole warp together, both
// halves holding row y (lane c and lane 16 + c: feature c, the same bits). Both halves compute the
// same thing side by side and every lane stores, two lanes per value with the same bits, one 128-byte
// request. 181 warp instructions (cuobjdump -sass): fine for the long rows, which are few.
__device__ __forceinline__ void bias_log_softmax_row(double* __restrict__ row_out, int feat, double y,
                                                     const double* __restrict__ b) {
  const double t = y + __ldg(b + feat);
  const double shifted = t - row_max<GROUP>(t);     // <= 0
  const double s = row_sum<GROUP>(exp(shifted));    // in [1, 16]
  row_out[feat] = shifted - log(s);
}

// The short-row warp's 16 rows at once, after its stream, from rows[i][c] (row i of the warp, feature
// c; zeros for a row that no entry ended). Lane l holds features 2 q, 2 q + 1 (q = l % 8) of row
// 4 k + r (r = l / 8) in round k: a round is one 16-byte load per lane, 4 rows in a warp instruction,
// 3 butterfly steps per reduction. The log is taken once per lane, not once per row and round: the
// lanes of row 4 k + r keep its sum when k == q % 4, so lane 8 r + q holds the sum of row 4 (q % 4) + r
// and takes its log; in round k the row's lanes fetch it from lane k of their 8 (a shuffle). Then
// one 16-byte store per lane and round (4 rows, 512 contiguous bytes) where `stored` has the row's bit.
// As plain loops: for (i < 16) if (stored & 1 << i) out[row0 + i][c] = log_softmax(rows[i] + b)[c].
__device__ __forceinline__ void bias_log_softmax_rows(const double (*rows)[F_OUT], unsigned stored,
                                                      double* __restrict__ rows_out, const double* __restrict__ b,
                                                      int lane) {
  const int r = lane / LANES_PER_ROW, q = lane % LANES_PER_ROW;
  const double b0 = __ldg(b + VEC * q), b1 = __ldg(b + VEC * q + 1);
  double2 shifted[ROUNDS];
  double s = 1.0;  // the sum of row 4 (q % 4) + r
#pragma unroll
  for (int k = 0; k < ROUNDS; ++k) {
    const double2 y = *reinterpret_cast<const double2*>(&rows[k * ROWS_AT_ONCE + r][VEC * q]);
    double2 t = make_double2(y.x + b0, y.y + b1);
    const double m = row_max<LANES_PER_ROW>(t.x > t.y ? t.x : t.y);
    t.x -= m;
    t.y -= m;
    const double sum = row_sum<LANES_PER_ROW>(exp(t.x) + exp(t.y));  // in [1, 16]
    s = k == q % ROUNDS ? sum : s;
    shifted[k] = t;
  }
  const double l = log(s);
#pragma unroll
  for (int k = 0; k < ROUNDS; ++k) {
    const double log_s = __shfl_sync(FULL_MASK, l, k, LANES_PER_ROW);  // lane k of these 8: row 4 k + r's
    const int i = k * ROWS_AT_ONCE + r;
    if ((stored >> i) & 1u)
      xw::store_16(rows_out + i * F_OUT + VEC * q, make_double2(shifted[k].x - log_s, shifted[k].y - log_s));
  }
}

// This lane's feature of row j of H: z_lane = z + feat. One 32 x 32 -> 64-bit multiply-add
// (IMAD.WIDE.U32) per gather, exact for any j < 2^31 (PTX's mul.wide.u32 says what is meant).
__device__ __forceinline__ const double* z_at(const double* z_lane, int j) {
  unsigned long long offset;
  asm("mul.wide.u32 %0, %1, %2;" : "=l"(offset) : "r"(static_cast<unsigned>(j)), "r"(ROW_BYTES));
  return reinterpret_cast<const double*>(reinterpret_cast<const char*>(z_lane) + offset);
}

// A warp's staging area in shared memory: the chunk being walked (entry l of the chunk in slot l), for
// a short-row warp its rows' places, and its finished rows waiting for the epilogue (2 KB).
struct alignas(16) Stage {
  double a[CHUNK];    // values[k]
  int j[CHUNK];       // indices[k]: the row of H to gather
  int end_of[CHUNK];  // short rows: the row (0 .. ROWS_PER_WARP - 1 of the warp's) that this entry ends, else -1
  int ptr[ROWS_PER_WARP];    // each row's first entry in A_hat
  int start[ROWS_PER_WARP];  // ... its first position in the stream
  int stop[ROWS_PER_WARP];   // ... one past its last
  double rows[ROWS_PER_WARP][F_OUT];  // short rows: finished rows of A_hat H, waiting for the epilogue
};

// One entry as a lane loads it, before staging. Past the end of its stream or piece: {0, 0, -1}.
struct Entry {
  double a;
  int j;
  int end_of;
};

// Walks the `count` staged entries of a chunk: entry 2p + half of pair p is this half's, so the lower
// half sums the even entries and the upper half the odd ones, each into its own acc, in stored order.
// IN_FLIGHT pairs of rows of H are loaded before their FMAs. With ROW_ENDS (short rows), `ends` has
// bit e set where entry e ends a row (a ballot, the same in every lane): there the two halves' sums
// of the row are added with one shuffle (each half gets the same total: a + b == b + a), the row is
// staged for the epilogue (st.rows[end_of][feat]: every lane stores, lanes c and 16 + c the same bits
// to the same place; chapter 30 stored it to memory here) and both halves start the next row from
// 0. Staged entries past `count` are {0, 0, -1} and their rows of H are not loaded (zv = 0): their FMA
// adds 0 * 0, they end no row.
template <bool ROW_ENDS>
__device__ __forceinline__ double walk_chunk(Stage& st, unsigned ends, int count, const double* __restrict__ z_lane,
                                             int half, int feat, double acc) {
  for (int p0 = 0; 2 * p0 < count; p0 += IN_FLIGHT) {
    const int left = count - half - 2 * p0;  // this half's entry of pair p0 + u exists if 2 u < left
    double zv[IN_FLIGHT];
#pragma unroll
    for (int u = 0; u < IN_FLIGHT; ++u) {
      zv[u] = 0.0;
      if (2 * u < left) zv[u] = __ldg(z_at(z_lane, st.j[2 * (p0 + u) + half]));
    }
#pragma unroll
    for (int u = 0; u < IN_FLIGHT; ++u) {
      const int p = p0 + u;
      const double a = st.a[2 * p + half];
      const unsigned pair_ends = ROW_ENDS ? (ends >> (2 * p)) & 3u : 0u;  // bit 0: entry 2p, bit 1: entry 2p + 1
      if (pair_ends == 0) {  // the common case: no row ends in this pair
        acc = fma(a, zv[u], acc);
        continue;
      }
      // Entry 2p (the lower half's) first: the upper half's sum does not include its entry 2p + 1 yet.
      double sum_to_even = half == 0 ? fma(a, zv[u], acc) : acc;
      if (pair_ends & 1u) {  // entry 2p ends a row
        const double row = sum_to_even + __shfl_xor_sync(FULL_MASK, sum_to_even, GROUP);
        st.rows[st.end_of[2 * p]][feat] = row;
        sum_to_even = 0.0;
      }
      acc = half == 1 ? fma(a, zv[u], sum_to_even) : sum_to_even;  // entry 2p + 1, the upper half's
      if (pair_ends & 2u) {  // entry 2p + 1 ends a row
        const double row = acc + __shfl_xor_sync(FULL_MASK, acc, GROUP);
        st.rows[st.end_of[2 * p + 1]][feat] = row;
        acc = 0.0;
      }
    }
  }
  return acc;
}

// Position `pos` of a short-row warp's stream: the entries of its short rows, row after row. Row i
// occupies positions [start[i], stop[i]) and entries [ptr[i], ptr[i] + stop[i] - start[i]) of A_hat;
// a long or empty row occupies no position (start[i] == stop[i]), a row past V starts at `total`.
__device__ __forceinline__ Entry load_stream_entry(int pos, int total, const Stage& st, const int* __restrict__ indices,
                                                   const double* __restrict__ values) {
  Entry e{0.0, 0, -1};
  if (pos < total) {
    // The row of pos: the last i with start[i] <= pos (start never decreases and start[0] = 0; a row
    // that occupies no position shares its start with the next row, so the last such i is the row
    // that holds pos). A binary search: 4 steps for 16 rows.
    int i = 0;
#pragma unroll
    for (int step = SEARCH_TOP; step > 0; step /= 2) {
      if (i + step < ROWS_PER_WARP && st.start[i + step] <= pos) i += step;
    }
    const int k = st.ptr[i] + (pos - st.start[i]);
    e.a = __ldcs(values + k);  // read once: evict first, so that L1 and L2 keep rows of H
    e.j = __ldcs(indices + k);
    e.end_of = pos + 1 == st.stop[i] ? i : -1;
  }
  return e;
}

// Entry `pos` of a piece of `count` entries starting at A_hat's entry `begin`.
__device__ __forceinline__ Entry load_piece_entry(int pos, int count, int begin, const int* __restrict__ indices,
                                                  const double* __restrict__ values) {
  Entry e{0.0, 0, -1};
  if (pos < count) {
    e.a = __ldcs(values + begin + pos);
    e.j = __ldcs(indices + begin + pos);
  }
  return e;
}

// Chapter 30's plan kernel's work for one tile of pass 1, done by one warp of the pass-1 block (there
// is no plan kernel). Lane l holds row row0 + l's first entry and length (len = 0 past V).
// A row longer than LONG_ROW needs ceil(len / SEGMENT) consecutive slots; the warp reserves all of its
// rows' slots with one atomic (lane 0 adds the warp's total; a row's first slot is the base plus the
// pieces of the long rows of the lanes below it), resets each long row's counter of finished pieces
// and writes the pieces, the whole warp row by row (lane l writes the row's pieces l, l + 32, ...).
// As in chapter 30, a row's pieces are consecutive and in piece order; where a row lands in the list
// changes from run to run, its sums do not: a piece's sum is one warp's, in entry order, and
// long_rows adds a row's pieces' sums in piece order from the row's first slot, wherever that is.
// The slots are counted as before: the list's capacity (max_pieces) is unchanged.
__device__ __forceinline__ void plan_tile(int row0, int begin, int len, const Workspace& ws, int lane) {
  const bool is_long = len > LONG_ROW;
  const unsigned long_lanes = __ballot_sync(FULL_MASK, is_long);
  if (long_lanes == 0) return;  // the same in every lane: 58% of the tiles of the default graph
  const int pieces = is_long ? (len - 1) / SEGMENT + 1 : 0;
  int upto = pieces;  // inclusive prefix sum over the lanes
#pragma unroll
  for (int d = 1; d < WARP_SIZE; d *= 2) {
    const int t = __shfl_up_sync(FULL_MASK, upto, d);
    if (lane >= d) upto += t;
  }
  const int total = __shfl_sync(FULL_MASK, upto, WARP_SIZE - 1);
  int base = 0;
  if (lane == 0) base = atomicAdd(ws.num_pieces, total);
  const int first = __shfl_sync(FULL_MASK, base, 0) + upto - pieces;
  if (is_long) ws.done[first] = 0;
  for (unsigned m = long_lanes; m != 0; m &= m - 1) {  // the long rows, lowest lane first
    const int src = __ffs(static_cast<int>(m)) - 1;
    const Piece piece{row0 + src, __shfl_sync(FULL_MASK, first, src), __shfl_sync(FULL_MASK, begin, src),
                      __shfl_sync(FULL_MASK, len, src)};
    const int n = __shfl_sync(FULL_MASK, pieces, src);
#pragma unroll 1
    for (int s = lane; s < n; s += WARP_SIZE) ws.pieces[piece.first + s] = piece;
  }
}


// A short-row warp: out = log_softmax(A_hat h + b) for rows row0 .. row0 + ROWS_PER_WARP - 1 (those
// past V and those longer than LONG_ROW excepted). As plain loops: for each short row r, in order:
// y[c] = sum over k in row r of values[k] * h[indices[k]][c] (the even positions of the warp's stream
// summed by the lower half, the odd ones by the upper half, the two sums added at the row's last
// entry); then, for the 16 rows together, out[r] = log_softmax(y + b).
__device__ __forceinline__ void short_rows(long long row0, int v, const int* __restrict__ indptr,
                                           const int* __restrict__ indices, const double* __restrict__ values,
                                           const double* __restrict__ z, const double* __restrict__ b,
                                           double* __restrict__ out, Stage& st) {
  const int lane = threadIdx.x % WARP_SIZE;
  const int half = lane / GROUP;
  const int feat = lane % GROUP;  // the feature this lane gathers
  const int rows = static_cast<int>(min(static_cast<long long>(ROWS_PER_WARP), v - row0));

  // The warp's rows: lane i <= rows loads indptr[row0 + i], one coalesced load; lane i < rows then
  // holds row i's first entry and length.
  int ptr = 0;
  if (lane <= rows) ptr = __ldg(indptr + row0 + lane);
  const int next_ptr = __shfl_down_sync(FULL_MASK, ptr, 1);
  const int len = lane < rows ? next_ptr - ptr : 0;
  const int in_stream = len > LONG_ROW ? 0 : len;
  int stop = in_stream;  // inclusive prefix sum over the lanes: one past row i's last position
#pragma unroll
  for (int d = 1; d < WARP_SIZE; d *= 2) {
    const int t = __shfl_up_sync(FULL_MASK, stop, d);
    if (lane >= d) stop += t;
  }
  const int total = __shfl_sync(FULL_MASK, stop, WARP_SIZE - 1);  // the stream's length
  if (lane < ROWS_PER_WARP) {
    st.ptr[lane] = ptr;
    st.start[lane] = stop - in_stream;
    st.stop[lane] = stop;
  }
  // The rows this warp stores: bit i for row i, if it exists and is not long. Every staged row starts
  // as zeros (4 16-byte stores per lane), and a row that no entry ends keeps them: an empty row (A_hat
  // has none, each row holds its diagonal) is y = 0, out = log_softmax(b).
  const unsigned stored = __ballot_sync(FULL_MASK, lane < rows && len <= LONG_ROW);
  double* flat = &st.rows[0][0];
#pragma unroll
  for (int i = 0; i < ROWS_PER_WARP * F_OUT / (VEC * WARP_SIZE); ++i)
    *reinterpret_cast<double2*>(flat + (lane + i * WARP_SIZE) * VEC) = make_double2(0.0, 0.0);
  __syncwarp();  // st.ptr, st.start, st.stop and the zeroed rows written

  // The stream, a chunk at a time: stage it, load the next one, walk this one.
  const double* z_lane = z + feat;
  double acc = 0.0;
  Entry next = load_stream_entry(lane, total, st, indices, values);
  for (int c0 = 0; c0 < total; c0 += CHUNK) {
    st.a[lane] = next.a;
    st.j[lane] = next.j;
    st.end_of[lane] = next.end_of;
    const unsigned ends = __ballot_sync(FULL_MASK, next.end_of >= 0);
    __syncwarp();
    next = load_stream_entry(c0 + CHUNK + lane, total, st, indices, values);
    acc = walk_chunk<true>(st, ends, min(CHUNK, total - c0), z_lane, half, feat, acc);
    __syncwarp();  // everyone is done with this chunk (and the rows it finished are staged)
  }
  // The epilogue, for the 16 rows together.
  bias_log_softmax_rows(st.rows, stored, out + row0 * F_OUT, b, lane);
}

// A long-row warp: takes piece `warp_id`, then piece long_warps + (its ticket), until the list is
// done. Piece s of a row covers the row's entries [(s - first) * SEGMENT, ... + SEGMENT), walked a
// chunk at a time like a stream without row ends; the halves' sums are added at the piece's end. As
// plain loops, per piece: sum[c] = sum over its entries k of values[k] * h[indices[k]][c] (even
// entries, then odd, then added); per row: out[row] = log_softmax(sum of its pieces' sums, in piece
// order, + b), by the warp that finishes the row's last piece.
__device__ __forceinline__ void long_rows(int warp_id, int long_warps, const int* __restrict__ indices,
                                          const double* __restrict__ values, const double* __restrict__ z,
                                          const double* __restrict__ b, double* __restrict__ out,
                                          const Workspace& ws, Stage& st) {
  const int lane = threadIdx.x % WARP_SIZE;
  const int half = lane / GROUP;
  const int feat = lane % GROUP;
  // The list's length, written by pass 1: final here. Lane 0 reads it and counts itself among its
  // readers (a release: its read comes first); the last of the long_warps readers (an acquire: every
  // other read came before) sets it back to 0 for the next layer's pass 1, at the end of its work.
  int num_pieces = 0;
  bool last_reader = false;
  if (lane == 0) {
    num_pieces = *ws.num_pieces;
    cuda::atomic_ref<int, cuda::thread_scope_device> readers(*ws.readers);
    last_reader = readers.fetch_add(1, cuda::memory_order_acq_rel) == long_warps - 1;
  }
  num_pieces = __shfl_sync(FULL_MASK, num_pieces, 0);
  const double* z_lane = z + feat;

  int s = warp_id;
  while (s < num_pieces) {  // s is the same in every lane
    // The piece after this one, asked for now, used at the end: the atomic's round trip is hidden.
    int next_s = 0;
    if (lane == 0) next_s = long_warps + atomicAdd(ws.ticket, 1);

    const Piece piece = ws.pieces[s];
    const int pieces = (piece.len - 1) / SEGMENT + 1;
    const int offset = (s - piece.first) * SEGMENT;  // this piece's first entry, within the row
    const int count = min(SEGMENT, piece.len - offset);
    const int begin = piece.begin + offset;

    double acc = 0.0;
    Entry next = load_piece_entry(lane, count, begin, indices, values);
    for (int c0 = 0; c0 < count; c0 += CHUNK) {
      st.a[lane] = next.a;  // no row ends here: end_of is not read
      st.j[lane] = next.j;
      __syncwarp();
      next = load_piece_entry(c0 + CHUNK + lane, count, begin, indices, values);
      acc = walk_chunk<false>(st, 0u, min(CHUNK, count - c0), z_lane, half, feat, acc);
      __syncwarp();
    }
    const double sum = acc + __shfl_xor_sync(FULL_MASK, acc, GROUP);  // even entries' + odd entries'
    double* row_out = out + static_cast<long long>(piece.row) * F_OUT;

    if (pieces == 1) {  // the same in every lane
      bias_log_softmax_row(row_out, feat, sum, b);
    } else {
      // The piece's sum to the workspace, then the row's counter of finished pieces: a release,
      // so that a warp which sees the count also sees the sums written before it (the __syncwarp
      // orders the 16 lanes' stores before lane 0's atomic).
      if (lane < GROUP) ws.partials[static_cast<long long>(s) * GROUP + lane] = sum;
      __syncwarp();
      int last = 0;
      if (lane == 0) {
        cuda::atomic_ref<int, cuda::thread_scope_device> done(ws.done[piece.first]);
        last = done.fetch_add(1, cuda::memory_order_release) == pieces - 1;
        if (last) cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
      }
      last = __shfl_sync(FULL_MASK, last, 0);
      __syncwarp();  // lane 0's acquire before the other lanes' loads
      // The last warp to finish a piece of this row adds the pieces' sums, in piece order (both
      // halves, the same loads: one request serves the two), and runs the epilogue.
      if (last) {
        const double* part = ws.partials + static_cast<long long>(piece.first) * GROUP + feat;
        double row = __ldcg(part);  // from L2: other warps wrote these
#pragma unroll 4
        for (int t = 1; t < pieces; ++t) row += __ldcg(part + static_cast<long long>(t) * GROUP);
        bias_log_softmax_row(row_out, feat, row, b);
      }
    }
    s = __shfl_sync(FULL_MASK, next_s, 0);
  }
  if (last_reader) {  // (lane 0 of one warp) no warp reads the two counters any more
    *ws.num_pieces = 0;
    *ws.readers = 0;
  }
}

// out = log_softmax(A_hat h + b): blocks 0 .. long_blocks - 1 are long-row warps, the others
// short-row warps. The block scheduler hands out blocks in order, so the long-row warps start first
// and stay; the short-row blocks fill every other place, and the places the long-row warps leave.
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    spmm_kernel(int v, int long_blocks, const int* __restrict__ indptr, const int* __restrict__ indices,
                const double* __restrict__ values, const double* __restrict__ z, const double* __restrict__ b,
                double* __restrict__ out, const Workspace ws) {
  __shared__ Stage s_stage[BLOCK_WARPS];
  const int w = threadIdx.x / WARP_SIZE;
  if (static_cast<int>(blockIdx.x) < long_blocks) {
    long_rows(blockIdx.x * BLOCK_WARPS + w, long_blocks * BLOCK_WARPS, indices, values, z, b, out, ws, s_stage[w]);
  } else {
    const long long warp_id = (static_cast<long long>(blockIdx.x) - long_blocks) * BLOCK_WARPS + w;
    const long long row0 = warp_id * ROWS_PER_WARP;
    if (row0 < v) short_rows(row0, v, indptr, indices, values, z, b, out, s_stage[w]);
  }
}


// The SpMM with its epilogue, one warp per block: LONG_WARPS_PER_SM long-row warps per SM (2,112 on
// 132 SMs, fewer when the list cannot hold that many pieces), then ceil(V / 16) short-row warps
// (17,619), 19,731 blocks in all (at most 2^27 + 2,112 for V < 2^31).
inline void spmm_bias_log_softmax(const tut::GcnProblem& p, const tut::GcnArgs& a, const double* h,
                                  const Workspace& ws, cudaStream_t stream) {
  const long long long_warps =
      std::min<long long>(static_cast<long long>(tut::sm_count()) * LONG_WARPS_PER_SM, max_pieces(p));
  const long long long_blocks = tut::ceil_div(long_warps, static_cast<long long>(BLOCK_WARPS));
  const long long short_blocks =
      tut::ceil_div(static_cast<long long>(p.v), static_cast<long long>(ROWS_PER_WARP) * BLOCK_WARPS);
  spmm_kernel<<<static_cast<unsigned>(long_blocks + short_blocks), THREADS, 0, stream>>>(
      p.v, static_cast<int>(long_blocks), a.a.indptr, a.a.indices, a.a.values, h, a.b, a.out, ws);
  TUT_CHECK_LAUNCH();
}

}  // namespace spmm

// ====================================================================================================
// Pass 1's kernel and launcher (after pass 2's types: its blocks also list pass 2's long-row pieces).
// ====================================================================================================
namespace xw {

// The warp of a pass-1 block that also lists its tile's long rows.
constexpr int PLAN_WARP = 0;
static_assert(TILE_ROWS == WARP_SIZE, "one lane per row of the tile");

// H = X W for F_IN = 128, F_OUT = 16, block b taking the tile of rows 32 b .. 32 b + 31. As plain loops:
//   for (w < 4) for (r < TILE_ROWS) for (j < 16) part[w][r][j] = sum over k in quarter w of x[row0 + r][k] * W[k][j]
//   h[row0 + r][j] = ((part[0][r][j] + part[1][r][j]) + part[2][r][j]) + part[3][r][j]
// Warp PLAN_WARP also lists the tile's long rows as pass 2's pieces (spmm::plan_tile): its loads of the tile's 33 row pointers go out first, ahead of its copies, and
// come back while the copies are in flight; the atomic and the pieces' stores follow, before the warp
// waits for its copies. indptr is the graph's (V + 1 entries), ws pass 2's workspace, its num_pieces
// 0 (a fresh workspace, or the last layer's pass 2 set it back); thread 0 of block 0 zeroes pass 2's
// ticket (the last layer's pass 2 is over, and this layer's starts after this kernel).
__global__ void __launch_bounds__(BLOCK_THREADS, BLOCKS_PER_SM)
    xw_coalesced_kernel(const double* __restrict__ x, const double* __restrict__ w, double* __restrict__ out, int v,
                        const int* __restrict__ indptr, const spmm::Workspace ws) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  SharedStorage& s = *reinterpret_cast<SharedStorage*>(smem_raw);
  const int tid = threadIdx.x;
  const int warp = tid / WARP_SIZE, lane = tid % WARP_SIZE;
  const unsigned long long policy = EVICT_FIRST ? evict_first_policy() : 0;
  const long long row0 = static_cast<long long>(blockIdx.x) * TILE_ROWS;  // < v: one block per tile
  if (blockIdx.x == 0 && tid == 0) *ws.ticket = 0;

  // The plan warp's row pointers: lane l <= rows loads indptr[row0 + l], lane 31 also the 33rd,
  // indptr[row0 + 32], when the tile is whole (the same lines: 132 bytes). Used after the copies.
  const int rows = static_cast<int>(min(static_cast<long long>(TILE_ROWS), v - row0));
  int ptr = 0, ptr_last = 0;
  if (warp == PLAN_WARP) {
    if (lane <= rows) ptr = __ldg(indptr + row0 + lane);
    if (lane == WARP_SIZE - 1 && rows == TILE_ROWS) ptr_last = __ldg(indptr + row0 + TILE_ROWS);
  }

  // The warp's quarter of W and of the tile: one group of copies, this warp's own.
#pragma unroll
  for (int i = 0; i < W_CHUNKS_PER_LANE; ++i) {
    const int c = warp * K_PER_WARP * F_OUT + (lane + i * WARP_SIZE) * VEC;
    cp_async_16(s.w + c, w + c, true);  // no policy: W is read by every block
  }
  copy_quarter(s.x, x, row0, v, warp, lane, policy);
  cp_async_commit();
  if (warp == PLAN_WARP) {  // the plan's work for rows row0 .. row0 + rows - 1, while the copies fly
    int next = __shfl_down_sync(FULL_MASK, ptr, 1);
    if (lane == WARP_SIZE - 1) next = ptr_last;
    spmm::plan_tile(static_cast<int>(row0), ptr, lane < rows ? next - ptr : 0, ws, lane);
  }
  cp_async_wait_all();  // this warp's copies have landed; the other warps' do not matter here
  __syncwarp();
  multiply_quarter(s.x, s.w, warp, lane_row_of(lane), lane_col_of(lane));
  __syncthreads();  // all four warps' partial sums are in the tile's buffer
  sum_and_store(s.x, out, row0, v, tid);
}

// Lifts the 48 KB limit on dynamic shared memory (49,664 bytes are asked for) and prefers the largest
// shared carveout, so that BLOCKS_PER_SM blocks fit next to each other; once per device.
inline void configure() {
  static tut::PerDevice<bool> done;  // (no value to keep: only that this device was configured)
  done.get([](int, bool&) {
    TUT_CUDA_CHECK(cudaFuncSetAttribute(xw_coalesced_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(SMEM_BYTES)));
    TUT_CUDA_CHECK(cudaFuncSetAttribute(xw_coalesced_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        cudaSharedmemCarveoutMaxShared));
  });
}

// H = X W: ceil(V / 32) blocks of 128 threads (8810 on the default graph), out = H.
// The blocks also list pass 2's long-row pieces into ws (whose num_pieces must be 0).
inline void xw_coalesced(const tut::GcnProblem& p, const double* x, const double* w, double* h, const int* indptr,
                         const spmm::Workspace& ws, cudaStream_t stream) {
  configure();
  const long long tiles = tut::ceil_div(static_cast<long long>(p.v), static_cast<long long>(TILE_ROWS));
  xw_coalesced_kernel<<<static_cast<unsigned>(tiles), BLOCK_THREADS, SMEM_BYTES, stream>>>(x, w, h, p.v, indptr, ws);
  TUT_CHECK_LAUNCH();
}

}  // namespace xw

// ====================================================================================================
// The layer: pass 1 (with the plan's work) into the workspace, then pass 2.
// ====================================================================================================

// The workspace: H (V x F_OUT doubles), then the counters and chapter 30's list, each part 256-byte
// aligned. Zero before the first layer; every layer leaves its counters at zero.
inline std::size_t h_bytes(const tut::GcnProblem& p) {
  return spmm::align_up(static_cast<std::size_t>(p.v) * static_cast<std::size_t>(F_OUT) * sizeof(double));
}
inline std::size_t workspace(const tut::GcnProblem& p) { return h_bytes(p) + spmm::workspace(p); }

// One line for a size this step does not run, or nullptr.
inline const char* refuses(const tut::GcnProblem& p) {
  if (p.f_in != F_IN || p.f_out != F_OUT)
    return "F_in must be 128 and F_out 16: both passes are compiled for them (valid: --in 128 --out 16)";
  return nullptr;
}

// out = log_softmax(A_hat (X W) + b). In stream order: pass 1 (H = X W into the workspace; its blocks
// also list the long-row pieces, reading indptr), pass 2 (the SpMM with the epilogue, reading H and
// the complete list: it starts after pass 1's last block, stream order; it leaves the list's
// counters at zero for the next layer).
inline void gcn_layer_fused(const tut::GcnProblem& p, const tut::GcnArgs& a, cudaStream_t stream) {
  if (p.v == 0) return;  // nothing to compute, and a grid of 0 blocks is a launch error
  double* h = static_cast<double*>(a.workspace);
  const spmm::Workspace ws = spmm::carve(static_cast<char*>(a.workspace) + h_bytes(p), p);
  xw::xw_coalesced(p, a.x, a.w, h, a.a.indptr, ws, stream);  // also lists the long-row pieces
  spmm::spmm_bias_log_softmax(p, a, h, ws, stream);
}

}  // namespace ch32
