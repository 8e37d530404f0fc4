// Chapter 29: the fused GCN layer.
//
// What changed:  the whole layer, out = log_softmax(A_hat (X W) + b), in the fewest passes over
//                memory. One pass is impossible: row v of the output needs H = X W for every
//                neighbour of v, and any node's H may be needed by a block anywhere in the grid, so
//                H must be complete before the SpMM reads it. Two passes, then:
//                (1) chapter 25's skinny GEMM writes H (V x 16 doubles) into the step's workspace,
//                    its loads of X now marked evict-first in L2, so that H, 36 MB, is what the
//                    50 MB L2 keeps for pass 2;
//                (2) chapter 27's SpMM reads H, and its epilogue, where a finished row of A_hat H
//                    sits in the 16 lanes of a group, adds b and runs chapter 28's log_softmax over
//                    those lanes before the one store. Y = A_hat H and the biased rows never reach
//                    memory. The short-row kernel no longer stores a row at its last entry: it
//                    stages the row in shared memory and runs the epilogue once for its 8 rows after
//                    its stream, both groups of a warp together (one warp instruction, two rows) and
//                    one log for 8 rows (chapter 28's sharing). Long rows: per row, by the block that
//                    finishes it.
// Prediction:    the floor (gcn_layer_cost: X, W, b and A_hat read once, out written once) is
//                357.0 MB, 119 us at 3.0 TB/s. The two passes add H's round trip, 36.1 MB written
//                and at least 36.1 MB read: 429.2 MB, 1.20x the floor, 143 us, if H goes through
//                DRAM; nearer 357 MB the more of H pass 2 finds in L2. Pass 1 is chapter 25's
//                kernel (324.8 MB, 108 us at 3.0 TB/s). Pass 2 is chapter 27's two kernels plus the
//                epilogue: in the short-row kernel 912 instructions per warp of 16 rows (238 on the
//                FP64 pipe, 144 shuffles; cuobjdump -sass), 16.1 M in all, 15 us of issue at 1.98
//                GHz over 528 sub-partitions if none of it overlaps the gathers; a row at a time,
//                in store_row, it would have been about 200 per row and group, 3.5x as many. The
//                long rows' epilogues (4736 rows, 206 instructions each) cost under 1 us. Expected:
//                0.15 to 0.20 ms, about 1.5x the floor's time (0.179 ms at 3.0 TB/s), and 2.5x faster
//                than the library pipeline (cuBLAS DGEMM, cuSPARSE SpMM, a bias kernel, cuDNN's
//                log-softmax: 573.5 MB at least, 1.61x the floor) if that runs at 0.4 ms or more.
// Metric:        dram__bytes_read.sum + dram__bytes_write.sum over the step's three kernels: between
//                357 MB (H kept in L2) and 429 MB (H through DRAM); gpu__time_duration.sum of pass 1
//                against chapter 25's kernel alone and of pass 2 against chapter 27's two kernels (the
//                epilogue's cost); smsp__inst_executed.sum of spmm_short_rows_kernel: chapter 27's
//                plus 16.1 M.
// Assumes:       F_in = 128 and F_out = 16 (pass 1 is compiled for them; refuses anything else); A_hat
//                square, CSR with int indices, as chapter 27 assumes; any V >= 0 and any row length;
//                x, w, out and the workspace 16-byte aligned (cudaMalloc'd); finite inputs. Workspace:
//                H (V x 16 doubles, 36.1 MB on the default graph) then chapter 27's list of long-row
//                pieces (6.3 MB).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "tut/gcn/harness.cuh"

namespace ch29 {

// ====================================================================================================
// Pass 1: H = X W, chapter 25's kernel (a copy; the one change: X's loads are evict-first in L2).
// ====================================================================================================
namespace xw {

// The problem this step is compiled for: X is V x F_IN, W is F_IN x F_OUT.
constexpr int F_IN = 128;
constexpr int F_OUT = 16;
constexpr int WARP_SIZE = 32;

// The block: NUM_WARPS warps share a tile of TILE_ROWS rows of X; warp w multiplies the columns
// k in [w * K_PER_WARP, (w + 1) * K_PER_WARP) of it (a quarter of F_in) into partial sums.
// BLOCKS_PER_SM blocks per SM, STAGES tiles per block: 2 * (2 * 33,280 + 16,384 + 18,432) = 202,752
// bytes of the 228 KB an SM has. A reader may try STAGES = 3 with BLOCKS_PER_SM = 1 (one block,
// up to three tiles in flight), or TILE_ROWS = 64 with THREAD_ROWS = 8 and BLOCKS_PER_SM = 1 (210
// registers, no spill); the static_asserts say what else must change.
constexpr int TILE_ROWS = 32;
constexpr int NUM_WARPS = 4;
constexpr int BLOCK_THREADS = NUM_WARPS * WARP_SIZE;  // 128
constexpr int STAGES = 2;
constexpr int BLOCKS_PER_SM = 2;
constexpr int K_PER_WARP = F_IN / NUM_WARPS;  // 32
static_assert(F_IN % NUM_WARPS == 0 && K_PER_WARP % 2 == 0, "each warp takes whole pairs of k");
static_assert(STAGES >= 2, "one tile multiplied while the next is copied");

// A lane's block of H: THREAD_ROWS rows LANE_ROWS apart and THREAD_COLS adjacent columns. The lanes
// of a warp form LANE_ROWS x LANE_COLS groups and cover TILE_ROWS x F_OUT, the whole tile of H.
constexpr int THREAD_ROWS = 4;
constexpr int THREAD_COLS = 4;
constexpr int LANE_ROWS = TILE_ROWS / THREAD_ROWS;  // 8
constexpr int LANE_COLS = F_OUT / THREAD_COLS;      // 4
static_assert(LANE_ROWS * LANE_COLS == WARP_SIZE, "the lanes of a warp cover the tile of H");
static_assert(LANE_ROWS == 8 && LANE_COLS == 4, "lane_row / lane_col below are written for 8 x 4");
static_assert(THREAD_COLS == 4, "a lane's columns are two double2");

// 16-byte accesses move two doubles.
constexpr int VEC = 2;
// Shared layouts, in doubles. A tile row is padded by X_PAD doubles: 1040 bytes, 65 16-byte bank
// groups, so that rows r and r + 1 start one group apart (mod 8). A warp's 16-byte load of X reads the
// same k of 8 consecutive rows (lane_row = 0..7, the 4 lane_cols of a row sharing its address): 8
// different groups, one pass. Unpadded, the 8 rows would all start in group 0. The partial sums
// (H's layout, rows of F_OUT) are padded by P_PAD to 144 bytes, 9 groups, for the same reason.
constexpr int X_PAD = 2;
constexpr int X_STRIDE = F_IN + X_PAD;  // 130
constexpr int P_PAD = 2;
constexpr int P_STRIDE = F_OUT + P_PAD;  // 18
static_assert(X_PAD % VEC == 0 && P_PAD % VEC == 0, "padded rows keep 16-byte alignment");

// The copy of a tile: TILE_ROWS * F_IN / VEC = 2048 chunks of 16 bytes, chunk c = row * 64 + col / 2,
// thread tid taking chunks tid, tid + 128, ...: a warp copies 32 consecutive chunks, 512 contiguous
// bytes of one row. W: F_IN * F_OUT / VEC = 1024 chunks, the same way.
constexpr int X_CHUNKS_PER_ROW = F_IN / VEC;                                    // 64
constexpr int X_CHUNKS_PER_THREAD = TILE_ROWS * X_CHUNKS_PER_ROW / BLOCK_THREADS;  // 16
constexpr int W_CHUNKS_PER_THREAD = F_IN * F_OUT / VEC / BLOCK_THREADS;          // 8
static_assert(BLOCK_THREADS % X_CHUNKS_PER_ROW == 0, "a thread copies the same column of every row it copies");
static_assert((TILE_ROWS * X_CHUNKS_PER_ROW) % BLOCK_THREADS == 0, "the threads cover a tile exactly");
static_assert((F_IN * F_OUT / VEC) % BLOCK_THREADS == 0, "the threads cover W exactly");

// The sums of the tile of H: TILE_ROWS * F_OUT / VEC = 256 double2, 2 per thread.
constexpr int H_CHUNKS_PER_THREAD = TILE_ROWS * F_OUT / VEC / BLOCK_THREADS;  // 2
static_assert((TILE_ROWS * F_OUT / VEC) % BLOCK_THREADS == 0, "the threads cover a tile of H exactly");

struct SharedStorage {
  double x[STAGES][TILE_ROWS * X_STRIDE];           // tiles of X, rows padded: 2 x 33,280 bytes
  double w[F_IN * F_OUT];                           // W, as in global memory: 16,384 bytes
  double part[NUM_WARPS][TILE_ROWS * P_STRIDE];     // each warp's partial sums, H's layout: 18,432 bytes
};
constexpr std::size_t SMEM_BYTES = sizeof(SharedStorage);  // 101,376
static_assert(SMEM_BYTES * BLOCKS_PER_SM + 1024 * BLOCKS_PER_SM <= 233472, "BLOCKS_PER_SM blocks fit in 228 KB");

// ---- cp.async: global -> shared copies that do not pass through registers ----------------------------
// 16 bytes from src to dst (shared), or 16 zero bytes when !valid (src is then not read, but must be a
// valid address). .cg: cached in L2 only, not in L1 (X is read once).
__device__ __forceinline__ void cp_async_16(double* dst, const double* src, bool valid) {
  const unsigned dst_shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst_shared), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
// The same copy with an L2 eviction hint for the source (the one change from chapter 25). X is read once,
// and H, written by this pass and gathered by pass 2 right after it, is 36 MB that fit in the 50 MB L2
// if X's lines do not push them out: evict_first makes X's lines the first to go. The policy is a
// 64-bit value made by createpolicy (sm_80 and later), here for the whole of each access.
__device__ __forceinline__ unsigned long long evict_first_policy() {
  unsigned long long policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ void cp_async_16_evict_first(double* dst, const double* src, bool valid,
                                                        unsigned long long policy) {
  const unsigned dst_shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst_shared), "l"(src),
               "r"(valid ? 16 : 0), "l"(policy)
               : "memory");
}
// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most N groups of this thread's copies are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// One 16-byte store of two doubles (dst 16-byte aligned). Written in PTX because the compiler splits
// the assignment of a double2 through a pointer into two 8-byte stores (st.global.f64 twice).
__device__ __forceinline__ void store_16(double* dst, double2 v) {
  asm volatile("st.global.v2.f64 [%0], {%1, %2};\n" ::"l"(dst), "d"(v.x), "d"(v.y) : "memory");
}

// Issues the copy of the tile whose first row is row0 into xs (rows padded to X_STRIDE). Rows at or
// past v are filled with zeros. Plain loop: for (row < TILE_ROWS) for (col < F_IN) xs[row][col] =
// row0 + row < v ? x[row0 + row][col] : 0.
__device__ __forceinline__ void copy_tile(double* xs, const double* __restrict__ x, long long row0, int v, int tid) {
  const int col = (tid % X_CHUNKS_PER_ROW) * VEC;  // the same column in every row this thread copies
  const int rows = static_cast<int>(min(static_cast<long long>(TILE_ROWS), v - row0));  // rows that exist, >= 1
  const double* src = x + static_cast<std::size_t>(row0) * F_IN + col;  // row row0 exists: row0 < v
  const unsigned long long policy = evict_first_policy();
#pragma unroll
  for (int i = 0; i < X_CHUNKS_PER_THREAD; ++i) {
    const int row = tid / X_CHUNKS_PER_ROW + i * (BLOCK_THREADS / X_CHUNKS_PER_ROW);
    const bool valid = row < rows;
    cp_async_16_evict_first(xs + row * X_STRIDE + col, src + (valid ? row : 0) * F_IN, valid, policy);
  }
}

// Lane -> (lane_row, lane_col), a 8 x 4 arrangement with two properties: lanes n and n ^ 1 share a
// lane_row (their 16-byte loads of X ask for the same address) and lanes n and n ^ 2 share a lane_col
// (their loads of W do), the two pairings under which shared memory can return two lanes' registers in
// one pass. lane_col takes lane bits 0 and 2, lane_row bits 1, 3 and 4.
__device__ __forceinline__ int lane_col_of(int lane) { return (lane & 1) | ((lane >> 1) & 2); }
__device__ __forceinline__ int lane_row_of(int lane) { return ((lane >> 1) & 1) | ((lane >> 2) & 6); }

// H = X W for F_IN = 128, F_OUT = 16: tiles of TILE_ROWS rows, copied whole and coalesced into shared
// memory, STAGES at a time. As plain loops, for each tile (rows row0 .. row0 + 31):
//   for (w < 4) for (r < 32) for (j < 16) part[w][r][j] = sum over k in quarter w of x[row0 + r][k] * W[k][j]
//   h[row0 + r][j] = ((part[0][r][j] + part[1][r][j]) + part[2][r][j]) + part[3][r][j]
__global__ void __launch_bounds__(BLOCK_THREADS, BLOCKS_PER_SM)
    xw_coalesced_kernel(const double* __restrict__ x, const double* __restrict__ w, double* __restrict__ out, int v,
                        int tiles) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  SharedStorage& s = *reinterpret_cast<SharedStorage*>(smem_raw);
  const int tid = threadIdx.x;
  const int warp = tid / WARP_SIZE, lane = tid % WARP_SIZE;
  const int lane_row = lane_row_of(lane), lane_col = lane_col_of(lane);

  // W (once per block) and the block's first tile: copy group 0.
#pragma unroll
  for (int i = 0; i < W_CHUNKS_PER_THREAD; ++i) {
    const int c = (tid + i * BLOCK_THREADS) * VEC;
    cp_async_16(s.w + c, w + c, true);
  }
  int tile = blockIdx.x;
  if (tile < tiles) copy_tile(s.x[0], x, static_cast<long long>(tile) * TILE_ROWS, v, tid);
  cp_async_commit();

  for (int it = 0; tile < tiles; ++it, tile += gridDim.x) {
    // The next tile into the next buffer: in flight while this one is multiplied. Its buffer was last
    // read by the products of the previous iteration, all done before that iteration's second barrier.
    const int next = tile + gridDim.x;
    if (next < tiles) copy_tile(s.x[(it + 1) % STAGES], x, static_cast<long long>(next) * TILE_ROWS, v, tid);
    cp_async_commit();  // every iteration commits a group, empty or not: the count below stays exact
    cp_async_wait<1>();  // this thread's copies of the current tile (and of W) have landed ...
    __syncthreads();     // ... and everyone's: the tile is complete in shared memory

    // The products: rows lane_row + 8 i (i < 4), columns 4 lane_col .. + 3, k in this warp's quarter,
    // two k at a time: 4 loads of X (one per row: x[row][k], x[row][k + 1]) and 4 of W (W[k][4 lane_col
    // .. + 3], W[k + 1][...]), 16-byte each, then 32 DFMAs. Every sum adds its k in ascending order.
    const double* xs = s.x[it % STAGES] + lane_row * X_STRIDE + warp * K_PER_WARP;
    const double* ws = s.w + warp * K_PER_WARP * F_OUT + lane_col * THREAD_COLS;
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
      for (int i = 0; i < THREAD_ROWS; ++i) xv[i] = *reinterpret_cast<const double2*>(xs + i * LANE_ROWS * X_STRIDE + k);
      const double2 w0a = *reinterpret_cast<const double2*>(ws + k * F_OUT);
      const double2 w0b = *reinterpret_cast<const double2*>(ws + k * F_OUT + 2);
      const double2 w1a = *reinterpret_cast<const double2*>(ws + (k + 1) * F_OUT);
      const double2 w1b = *reinterpret_cast<const double2*>(ws + (k + 1) * F_OUT + 2);
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

    // The warp's partial sums into shared memory, H's layout: two 16-byte stores per row.
    double* part = s.part[warp];
#pragma unroll
    for (int i = 0; i < THREAD_ROWS; ++i) {
      double* p = part + (lane_row + i * LANE_ROWS) * P_STRIDE + lane_col * THREAD_COLS;
      *reinterpret_cast<double2*>(p) = make_double2(acc[i][0], acc[i][1]);
      *reinterpret_cast<double2*>(p + 2) = make_double2(acc[i][2], acc[i][3]);
    }
    __syncthreads();  // all partial sums written; all products done (the tile's buffer is free)

    // The sums, in a fixed order (the same bits on every run), and the store of the tile of H: thread
    // tid takes double2 number q = tid + 128 m of it (row q / 8, columns 2 (q % 8) and + 1); a warp
    // stores 512 contiguous bytes.
    const long long row0 = static_cast<long long>(tile) * TILE_ROWS;
#pragma unroll
    for (int m = 0; m < H_CHUNKS_PER_THREAD; ++m) {
      const int q = tid + m * BLOCK_THREADS;
      const int row = q / (F_OUT / VEC), col = (q % (F_OUT / VEC)) * VEC;
      double2 sum = *reinterpret_cast<const double2*>(s.part[0] + row * P_STRIDE + col);
#pragma unroll
      for (int ww = 1; ww < NUM_WARPS; ++ww) {
        const double2 p = *reinterpret_cast<const double2*>(s.part[ww] + row * P_STRIDE + col);
        sum.x += p.x;
        sum.y += p.y;
      }
      if (row0 + row < v) store_16(out + static_cast<std::size_t>(row0 + row) * F_OUT + col, sum);
    }
    // The next iteration writes part[] only after its first barrier, which every thread reaches only
    // after these reads.
  }
}

// The grid: BLOCKS_PER_SM blocks per SM (as many as the occupancy calculator confirms), queried once
// per device; each block then loops over the tiles.
inline int resident_blocks() {
  static int cached_device = -1;
  static int blocks = 0;
  int device = 0;
  TUT_CUDA_CHECK(cudaGetDevice(&device));
  if (device != cached_device) {
    // More than 48 KB of dynamic shared memory needs an opt-in; prefer the largest shared carveout
    // so that BLOCKS_PER_SM blocks fit next to each other.
    TUT_CUDA_CHECK(cudaFuncSetAttribute(xw_coalesced_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(SMEM_BYTES)));
    TUT_CUDA_CHECK(cudaFuncSetAttribute(xw_coalesced_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        cudaSharedmemCarveoutMaxShared));
    int sms = 0, per_sm = 0;
    TUT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    TUT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, xw_coalesced_kernel, BLOCK_THREADS,
                                                                 SMEM_BYTES));
    blocks = sms * std::max(per_sm, 1);
    cached_device = device;
  }
  return blocks;
}

inline void xw_coalesced(const tut::GcnProblem& p, const tut::GcnArgs& a, cudaStream_t stream) {
  if (p.v == 0) return;  // no rows, and a grid of 0 blocks is a launch error
  const int tiles = static_cast<int>(tut::ceil_div(static_cast<long long>(p.v), static_cast<long long>(TILE_ROWS)));
  const int blocks = std::min(tiles, resident_blocks());  // 264 on an H100 (132 SMs x 2)
  xw_coalesced_kernel<<<blocks, BLOCK_THREADS, SMEM_BYTES, stream>>>(a.x, a.w, a.out, p.v, tiles);
  TUT_CHECK_LAUNCH();
}

}  // namespace xw

// ====================================================================================================
// Pass 2: out = log_softmax(A_hat H + b), chapter 27's SpMM with the bias and chapter 28's log_softmax
// in its epilogue. Chapter 27's kernels, with the changes the README's diff shows.
// ====================================================================================================
namespace spmm {

// Features per row the kernels hold: one per lane of a group. F_out < 16 leaves lanes idle.
constexpr int F_MAX = 16;

// Lanes per row: half a warp, one feature each, so that the gather of a row of Z (16 doubles,
// 128 bytes) is one coalesced load. A warp holds two groups, which run independently: they never
// shuffle across each other and synchronize with their own 16-lane mask.
constexpr int GROUP = 16;
constexpr int WARP_SIZE = 32;
constexpr unsigned FULL_MASK = 0xffffffffu;
static_assert(GROUP == F_MAX, "one feature per lane");
static_assert(WARP_SIZE % GROUP == 0, "whole groups in a warp");

// Entries of A_hat loaded at once by a group, one per lane: a chunk.
constexpr int CHUNK = GROUP;
// Rows of Z gathered by a group before the first FMA that needs one: the memory-level parallelism
// of one group. 8 x 128 bytes per group, 2 groups per warp. A reader may try 4 or 16 (registers).
constexpr int IN_FLIGHT = 8;
static_assert(CHUNK % IN_FLIGHT == 0, "a chunk is whole batches of gathers");

// The short-row kernel. A group takes ROWS_PER_GROUP consecutive rows (lanes 0..ROWS_PER_GROUP load
// their ROWS_PER_GROUP + 1 row pointers at once); rows longer than LONG_ROW entries are left to the
// long-row kernel, so a group walks at most ROWS_PER_GROUP * LONG_ROW = 512 entries. A reader may
// try LONG_ROW = 32 (more rows in the long-row kernel) or ROWS_PER_GROUP = 4.
constexpr int ROWS_PER_GROUP = 8;
constexpr int LONG_ROW = 64;
constexpr int SHORT_THREADS = 128;
constexpr int SHORT_GROUPS = SHORT_THREADS / GROUP;  // 8 groups, 64 rows per block
constexpr int SHORT_MIN_BLOCKS = 8;                  // 8 x 128 threads per SM: at most 64 registers
static_assert(ROWS_PER_GROUP + 1 <= GROUP, "one lane per row pointer");
static_assert(SHORT_THREADS % WARP_SIZE == 0 && SHORT_THREADS <= 1024, "whole warps, at most 1024 threads");

// The long-row kernel. A block of LONG_GROUPS groups takes one SEGMENT-entry piece of a long row,
// each group CHUNKS_PER_GROUP chunks of it. A grid of LONG_BLOCKS_PER_SM blocks per SM loops over
// the pieces.
constexpr int LONG_THREADS = 256;
constexpr int LONG_GROUPS = LONG_THREADS / GROUP;  // 16
constexpr int CHUNKS_PER_GROUP = 2;
constexpr int SEGMENT = LONG_GROUPS * CHUNK * CHUNKS_PER_GROUP;  // 512 entries
constexpr int LONG_MIN_BLOCKS = 4;                               // 4 x 256 threads per SM: at most 64 registers
constexpr int LONG_BLOCKS_PER_SM = 4;
static_assert(LONG_THREADS % WARP_SIZE == 0 && LONG_THREADS <= 1024, "whole warps, at most 1024 threads");
static_assert(SEGMENT > LONG_ROW, "a long row has at least one piece of SEGMENT entries or fewer");

// One entry of A_hat as staged in shared memory, 16 bytes: lane l of a group writes entry l of the
// chunk, then every lane reads every entry (the 16 lanes read the same address: a broadcast, no
// bank conflict). end_of: in the short-row kernel, the row (0 .. ROWS_PER_GROUP - 1 within the
// group's rows) whose last entry this is, else -1.
struct alignas(16) Entry {
  double a;    // values[k]
  int j;       // indices[k]: the row of Z to gather
  int end_of;
};

// The long rows, as spmm_short_rows_kernel leaves them for spmm_long_rows_kernel: in the workspace.
struct Workspace {
  int* num_segments;  // pieces listed so far (set to 0 by the launcher before each run)
  int2* segments;     // piece s: (row, index of the row's first piece); a row's pieces are consecutive
  int* done;          // at a row's first piece: how many of its pieces are finished
  double* partials;   // GROUP sums per piece, for rows of more than one piece
};

// Pieces the list can hold: each long row has at most len / SEGMENT + 1 of them, and there are at
// most nnz / (LONG_ROW + 1) long rows.
inline long long max_segments(const tut::GcnProblem& p) { return p.nnz / SEGMENT + p.nnz / (LONG_ROW + 1) + 1; }

constexpr std::size_t WORKSPACE_ALIGN = 256;
constexpr std::size_t align_up(std::size_t bytes) {
  return (bytes + WORKSPACE_ALIGN - 1) / WORKSPACE_ALIGN * WORKSPACE_ALIGN;
}

// The step's scratch memory: the counter, then the three arrays, each 256-byte aligned.
inline std::size_t workspace(const tut::GcnProblem& p) {
  const std::size_t n = static_cast<std::size_t>(max_segments(p));
  return align_up(sizeof(int)) + align_up(n * sizeof(int2)) + align_up(n * sizeof(int)) +
         align_up(n * GROUP * sizeof(double));
}

inline Workspace carve(void* base, const tut::GcnProblem& p) {
  const std::size_t n = static_cast<std::size_t>(max_segments(p));
  char* at = static_cast<char*>(base);
  Workspace ws;
  ws.num_segments = reinterpret_cast<int*>(at);
  at += align_up(sizeof(int));
  ws.segments = reinterpret_cast<int2*>(at);
  at += align_up(n * sizeof(int2));
  ws.done = reinterpret_cast<int*>(at);
  at += align_up(n * sizeof(int));
  ws.partials = reinterpret_cast<double*>(at);
  return ws;
}

// ---- The epilogue: chapter 28's log_softmax, with the bias ----------------------------------------
// A finished row of Y = A_hat H sits in the 16 lanes of its group, lane c holding feature c. The
// epilogue adds b, then computes chapter 28's stable log_softmax over the group's lanes:
//   t_c = y_c + b_c,  m = max_c t_c,  s = sum_c exp(t_c - m),  out_c = (t_c - m) - log(s),
// and makes the row's one store. Lanes c >= f hold t = -inf, whose exp is 0.

// Butterflies inside aligned groups of GROUP lanes, on the lanes of `mask` (whole groups): after
// log2(GROUP) steps every lane of a group holds the group's max (sum), with the same bits.
__device__ __forceinline__ double group_max(unsigned mask, double v) {
#pragma unroll
  for (int offset = GROUP / 2; offset > 0; offset /= 2) {
    const double other = __shfl_xor_sync(mask, v, offset);
    v = other > v ? other : v;
  }
  return v;
}

__device__ __forceinline__ double group_sum(unsigned mask, double v) {
#pragma unroll
  for (int offset = GROUP / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(mask, v, offset);
  return v;
}

// The lanes that make the long-row kernel's stores: the first group of its first warp.
constexpr unsigned FIRST_GROUP_MASK = 0xffffu;

// One row, by the 16 lanes of one group (those of `mask`): the long-row kernel's rows, one at a time.
__device__ __forceinline__ void bias_log_softmax_row(double* __restrict__ row_out, int f, int lane, double value,
                                                     double bias, unsigned mask) {
  const double t = lane < f ? value + bias : -INFINITY;
  const double shifted = t - group_max(mask, t);  // <= 0; the max's own is 0
  const double s = group_sum(mask, exp(shifted));  // in [1, f]
  if (lane < f) row_out[lane] = shifted - log(s);
}

// The ROWS_PER_GROUP rows of a group at once, and those of the warp's other group beside them: the
// short-row kernel's rows, staged in shared memory (staged[i][lane]: row i, feature lane) while the
// group walked its stream. Chapter 28's kernel with ROWS_PER_LANE = ROWS_PER_GROUP: every lane of the
// warp calls it (FULL_MASK), so one warp instruction serves a row of each group, and one log sequence
// serves the group's 8 rows (lane c computes the log of row c % 8; the others fetch it with a shuffle).
// Each shifted value t - m goes back to its slot until the log is known: fewer live registers than
// chapter 28's arrays (this kernel has 64 at most). stored: bit i set when row i is this kernel's to
// store (it exists and is not long).
__device__ __forceinline__ void bias_log_softmax_rows(double (&staged)[ROWS_PER_GROUP][GROUP], unsigned stored,
                                                      double* __restrict__ rows_out, int f, int lane, double bias) {
  static_assert(ROWS_PER_GROUP <= GROUP, "one log sequence for the group's rows");
  // s: the sum of row `mine`, the one whose log this lane computes, picked as the sums go by (an array
  // of sums indexed by `mine` would be placed in local memory).
  const int mine = lane % ROWS_PER_GROUP;
  double s = 1.0;
#pragma unroll
  for (int i = 0; i < ROWS_PER_GROUP; ++i) {
    double t = lane < f ? staged[i][lane] + bias : -INFINITY;
    t -= group_max(FULL_MASK, t);                     // t - m <= 0
    staged[i][lane] = t;                              // this lane's own slot: no barrier needed
    const double sum = group_sum(FULL_MASK, exp(t));  // in [1, f]
    s = i == mine ? sum : s;
  }
  const double l = log(s);
#pragma unroll
  for (int i = 0; i < ROWS_PER_GROUP; ++i) {
    const double log_sum = __shfl_sync(FULL_MASK, l, i, GROUP);  // from lane i of this group
    // (t - m) - log(s), not t - (m + log(s)): that would lose log(s) against a large m.
    if (((stored >> i) & 1u) && lane < f) rows_out[i * f + lane] = staged[i][lane] - log_sum;
  }
}

// This lane's feature of row j of Z: z_lane = z + lane, row_bytes = 8 f. One 32 x 32 -> 64-bit
// multiply-add (IMAD.WIDE.U32) per gather, exact for any j < 2^31.
__device__ __forceinline__ const double* z_at(const double* z_lane, unsigned row_bytes, int j) {
  return reinterpret_cast<const double*>(reinterpret_cast<const char*>(z_lane) +
                                         static_cast<unsigned long long>(static_cast<unsigned>(j)) * row_bytes);
}

// Gathers and accumulates `count` staged entries in order: acc += a * z[j][lane], IN_FLIGHT rows of
// Z loaded before their FMAs. With ROW_ENDS (short rows), an entry that ends a row stages it in shared
// memory (rows_staged[end_of][lane], for the epilogue after the stream) and starts the next from 0.
// Every lane of the group runs this with the same count. The staged entries past `count` are empty ({0, 0, -1}, see
// the loaders below): their FMA adds 0 * 0 and they end no row, so only the gathers test `count`.
template <bool ROW_ENDS>
__device__ __forceinline__ double gather_chunk(const Entry (&entries)[CHUNK], int count,
                                               const double* __restrict__ z_lane, unsigned row_bytes, int f,
                                               int lane, double (*rows_staged)[GROUP], double acc) {
  for (int e0 = 0; e0 < count; e0 += IN_FLIGHT) {
    double zv[IN_FLIGHT];
#pragma unroll
    for (int u = 0; u < IN_FLIGHT; ++u) {
      zv[u] = 0.0;
      if (e0 + u < count && lane < f) zv[u] = __ldg(z_at(z_lane, row_bytes, entries[e0 + u].j));
    }
#pragma unroll
    for (int u = 0; u < IN_FLIGHT; ++u) {
      acc = fma(entries[e0 + u].a, zv[u], acc);
      if (ROW_ENDS && entries[e0 + u].end_of >= 0) {
        rows_staged[entries[e0 + u].end_of][lane] = acc;
        acc = 0.0;
      }
    }
  }
  return acc;
}

// Position `pos` of a group's stream: the entries of its short rows, row after row. Row i occupies
// positions [start[i], stop[i]) and entries [ptr[i], ptr[i] + stop[i] - start[i]) of A_hat; a
// long or empty row occupies no position (start[i] == stop[i]), a row past V starts at `total`.
// Positions past the stream read nothing.
__device__ __forceinline__ Entry load_stream_entry(int pos, int total, const int (&ptr)[ROWS_PER_GROUP],
                                                   const int (&start)[ROWS_PER_GROUP],
                                                   const int (&stop)[ROWS_PER_GROUP],
                                                   const int* __restrict__ indices,
                                                   const double* __restrict__ values) {
  Entry e{0.0, 0, -1};
  if (pos < total) {
    // The row of pos: the last i with start[i] <= pos (start never decreases; a row that occupies
    // no position shares its start with the next row, which then counts too).
    int i = 0;
#pragma unroll
    for (int t = 1; t < ROWS_PER_GROUP; ++t) i += start[t] <= pos;
    const int k = ptr[i] + (pos - start[i]);
    e.a = __ldg(values + k);
    e.j = __ldg(indices + k);
    e.end_of = pos + 1 == stop[i] ? i : -1;
  }
  return e;
}

// out = log_softmax(A_hat z + b) for the rows of at most LONG_ROW entries; longer rows are listed for
// the long-row kernel. Block b, group g takes rows r0 .. r0 + 7, r0 = (b * SHORT_GROUPS + g) * ROWS_PER_GROUP.
// As plain loops, per group: for each short row r of the 8, in order: acc = 0; for k in row r: acc +=
// values[k] * z[indices[k]][lane]; y[r][lane] = acc; then for the 8 rows at once: out[r] =
// log_softmax(y[r] + b).
__global__ void __launch_bounds__(SHORT_THREADS, SHORT_MIN_BLOCKS)
    spmm_short_rows_kernel(int v, int f, const int* __restrict__ indptr, const int* __restrict__ indices,
                           const double* __restrict__ values, const double* __restrict__ z,
                           const double* __restrict__ b, double* __restrict__ out, const Workspace ws) {
  __shared__ Entry s_entries[SHORT_GROUPS][CHUNK];       // the chunk being gathered
  __shared__ double s_rows[SHORT_GROUPS][ROWS_PER_GROUP][GROUP];  // the finished rows, for the epilogue
  __shared__ int s_ptr[SHORT_GROUPS][ROWS_PER_GROUP];    // each row's first entry in A_hat
  __shared__ int s_start[SHORT_GROUPS][ROWS_PER_GROUP];  // ... its first position in the stream
  __shared__ int s_stop[SHORT_GROUPS][ROWS_PER_GROUP];   // ... one past its last

  const int lane = threadIdx.x % GROUP;
  const int g = threadIdx.x / GROUP;
  const int half = threadIdx.x % WARP_SIZE / GROUP * GROUP;  // 0 or 16: the group's first lane in its warp
  const unsigned group_mask = 0xffffu << half;
  const long long row0 = (static_cast<long long>(blockIdx.x) * SHORT_GROUPS + g) * ROWS_PER_GROUP;
  const int rows = static_cast<int>(min(static_cast<long long>(ROWS_PER_GROUP), max(0LL, v - row0)));

  // The group's rows: lane i <= rows loads indptr[row0 + i], one coalesced load; lane i < rows then
  // holds row i's first entry and length. Every lane of the warp takes part in the shuffles (even
  // those of a group past V), so nothing returns early.
  int ptr = 0;
  if (rows > 0 && lane <= rows) ptr = __ldg(indptr + row0 + lane);
  const int next_ptr = __shfl_down_sync(FULL_MASK, ptr, 1, GROUP);
  const int len = lane < rows ? next_ptr - ptr : 0;
  const bool is_long = len > LONG_ROW;
  const int in_stream = is_long ? 0 : len;
  int stop = in_stream;  // inclusive prefix sum over the group's lanes: one past row i's last position
#pragma unroll
  for (int d = 1; d < GROUP; d *= 2) {
    const int t = __shfl_up_sync(FULL_MASK, stop, d, GROUP);
    if (lane >= d) stop += t;
  }
  const int total = __shfl_sync(FULL_MASK, stop, GROUP - 1, GROUP);  // the stream's length
  // The rows this kernel stores: bit i for row i, if it exists and is not long.
  const unsigned stored = (__ballot_sync(FULL_MASK, lane < rows && !is_long) >> half) & 0xffu;
  if (lane < ROWS_PER_GROUP) {
    s_ptr[g][lane] = ptr;
    s_start[g][lane] = stop - in_stream;
    s_stop[g][lane] = stop;
  }

  // A long row: reserve its pieces in the list (one atomic per row; where they land changes from run
  // to run, what they sum to does not) and reset its counter of finished pieces.
  if (lane < rows && is_long) {
    const int pieces = (len - 1) / SEGMENT + 1;
    const int first = atomicAdd(ws.num_segments, pieces);
    for (int s = 0; s < pieces; ++s) ws.segments[first + s] = make_int2(static_cast<int>(row0) + lane, first);
    ws.done[first] = 0;
  }
  // The group's rows wait in s_rows for the epilogue, and start as zeros: an empty row (A_hat has none:
  // each row holds its diagonal) is zeros, as chapter 27 stores it, and then goes through the epilogue.
  double* rows_out = out + row0 * f;  // the group's first row
#pragma unroll
  for (int i = 0; i < ROWS_PER_GROUP; ++i) s_rows[g][i][lane] = 0.0;
  __syncwarp(group_mask);  // s_ptr, s_start, s_stop written

  // The stream, a chunk at a time: stage it, load the next one, gather this one.
  const double* z_lane = z + lane;
  const unsigned row_bytes = static_cast<unsigned>(f) * sizeof(double);
  double acc = 0.0;
  Entry next = load_stream_entry(lane, total, s_ptr[g], s_start[g], s_stop[g], indices, values);
  for (int c0 = 0; c0 < total; c0 += CHUNK) {
    s_entries[g][lane] = next;
    __syncwarp(group_mask);
    next = load_stream_entry(c0 + CHUNK + lane, total, s_ptr[g], s_start[g], s_stop[g], indices, values);
    acc = gather_chunk<true>(s_entries[g], min(CHUNK, total - c0), z_lane, row_bytes, f, lane, s_rows[g], acc);
    __syncwarp(group_mask);  // everyone is done with this chunk before the next overwrites it
  }

  // The epilogue: bias + log_softmax of the group's 8 rows, and their stores. Each lane reads back only
  // the column it staged itself, so no barrier is needed; the full-warp shuffles wait for the warp's
  // other group to finish its stream.
  const double bias = lane < f ? __ldg(b + lane) : 0.0;
  bias_log_softmax_rows(s_rows[g], stored, rows_out, f, lane, bias);
}

// Entry `pos` of a piece of `count` entries (indices and values from the piece's first entry).
__device__ __forceinline__ Entry load_piece_entry(int pos, int count, const int* __restrict__ indices,
                                                  const double* __restrict__ values) {
  Entry e{0.0, 0, -1};
  if (pos < count) {
    e.a = __ldg(values + pos);
    e.j = __ldg(indices + pos);
  }
  return e;
}

// out = log_softmax(A_hat z + b) for the rows listed by spmm_short_rows_kernel. Block b takes pieces
// b, b + grid, ...
// Piece s of row r covers the row's entries [(s - first) * SEGMENT, ... + SEGMENT); group g of the
// block takes its chunks g, g + LONG_GROUPS, ... (16 entries each), and the block adds its 16 groups'
// sums in group order. As plain loops, per piece: for g: for chunk of g: for k: part[g] +=
// values[k] * z[indices[k]][lane]; sum = part[0] + part[1] + ... + part[15]; and, by the block that
// finishes the row: out[r] = log_softmax(sum of its pieces' sums + b).
__global__ void __launch_bounds__(LONG_THREADS, LONG_MIN_BLOCKS)
    spmm_long_rows_kernel(int f, const int* __restrict__ indptr, const int* __restrict__ indices,
                          const double* __restrict__ values, const double* __restrict__ z,
                          const double* __restrict__ b, double* __restrict__ out, const Workspace ws) {
  __shared__ Entry s_entries[LONG_GROUPS][CHUNK];
  __shared__ double s_sums[LONG_GROUPS][GROUP];
  __shared__ int s_last;

  const int lane = threadIdx.x % GROUP;
  const int g = threadIdx.x / GROUP;
  const unsigned group_mask = 0xffffu << (threadIdx.x % WARP_SIZE / GROUP * GROUP);
  const int num_segments = *ws.num_segments;  // written by the previous kernel: final here
  const double* z_lane = z + lane;
  const unsigned row_bytes = static_cast<unsigned>(f) * sizeof(double);
  const double bias = lane < f ? __ldg(b + lane) : 0.0;

  for (int s = blockIdx.x; s < num_segments; s += gridDim.x) {  // the same trip count for the whole block
    const int2 piece = ws.segments[s];
    const int row = piece.x, first = piece.y;
    const int row_begin = __ldg(indptr + row);
    const int row_len = __ldg(indptr + row + 1) - row_begin;
    const int pieces = (row_len - 1) / SEGMENT + 1;
    const int offset = (s - first) * SEGMENT;  // this piece's first entry, within the row
    const int count = min(SEGMENT, row_len - offset);
    const int* piece_indices = indices + row_begin + offset;
    const double* piece_values = values + row_begin + offset;
    double* row_out = out + static_cast<long long>(row) * f;

    double acc = 0.0;
    Entry next = load_piece_entry(g * CHUNK + lane, count, piece_indices, piece_values);
    for (int c0 = g * CHUNK; c0 < count; c0 += LONG_GROUPS * CHUNK) {
      s_entries[g][lane] = next;
      __syncwarp(group_mask);
      next = load_piece_entry(c0 + LONG_GROUPS * CHUNK + lane, count, piece_indices, piece_values);
      acc = gather_chunk<false>(s_entries[g], min(CHUNK, count - c0), z_lane, row_bytes, f, lane, nullptr, acc);
      __syncwarp(group_mask);
    }

    // The piece's sum: the groups' sums added by group 0 in group order (the same order every run).
    s_sums[g][lane] = acc;
    __syncthreads();
    if (threadIdx.x < GROUP) {
      double sum = s_sums[0][lane];
#pragma unroll
      for (int h = 1; h < LONG_GROUPS; ++h) sum += s_sums[h][lane];
      if (pieces == 1) {
        bias_log_softmax_row(row_out, f, lane, sum, bias, FIRST_GROUP_MASK);
      } else {
        ws.partials[static_cast<long long>(s) * GROUP + lane] = sum;
        __threadfence();  // the partial sum is visible to every block before the counter moves
      }
    }
    if (pieces > 1) {  // the same for the whole block
      __syncthreads();
      if (threadIdx.x == 0) {
        __threadfence();
        s_last = atomicAdd(ws.done + first, 1) == pieces - 1;
      }
      __syncthreads();
      // The last block to finish a piece of this row adds the pieces' sums, in piece order.
      if (s_last && threadIdx.x < GROUP) {
        __threadfence();
        const double* part = ws.partials + static_cast<long long>(first) * GROUP + lane;
        double sum = __ldcg(part);  // from L2: other blocks wrote these
#pragma unroll 4
        for (int t = 1; t < pieces; ++t) sum += __ldcg(part + static_cast<long long>(t) * GROUP);
        bias_log_softmax_row(row_out, f, lane, sum, bias, FIRST_GROUP_MASK);
      }
    }
    __syncthreads();  // s_entries, s_sums and s_last are reused by the next piece
  }
}

// The long-row kernel's grid: LONG_BLOCKS_PER_SM blocks per SM, queried once per device.
inline int long_rows_grid() {
  static int cached_device = -1;
  static int sms = 0;
  int device = 0;
  TUT_CUDA_CHECK(cudaGetDevice(&device));
  if (device != cached_device) {
    TUT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    cached_device = device;
  }
  return sms * LONG_BLOCKS_PER_SM;
}

// Pass 2's launcher (a.z = H, a.b = the bias), as chapter 27's: reset the list's counter, then the
// two kernels, in stream order (the second reads the list the first wrote). Short rows: ceil(V / 64)
// blocks of 128 threads (4405 on the default graph); long rows: 4 blocks of 256 threads per SM (528
// on 132 SMs), fewer when the list cannot hold that many pieces.
inline void spmm_bias_log_softmax(const tut::GcnProblem& p, const tut::GcnArgs& a, cudaStream_t stream) {
  if (p.v == 0) return;  // nothing to compute, and a grid of 0 blocks is a launch error
  const Workspace ws = carve(a.workspace, p);
  TUT_CUDA_CHECK(cudaMemsetAsync(ws.num_segments, 0, sizeof(int), stream));

  constexpr long long ROWS_PER_BLOCK = static_cast<long long>(SHORT_GROUPS) * ROWS_PER_GROUP;
  const unsigned short_blocks = static_cast<unsigned>(tut::ceil_div(static_cast<long long>(p.v), ROWS_PER_BLOCK));
  spmm_short_rows_kernel<<<short_blocks, SHORT_THREADS, 0, stream>>>(p.v, p.f_out, a.a.indptr, a.a.indices,
                                                                     a.a.values, a.z, a.b, a.out, ws);
  TUT_CHECK_LAUNCH();

  const unsigned long_blocks = static_cast<unsigned>(std::min<long long>(long_rows_grid(), max_segments(p)));
  spmm_long_rows_kernel<<<long_blocks, LONG_THREADS, 0, stream>>>(p.f_out, a.a.indptr, a.a.indices, a.a.values,
                                                                  a.z, a.b, a.out, ws);
  TUT_CHECK_LAUNCH();
}

}  // namespace spmm

// ====================================================================================================
// The layer: pass 1 into the workspace, then pass 2.
// ====================================================================================================

// The workspace: H (V x F_out doubles), then chapter 27's list, each part 256-byte aligned.
inline std::size_t h_bytes(const tut::GcnProblem& p) {
  return spmm::align_up(static_cast<std::size_t>(p.v) * static_cast<std::size_t>(p.f_out) * sizeof(double));
}
inline std::size_t workspace(const tut::GcnProblem& p) { return h_bytes(p) + spmm::workspace(p); }

// One line for a size this step does not run, or nullptr. Pass 2 would take F_out 1 to 16 (chapter 27);
// pass 1 is compiled for 128 -> 16 (chapter 25).
inline const char* refuses(const tut::GcnProblem& p) {
  if (p.f_in != xw::F_IN || p.f_out != xw::F_OUT)
    return "F_in must be 128 and F_out 16: the GEMM pass is compiled for them (valid: --in 128 --out 16)";
  return nullptr;
}

// out = log_softmax(A_hat (X W) + b): H = X W into the workspace (pass 1), then A_hat H with the bias
// and the log_softmax in the SpMM's epilogue (pass 2). Four launches in stream order: pass 1's kernel,
// the list counter's reset, pass 2's two kernels.
inline void gcn_layer_fused(const tut::GcnProblem& p, const tut::GcnArgs& a, cudaStream_t stream) {
  if (p.v == 0) return;  // nothing to compute, and a grid of 0 blocks is a launch error
  double* h = static_cast<double*>(a.workspace);
  tut::GcnArgs pass1 = a;  // x, w -> out = H
  pass1.out = h;
  xw::xw_coalesced(p, pass1, stream);
  tut::GcnArgs pass2 = a;  // z = H, b -> out; the list after H
  pass2.z = h;
  pass2.workspace = static_cast<char*>(a.workspace) + h_bytes(p);
  spmm::spmm_bias_log_softmax(p, pass2, stream);
}

}  // namespace ch29
