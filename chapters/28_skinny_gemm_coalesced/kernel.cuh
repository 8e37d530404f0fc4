// Chapter 28: skinny GEMM, coalesced.
//
// What changed:  chapter 27 streams X one thread per row: every warp-wide load touches 32 rows 1 KB
//                apart, 32 cache lines for 256 bytes (8-byte loads) or 512 bytes (16-byte loads, the
//                source's double2/double4 versions), and every W value read from shared memory serves
//                one row. Here a block copies X in tiles of TILE_ROWS = 32 whole rows, 32 KB of
//                contiguous memory, with 16-byte cp.async copies in which consecutive lanes take
//                consecutive addresses: a warp's copy instruction is two 256-byte row pieces, 4 lines,
//                16 sectors, every byte used. The block's 4 warps split F_in into quarters of 32, and
//                each warp copies exactly the quarter it multiplies (and that quarter of W's rows), so it
//                waits for its own copies only. The products run from shared memory with a 2D register
//                tile: each lane computes a 4 x 4 block of H (rows r, r+8, r+16, r+24, four adjacent
//                columns) over its warp's quarter, writes the partial sums over the start of that
//                quarter (no separate buffer), and after the block's one barrier per tile the 4 partial
//                sums of each element are added in a fixed order by threads that then store H with
//                16-byte stores. One block per tile (PERSISTENT = 0, the default): 8810 blocks on the
//                default graph, BLOCKS_PER_SM = 4 resident per SM (49,664 bytes of shared memory
//                each), the block scheduler refilling an SM as blocks finish, so four tiles are in
//                flight per SM and the last wave is 32 rows deep. (PERSISTENT = 1: blocks that loop
//                over the tiles with STAGES buffers, STAGES - 1 tiles in flight; measured slower, see
//                the README.) The copies of X carry an L2 evict-first hint (EVICT_FIRST) and the
//                .L2::128B prefetch-size hint (PREFETCH_128B: measured 1.6% to 1.9% faster).
// Prediction:    at the bandwidth: X (288.6 MB) read once, H (36.1 MB) written once, W (16 KB per
//                block) from L2: 324.8 MB, 0.108 ms at 3.0 TB/s; expected 95% to 100% of the copy
//                bandwidth measured in the same run, at or above cuBLAS. Bytes in flight: up to 128 KB
//                per SM (four 32 KB tiles; Little's law at ~3 TB/s and ~1 us asks for ~23 KB). Per SM
//                and 32-row tile, the DRAM needs about 3,200 cycles (36 KB at 11.5 B per cycle: 3.0 TB/s
//                / 132 SMs / 1.98 GHz); shared memory serves 1,500 to 2,000 wavefronts (the products
//                1,024 to 1,536, the copies 256, the partial sums 256) and the FP64 pipe of each
//                sub-partition 1,024 cycles (512 DFMA x 2): all below the DRAM time.
// Metric:        dram__throughput.avg.pct_of_peak_sustained_elapsed near the copy kernel's;
//                dram__bytes_read.sum = 288.6 MB; l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum /
//                l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum = 16 (chapter 27's loads: 32
//                sectors per request); l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum between
//                8810 tiles * 4 warps * (16 * 16 + 32) = 10.1 M and 8810 * 4 * (16 * 24 + 32) = 14.7 M;
//                smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio small (one barrier).
// Assumes:       F_in = 128 and F_out = 16 (the tile, the warps' quarters and the lane layout are
//                compiled for them; refuses anything else); any V >= 0 (rows past V are copied as
//                zeros and never stored); x, w and out 16-byte aligned (cudaMalloc'd), not overlapping;
//                a GPU that gives a block 49,664 bytes of shared memory (116,224 for the persistent
//                variant) and sm_80 or newer for the L2 cache hint. 100 registers (the persistent
//                variant 138), no spill.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "tut/gcn/harness.cuh"

namespace ch28 {

// The problem this step is compiled for: X is V x F_IN, W is F_IN x F_OUT.
constexpr int F_IN = 128;
constexpr int F_OUT = 16;
constexpr int WARP_SIZE = 32;

// The block: NUM_WARPS warps share a tile of TILE_ROWS rows of X; warp w multiplies the columns
// k in [w * K_PER_WARP, (w + 1) * K_PER_WARP) of it (a quarter of F_in) into partial sums, and it is
// also the warp that copies that quarter (and the same quarter of W's rows) into shared memory: a warp
// waits for its own copies only, never for the other warps', until the partial sums meet.
//
// Switches (scripts/variant.sh 28_skinny_gemm_coalesced NAME=value):
//   PERSISTENT = 1: BLOCKS_PER_SM blocks per SM loop over the tiles (b, b + grid, ...), STAGES tile
//                   buffers each, STAGES - 1 tiles in flight ahead of the one being multiplied.
//   PERSISTENT = 0: one block per tile (8810 blocks), one buffer; the block scheduler keeps as many
//                   resident per SM as shared memory allows and refills an SM as blocks finish.
//   EVICT_FIRST = 1: the copies of X carry an L2 evict-first policy (X is read once; H and W stay).
//   PREFETCH_128B = 1: the copies of X carry the .L2::128B prefetch-size hint (whole lines from DRAM).
//   TILE_ROWS = 16, 32 or 64 with THREAD_ROWS = TILE_ROWS / 8.
constexpr int PERSISTENT = 0;
constexpr int TILE_ROWS = 32;
constexpr int THREAD_ROWS = 4;
constexpr int STAGES = 3;
constexpr int BLOCKS_PER_SM = 4;
constexpr int EVICT_FIRST = 1;
constexpr int PREFETCH_128B = 1;
constexpr int NUM_WARPS = 4;
constexpr int BLOCK_THREADS = NUM_WARPS * WARP_SIZE;  // 128
constexpr int K_PER_WARP = F_IN / NUM_WARPS;          // 32
constexpr int BUFFERS = PERSISTENT ? STAGES : 1;      // tile buffers in shared memory
static_assert(F_IN % NUM_WARPS == 0 && K_PER_WARP % 2 == 0, "each warp takes whole pairs of k");
static_assert(!PERSISTENT || STAGES >= 2, "a persistent block multiplies one tile while the next is copied");

// A lane's block of H: THREAD_ROWS rows LANE_ROWS apart and THREAD_COLS adjacent columns. The lanes
// of a warp form LANE_ROWS x LANE_COLS groups and cover TILE_ROWS x F_OUT, the whole tile of H.
constexpr int THREAD_COLS = 4;
constexpr int LANE_ROWS = TILE_ROWS / THREAD_ROWS;  // 8
constexpr int LANE_COLS = F_OUT / THREAD_COLS;      // 4
static_assert(LANE_ROWS * LANE_COLS == WARP_SIZE, "the lanes of a warp cover the tile of H");
static_assert(LANE_ROWS == 8 && LANE_COLS == 4, "lane_row / lane_col below are written for 8 x 4");
static_assert(THREAD_COLS == 4, "a lane's columns are two double2");

// 16-byte accesses move two doubles.
constexpr int VEC = 2;
// Shared layout of a tile, in doubles. A row is padded by X_PAD doubles: 1040 bytes, 65 16-byte bank
// groups, so that rows r and r + 1 start one group apart (mod 8). A warp's 16-byte load of X reads the
// same k of 8 consecutive rows (lane_row = 0..7, the 4 lane_cols of a row sharing its address): 8
// different groups. Unpadded, the 8 rows would all start in group 0.
constexpr int X_PAD = 2;
constexpr int X_STRIDE = F_IN + X_PAD;  // 130
static_assert(X_PAD % VEC == 0, "padded rows keep 16-byte alignment");
// After its products, warp w writes its partial sums (TILE_ROWS x F_OUT, H's layout) over the first
// F_OUT columns of its own quarter of the tile: nobody else reads that quarter, and it is no longer
// needed. No separate buffer for the partial sums.
static_assert(F_OUT <= K_PER_WARP, "a warp's partial sums fit in its quarter of the tile");

// A warp's copy of its quarter of a tile: TILE_ROWS rows x K_PER_WARP / VEC = 16 chunks of 16 bytes
// per row; lane l takes chunk l % 16 of rows l / 16, + 2, + 4, ...: one copy instruction of a warp is
// two row pieces of 256 contiguous, 256-byte aligned bytes: 4 lines, 16 sectors, every byte used.
// W's quarter (K_PER_WARP rows of W, 4 KB contiguous): 256 chunks, lane l taking l, l + 32, ...
constexpr int Q_CHUNKS_PER_ROW = K_PER_WARP / VEC;                               // 16
constexpr int Q_ROWS_PER_COPY = WARP_SIZE / Q_CHUNKS_PER_ROW;                    // 2
constexpr int X_CHUNKS_PER_LANE = TILE_ROWS / Q_ROWS_PER_COPY;                   // 16
constexpr int W_CHUNKS_PER_LANE = K_PER_WARP * F_OUT / VEC / WARP_SIZE;          // 8
static_assert(WARP_SIZE % Q_CHUNKS_PER_ROW == 0 && TILE_ROWS % Q_ROWS_PER_COPY == 0, "a warp covers its quarter exactly");
static_assert((K_PER_WARP * F_OUT / VEC) % WARP_SIZE == 0, "a warp covers its quarter of W exactly");

// The sums of the tile of H: TILE_ROWS * F_OUT / VEC double2, H_CHUNKS_PER_THREAD per thread.
constexpr int H_CHUNKS_PER_THREAD = TILE_ROWS * F_OUT / VEC / BLOCK_THREADS;  // 2
static_assert((TILE_ROWS * F_OUT / VEC) % BLOCK_THREADS == 0, "the threads cover a tile of H exactly");

struct SharedStorage {
  double x[BUFFERS][TILE_ROWS * X_STRIDE];  // tiles of X, rows padded: 33,280 bytes each
  double w[F_IN * F_OUT];                   // W, as in global memory: 16,384 bytes
};
constexpr std::size_t SMEM_BYTES = sizeof(SharedStorage);  // 116,224 (3 buffers)
static_assert(SMEM_BYTES * BLOCKS_PER_SM + 1024 * BLOCKS_PER_SM <= 233472,
              "BLOCKS_PER_SM blocks fit in 228 KB");

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
// they do not push out H's lines (written back later) or W.
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

// The warp's products for one tile: rows lane_row + 8 i (i < THREAD_ROWS), columns 4 lane_col .. + 3,
// k in the warp's quarter, two k at a time: THREAD_ROWS loads of X (x[row][k], x[row][k + 1]) and 4 of
// W (W[k][4 lane_col .. + 3], W[k + 1][...]), 16-byte each, then 8 THREAD_ROWS DFMAs. Every sum adds
// its k in ascending order. Then the partial sums overwrite the start of the warp's own quarter.
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

// H = X W for F_IN = 128, F_OUT = 16: tiles of TILE_ROWS rows, copied whole and coalesced into shared
// memory. As plain loops, for each tile (rows row0 .. row0 + TILE_ROWS - 1):
//   for (w < 4) for (r < TILE_ROWS) for (j < 16) part[w][r][j] = sum over k in quarter w of x[row0 + r][k] * W[k][j]
//   h[row0 + r][j] = ((part[0][r][j] + part[1][r][j]) + part[2][r][j]) + part[3][r][j]
// Block b takes tiles b, b + gridDim.x, ... (PERSISTENT = 0: the grid is one block per tile, one pass).
__global__ void __launch_bounds__(BLOCK_THREADS, BLOCKS_PER_SM)
    xw_coalesced_kernel(const double* __restrict__ x, const double* __restrict__ w, double* __restrict__ out, int v,
                        int tiles) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  SharedStorage& s = *reinterpret_cast<SharedStorage*>(smem_raw);
  const int tid = threadIdx.x;
  const int warp = tid / WARP_SIZE, lane = tid % WARP_SIZE;
  const int lane_row = lane_row_of(lane), lane_col = lane_col_of(lane);
  const unsigned long long policy = EVICT_FIRST ? evict_first_policy() : 0;
  const int tile0 = blockIdx.x;  // < tiles: the grid has at most `tiles` blocks

  // The warp's quarter of W (once per block) and of the block's first tile: copy group 0. Then, for a
  // persistent block, the next BUFFERS - 2 tiles, one group each (empty where there is no tile).
#pragma unroll
  for (int i = 0; i < W_CHUNKS_PER_LANE; ++i) {
    const int c = warp * K_PER_WARP * F_OUT + (lane + i * WARP_SIZE) * VEC;
    cp_async_16(s.w + c, w + c, true);  // no policy: W is read by every block
  }
#pragma unroll
  for (int st = 0; st < (BUFFERS > 1 ? BUFFERS - 1 : 1); ++st) {
    const long long t = tile0 + static_cast<long long>(st) * gridDim.x;
    if (t < tiles) copy_quarter(s.x[st], x, t * TILE_ROWS, v, warp, lane, policy);
    cp_async_commit();
  }

  for (int it = 0;; ++it) {
    const long long tile = tile0 + static_cast<long long>(it) * gridDim.x;
    if (tile >= tiles) break;
    double* xs = s.x[it % BUFFERS];
    // This warp's copies of the current tile have landed; the other warps' do not matter here.
    cp_async_wait<(BUFFERS > 1 ? BUFFERS - 2 : 0)>();
    __syncwarp();
    multiply_quarter(xs, s.w, warp, lane_row, lane_col);
    __syncthreads();  // all four warps' partial sums are in the tile's buffer
    if constexpr (BUFFERS > 1) {
      // The tile BUFFERS - 1 ahead, into the buffer of the previous tile: every thread has passed this
      // barrier, so every thread is done with the previous tile's sums. One group per iteration, empty
      // or not, so that the wait above always means "this tile's group".
      const long long ahead = tile0 + static_cast<long long>(it + BUFFERS - 1) * gridDim.x;
      if (ahead < tiles) copy_quarter(s.x[(it + BUFFERS - 1) % BUFFERS], x, ahead * TILE_ROWS, v, warp, lane, policy);
      cp_async_commit();
    }
    sum_and_store(xs, out, tile * TILE_ROWS, v, tid);
    if constexpr (BUFFERS == 1) break;  // one tile per block
  }
}

// One line for a size this step does not run, or nullptr.
inline const char* refuses(const tut::GcnProblem& p) {
  if (p.f_in != F_IN || p.f_out != F_OUT)
    return "F_in must be 128 and F_out 16: the tiles and the lane layout are compiled for them (valid: --in 128 --out 16)";
  return nullptr;
}

// The grid for a persistent kernel: BLOCKS_PER_SM blocks per SM (as many as the occupancy calculator
// confirms), queried once per device. Also lifts the 48 KB limit on dynamic shared memory.
inline int resident_blocks() {
  static tut::PerDevice<int> cache;
  return cache.get([](int device, int& blocks) {
    // More than 48 KB of dynamic shared memory needs an opt-in; prefer the largest shared carveout
    // so that as many blocks as possible fit next to each other.
    TUT_CUDA_CHECK(cudaFuncSetAttribute(xw_coalesced_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(SMEM_BYTES)));
    TUT_CUDA_CHECK(cudaFuncSetAttribute(xw_coalesced_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        cudaSharedmemCarveoutMaxShared));
    int sms = 0, per_sm = 0;
    TUT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    TUT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, xw_coalesced_kernel, BLOCK_THREADS,
                                                                 SMEM_BYTES));
    blocks = sms * std::max(per_sm, 1);
  });
}

inline void xw_coalesced(const tut::GcnProblem& p, const tut::GcnArgs& a, cudaStream_t stream) {
  if (p.v == 0) return;  // no rows, and a grid of 0 blocks is a launch error
  const int tiles = static_cast<int>(tut::ceil_div(static_cast<long long>(p.v), static_cast<long long>(TILE_ROWS)));
  const int resident = resident_blocks();  // 132 on an H100 (1 per SM)
  const int blocks = PERSISTENT ? std::min(tiles, resident) : tiles;
  xw_coalesced_kernel<<<blocks, BLOCK_THREADS, SMEM_BYTES, stream>>>(a.x, a.w, a.out, p.v, tiles);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch28
