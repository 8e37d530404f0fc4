// Chapter 12: Hopper: TMA + wgmma.
//
// What changed:  chapter 11's TF32 tensor-core math, on the machinery Hopper added for it.
//                (1) Copies: the threads no longer copy tiles. One thread hands the Tensor Memory
//                Accelerator (TMA) a tensor map, made on the host, and a tile's coordinates; the
//                TMA copies the box into shared memory in the 128-byte swizzled layout the tensor
//                cores read, rounds each float to TF32 on the way (the map's element type), fills
//                what lies outside the matrix with zeros, and counts the bytes on an mbarrier.
//                (2) Pipeline: a ring of STAGES buffers, each with a "full" and an "empty"
//                mbarrier, and specialised warpgroups: a producer (one thread issues the copies)
//                runs up to STAGES K steps ahead of two consumers.
//                (3) Math: the consumers issue wgmma.mma_async, a 64x256x8 TF32 product per
//                warpgroup (128 threads) whose 256-wide operand the tensor cores read from shared
//                memory themselves, asynchronously, while the threads go on.
//                (4) Clusters and a persistent grid: two blocks side by side along N share A's tile,
//                each fetching half of it for both (TMA multicast); as many clusters as fit on the
//                GPU walk the tiles, so a block's producer loads the next tile while its consumers
//                store the last.
//                TF32 wgmma reads its shared-memory operands only "K-major" (k contiguous). A is
//                K-major, B (K x N, row-major) is not. So the kernel computes the transposed
//                product, C^T = B^T A^T: wgmma's first operand, 64 columns of B as a 64 x 8 matrix,
//                comes from registers (each thread loads its four elements from B's tile, where
//                any layout will do); wgmma's second operand is A's tile exactly as the TMA stored
//                it; the accumulators are a 64 x 256 tile of C^T, stored transposed.
// Prediction:    4096^3 is 137.4 GFLOP: 0.26 ms at the tensor cores' TF32 peak (535 TFLOP/s at
//                1980 MHz). Per SM and K step the tensor cores need 1024 cycles and the TMA brings
//                48 KB: 48 bytes per cycle into each SM, 32 of them read from L2 by the block
//                itself (its partner's multicast brings the rest). Bound by the tensor cores, like
//                cuBLAS TF32 (0.34-0.38 ms on this GPU): we aim for 95% of it or better at 4096^3
//                and 8192^3.
// Metric:        sm__pipe_tensor_op_hmma_cycles_active (tensor pipe utilization) reaches cuBLAS's;
//                issue slots used stay low (no copy instructions, one MMA per 64x256x8).
// Assumes:       sm_90a (the binary is built for it alone). Row-major A (lda >= k), B (ldb >= n),
//                C (ldc >= n); any M, N, K >= 1. The TMA needs 16-byte aligned rows: lda and ldb
//                multiples of 4 and A, B 16-byte aligned; otherwise the launcher first copies A
//                (or B) into a scratch buffer with 16-byte rows. Shared memory: STAGES x 48 KB =
//                192 KB per block, one block per SM.
#pragma once

#include <cuda.h>          // CUtensorMap and its enums (types only: nothing here links libcuda)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "tut/gemm/harness.cuh"

namespace ch12 {

// The block tile: BLOCK_M rows x BLOCK_N columns of C, BLOCK_K of K per stage, STAGES stages. A
// reader may try STAGES = 3 (less latency hidden), CLUSTER_N = 1 (no multicast: each block
// fetches all of A's tile itself), CLUSTER_M = 2 (pairs along M share B's tile instead, or as well),
// GROUP_M, PERSISTENT = 0 or TF32_MAPS = 0; the static_asserts keep the rest consistent.
constexpr int BLOCK_M = 256;  // = wgmma's N, its largest
constexpr int BLOCK_N = 128;  // = CONSUMERS x wgmma's M (64)
constexpr int BLOCK_K = 32;   // 32 floats = 128 bytes: one row of the 128-byte swizzle
constexpr int STAGES = 4;
constexpr int CLUSTER_N = 2;   // blocks per cluster side by side along N: they share A's tile
constexpr int CLUSTER_M = 1;   // blocks per cluster stacked along M: they share B's tile
constexpr int GROUP_M = 8;     // the persistent schedule walks bands of GROUP_M cluster rows (L2 reuse)
constexpr int PERSISTENT = 1;  // 1: as many clusters as fit walk the units of work; 0: one cluster per unit
constexpr int TF32_MAPS = 1;   // 1: the TMA rounds to TF32 on the way in; 0: FLOAT32 maps (the tensor cores truncate)

// wgmma.mma_async.m64n256k8.f32.tf32.tf32: D (64 x 256, FP32) += A (64 x 8, registers) x B (8 x 256,
// shared memory), issued by one warpgroup (4 warps, 128 threads).
constexpr int WARP_SIZE = 32;
constexpr int WARPGROUP = 4 * WARP_SIZE;
constexpr int WGMMA_M = 64;
constexpr int WGMMA_N = BLOCK_M;
constexpr int WGMMA_K = 8;
constexpr int CONSUMERS = BLOCK_N / WGMMA_M;              // consumer warpgroups: 2
constexpr int NUM_THREADS = (1 + CONSUMERS) * WARPGROUP;  // one producer warpgroup + consumers: 384
constexpr int ACC = WGMMA_M * WGMMA_N / WARPGROUP;        // accumulators per consumer thread: 128
static_assert(BLOCK_N % WGMMA_M == 0 && CONSUMERS >= 1, "each consumer warpgroup owns 64 columns of C");
static_assert(WGMMA_N % 8 == 0 && WGMMA_N >= 8 && WGMMA_N <= 256, "wgmma's N: a multiple of 8 up to 256");
static_assert(ACC == 128, "wgmma_tf32 below is written out for m64n256k8 (128 accumulators per thread)");

// Shared memory, per stage: A's tile, BLOCK_M rows of BLOCK_K floats (one 128-byte row each), then
// B's tile as BLOCK_N / B_BOX_N boxes of BLOCK_K rows x B_BOX_N floats (again 128-byte rows). The
// 128-byte swizzle works on 1024-byte units (8 rows): every tile starts on a 1024-byte boundary.
constexpr int SWIZZLE_BYTES = 128;
constexpr int SWIZZLE_ATOM_BYTES = 8 * SWIZZLE_BYTES;  // 8 rows: the unit the swizzle repeats over
constexpr int B_BOX_N = SWIZZLE_BYTES / 4;             // 32 columns of B per TMA box
static_assert(BLOCK_K * 4 == SWIZZLE_BYTES, "a row of A's tile is one swizzle row");
static_assert(BLOCK_N % B_BOX_N == 0, "B's tile is whole boxes");
constexpr int A_TILE_BYTES = BLOCK_M * BLOCK_K * 4;            // 32 KB
constexpr int B_BOX_BYTES = BLOCK_K * B_BOX_N * 4;             // 4 KB
constexpr int B_TILE_BYTES = BLOCK_N / B_BOX_N * B_BOX_BYTES;  // 16 KB
constexpr int STAGE_BYTES = A_TILE_BYTES + B_TILE_BYTES;       // 48 KB: what the full barrier waits for
static_assert(A_TILE_BYTES % SWIZZLE_ATOM_BYTES == 0 && B_BOX_BYTES % SWIZZLE_ATOM_BYTES == 0,
              "tiles and boxes start on 1024-byte boundaries");
// Multicast: the CLUSTER_N blocks of a cluster row (same tile rows) each fetch A_BOX_M of A's
// BLOCK_M rows for all of them; the CLUSTER_M blocks of a cluster column (same tile columns) each
// fetch B_BOXES of B's boxes for all of them.
constexpr int A_BOX_M = BLOCK_M / CLUSTER_N;
constexpr int B_BOXES = BLOCK_N / B_BOX_N / CLUSTER_M;
static_assert(BLOCK_M % CLUSTER_N == 0 && (A_BOX_M * SWIZZLE_BYTES) % SWIZZLE_ATOM_BYTES == 0,
              "each block's share of A's tile is whole swizzle atoms");
static_assert((BLOCK_N / B_BOX_N) % CLUSTER_M == 0, "each block's share of B's tile is whole boxes");
static_assert(A_BOX_M <= 256 && BLOCK_K <= 256 && B_BOX_N <= 256, "a TMA box is at most 256 per dimension");
static_assert(CLUSTER_N * CLUSTER_M <= 8, "a portable cluster has at most 8 blocks");
// The blocks whose producers write into a block's stages: its cluster row and its cluster column.
constexpr int WRITERS = CLUSTER_N + CLUSTER_M - 1;
// Dynamic shared memory: the stages, 1 KB of slack to align them, and the 2 x STAGES mbarriers.
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + SWIZZLE_ATOM_BYTES + 2 * STAGES * 8;
static_assert(SMEM_BYTES <= 227 * 1024, "an H100 block has at most 227 KB of shared memory");

// Registers: the producer gives up what it does not need (setmaxnreg.dec), the consumers take it
// (setmaxnreg.inc): 128 x (PRODUCER_REGS + CONSUMERS x CONSUMER_REGS) <= 65536. Multiples of 8.
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = 232;
static_assert(WARPGROUP * (PRODUCER_REGS + CONSUMERS * CONSUMER_REGS) <= 65536, "the SM has 64K registers");

// ---------------------------------------------------------------------------------------------
// PTX wrappers. Shared-memory addresses are 32-bit offsets in the shared window (cvta).

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// mbarrier: an arrival count and a transaction (byte) count; a phase completes when both reach 0,
// then the barrier re-arms for the next phase. Waiters name the phase by its parity.
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals) : "memory");
}
// One arrival that also announces `bytes` more to come (from the TMA) in this phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
// One arrival on this block's barrier.
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// One arrival on the barrier at the same offset in block `rank` of the cluster.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}
// Spins until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// Every thread of every block of the cluster arrives, then waits for all the others.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// TMA: copy the box at (c0 = column, c1 = row) of the tensor map into shared memory at dst; the
// bytes count against the mbarrier `bar`. The multicast form writes the same offsets, and signals
// the same barrier, in every block of the cluster named in `mask`.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
__device__ __forceinline__ void tma_load_2d_multicast(uint32_t dst, const CUtensorMap* map, int c0, int c1,
                                                      uint32_t bar, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
      : "memory");
}

template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(REGS));
}

// The shared-memory matrix descriptor of wgmma for a K-major operand in the 128-byte swizzle:
// start address / 16 (bits 0-13), leading-dimension byte offset (bits 16-29; unused for this
// layout, 1 by convention), stride byte offset / 16 (bits 32-45: 1024 bytes from one group of 8
// rows to the next), swizzle mode (bits 62-63: 1 = 128-byte).
__device__ __forceinline__ uint64_t smem_descriptor(uint32_t addr) {
  uint64_t d = 0;
  d |= uint64_t((addr & 0x3FFFF) >> 4);
  d |= uint64_t(1) << 16;
  d |= uint64_t(SWIZZLE_ATOM_BYTES >> 4) << 32;
  d |= uint64_t(1) << 62;
  return d;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// Waits until at most N committed groups of this warpgroup's wgmmas are still running.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving reads or writes of the accumulators across this point (the
// hardware writes them asynchronously, which the compiler cannot see).
__device__ __forceinline__ void fence_accumulators(float (&d)[ACC]) {
#pragma unroll
  for (int i = 0; i < ACC; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// d (64 x 256) += a (64 x 8, this thread's 4 elements) x the 8 x 256 K-major tile at desc_b.
// clang-format off
__device__ __forceinline__ void wgmma_tf32(float (&d)[ACC], const uint32_t (&a)[4], uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32\n"
      "{%0, %1, %2, %3, %4, %5, %6, %7,"
      " %8, %9, %10, %11, %12, %13, %14, %15,"
      " %16, %17, %18, %19, %20, %21, %22, %23,"
      " %24, %25, %26, %27, %28, %29, %30, %31,"
      " %32, %33, %34, %35, %36, %37, %38, %39,"
      " %40, %41, %42, %43, %44, %45, %46, %47,"
      " %48, %49, %50, %51, %52, %53, %54, %55,"
      " %56, %57, %58, %59, %60, %61, %62, %63,"
      " %64, %65, %66, %67, %68, %69, %70, %71,"
      " %72, %73, %74, %75, %76, %77, %78, %79,"
      " %80, %81, %82, %83, %84, %85, %86, %87,"
      " %88, %89, %90, %91, %92, %93, %94, %95,"
      " %96, %97, %98, %99, %100, %101, %102, %103,"
      " %104, %105, %106, %107, %108, %109, %110, %111,"
      " %112, %113, %114, %115, %116, %117, %118, %119,"
      " %120, %121, %122, %123, %124, %125, %126, %127},\n"
      "{%128, %129, %130, %131}, %132, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]),
        "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]),
        "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]),
        "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
}
// clang-format on

// ---------------------------------------------------------------------------------------------
// The kernel. C = alpha * A * B + beta * C; with beta == 0, C is not read.
//
// Who does what, per block, for each of its tiles (rows block_m .. +BLOCK_M of C, columns
// block_n .. +BLOCK_N) in turn:
//   warpgroup 0, thread 0 (producer): for each K step, waits until the next stage of the ring is
//     empty, arms its full barrier with the stage's byte count, and issues the copies: its share
//     of A's tile (multicast to its cluster row) and of B's tile (BLOCK_N / B_BOX_N boxes).
//   warpgroups 1 .. CONSUMERS (consumers): consumer c owns columns c*64 .. c*64+63 of the tile and
//     all BLOCK_M rows. For each K step: wait until the stage is full, load the B fragments into
//     registers, issue BLOCK_K / 8 wgmmas, and once the previous stage's wgmmas have finished,
//     tell every producer that writes into this block that that stage is empty. After the last K
//     step, the epilogue stores the tile while the producer already fills the ring for the next.
//
// The transposed product. wgmma computes D (64 x 256) += A_w (64 x 8) * B_w (8 x 256) with B_w in
// shared memory K-major. Here A_w[r][k] = B[k][n(r)] (B's tile, from registers), B_w[k][c] =
// A[c][k] (A's tile as the TMA wrote it: row c holds c's K values, K-major), so
// D[r][c] = sum_k A[c][k] B[k][n(r)] = C[c][n(r)]. n(r) is a permutation of the consumer's 64
// columns chosen below so that the fragment loads are free of bank conflicts and the epilogue
// writes pairs of adjacent columns.
__global__ void __launch_bounds__(NUM_THREADS, 1) __cluster_dims__(CLUSTER_N, CLUSTER_M, 1)
    tma_wgmma_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int M,
                          int N, int K, float alpha, float beta, float* C, int ldc) {
  extern __shared__ uint8_t smem_raw[];
  // The stages on a 1024-byte boundary (the swizzle repeats every 8 rows of 128 bytes, and the
  // TMA and wgmma both compute it from the address).
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + SWIZZLE_ATOM_BYTES - 1) / SWIZZLE_ATOM_BYTES * SWIZZLE_ATOM_BYTES;
  const uint8_t* smem = smem_raw + (base - raw);          // the same place, as a pointer
  const uint32_t full_bar = base + STAGES * STAGE_BYTES;  // STAGES barriers of 8 bytes: "stage s holds data"
  const uint32_t empty_bar = full_bar + STAGES * 8;       // STAGES barriers: "stage s may be overwritten"

  const int warpgroup = threadIdx.x / WARPGROUP;
  const int k_steps = (K + BLOCK_K - 1) / BLOCK_K;
  // Position in the cluster (x along N, y along M) and the cluster ranks (x + y * CLUSTER_N) of
  // this block's cluster row and column, as multicast masks. The grid is CLUSTER_M blocks tall.
  const int cx = blockIdx.x % CLUSTER_N, cy = blockIdx.y;
  uint16_t row_mask = 0, col_mask = 0;
  for (int x = 0; x < CLUSTER_N; ++x) row_mask |= uint16_t(1u << (x + cy * CLUSTER_N));
  for (int y = 0; y < CLUSTER_M; ++y) col_mask |= uint16_t(1u << (cx + y * CLUSTER_N));

  // The persistent schedule. A cluster computes a "unit" of CLUSTER_M x CLUSTER_N tiles at a time
  // and walks the units cluster, cluster + clusters, ... Units are numbered down the columns of
  // bands of GROUP_M unit rows, so that the clusters running at the same time share rows of A and
  // columns of B in L2. tile_of(u) gives this block's tile of unit u: its first row and column.
  const int units_m = (M + CLUSTER_M * BLOCK_M - 1) / (CLUSTER_M * BLOCK_M);
  const int units_n = (N + CLUSTER_N * BLOCK_N - 1) / (CLUSTER_N * BLOCK_N);
  const int units = units_m * units_n;
  const int cluster = blockIdx.x / CLUSTER_N, clusters = gridDim.x / CLUSTER_N;
  auto tile_of = [&](int u, int& block_m, int& block_n) {
    const int per_band = GROUP_M * units_n;
    const int first = u / per_band * GROUP_M;        // the band's first unit row
    const int rows = min(GROUP_M, units_m - first);  // unit rows in this band (the last may be short)
    const int r = u % per_band;
    block_m = ((first + r % rows) * CLUSTER_M + cy) * BLOCK_M;
    block_n = ((r / rows) * CLUSTER_N + cx) * BLOCK_N;
  };

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar + 8 * s, 1);  // the producer's arrive.expect_tx (plus the bytes)
      mbar_init(empty_bar + 8 * s, CONSUMERS * (WARPGROUP / WARP_SIZE) * WRITERS);  // every consumer warp it writes to
    }
    // The barriers must be initialised before the TMA (another proxy) or another block uses them.
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (CLUSTER_N * CLUSTER_M > 1) {
    cluster_sync();
  } else {
    __syncthreads();
  }

  if (warpgroup == 0) {
    // ---- producer ----
    setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      int it = 0;  // K steps issued so far, over all tiles: stage it % STAGES, round it / STAGES
      for (int u = cluster; u < units; u += clusters) {
        int block_m, block_n;
        tile_of(u, block_m, block_n);
        for (int kt = 0; kt < k_steps; ++kt, ++it) {
          const int s = it % STAGES;
          const uint32_t phase = (it / STAGES) & 1;
          // The first round finds every stage empty: waiting on the parity of the phase before the
          // barrier's first returns at once.
          mbar_wait(empty_bar + 8 * s, phase ^ 1);
          mbar_arrive_expect_tx(full_bar + 8 * s, STAGE_BYTES);
          const uint32_t a_dst = base + s * STAGE_BYTES;
          const uint32_t b_dst = a_dst + A_TILE_BYTES;
          const int k0 = kt * BLOCK_K;
          // A's tile: rows block_m .. +BLOCK_M, columns k0 .. +BLOCK_K; this block fetches rows
          // cx*A_BOX_M .. +A_BOX_M of it for its cluster row.
          const uint32_t a_part = a_dst + cx * A_BOX_M * SWIZZLE_BYTES;
          if (CLUSTER_N > 1) {
            tma_load_2d_multicast(a_part, &map_a, k0, block_m + cx * A_BOX_M, full_bar + 8 * s, row_mask);
          } else {
            tma_load_2d(a_part, &map_a, k0, block_m, full_bar + 8 * s);
          }
          // B's tile: rows k0 .. +BLOCK_K, columns block_n .. +BLOCK_N, in boxes of B_BOX_N columns;
          // this block fetches boxes cy*B_BOXES .. +B_BOXES for its cluster column.
#pragma unroll
          for (int j = cy * B_BOXES; j < (cy + 1) * B_BOXES; ++j) {
            if (CLUSTER_M > 1) {
              tma_load_2d_multicast(b_dst + j * B_BOX_BYTES, &map_b, block_n + j * B_BOX_N, k0, full_bar + 8 * s,
                                    col_mask);
            } else {
              tma_load_2d(b_dst + j * B_BOX_BYTES, &map_b, block_n + j * B_BOX_N, k0, full_bar + 8 * s);
            }
          }
        }
      }
    }
  } else {
    // ---- consumers ----
    setmaxnreg_inc<CONSUMER_REGS>();
    const int consumer = warpgroup - 1;
    const int warp = (threadIdx.x / WARP_SIZE) % 4;  // warp within the warpgroup: rows 16*warp .. of D
    const int lane = threadIdx.x % WARP_SIZE;
    const int g = lane / 4, t = lane % 4;  // this thread's row (g, g+8) and column (t, t+4) in the fragments

    // The column map n(r). This thread's fragment rows are r = 16*warp + g and r + 8; they are
    // columns n_col and n_col + 1 of the block tile, where
    //   n_col = 64*consumer + 32*(warp/2) + 8*(warp%2) + 16*((g/2)%2) + 4*(g/4) + 2*(g%2)
    // (every bit of the 64 columns set by exactly one term: a permutation). Its fragment elements
    // (n, k) are B[k][n_col] and B[k][n_col + 1], k = 8*step + t and + 4: two 8-byte loads.
    const int n_col =
        consumer * WGMMA_M + 32 * (warp / 2) + 8 * (warp % 2) + 16 * ((g / 2) % 2) + 4 * (g / 4) + 2 * (g % 2);
    // Where (k, n) of B's tile lies: box n / 32, row k (128 bytes), 16-byte chunk ((n % 32) / 4)
    // XOR (k % 8) (the 128-byte swizzle), float n % 4. For this thread k % 8 is t or t + 4 in every
    // k-step, so two offsets serve the whole stage; step kk adds 8 rows (1024 bytes).
    const int chunk = (n_col % B_BOX_N) / 4;
    const int frag_lo =
        A_TILE_BYTES + (n_col / B_BOX_N) * B_BOX_BYTES + t * SWIZZLE_BYTES + (chunk ^ t) * 16 + (n_col % 4) * 4;
    const int frag_hi = A_TILE_BYTES + (n_col / B_BOX_N) * B_BOX_BYTES + (t + 4) * SWIZZLE_BYTES +
                        (chunk ^ (t + 4)) * 16 + (n_col % 4) * 4;

    // Tells every producer that writes into this block (its cluster row and column) that stage s
    // is free: one arrival per warp.
    auto release = [&](int s) {
      if (lane != 0) return;
      const uint32_t bar = empty_bar + 8 * s;
      mbar_arrive(bar);  // this block's own producer
#pragma unroll
      for (int x = 0; x < CLUSTER_N; ++x) {  // the rest of its cluster row
        if (x != cx) mbar_arrive_cluster(bar, uint32_t(x + cy * CLUSTER_N));
      }
#pragma unroll
      for (int y = 0; y < CLUSTER_M; ++y) {  // the rest of its cluster column
        if (y != cy) mbar_arrive_cluster(bar, uint32_t(cx + y * CLUSTER_N));
      }
    };

    float acc[ACC];
    // One K step on stage it % STAGES (it counts K steps over all tiles, as the producer's does),
    // with the fragment registers `frag` (two sets alternate: the wgmmas of the previous step may
    // still be reading the other set). first: the tile's first K step (no previous step to free).
    auto mma_step = [&](int it, bool first, uint32_t(&frag)[BLOCK_K / WGMMA_K][4]) {
      const int s = it % STAGES;
      mbar_wait(full_bar + 8 * s, (it / STAGES) & 1);
      const uint8_t* stage = smem + s * STAGE_BYTES;
#pragma unroll
      for (int kk = 0; kk < BLOCK_K / WGMMA_K; ++kk) {
        const float2 lo = *reinterpret_cast<const float2*>(stage + frag_lo + kk * SWIZZLE_ATOM_BYTES);
        const float2 hi = *reinterpret_cast<const float2*>(stage + frag_hi + kk * SWIZZLE_ATOM_BYTES);
        // wgmma's A fragment: (g, t), (g+8, t), (g, t+4), (g+8, t+4) of the warp's 16 x 8 rows.
        frag[kk][0] = __float_as_uint(lo.x);
        frag[kk][1] = __float_as_uint(lo.y);
        frag[kk][2] = __float_as_uint(hi.x);
        frag[kk][3] = __float_as_uint(hi.y);
      }
      fence_accumulators(acc);
      wgmma_fence();  // the registers above are written before the wgmmas read them
#pragma unroll
      for (int kk = 0; kk < BLOCK_K / WGMMA_K; ++kk) {
        // A's tile, K columns 8*kk .. +8: 32 bytes further along each 128-byte row.
        wgmma_tf32(acc, frag[kk], smem_descriptor(base + s * STAGE_BYTES + kk * WGMMA_K * 4));
      }
      wgmma_commit();
      // The previous K step's wgmmas are done (at most this step's group still runs): its stage is free.
      wgmma_wait<1>();
      fence_accumulators(acc);
      if (!first) release((it + STAGES - 1) % STAGES);
    };

    int it = 0;
    for (int u = cluster; u < units; u += clusters) {
      int block_m, block_n;
      tile_of(u, block_m, block_n);
#pragma unroll
      for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;
      uint32_t frag0[BLOCK_K / WGMMA_K][4], frag1[BLOCK_K / WGMMA_K][4];
      int kt = 0;
#pragma unroll 1
      for (; kt + 1 < k_steps; kt += 2) {
        mma_step(it + kt, kt == 0, frag0);
        mma_step(it + kt + 1, false, frag1);
      }
      if (kt < k_steps) mma_step(it + kt, kt == 0, frag0);
      it += k_steps;
      wgmma_wait<0>();
      fence_accumulators(acc);
      release((it - 1) % STAGES);  // the tile's last stage: the producer is already on the next tile

      // Epilogue. acc[4*j + 2*h + v] is D[16*warp + g + 8*h][8*j + 2*t + v] = C[m][n] with
      // m = block_m + 8*j + 2*t + v and n = block_n + n_col + h: for each (j, v) the thread holds
      // C[m][n .. n+1], and a warp writes 4 rows x 2 runs of 8 adjacent floats.
      const int n = block_n + n_col;
      // Runs store(c, x, y) with c = &C[m][n], x = acc for C[m][n], y = acc for C[m][n+1], on every
      // row m < M that this thread holds.
      auto epilogue = [&](auto store) {
#pragma unroll
        for (int j = 0; j < WGMMA_N / 8; ++j) {
#pragma unroll
          for (int v = 0; v < 2; ++v) {
            const int m = block_m + 8 * j + 2 * t + v;
            if (m < M) store(C + static_cast<size_t>(m) * ldc + n, alpha * acc[4 * j + v], alpha * acc[4 * j + 2 + v]);
          }
        }
      };
      // 8-byte stores where the pair lies inside C and is 8-byte aligned; C is read only when beta != 0.
      const bool pair = n + 1 < N && ldc % 2 == 0 && reinterpret_cast<uintptr_t>(C) % 8 == 0;
      if (pair && beta == 0.0f) {
        epilogue([](float* c, float x, float y) { *reinterpret_cast<float2*>(c) = make_float2(x, y); });
      } else if (pair) {
        epilogue([beta](float* c, float x, float y) {
          const float2 old = *reinterpret_cast<const float2*>(c);
          *reinterpret_cast<float2*>(c) = make_float2(x + beta * old.x, y + beta * old.y);
        });
      } else if (n < N) {  // the last column of C, or an odd ldc: one float at a time
        const bool second = n + 1 < N;
        epilogue([beta, second](float* c, float x, float y) {
          c[0] = (beta == 0.0f) ? x : x + beta * c[0];
          if (second) c[1] = (beta == 0.0f) ? y : y + beta * c[1];
        });
      }
    }
  }

  // No block of a cluster may leave while another may still signal its barriers or write into it.
  if (CLUSTER_N * CLUSTER_M > 1) cluster_sync();
}

// ---------------------------------------------------------------------------------------------
// Host side.

// cuTensorMapEncodeTiled is a driver function; the runtime hands out its address, so the binary
// needs no -lcuda.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    TUT_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
      throw tut::CudaError("cuTensorMapEncodeTiled: the driver does not provide it (needs a CUDA 12 driver)");
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

// A tensor map over the row-major rows x cols matrix X (leading dimension ld floats) that the TMA
// copies in boxes of box_rows x box_cols floats, 128-byte swizzled, zeros outside the matrix. The
// element type TFLOAT32 makes the TMA round every float to TF32 as it copies; with FLOAT32 the
// tensor cores would get the FP32 bits and use only their TF32 part (truncation: on 4096^3 the
// error against FP32 is 2.7 times larger, 6.9e-4 instead of 2.6e-4).
inline CUtensorMap make_tensor_map(const float* X, int rows, int cols, int ld, int box_rows, int box_cols) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cuuint64_t(cols), cuuint64_t(rows)};  // fastest-varying first
  const cuuint64_t strides[1] = {cuuint64_t(ld) * sizeof(float)};   // bytes from one row to the next
  const cuuint32_t box[2] = {cuuint32_t(box_cols), cuuint32_t(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r =
      tensor_map_encoder()(&map, TF32_MAPS ? CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2,
                           const_cast<float*>(X), dims, strides, box,
                           element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    throw tut::CudaError("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(int(r)) + ") for a " +
                         std::to_string(rows) + " x " + std::to_string(cols) + " matrix, ld " + std::to_string(ld));
  }
  return map;
}

// The TMA reads rows that start on 16-byte boundaries: a 16-byte aligned base and ld % 4 == 0.
inline bool tma_compatible(const float* X, int ld) {
  return ld % 4 == 0 && reinterpret_cast<std::uintptr_t>(X) % 16 == 0;
}

// A device buffer that only grows, kept for the life of the process: where a matrix whose rows the
// TMA cannot read is copied with 16-byte rows.
struct Scratch {
  float* ptr = nullptr;
  std::size_t bytes = 0;
  float* get(std::size_t need) {
    if (need > bytes) {
      if (ptr) TUT_CUDA_CHECK(cudaFree(ptr));  // synchronizes: no launch still uses it
      ptr = nullptr;
      bytes = 0;
      TUT_CUDA_CHECK(cudaMalloc(&ptr, need));
      bytes = need;
    }
    return ptr;
  }
  ~Scratch() {
    if (ptr) cudaFree(ptr);  // at exit; nothing left to report an error to
  }
};

// Rows x cols of X (leading dimension ld) as TMA-readable: X itself, or a copy with ld rounded up to
// a multiple of 4 (cudaMemcpy2DAsync, on the stream: the copy is part of the GEMM's time).
inline const float* tma_readable(const float* X, int rows, int cols, int& ld, Scratch& scratch, cudaStream_t stream) {
  if (tma_compatible(X, ld)) return X;
  const int padded = (cols + 3) / 4 * 4;
  float* copy = scratch.get(std::size_t(rows) * padded * sizeof(float));
  TUT_CUDA_CHECK(cudaMemcpy2DAsync(copy, std::size_t(padded) * sizeof(float), X, std::size_t(ld) * sizeof(float),
                                   std::size_t(cols) * sizeof(float), std::size_t(rows), cudaMemcpyDeviceToDevice,
                                   stream));
  ld = padded;
  return copy;
}

// More than 48 KB of dynamic shared memory needs the kernel's consent, once per process.
inline void allow_shared_memory() {
  static const bool done = [] {
    TUT_CUDA_CHECK(
        cudaFuncSetAttribute(tma_wgmma_gemm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
    return true;
  }();
  (void)done;
}

// How many clusters of this kernel fit on the GPU at once (computed once per process).
inline int max_active_clusters() {
  static const int clusters = [] {
    allow_shared_memory();
    int sms = 0, device = 0;
    TUT_CUDA_CHECK(cudaGetDevice(&device));
    TUT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(sms / (CLUSTER_N * CLUSTER_M) * CLUSTER_N, CLUSTER_M);
    config.blockDim = dim3(NUM_THREADS);
    config.dynamicSmemBytes = SMEM_BYTES;
    int n = 0;
    TUT_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, tma_wgmma_gemm_kernel, &config));
    if (n < 1) throw tut::CudaError("tma_wgmma_gemm_kernel: not even one cluster fits on this GPU");
    return n;
  }();
  return clusters;
}

inline void tma_wgmma_gemm(const tut::GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream) {
  allow_shared_memory();
  static Scratch scratch_a, scratch_b;
  int lda = p.lda, ldb = p.ldb;
  const float* a = tma_readable(A, p.m, p.k, lda, scratch_a, stream);
  const float* b = tma_readable(B, p.k, p.n, ldb, scratch_b, stream);
  // A: (M x K), boxes of A_BOX_M rows x BLOCK_K columns. B: (K x N), boxes of BLOCK_K rows x B_BOX_N.
  const CUtensorMap map_a = make_tensor_map(a, p.m, p.k, lda, A_BOX_M, BLOCK_K);
  const CUtensorMap map_b = make_tensor_map(b, p.k, p.n, ldb, BLOCK_K, B_BOX_N);

  // Persistent: as many clusters as fit on the GPU at once (one block per SM), or one per unit
  // of work if there are fewer. The grid is CLUSTER_M blocks tall; its width counts clusters.
  const int units = tut::ceil_div(p.m, CLUSTER_M * BLOCK_M) * tut::ceil_div(p.n, CLUSTER_N * BLOCK_N);
  const dim3 grid((PERSISTENT ? std::min(units, max_active_clusters()) : units) * CLUSTER_N, CLUSTER_M);
  tma_wgmma_gemm_kernel<<<grid, NUM_THREADS, SMEM_BYTES, stream>>>(map_a, map_b, p.m, p.n, p.k, p.alpha, p.beta, C,
                                                                   p.ldc);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch12
