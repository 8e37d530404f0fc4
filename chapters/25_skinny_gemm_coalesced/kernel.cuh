// Chapter 25: skinny GEMM, coalesced.
//
// What changed:  chapter 24 streams X one thread per row: every warp-wide load touches 32 rows 1 KB
//                apart, 32 cache lines for 256 bytes (8-byte loads) or 512 bytes (16-byte loads, the
//                source's double2/double4 versions), and every W value read from shared memory serves
//                one row. Here a block copies X in tiles of TILE_ROWS = 32 whole rows, 32 KB of
//                contiguous memory, with 16-byte cp.async copies in which consecutive lanes take
//                consecutive addresses: a warp's copy instruction is 512 contiguous bytes, 4 lines, 16
//                sectors, every byte used. The tiles land in shared memory, STAGES = 2 of them per
//                block, the next one in flight while the current one is multiplied. The products then
//                run from shared memory with a 2D register tile: the block's 4 warps split F_in into
//                quarters of 32, each lane computes a 4 x 4 block of H (rows r, r+8, r+16, r+24, four
//                adjacent columns) over its warp's quarter, and the 4 partial sums of each element are
//                added in a fixed order through shared memory, by threads that then store H with
//                16-byte stores, 512 contiguous bytes per warp. Persistent blocks: BLOCKS_PER_SM per SM,
//                each taking tiles blockIdx.x, + gridDim.x, ... .
// Prediction:    at the bandwidth: X (288.6 MB) read once, H (36.1 MB) written once, W (16 KB per
//                block) from L2: 324.8 MB, 0.108 ms at 3.0 TB/s; expected 92% to 100% of the copy
//                bandwidth measured in the same run, above cuBLAS. Bytes in flight: each block has one
//                or two 32 KB tiles on the way, 64 to 128 KB per SM (Little's law at ~3 TB/s and ~700
//                ns asks for ~16 KB per SM). Per SM and 64 rows (two tiles), the DRAM needs about
//                6,400 cycles (72 KB at 11.5 B per cycle: 3.0 TB/s / 132 SMs / 1.98 GHz); shared
//                memory serves 3,100 to 4,100 wavefronts (the products 16 to 24 per warp and k-pair:
//                2,048 to 3,072; the copies 512; the partial sums 512) and the FP64 pipes need 2,048
//                cycles per sub-partition: both below the DRAM time.
// Metric:        dram__throughput.avg.pct_of_peak_sustained_elapsed near the copy kernel's;
//                dram__bytes_read.sum = 288.6 MB; l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum /
//                l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum = 16 (chapter 24's loads: 32
//                sectors per request); l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum between
//                8810 tiles * 4 warps * (16 * 16 + 32) = 10.1 M and 8810 * 4 * (16 * 24 + 32) = 14.7 M;
//                l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum near 0.
// Assumes:       F_in = 128 and F_out = 16 (the tile, the warps' quarters and the lane layout are
//                compiled for them; refuses anything else); any V >= 0 (rows past V are copied as
//                zeros and never stored); x, w and out 16-byte aligned (cudaMalloc'd), not overlapping;
//                a GPU that gives a block 101,376 bytes of shared memory (sm_80, sm_90, sm_100; the
//                launch fails with a CUDA error elsewhere). 138 registers, no spill.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "tut/gcn/harness.cuh"

namespace ch25 {

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
#pragma unroll
  for (int i = 0; i < X_CHUNKS_PER_THREAD; ++i) {
    const int row = tid / X_CHUNKS_PER_ROW + i * (BLOCK_THREADS / X_CHUNKS_PER_ROW);
    const bool valid = row < rows;
    cp_async_16(xs + row * X_STRIDE + col, src + (valid ? row : 0) * F_IN, valid);  // a missing row: zeros
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

// One line for a size this step does not run, or nullptr.
inline const char* refuses(const tut::GcnProblem& p) {
  if (p.f_in != F_IN || p.f_out != F_OUT)
    return "F_in must be 128 and F_out 16: the tiles and the lane layout are compiled for them (valid: --in 128 --out 16)";
  return nullptr;
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

}  // namespace ch25
