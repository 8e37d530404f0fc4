// Chapter 12: Hopper: TMA + wgmma, planned per problem.
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
//                (3) Math: the consumers issue wgmma.mma_async, a 64 x BLOCK_M x 8 TF32 product per
//                warpgroup (128 threads) whose BLOCK_M-wide operand the tensor cores read from
//                shared memory themselves, asynchronously, while the threads go on.
//                (4) Clusters and a persistent grid: two blocks side by side along N share A's tile,
//                each fetching half of it for both (TMA multicast); as many clusters as fit on the
//                GPU walk the units of work, so a block's producer loads the next tile while its
//                consumers store the last. No cluster barrier at the end: a block's producer waits
//                until every stage has been released once more (its partner's last arrivals
//                included), and the consumers leave as soon as their stores are issued.
//                (5) A plan per problem, as in chapter 10 (Planner, below): three tile shapes
//                (BLOCK_M = wgmma's N = 256, 128 or 64: template instances) and split-K, each
//                split a unit of work of the persistent schedule; a split's partial tile goes to a
//                workspace, an arrival counter per tile finds the last split, and that one adds the
//                partials in split order 0, 1, 2, ... (the same bits in every run). Where a
//                one-split plan's last round would leave clusters idle, the model may share that
//                round's units out stream-K instead: each cluster takes an equal run of their K
//                steps, and the cluster with a unit's last K steps adds the others' partial tiles
//                (StreamK, below). The tensor maps
//                are encoded once per (pointer, shape, leading dimension, box) and kept. A B whose
//                rows the TMA cannot read (ldb not a multiple of 4) is, where the model finds the
//                copy dearer (few K steps per byte of B: 127 x 8191 x 2049, not 4095^3) and the
//                tile is the 128-row one, loaded by the whole producer warpgroup with 4-byte
//                cp.async into the same swizzled layout (completing on the stage's full mbarrier),
//                and the consumers round its fragments to TF32.
//                TF32 wgmma reads its shared-memory operands only "K-major" (k contiguous). A is
//                K-major, B (K x N, row-major) is not. So the kernel computes the transposed
//                product, C^T = B^T A^T: wgmma's first operand, 64 columns of B as a 64 x 8 matrix,
//                comes from registers (each thread loads its four elements from B's tile, where
//                any layout will do); wgmma's second operand is A's tile exactly as the TMA stored
//                it; the accumulators are a 64 x BLOCK_M tile of C^T, stored transposed.
// Prediction:    4096^3 is 137.4 GFLOP: 0.26 ms at the tensor cores' TF32 peak (535 TFLOP/s at
//                1980 MHz). Per SM and K step the tensor cores need 1024 cycles and the TMA brings
//                48 KB: 48 bytes per cycle into each SM, 32 of them read from L2 by the block
//                itself (its partner's multicast brings the rest). Bound by the tensor cores, like
//                cuBLAS TF32 (0.34-0.38 ms on this GPU): we aim for 95% of it or better at 4096^3
//                and 8192^3. The plan (a cost model fitted to measured plans): large squares keep
//                256 x 128 tiles and one split; 1024 x 1024 x 16384 (32 tiles of 256 x 128 for 132
//                SMs, 512 K steps each) fills the GPU with 4 splits; 1024^3 and 512^3 take 64-row
//                tiles and one split; 127 x 8191 x 2049 takes 128-row tiles (half of
//                each 256-row tile was empty), 2 splits, and reads B in place instead of copying
//                67 MB. Where a plan leaves most SMs idle, the launch and the epilogue, not the
//                tensor cores, set the time: 256^3 and 512^3 stay below cuBLAS.
// Metric:        sm__pipe_tensor_op_hmma_cycles_active (tensor pipe utilization) reaches cuBLAS's;
//                issue slots used stay low (no copy instructions, one MMA per 64x256x8); on the
//                small problems sm__cycles_active.avg rises toward the elapsed cycles.
// Assumes:       sm_90a (the binary is built for it alone). Row-major A (lda >= k), B (ldb >= n),
//                C (ldc >= n); any M, N, K >= 1, any leading dimension and pointer. The TMA needs
//                16-byte aligned rows: where lda is not a multiple of 4 (or A not 16-byte aligned),
//                the launcher first copies A into a scratch buffer with 16-byte rows; such a B is
//                copied too or read in place with cp.async, whichever the plan's model finds
//                cheaper (DIRECT_B: 0 always copies, 2 always reads in place). Split-K needs a
//                workspace of S x tiles x BLOCK_M x BLOCK_N floats plus one int per tile, stream-K
//                one of at most 3 partial tiles and one int per tile of the last round
//                (Planner::workspace_bytes), zeroed before the first launch; every launch leaves
//                the counters zero again. Shared memory: STAGES x (BLOCK_M + BLOCK_N) x 128 bytes
//                per block (192 KB at 256 x 128), one block per SM. The tensor-map cache is not
//                thread-safe (one host thread launches, as in the harness).
#pragma once

#include <cuda.h>          // CUtensorMap and its enums (types only: nothing here links libcuda)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tut/core/device_facts.hpp"
#include "tut/gemm/harness.cuh"

namespace ch12 {

// The block tile: BLOCK_M rows (a plan's choice, Tile below) x BLOCK_N columns of C, BLOCK_K of K
// per stage, STAGES stages (STAGES_64 for the 64-row tile). A reader may try STAGES = 3 (less
// latency hidden), STAGES_64 = 4 (the 64-row tile with the others' ring), CLUSTER_N = 1 (no
// multicast: each block fetches all of A's tile itself), CLUSTER_M = 2 (pairs along M share B's
// tile instead, or as well), GROUP_M, PERSISTENT = 0, TF32_MAPS = 0, DIRECT_B = 0, or STREAM_K = 0
// or 2; the static_asserts keep the rest consistent.
constexpr int BLOCK_N = 128;  // = CONSUMERS x wgmma's M (64)
constexpr int BLOCK_K = 32;   // 32 floats = 128 bytes: one row of the 128-byte swizzle
constexpr int STAGES = 4;
// The 64-row tile's ring: 8 stages of 24 KB, the 192 KB of the 256-row tile's 4 x 48 KB. With 4 its
// K step, the shortest of the three, takes 5% longer at 1024^3 (tuning run 50); the 128-row tile
// gained nothing from 6 stages (tuning run 46).
constexpr int STAGES_64 = 8;
constexpr int CLUSTER_N = 2;   // blocks per cluster side by side along N: they share A's tile
constexpr int CLUSTER_M = 1;   // blocks per cluster stacked along M: they share B's tile
constexpr int GROUP_M = 8;     // the persistent schedule walks bands of GROUP_M cluster rows (L2 reuse)
constexpr int PERSISTENT = 1;  // 1: as many clusters as fit walk the units of work; 0: one cluster per unit
constexpr int TF32_MAPS = 1;   // 1: the TMA rounds to TF32 on the way in; 0: FLOAT32 maps (the tensor cores truncate)
// DIRECT_B, for a B the TMA cannot read: 1: read in place with cp.async where the plan's model
// finds that cheaper than copying it first (like A); 0: always copied; 2: always read in place.
constexpr int DIRECT_B = 1;
// STREAM_K, for a one-split plan whose last round leaves clusters idle (units not a multiple of
// the clusters that fit): 1: the last round's units are shared out stream-K (below) where the plan's
// model finds that cheaper; 0: never (whole units to the end); 2: always where it can.
constexpr int STREAM_K = 1;
constexpr int MAX_SPLITS = 32;  // the most splits of K a plan may use
constexpr int SK_MOST_PARTS = 4;  // stream-K: the most clusters that may share a unit of the tail
// The tiles whose kernel has stream-K compiled in (the kernel says why not the 64-row one).
__host__ __device__ constexpr bool has_stream_k(int block_m) { return STREAM_K != 0 && block_m >= 128; }

// The tile shapes a plan chooses from: BLOCK_M = wgmma's N (a multiple of 8 up to 256; the
// wgmma_tf32 wrapper below is written out for these three).
constexpr int SHAPE_BLOCK_M[] = {256, 128, 64};
constexpr int NUM_SHAPES = sizeof(SHAPE_BLOCK_M) / sizeof(SHAPE_BLOCK_M[0]);

// wgmma.mma_async.m64nBLOCK_Mk8.f32.tf32.tf32: D (64 x BLOCK_M, FP32) += A (64 x 8, registers) x
// B (8 x BLOCK_M, shared memory), issued by one warpgroup (4 warps, 128 threads).
constexpr int WARP_SIZE = 32;
constexpr int WARPGROUP = 4 * WARP_SIZE;
constexpr int WGMMA_M = 64;
constexpr int WGMMA_K = 8;
constexpr int CONSUMERS = BLOCK_N / WGMMA_M;              // consumer warpgroups: 2
constexpr int CONSUMER_THREADS = CONSUMERS * WARPGROUP;   // 256
constexpr int NUM_THREADS = (1 + CONSUMERS) * WARPGROUP;  // one producer warpgroup + consumers: 384
static_assert(BLOCK_N % WGMMA_M == 0 && CONSUMERS >= 1, "each consumer warpgroup owns 64 columns of C");

// Shared memory, per stage: A's tile, BLOCK_M rows of BLOCK_K floats (one 128-byte row each), then
// B's tile as BLOCK_N / B_BOX_N boxes of BLOCK_K rows x B_BOX_N floats (again 128-byte rows). The
// 128-byte swizzle works on 1024-byte units (8 rows): every tile starts on a 1024-byte boundary.
constexpr int SWIZZLE_BYTES = 128;
constexpr int SWIZZLE_ATOM_BYTES = 8 * SWIZZLE_BYTES;  // 8 rows: the unit the swizzle repeats over
constexpr int B_BOX_N = SWIZZLE_BYTES / 4;             // 32 columns of B per TMA box
static_assert(BLOCK_K * 4 == SWIZZLE_BYTES, "a row of A's tile is one swizzle row");
static_assert(BLOCK_N % B_BOX_N == 0, "B's tile is whole boxes");
constexpr int B_BOX_BYTES = BLOCK_K * B_BOX_N * 4;             // 4 KB
constexpr int B_TILE_BYTES = BLOCK_N / B_BOX_N * B_BOX_BYTES;  // 16 KB
static_assert(B_BOX_BYTES % SWIZZLE_ATOM_BYTES == 0, "boxes start on 1024-byte boundaries");
// Multicast: the CLUSTER_M blocks of a cluster column (same tile columns) each fetch B_BOXES of
// B's boxes for all of them (the CLUSTER_N blocks of a cluster row share A's tile: Tile::A_BOX_M).
constexpr int B_BOXES = BLOCK_N / B_BOX_N / CLUSTER_M;
static_assert((BLOCK_N / B_BOX_N) % CLUSTER_M == 0, "each block's share of B's tile is whole boxes");
static_assert(BLOCK_K <= 256 && B_BOX_N <= 256, "a TMA box is at most 256 per dimension");
static_assert(CLUSTER_N * CLUSTER_M <= 8, "a portable cluster has at most 8 blocks");
// The blocks whose producers write into a block's stages: its cluster row and its cluster column.
constexpr int WRITERS = CLUSTER_N + CLUSTER_M - 1;
// The producer warpgroup's threads that load B with cp.async (DIRECT_B): one column of B's tile each
// (an edge tile), or each warp B_ROWS_PER_WARP whole rows (an interior tile).
static_assert(BLOCK_N == WARPGROUP, "a direct load of B gives each producer thread one column of the tile");
constexpr int PRODUCER_WARPS_B = WARPGROUP / WARP_SIZE;     // 4
constexpr int B_ROWS_PER_WARP = BLOCK_K / PRODUCER_WARPS_B;  // 8
static_assert(BLOCK_K % (2 * PRODUCER_WARPS_B) == 0 && PRODUCER_WARPS_B <= 4,
              "a warp's rows alternate between two values of k % 8 (the swizzle)");

// What a tile shape of BLOCK_M rows implies: wgmma's N, the accumulators per consumer thread, the
// stage's bytes, each block's share of A's tile, the shared memory.
template <int BM>
struct Tile {
  static constexpr int BLOCK_M = BM;
  static constexpr int WGMMA_N = BM;
  static constexpr int ACC = WGMMA_M * WGMMA_N / WARPGROUP;  // accumulators per consumer thread: 128, 64, 32
  static constexpr int A_TILE_BYTES = BM * BLOCK_K * 4;      // 32, 16, 8 KB
  static constexpr int STAGE_BYTES = A_TILE_BYTES + B_TILE_BYTES;  // what the full barrier waits for
  // The CLUSTER_N blocks of a cluster row each fetch A_BOX_M of A's BLOCK_M rows for all of them.
  static constexpr int A_BOX_M = BM / CLUSTER_N;
  static constexpr int STAGES = BM >= 128 ? ch12::STAGES : STAGES_64;  // the ring
  // Dynamic shared memory: the stages, 1 KB of slack to align them, the 2 x STAGES mbarriers and
  // one word where the consumers learn whether their split arrived last.
  static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + SWIZZLE_ATOM_BYTES + 2 * STAGES * 8 + 16;
  static_assert(WGMMA_N % 8 == 0 && WGMMA_N >= 8 && WGMMA_N <= 256, "wgmma's N: a multiple of 8 up to 256");
  static_assert(ACC % 16 == 0, "the split reduction reads the accumulators in chunks of whole float4s");
  static_assert(A_TILE_BYTES % SWIZZLE_ATOM_BYTES == 0, "tiles start on 1024-byte boundaries");
  static_assert(BM % CLUSTER_N == 0 && (A_BOX_M * SWIZZLE_BYTES) % SWIZZLE_ATOM_BYTES == 0,
                "each block's share of A's tile is whole swizzle atoms");
  static_assert(A_BOX_M <= 256, "a TMA box is at most 256 per dimension");
  static_assert(SMEM_BYTES <= 227 * 1024, "an H100 block has at most 227 KB of shared memory");
};

// Registers: the producer gives up what it does not need (setmaxnreg.dec), the consumers take it
// (setmaxnreg.inc). The registers move within the block's own allocation, NUM_THREADS x
// LAUNCH_REGS (ptxas gives every kernel here the 168 that __launch_bounds__(384, 1) allows: 64512,
// not the SM's 65536), and setmaxnreg.inc waits until the pool has them: asking for more than the
// producer gave back hangs the block. Multiples of 8. Where the tile can read B in place, all the
// producer's threads run the copy loop and need 56 (at 40 or 48 ptxas spills), which leaves the
// consumers 224: enough for the 64 accumulators of the 128-row tile, and 8 fewer than the 256-row
// tile's 128 accumulators, two sets of fragments and the split reduction want. So the 256-row tile
// does not read B in place (a B the TMA cannot read is copied for it), and its producer keeps 40
// and its consumers 232. Nor does the 64-row tile: its in-place plans were never the fastest
// (127 x 8191 x 2049: 68.9 us at best, against 54.4 us for the 128-row tile's), and with the copy
// loop compiled in, its plans with B loaded by the TMA ran 4% to 7% slower at 1024^3 and 1023^3
// (tuning run 56: the same source otherwise, alternating processes).
constexpr int LAUNCH_REGS = 65536 / NUM_THREADS / 8 * 8;  // 168
constexpr bool reads_b_in_place(int block_m) { return block_m == 128; }
template <int BM>
struct Registers {
  static constexpr bool READS_B_IN_PLACE = reads_b_in_place(BM);
  static constexpr int PRODUCER = READS_B_IN_PLACE ? 56 : 40;
  static constexpr int CONSUMER = READS_B_IN_PLACE ? 224 : 232;
  static_assert(WARPGROUP * (PRODUCER + CONSUMERS * CONSUMER) <= NUM_THREADS * LAUNCH_REGS,
                "setmaxnreg.inc can only take what setmaxnreg.dec gave back to the block's pool");
};

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
// A bulk copy (no tensor map) of `bytes` contiguous bytes from global memory into this block's
// shared memory, counted on the mbarrier like the tile copies.
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
// Orders this thread's (and, after a barrier, its block's) ordinary memory accesses before the
// TMA's that it issues next (the async proxy).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async;" ::: "memory"); }
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

// The direct load of B (DIRECT_B): copy 4 bytes from global memory to shared memory at dst, or
// write 4 zeros where src_bytes is 0 (outside the matrix: nothing is read).
__device__ __forceinline__ void cp_async_4(uint32_t dst, const float* src, uint32_t src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
// The same, always 4 bytes, at dst + DST_OFF and src + SRC_OFF bytes (immediates in the instruction).
template <int DST_OFF, int SRC_OFF>
__device__ __forceinline__ void cp_async_4_at(uint32_t dst, const float* src) {
  asm volatile("cp.async.ca.shared.global [%0+%2], [%1+%3], 4;" ::"r"(dst), "l"(src), "n"(DST_OFF), "n"(SRC_OFF)
               : "memory");
}
// The interior tile's copies of one row of B (below): the lane's float in each box J of the row.
template <int... J>
__device__ __forceinline__ void copy_b_row(uint32_t dst, const float* src, std::integer_sequence<int, J...>) {
  (cp_async_4_at<J * B_BOX_BYTES, J * B_BOX_N * 4>(dst, src), ...);
}
// One arrival on the barrier once every cp.async this thread issued so far has landed. noinc: the
// arrival is one of the count the barrier was initialised with (not an extra one).
__device__ __forceinline__ void cp_async_mbar_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
// x rounded to TF32 (to nearest, ties away from zero), as the TMA rounds with a TFLOAT32 map.
__device__ __forceinline__ uint32_t to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}
// A barrier of the consumer warpgroups only (named barrier 1; the producer never waits on it).
__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, %0;" ::"n"(CONSUMER_THREADS) : "memory");
}
// A load of a counter in global memory that no later read of this thread may overtake (acquire,
// at the scope of the GPU: it sees what another block released there).
__device__ __forceinline__ int load_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Adds 1 to a counter in global memory after every earlier access of this thread, and of the
// threads it synchronised with at a barrier before (release, at the scope of the GPU: cumulative).
__device__ __forceinline__ void add_release(int* p) {
  asm volatile("red.release.gpu.global.add.s32 [%0], 1;" ::"l"(p) : "memory");
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
template <int ACC>
__device__ __forceinline__ void fence_accumulators(float (&d)[ACC]) {
#pragma unroll
  for (int i = 0; i < ACC; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// d (64 x WGMMA_N) += a (64 x 8, this thread's 4 elements) x the 8 x WGMMA_N K-major tile at
// desc_b: one instruction, its WGMMA_N / 2 accumulator registers listed one by one. D8(i) names
// accumulators i .. i+7 as operands.
#define TUT_D8(i)                                                                                          \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
// clang-format off
template <int WGMMA_N>
__device__ __forceinline__ void wgmma_tf32(float (&d)[WGMMA_N / 2], const uint32_t (&a)[4], uint64_t desc_b) {
  static_assert(WGMMA_N == 256 || WGMMA_N == 128 || WGMMA_N == 64, "written out for n256, n128 and n64");
  if constexpr (WGMMA_N == 256) {
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
        : TUT_D8(0), TUT_D8(8), TUT_D8(16), TUT_D8(24), TUT_D8(32), TUT_D8(40), TUT_D8(48), TUT_D8(56),
          TUT_D8(64), TUT_D8(72), TUT_D8(80), TUT_D8(88), TUT_D8(96), TUT_D8(104), TUT_D8(112), TUT_D8(120)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
  } else if constexpr (WGMMA_N == 128) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32\n"
        "{%0, %1, %2, %3, %4, %5, %6, %7,"
        " %8, %9, %10, %11, %12, %13, %14, %15,"
        " %16, %17, %18, %19, %20, %21, %22, %23,"
        " %24, %25, %26, %27, %28, %29, %30, %31,"
        " %32, %33, %34, %35, %36, %37, %38, %39,"
        " %40, %41, %42, %43, %44, %45, %46, %47,"
        " %48, %49, %50, %51, %52, %53, %54, %55,"
        " %56, %57, %58, %59, %60, %61, %62, %63},\n"
        "{%64, %65, %66, %67}, %68, p, 1, 1;\n"
        "}\n"
        : TUT_D8(0), TUT_D8(8), TUT_D8(16), TUT_D8(24), TUT_D8(32), TUT_D8(40), TUT_D8(48), TUT_D8(56)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
  } else {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32\n"
        "{%0, %1, %2, %3, %4, %5, %6, %7,"
        " %8, %9, %10, %11, %12, %13, %14, %15,"
        " %16, %17, %18, %19, %20, %21, %22, %23,"
        " %24, %25, %26, %27, %28, %29, %30, %31},\n"
        "{%32, %33, %34, %35}, %36, p, 1, 1;\n"
        "}\n"
        : TUT_D8(0), TUT_D8(8), TUT_D8(16), TUT_D8(24)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1));
  }
}
// clang-format on
#undef TUT_D8

__device__ __forceinline__ float4 add4(float4 a, float4 b) {
  return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}

// Stream-K (STREAM_K). A one-split plan of U units of work on C clusters runs U / C rounds of whole
// units; the last T = U mod C units (the tail) would keep T of the C clusters busy for a whole round
// and the rest idle. Instead the tail's K steps, unit after unit (W = T x k_steps of them), are cut
// into C ranges of almost equal length: cluster c takes [begin(c), begin(c + 1)), begin(c) =
// c x W / C, about T / C of a unit. A range covers the end of one unit and the start of the next
// (or less), so each unit of the tail is shared by a few clusters, its "parts" in K order.
// A cluster works the start of the next unit first, then the end of the first: every cluster
// begins the tail at K step 0, and at any moment the clusters are at one of two K steps, k_steps - L
// apart (L = W / C), so they still share most of A's and B's tiles in L2, as whole units do.
// (Worked in K order, the end of one unit and then the start of the next, each cluster starts at
// its own place in K, the tiles in L2 are no longer shared, and the tail's K steps took twice as
// long: tuning run 87.) The last part of a unit (its last K steps) owns it: the others store their
// partial tiles and count themselves in, and the owner waits for the count, adds the partial tiles
// to its accumulators (its own first, then parts 0, 1, ...: the same bits in every run) and stores
// the tile. A cluster's owned piece is its last, and every count it owes comes before it: a piece
// that waits never waits for a piece that waits. The host and the kernel both use this arithmetic,
// in 32 bits: the host keeps W x (C + 1) below 2^31.
struct StreamK {
  int steps = 0;     // W: K steps in the tail (0: no stream-K)
  int k_steps = 1;   // K steps per unit
  int clusters = 1;  // C
  __host__ __device__ int begin(int c) const { return c * steps / clusters; }
  // The cluster whose range holds step x of the tail: the last c with begin(c) <= x.
  __host__ __device__ int cluster_of(int x) const { return ((x + 1) * clusters + steps - 1) / steps - 1; }
  // Tail unit t: the first cluster that works on it, and how many do.
  __host__ __device__ void parts_of(int t, int& first, int& parts) const {
    first = cluster_of(t * k_steps);
    parts = cluster_of((t + 1) * k_steps - 1) - first + 1;
  }
};

// ---------------------------------------------------------------------------------------------
// The kernel. C = alpha * A * B + beta * C; with beta == 0, C is not read.
//
// Who does what, per block, for each of its units of work (a tile, rows block_m .. +BLOCK_M of C,
// columns block_n .. +BLOCK_N, and a range of K steps: all of them, or one split's) in turn:
//   warpgroup 0, thread 0 (producer): for each K step, waits until the next stage of the ring is
//     empty, arms its full barrier with the stage's byte count, and issues the copies: its share
//     of A's tile (multicast to its cluster row) and of B's tile (BLOCK_N / B_BOX_N boxes). With a
//     B the TMA cannot read (B_direct != nullptr), all 128 producer threads copy B's tile instead,
//     one column each, with cp.async, and arrive on the full barrier when their copies land.
//   warpgroups 1 .. CONSUMERS (consumers): consumer c owns columns c*64 .. c*64+63 of the tile and
//     all BLOCK_M rows. For each K step: wait until the stage is full, load the B fragments into
//     registers, issue BLOCK_K / 8 wgmmas, and once the previous stage's wgmmas have finished,
//     tell every producer that writes into this block that that stage is empty. After the last K
//     step, the epilogue stores the tile while the producer already fills the ring for the next.
//     A split's consumers store their partial tile instead, and the split that arrives last adds
//     them all (in split order) and stores the sum.
//
// The transposed product. wgmma computes D (64 x BM) += A_w (64 x 8) * B_w (8 x BM) with B_w in
// shared memory K-major. Here A_w[r][k] = B[k][n(r)] (B's tile, from registers), B_w[k][c] =
// A[c][k] (A's tile as the TMA wrote it: row c holds c's K values, K-major), so
// D[r][c] = sum_k A[c][k] B[k][n(r)] = C[c][n(r)]. n(r) is a permutation of the consumer's 64
// columns chosen below so that the fragment loads are free of bank conflicts and the epilogue
// writes pairs of adjacent columns.
//
// Split-K: `splits` (S) splits per tile; split s takes the K steps [s * k_steps / S, (s + 1) *
// k_steps / S) (none empty: S <= k_steps). `partials` holds S x tiles partial tiles, `counters`
// one arrival counter per tile (zero on entry, zero again on exit); with S = 1 neither is touched.
// Stream-K (S = 1): the last `sk_units` units are the tail (StreamK above; fewer than the
// clusters, every cluster's range at least one K step, W x (C + 1) < 2^31, at most SK_MOST_PARTS
// parts per unit); `partials` holds (most parts - 1) x the tail's tiles partial tiles, `counters`
// one counter per tile of the tail (zero on entry and on exit).
template <int BM>
__global__ void __launch_bounds__(NUM_THREADS, 1) __cluster_dims__(CLUSTER_N, CLUSTER_M, 1)
    tma_wgmma_gemm_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int M,
                          int N, int K, float alpha, float beta, float* C, int ldc, const float* B_direct, int ldb,
                          int splits, int sk_units, float4* partials, int* counters) {
  using T = Tile<BM>;
  constexpr int ACC = T::ACC;
  constexpr int STAGES = T::STAGES;  // this tile's ring
  extern __shared__ uint8_t smem_raw[];
  // The stages on a 1024-byte boundary (the swizzle repeats every 8 rows of 128 bytes, and the
  // TMA and wgmma both compute it from the address).
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + SWIZZLE_ATOM_BYTES - 1) / SWIZZLE_ATOM_BYTES * SWIZZLE_ATOM_BYTES;
  uint8_t* const smem = smem_raw + (base - raw);             // the same place, as a pointer
  const uint32_t full_bar = base + STAGES * T::STAGE_BYTES;  // STAGES barriers of 8 bytes: "stage s holds data"
  const uint32_t empty_bar = full_bar + STAGES * 8;          // STAGES barriers: "stage s may be overwritten"
  volatile int* const arrived_last = reinterpret_cast<volatile int*>(smem + STAGES * T::STAGE_BYTES + 2 * STAGES * 8);
  // Stream-K: the unit whose partial tile this block publishes without counting it in at once
  // (below), or -1; then a barrier, "a partial tile has landed".
  volatile int* const sk_deferred = arrived_last + 1;
  const uint32_t sk_bar = empty_bar + STAGES * 8 + 8;
  using R = Registers<BM>;
  // Stream-K is compiled into the 256- and 128-row tiles only: the 64-row tile's plans are small
  // problems, where the shared units never paid, and its code without stream-K is the faster
  // (small problems are a few microseconds: see the README).
  constexpr bool HAS_STREAM_K = has_stream_k(BM);
  // (a constant false for a tile that does not read B in place: its copy loop is compiled out)
  const bool direct_b = R::READS_B_IN_PLACE && B_direct != nullptr;

  const int warpgroup = threadIdx.x / WARPGROUP;
  const int k_steps = (K + BLOCK_K - 1) / BLOCK_K;
  // Position in the cluster (x along N, y along M) and the cluster ranks (x + y * CLUSTER_N) of
  // this block's cluster row and column, as multicast masks. The grid is CLUSTER_M blocks tall.
  const int cx = blockIdx.x % CLUSTER_N, cy = blockIdx.y;
  uint16_t row_mask = 0, col_mask = 0;
  for (int x = 0; x < CLUSTER_N; ++x) row_mask |= uint16_t(1u << (x + cy * CLUSTER_N));
  for (int y = 0; y < CLUSTER_M; ++y) col_mask |= uint16_t(1u << (cx + y * CLUSTER_N));

  // The persistent schedule. A cluster computes a "unit" of CLUSTER_M x CLUSTER_N tiles at a time,
  // over one split's K steps: the units of work are (unit, split) pairs, item = unit * S + split
  // (the S splits of a unit are neighbours: they run at the same time and finish together), and
  // cluster i walks the items i, i + clusters, ... Units are numbered down the columns of bands of
  // GROUP_M unit rows, so that the clusters running at the same time share rows of A and columns of
  // B in L2. work_of(item) gives this block's tile (its first row and column) and split.
  const int units_m = (M + CLUSTER_M * BM - 1) / (CLUSTER_M * BM);
  const int units_n = (N + CLUSTER_N * BLOCK_N - 1) / (CLUSTER_N * BLOCK_N);
  const int items = units_m * units_n * splits;
  const int cluster = blockIdx.x / CLUSTER_N, clusters = gridDim.x / CLUSTER_N;
  auto work_of = [&](int item, int& block_m, int& block_n, int& k_begin, int& k_end) {
    const int u = item / splits, split = item % splits;
    const int per_band = GROUP_M * units_n;
    const int first = u / per_band * GROUP_M;        // the band's first unit row
    const int rows = min(GROUP_M, units_m - first);  // unit rows in this band (the last may be short)
    const int r = u % per_band;
    block_m = ((first + r % rows) * CLUSTER_M + cy) * BM;
    block_n = ((r / rows) * CLUSTER_N + cx) * BLOCK_N;
    k_begin = int(static_cast<long long>(split) * k_steps / splits);
    k_end = int(static_cast<long long>(split + 1) * k_steps / splits);
    return split;
  };
  // This cluster's work in order: its whole items (cluster, cluster + clusters, ... below
  // items - sk_units: with stream-K a multiple of the clusters, and S = 1), then its pieces of the
  // tail: its range [a, b) of the tail's K steps is shorter than a unit (T < C), so it covers the
  // end of one unit (or a part of it) and the start of the next. work(w, ...) gives the w-th, or
  // false past the last: this block's tile, its K steps, and its split, or for a piece of the
  // tail -1 - t, t the unit's place in the tail. (Worked out per item from the kernel's parameters,
  // in one word: the consumers' main loop has no register to spare.)
  const StreamK sk{sk_units * k_steps, k_steps, clusters};
  auto work = [&](int w, int& block_m, int& block_n, int& k_begin, int& k_end, int& split) {
    const int whole_items = items - sk_units;
    if (cluster + w * clusters < whole_items) {
      split = work_of(cluster + w * clusters, block_m, block_n, k_begin, k_end);
      return true;
    }
    if (!HAS_STREAM_K || sk_units == 0) return false;
    const int a = sk.begin(cluster), b = sk.begin(cluster + 1);
    const int t0 = a / k_steps;                  // the range's first unit (its place in the tail)
    const bool two = (t0 + 1) * k_steps < b;     // the range reaches into the next unit
    const int j = w - whole_items / clusters;    // the piece: the next unit's start first, if any
    if (a >= b || j >= (two ? 2 : 1)) return false;
    const int t = two && j == 0 ? t0 + 1 : t0;  // the piece's unit
    const int start = t * k_steps;               // its first step in the tail's numbering
    work_of(whole_items + t, block_m, block_n, k_begin, k_end);
    k_begin = max(a, start) - start;
    k_end = min(b, start + k_steps) - start;
    split = -1 - t;
    return true;
  };

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      // The producer's arrive.expect_tx (plus the bytes), and with a direct B one arrival per
      // producer thread when its copies have landed.
      mbar_init(full_bar + 8 * s, 1 + (direct_b ? WARPGROUP : 0));
      // Every consumer warp of the blocks it writes into, one arrival each; with a B read in place
      // every consumer thread of this block instead of its warps (release, below).
      constexpr int WARPS = CONSUMERS * (WARPGROUP / WARP_SIZE);
      mbar_init(empty_bar + 8 * s, direct_b ? CONSUMER_THREADS + WARPS * (WRITERS - 1) : WARPS * WRITERS);
    }
    mbar_init(sk_bar, 1);  // the owner's arrive.expect_tx (plus the bytes)
    // (Kept in shared memory, not registers: the consumers' main loop has none to spare.)
    const int a = sk_units > 0 ? sk.begin(cluster) : 0, b = sk_units > 0 ? sk.begin(cluster + 1) : 0;
    *sk_deferred = a < b && (a / k_steps + 1) * k_steps < b ? a / k_steps + 1 : -1;
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
    setmaxnreg_dec<R::PRODUCER>();
    if (threadIdx.x == 0 || direct_b) {
      // The direct load of B puts (k, n) of B's tile at box n / 32, row k (128 bytes), 16-byte
      // chunk ((n % 32) / 4) XOR (k % 8), float n % 4 of the swizzled tile, as the TMA would. Two
      // ways. An edge tile (some of its rows or columns outside B): thread `col` copies column col,
      // BLOCK_K rows of 4 bytes, with zeros outside B. An interior tile: producer warp w copies
      // rows w, w + 4, ..., lane l columns l, l + 32, l + 64 and l + 96 of each (4 boxes, the same
      // chunk and float in each). One row pointer serves a row's four copies (offsets of 128 bytes
      // in B and B_BOX_BYTES in the tile: immediates), and a warp's 32 copies of a K step use 8
      // row pointers, so no copy waits for another to read its address registers. A warp copies
      // 128 contiguous bytes of a row per instruction either way.
      const int col = threadIdx.x;
      const uint32_t b_col = (col / B_BOX_N) * B_BOX_BYTES + (col % 4) * 4;
      const int b_chunk = (col % B_BOX_N) / 4;
      const int pw = threadIdx.x / WARP_SIZE, pl = threadIdx.x % WARP_SIZE;  // (producer warp, lane)
      // Rows pw + 4i: k % 8 is pw for even i and pw + 4 for odd i; row offsets 512 i on top.
      const uint32_t b_even = pw * SWIZZLE_BYTES + (((pl / 4) ^ pw) * 16) + (pl % 4) * 4;
      const uint32_t b_odd = pw * SWIZZLE_BYTES + (((pl / 4) ^ (pw + 4)) * 16) + (pl % 4) * 4;
      int it = 0;  // K steps issued so far, over all units: stage it % STAGES, round it / STAGES
      int block_m, block_n, k_begin, k_end, split;
      for (int w = 0; work(w, block_m, block_n, k_begin, k_end, split); ++w) {
        for (int kt = k_begin; kt < k_end; ++kt, ++it) {
          const int s = it % STAGES;
          const uint32_t phase = (it / STAGES) & 1;
          // The first round finds every stage empty: waiting on the parity of the phase before the
          // barrier's first returns at once.
          mbar_wait(empty_bar + 8 * s, phase ^ 1);
          const uint32_t a_dst = base + s * T::STAGE_BYTES;
          const uint32_t b_dst = a_dst + T::A_TILE_BYTES;
          const int k0 = kt * BLOCK_K;
          if (threadIdx.x == 0) {
            mbar_arrive_expect_tx(full_bar + 8 * s, direct_b ? T::A_TILE_BYTES : T::STAGE_BYTES);
            // A's tile: rows block_m .. +BLOCK_M, columns k0 .. +BLOCK_K; this block fetches rows
            // cx*A_BOX_M .. +A_BOX_M of it for its cluster row.
            const uint32_t a_part = a_dst + cx * T::A_BOX_M * SWIZZLE_BYTES;
            if (CLUSTER_N > 1) {
              tma_load_2d_multicast(a_part, &map_a, k0, block_m + cx * T::A_BOX_M, full_bar + 8 * s, row_mask);
            } else {
              tma_load_2d(a_part, &map_a, k0, block_m, full_bar + 8 * s);
            }
            // B's tile: rows k0 .. +BLOCK_K, columns block_n .. +BLOCK_N, in boxes of B_BOX_N
            // columns; this block fetches boxes cy*B_BOXES .. +B_BOXES for its cluster column.
            if (!direct_b) {
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
          if (direct_b && block_n + BLOCK_N <= N && k0 + BLOCK_K <= K) {
            // An interior tile: every copy is whole.
            const float* row = B_direct + static_cast<size_t>(k0 + pw) * ldb + block_n + pl;
            const size_t row_step = static_cast<size_t>(PRODUCER_WARPS_B) * ldb;
#pragma unroll
            for (int i = 0; i < B_ROWS_PER_WARP; ++i) {
              copy_b_row(b_dst + ((i % 2) ? b_odd : b_even) + i * PRODUCER_WARPS_B * SWIZZLE_BYTES,
                         row + i * row_step, std::make_integer_sequence<int, BLOCK_N / B_BOX_N>{});
            }
            cp_async_mbar_arrive(full_bar + 8 * s);
          } else if (direct_b) {
            // An edge tile (no multicast): zeros outside the matrix, as the TMA gives.
            const int n = block_n + col;
            const int rows = n < N ? min(BLOCK_K, K - k0) : 0;  // rows of this column inside B
            const float* src = B_direct + static_cast<size_t>(k0) * ldb + (n < N ? n : 0);
#pragma unroll 2  // (more, and the producer needs more than its 56 registers: ptxas spills)
            for (int k = 0; k < BLOCK_K; ++k, src += ldb) {
              const bool inside = k < rows;
              cp_async_4(b_dst + b_col + k * SWIZZLE_BYTES + ((b_chunk ^ (k % 8)) * 16), inside ? src : B_direct,
                         inside ? 4 : 0);
            }
            cp_async_mbar_arrive(full_bar + 8 * s);
          }
        }
      }
      // The tail (instead of a cluster barrier at the end): no block of the cluster may leave while
      // a partner may still arrive on its barriers. Waiting for every stage to be released once
      // more, as if STAGES more K steps were to be issued, sees the last arrival of every consumer
      // warp that signals this block, its own and its partner's (both blocks walk the same items).
      // A stage never used returns at once. The partner's multicast writes into this block were all
      // awaited by this block's consumers on the full barriers.
      if (threadIdx.x == 0) {
        for (int i = 0; i < STAGES; ++i, ++it) mbar_wait(empty_bar + 8 * (it % STAGES), ((it / STAGES) & 1) ^ 1);
      }
    }
  } else {
    // ---- consumers ----
    setmaxnreg_inc<R::CONSUMER>();
    const int consumer = warpgroup - 1;
    const int ct = threadIdx.x - WARPGROUP;          // 0 .. CONSUMER_THREADS - 1
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
        T::A_TILE_BYTES + (n_col / B_BOX_N) * B_BOX_BYTES + t * SWIZZLE_BYTES + (chunk ^ t) * 16 + (n_col % 4) * 4;
    const int frag_hi = T::A_TILE_BYTES + (n_col / B_BOX_N) * B_BOX_BYTES + (t + 4) * SWIZZLE_BYTES +
                        (chunk ^ (t + 4)) * 16 + (n_col % 4) * 4;
    // A direct B arrives in FP32: the consumers round its fragments to TF32, as the TMA would have.
    const bool round_b = direct_b && TF32_MAPS;

    // Tells every producer that writes into this block (its cluster row and column) that stage s
    // is free: one arrival per warp, by lane 0, on each block's barrier. With the TMA the warp's own
    // reads of the stage are its wgmmas' (done: wgmma.wait_group), and the __syncwarp orders the
    // lanes before lane 0's arrival (a release) in the memory model, not only in practice
    // (wgmma.wait_group is warp-wide, but it is not a memory barrier). With a B read in place the
    // lanes' own loads of B's fragments meet this block's producer threads' next cp.async writes
    // there: every lane then arrives on this block's barrier itself (each load released by its own
    // thread, as compute-sanitizer's racecheck follows it), and lane 0 alone on the others' (they
    // write only A's tile here, by multicast, which only the wgmmas read).
    auto release = [&](int s) {
      // The other blocks of its cluster row and column: one arrival per warp, by lane 0.
      auto release_others = [&](uint32_t bar) {
#pragma unroll
        for (int x = 0; x < CLUSTER_N; ++x) {  // the rest of its cluster row
          if (x != cx) mbar_arrive_cluster(bar, uint32_t(x + cy * CLUSTER_N));
        }
#pragma unroll
        for (int y = 0; y < CLUSTER_M; ++y) {  // the rest of its cluster column
          if (y != cy) mbar_arrive_cluster(bar, uint32_t(cx + y * CLUSTER_N));
        }
      };
      if (direct_b) {
        const uint32_t bar = empty_bar + 8 * s;
        mbar_arrive(bar);  // every lane, on this block's own barrier
        if (lane == 0) release_others(bar);
        return;
      }
      __syncwarp();
      if (lane != 0) return;
      const uint32_t bar = empty_bar + 8 * s;
      mbar_arrive(bar);  // this block's own producer
      release_others(bar);
    };

    float acc[ACC];
    // One K step on stage it % STAGES (it counts K steps over all units, as the producer's does),
    // with the fragment registers `frag` (two sets alternate: the wgmmas of the previous step may
    // still be reading the other set). first: the unit's first K step (no previous step to free).
    auto mma_step = [&](int it, bool first, uint32_t(&frag)[BLOCK_K / WGMMA_K][4]) {
      const int s = it % STAGES;
      mbar_wait(full_bar + 8 * s, (it / STAGES) & 1);
      const uint8_t* stage = smem + s * T::STAGE_BYTES;
#pragma unroll
      for (int kk = 0; kk < BLOCK_K / WGMMA_K; ++kk) {
        const float2 lo = *reinterpret_cast<const float2*>(stage + frag_lo + kk * SWIZZLE_ATOM_BYTES);
        const float2 hi = *reinterpret_cast<const float2*>(stage + frag_hi + kk * SWIZZLE_ATOM_BYTES);
        // wgmma's A fragment: (g, t), (g+8, t), (g, t+4), (g+8, t+4) of the warp's 16 x 8 rows.
        frag[kk][0] = round_b ? to_tf32(lo.x) : __float_as_uint(lo.x);
        frag[kk][1] = round_b ? to_tf32(lo.y) : __float_as_uint(lo.y);
        frag[kk][2] = round_b ? to_tf32(hi.x) : __float_as_uint(hi.x);
        frag[kk][3] = round_b ? to_tf32(hi.y) : __float_as_uint(hi.y);
      }
      fence_accumulators(acc);
      wgmma_fence();  // the registers above are written before the wgmmas read them
#pragma unroll
      for (int kk = 0; kk < BLOCK_K / WGMMA_K; ++kk) {
        // A's tile, K columns 8*kk .. +8: 32 bytes further along each 128-byte row.
        wgmma_tf32<T::WGMMA_N>(acc, frag[kk], smem_descriptor(base + s * T::STAGE_BYTES + kk * WGMMA_K * 4));
      }
      wgmma_commit();
      // The previous K step's wgmmas are done (at most this step's group still runs): its stage is free.
      wgmma_wait<1>();
      fence_accumulators(acc);
      if (!first) release((it + STAGES - 1) % STAGES);
    };

    int it = 0;
    int block_m, block_n, k_begin, k_end, split;
    for (int w = 0; work(w, block_m, block_n, k_begin, k_end, split); ++w) {
#pragma unroll
      for (int i = 0; i < ACC; ++i) acc[i] = 0.0f;
      uint32_t frag0[BLOCK_K / WGMMA_K][4], frag1[BLOCK_K / WGMMA_K][4];
      int kt = k_begin;
#pragma unroll 1
      for (; kt + 1 < k_end; kt += 2, it += 2) {
        mma_step(it, kt == k_begin, frag0);
        mma_step(it + 1, false, frag1);
      }
      if (kt < k_end) mma_step(it++, kt == k_begin, frag0);
      wgmma_wait<0>();
      fence_accumulators(acc);
      release((it - 1) % STAGES);  // the unit's last stage: the producer is already on the next unit
      // Stream-K: a range of two pieces published the first (the start of the next unit, owned by
      // another cluster) without counting it in (below). Its stores are long done, so the release
      // waits for nothing now, and the count comes before this block may wait for anyone's.
      const int tail = HAS_STREAM_K && split < 0 ? -1 - split : -1;  // the unit's place in the tail, or -1
      const int deferred = tail >= 0 ? *sk_deferred : -1;  // (the range's second unit, or -1)
      if (deferred >= 0 && tail == deferred - 1) {
        consumers_sync();
        if (ct == 0) add_release(&counters[deferred * (CLUSTER_M * CLUSTER_N) + cy * CLUSTER_N + cx]);
      }
      // A tile of a unit that lies wholly past C's edge (the partner of a cluster at the last
      // columns): its loads fed the partner's multicast; it has nothing to store. (A piece of the
      // tail still counts in, and its owner still waits and resets the counter: below.)
      const bool inside = block_m < M && block_n < N;
      if (!inside && tail < 0) continue;

      // Epilogue. acc[4*j + 2*h + v] is D[16*warp + g + 8*h][8*j + 2*t + v] = C[m][n] with
      // m = block_m + 8*j + 2*t + v and n = block_n + n_col + h: the thread's float4 q (acc[4q ..
      // 4q+3]) holds C[m][n], C[m+1][n], C[m][n+1], C[m+1][n+1] for m = block_m + 8q + 2t, and a
      // warp writes 4 rows x 2 runs of 8 adjacent floats.
      const int n = block_n + n_col;
      // Stores float4 q, x, with store(c, x, y): c = &C[m][n], x for C[m][n], y for C[m][n+1], on
      // the rows m < M.
      auto emit = [&](auto store, int q, float4 x) {
        const int m = block_m + 8 * q + 2 * t;
        if (m < M) store(C + static_cast<size_t>(m) * ldc + n, alpha * x.x, alpha * x.z);
        if (m + 1 < M) store(C + static_cast<size_t>(m + 1) * ldc + n, alpha * x.y, alpha * x.w);
      };
      // Runs body(store) with the store that fits: 8-byte stores where the pair lies inside C and is
      // 8-byte aligned; C is read only when beta != 0.
      const bool pair = n + 1 < N && ldc % 2 == 0 && reinterpret_cast<uintptr_t>(C) % 8 == 0;
      auto with_store = [&](auto body) {
        if (pair && beta == 0.0f) {
          body([](float* c, float x, float y) { *reinterpret_cast<float2*>(c) = make_float2(x, y); });
        } else if (pair) {
          body([beta](float* c, float x, float y) {
            const float2 old = *reinterpret_cast<const float2*>(c);
            *reinterpret_cast<float2*>(c) = make_float2(x + beta * old.x, y + beta * old.y);
          });
        } else if (n < N) {  // the last column of C, or an odd ldc: one float at a time
          const bool second = n + 1 < N;
          body([beta, second](float* c, float x, float y) {
            c[0] = (beta == 0.0f) ? x : x + beta * c[0];
            if (second) c[1] = (beta == 0.0f) ? y : y + beta * c[1];
          });
        }
      };
      constexpr int VECS = ACC / 4;  // the thread's float4s

      // Stream-K: this cluster's part of the unit's sum (in K order) and the number of parts.
      int part = 0, parts = 1;
      if (tail >= 0) {
        sk.parts_of(tail, part, parts);
        part = cluster - part;  // (parts_of gave the first cluster)
      }
      if (parts > 1) {
        // The tile's partial tiles, thread-interleaved float4s as below, part p's at slot p (the
        // owner, the last part, stores none), one counter per tile of the tail.
        const int tile = tail * (CLUSTER_M * CLUSTER_N) + cy * CLUSTER_N + cx;
        const size_t part_stride = static_cast<size_t>(sk_units) * CLUSTER_M * CLUSTER_N * VECS * CONSUMER_THREADS;
        float4* const slot = partials + static_cast<size_t>(tile) * VECS * CONSUMER_THREADS + ct;  // part 0's
        if (part < parts - 1) {
          // Not the owner: publish the partial tile, then count it in: the consumers' barrier, then
          // one release by one thread, which orders every consumer's stores before the count (no
          // fence per thread, as split-K's below: a fence waits for the thread's stores to land).
          // The first of two pieces counts in after the second's K steps (above): the owner needs
          // the count no sooner (it ends its range then too).
          if (inside) {
#pragma unroll
            for (int q = 0; q < VECS; ++q) {
              __stcg(&slot[part * part_stride + q * CONSUMER_THREADS],
                     make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]));
            }
          }
          if (tail != deferred) {
            consumers_sync();
            if (ct == 0) add_release(&counters[tile]);
          }
          continue;
        }
        // The owner: wait until the other parts are all in (acquire: their stores are visible to
        // this thread, and the barrier passes that on to the other consumers) and reset the counter
        // for the next launch. Then add the partial tiles to the accumulators in part order (the
        // same bits in every run) and store the tile as a whole one. Each partial tile comes into
        // shared memory with one bulk copy: the ring is idle, since an owned piece is its cluster's
        // last (the producer has nothing more to load, and the consumers have read every stage).
        // (Loaded from L2 by the consumers into registers, four float4s at a time between the
        // tile's stores, the partial tiles cost 8 dependent round trips at 256 rows: 4 to 5 us
        // more per launch, tuning runs 89 and 90.)
        if (ct == 0) {
          while (load_acquire(&counters[tile]) < parts - 1) {
          }
          counters[tile] = 0;
        }
        if (!inside) continue;  // (no consumer reads what ct 0 did above: no barrier needed)
        constexpr uint32_t TILE_BYTES = VECS * CONSUMER_THREADS * sizeof(float4);
        static_assert(TILE_BYTES <= STAGES * T::STAGE_BYTES, "a partial tile fits in the ring");
        const float4* const staged = reinterpret_cast<const float4*>(smem) + ct;
        auto add_part = [&](int p) {
          consumers_sync();  // the counter is read (p = 0), or the last partial tile is added
          if (ct == 0) {
            // Ordinary accesses before the TMA's: the partial tiles' stores (other blocks', seen
            // through the acquire above) and the consumers' reads of the ring.
            fence_proxy_async();
            mbar_arrive_expect_tx(sk_bar, TILE_BYTES);
            bulk_load(base, slot - ct + p * part_stride, TILE_BYTES, sk_bar);
          }
          mbar_wait(sk_bar, p & 1);
#pragma unroll
          for (int q = 0; q < VECS; ++q) {
            const float4 x = staged[q * CONSUMER_THREADS];
            acc[4 * q] += x.x;
            acc[4 * q + 1] += x.y;
            acc[4 * q + 2] += x.z;
            acc[4 * q + 3] += x.w;
          }
        };
        // (Unrolled or not, whichever ptxas allocates without spilling for the tile.)
        if (BM >= 256) {
#pragma unroll
          for (int p = 0; p < SK_MOST_PARTS - 1; ++p) {
            if (p < parts - 1) add_part(p);
          }
        } else {
#pragma unroll 1
          for (int p = 0; p < parts - 1; ++p) add_part(p);
        }
      }
      if (splits == 1) {
        with_store([&](auto store) {
#pragma unroll
          for (int q = 0; q < VECS; ++q) emit(store, q, make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]));
        });
        continue;
      }
      // Split-K, as in chapter 10. 1. Publish this split's partial tile (thread-interleaved float4s:
      // float4 q of consumer thread ct at q * CONSUMER_THREADS + ct, coalesced), then count this
      // block in on the tile's counter. Each thread's __threadfence() makes its stores visible to the
      // whole GPU before the barrier; the counter is incremented after it.
      const int tiles_n = units_n * CLUSTER_N;  // tile columns, counting those of a unit that lie past N
      const int tile = (block_m / BM) * tiles_n + block_n / BLOCK_N;
      const size_t split_stride = static_cast<size_t>(units_m) * CLUSTER_M * tiles_n * VECS * CONSUMER_THREADS;
      float4* const mine = partials + static_cast<size_t>(tile) * VECS * CONSUMER_THREADS + ct;  // split 0's
#pragma unroll
      for (int q = 0; q < VECS; ++q) {
        __stcg(&mine[split * split_stride + q * CONSUMER_THREADS],
               make_float4(acc[4 * q], acc[4 * q + 1], acc[4 * q + 2], acc[4 * q + 3]));
      }
      __threadfence();
      consumers_sync();
      if (ct == 0) {
        // The split that brings the count to S is the last: every other partial is complete. It
        // resets the counter for the next launch (nobody else touches it again in this one).
        const bool last = atomicAdd(&counters[tile], 1) == splits - 1;
        if (last) {
          counters[tile] = 0;
          __threadfence();  // order the count (and the reset) before the reads of the partials below
        }
        *arrived_last = last;
      }
      consumers_sync();
      // (The next write of the flag comes after the next consumers_sync, which every consumer
      // reaches only after reading this one.)
      if (!*arrived_last) continue;
      // 2. The last split adds the partial tiles in split order, 0 + 1 + ... + (S - 1), its own
      // read back like the others (from L2, __ldcg), so the order never depends on which split
      // arrived last: the same bits in every run. CHUNK float4 sums at a time, with CHUNK x
      // SPLITS_IN_FLIGHT loads in flight, each sum stored at once. (ptxas keeps the accumulators'
      // registers reserved for the wgmmas: beside 128 of them, more than one float4 per chunk
      // spills.)
      constexpr int CHUNK = ACC >= 128 ? 1 : 4, SPLITS_IN_FLIGHT = 4;
      with_store([&](auto store) {
#pragma unroll 1  // (nothing here indexes acc: the chunks need not be unrolled)
        for (int q0 = 0; q0 < VECS; q0 += CHUNK) {
          float4 sum[CHUNK];
#pragma unroll 1
          for (int s0 = 0; s0 < splits; s0 += SPLITS_IN_FLIGHT) {
            float4 x[SPLITS_IN_FLIGHT][CHUNK];
#pragma unroll
            for (int u = 0; u < SPLITS_IN_FLIGHT; ++u) {
#pragma unroll
              for (int c = 0; c < CHUNK; ++c) {
                if (s0 + u < splits) x[u][c] = __ldcg(&mine[(s0 + u) * split_stride + (q0 + c) * CONSUMER_THREADS]);
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
          for (int c = 0; c < CHUNK; ++c) emit(store, q0 + c, sum[c]);
        }
      });
    }
  }

  // (No cluster barrier at the end: the producer's tail above keeps this block until every arrival
  // on its barriers is in.)
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

// make_tensor_map, remembered: encoding a map is host work (a driver call) that would otherwise sit
// between a timed run's start and its kernel, twice per launch. The last few maps are kept, keyed
// on everything the map encodes (pointer, shape, leading dimension, box); a launch with a new
// pointer or shape encodes a new one. Not thread-safe (one host thread launches).
inline CUtensorMap cached_tensor_map(const float* X, int rows, int cols, int ld, int box_rows, int box_cols) {
  struct Entry {
    const float* x = nullptr;
    int rows = 0, cols = 0, ld = 0, box_rows = 0, box_cols = 0;
    CUtensorMap map;
  };
  constexpr int KEPT = 8;
  static Entry kept[KEPT];
  static int next = 0;
  for (const Entry& e : kept) {
    if (e.x == X && e.rows == rows && e.cols == cols && e.ld == ld && e.box_rows == box_rows && e.box_cols == box_cols) {
      return e.map;
    }
  }
  Entry& e = kept[next];
  next = (next + 1) % KEPT;
  e.map = make_tensor_map(X, rows, cols, ld, box_rows, box_cols);  // may throw: e is then left unused
  e.x = X;
  e.rows = rows;
  e.cols = cols;
  e.ld = ld;
  e.box_rows = box_rows;
  e.box_cols = box_cols;
  return e.map;
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

// The kernel of a tile shape (an index into SHAPE_BLOCK_M), its shared memory and its A box.
using KernelFn = void (*)(CUtensorMap, CUtensorMap, int, int, int, float, float, float*, int, const float*, int, int,
                          int, float4*, int*);
inline KernelFn kernel_for(int shape) {
  switch (shape) {
    case 0: return tma_wgmma_gemm_kernel<SHAPE_BLOCK_M[0]>;
    case 1: return tma_wgmma_gemm_kernel<SHAPE_BLOCK_M[1]>;
    default: return tma_wgmma_gemm_kernel<SHAPE_BLOCK_M[2]>;
  }
}
static_assert(NUM_SHAPES == 3, "kernel_for and smem_bytes_for name each shape's instance");
inline int smem_bytes_for(int shape) {
  switch (shape) {
    case 0: return Tile<SHAPE_BLOCK_M[0]>::SMEM_BYTES;
    case 1: return Tile<SHAPE_BLOCK_M[1]>::SMEM_BYTES;
    default: return Tile<SHAPE_BLOCK_M[2]>::SMEM_BYTES;
  }
}

// The device's facts the plan needs, read once per device from the CUDA runtime: the SM count,
// the clock, the tensor cores' and DRAM's rates, and how many clusters of each shape's kernel fit
// at once (cudaOccupancyMaxActiveClusters: 66 pairs on the H100's 132 SMs). Reading them also
// gives each kernel its consent to more than 48 KB of dynamic shared memory.
struct DeviceFacts {
  int sms = 0;
  double clock_ghz = 0;           // cycles per ns
  double tc_fma_per_clk = 0;      // TF32 multiply-adds per clock per SM (dense)
  double dram_bytes_per_us = 0;   // the memory interface's peak
  int clusters[NUM_SHAPES] = {};  // clusters of each shape's kernel that fit on the GPU at once
};
inline const DeviceFacts& device_facts() {
  static tut::PerDevice<DeviceFacts> cache;
  return cache.get([](int device, DeviceFacts& facts) {
    cudaDeviceProp prop{};
    TUT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    int clock_khz = 0, mem_khz = 0, bus_bits = 0;
    TUT_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
    TUT_CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
    TUT_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
    facts.sms = prop.multiProcessorCount;
    facts.clock_ghz = clock_khz / 1e6;
    const int flops = tut::tf32_flops_per_clk_per_sm(prop.major, prop.minor);
    facts.tc_fma_per_clk = (flops > 0 ? flops : 2048) / 2.0;
    facts.dram_bytes_per_us = 2.0 * mem_khz * 1e3 * (bus_bits / 8) / 1e6;  // double data rate
    for (int s = 0; s < NUM_SHAPES; ++s) {
      TUT_CUDA_CHECK(cudaFuncSetAttribute(kernel_for(s), cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes_for(s)));
      cudaLaunchConfig_t config = {};
      config.gridDim = dim3(facts.sms / (CLUSTER_N * CLUSTER_M) * CLUSTER_N, CLUSTER_M);
      config.blockDim = dim3(NUM_THREADS);
      config.dynamicSmemBytes = smem_bytes_for(s);
      int n = 0;
      TUT_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&n, kernel_for(s), &config));
      if (n < 1) throw tut::CudaError("tma_wgmma_gemm_kernel: not even one cluster fits on this GPU");
      facts.clusters[s] = n;
    }
  });
}

// ---- The plan ------------------------------------------------------------------------------------

// The rule's model of a plan's time. Its constants are fitted to the measured time of every
// candidate plan (all shapes x splits) of the suite's problems on the H100 (least squares on log
// time; the README gives the fit and its residuals, and how the rule does on problems it was not
// fitted to).
// A plan of tile shape BM and S splits has U = ceil(M / (CLUSTER_M x BM)) x ceil(N / (CLUSTER_N x
// BLOCK_N)) units of work per split, U x S items, walked by the clusters that fit (66): the busiest
// cluster runs R = ceil(U x S / clusters) items ("rounds") of ceil(k_steps / S) K steps each.
//  - A K step costs the largest of: the tensor cores' time (BM x BLOCK_N x BLOCK_K multiply-adds)
//    at TC_EFFICIENCY of their peak; the stage's fill: (BM + BLOCK_N) x 128 bytes land in the
//    block's shared memory per step, multicast or not, at FILL_BYTES_PER_CLK (measured: what bounds
//    the 256- and 128-row tiles, on 8 SMs as on 128); STEP_MIN_CLK, the least a step takes (the
//    64-row tile's bound on few SMs); and the L2's share: each busy SM pulls (BM / CLUSTER_N +
//    BLOCK_N / CLUSTER_M) x 128 bytes per step, and the L2 gives L2_BYTES_PER_CLK per SM per clock
//    when every SM pulls (fewer busy SMs get more each). B loaded in place (cp.async, below) makes
//    a step take at least DIRECT_STEP_US.
//  - A round adds ITEM_US (the epilogue, the next item's first loads); the launch LAUNCH_US.
//  - Split-K: every item stores its partial tile (BM x BLOCK_N floats at STORE_BYTES_PER_US per
//    SM) and pays SPLIT_US (the fence, the consumers' barrier, the counter's atomic), and the
//    tile's last split reads the S partials back: (VECS / CHUNK) x ceil(S /
//    SPLITS_PER_TRIP) dependent round trips of TRIP_US, and S x the tile's bytes at
//    REDUCE_BYTES_PER_US. The reduction counts once per round, not once in S rounds: the cluster
//    that reduced is late for its next item, so it arrives last there too and reduces again (a
//    convoy; the measurements at R > 1 show it).
//  - Nothing beats DRAM: A, B and C once, and the partials written and read, at DRAM_EFFICIENCY.
//  - A whose rows the TMA cannot read is copied first (read and written at COPY_BYTES_PER_US).
//    Such a B is either copied too or read in place, whichever the model finds cheaper for this
//    plan (b_in_place below; DIRECT_B = 0: always copied, 2: always in place).
// The constants describe this kernel on the H100; the clock, SM count, tensor-core and DRAM rates
// come from the device.
constexpr double TC_EFFICIENCY = 0.99;         // the tensor cores' share of their peak in the main loop
constexpr double FILL_BYTES_PER_CLK = 37.0;    // bytes landing in one SM's shared memory per clock
constexpr double STEP_MIN_CLK = 748;           // the least a K step takes, whatever the tile
constexpr double L2_BYTES_PER_CLK = 26.1;      // per SM per clock with every SM pulling (6.8 TB/s on 132)
constexpr double LAUNCH_US = 3.76;             // launch, first tile loads, last store
constexpr double ITEM_US = 1.38;               // per round: the epilogue, the next item's first loads
constexpr double SPLIT_US = 1.14;              // per round of a split plan: publishing the partial tile
constexpr double STORE_BYTES_PER_US = 19.3e3;  // one SM storing its partial tile (19.3 GB/s)
constexpr double TRIP_US = 0.358;              // one dependent round trip of the reduction's loads
constexpr double REDUCE_BYTES_PER_US = 128e3;  // one SM reading the partials back (128 GB/s)
constexpr int SPLITS_PER_TRIP = 4;             // SPLITS_IN_FLIGHT in the kernel's reduction
constexpr double DRAM_EFFICIENCY = 0.83;       // of the peak, on a stream of loads
constexpr double DIRECT_STEP_US = 0.95;        // a K step with B read in place by cp.async, at least
                                               // (refitted to the row copy's 50 plans, tuning runs 55 and 57)
constexpr double COPY_BYTES_PER_US = 1.45e6;   // cudaMemcpy2DAsync with unaligned rows, read + write
// Stream-K's tail: a cluster's range costs its K steps, each SK_STEP_EXTRA longer than a whole
// unit's (two places in K at once: less of A and B shared in L2), two item boundaries (ITEM_US
// each) and SK_US (the partial tiles stored, counted, waited for, loaded and added), fitted to ten
// problems' stream-K and whole-unit times (tuning run 92; 8192^3 left out: there the whole-unit
// plan's half-idle last round runs faster than the model prices it, and stream-K gains less).
constexpr double SK_STEP_EXTRA = 0.043;
constexpr double SK_US = 9.7;

class Planner : public tut::GemmPlanner {
 public:
  std::vector<std::string> tile_names() const override {
    std::vector<std::string> names;
    for (int bm : SHAPE_BLOCK_M) names.push_back(std::to_string(bm) + "x" + std::to_string(BLOCK_N));
    return names;
  }

  int max_splits(const tut::GemmProblem& p) const override { return most_splits(p); }
  static int most_splits(const tut::GemmProblem& p) {
    return int(std::min<long long>(MAX_SPLITS, tut::ceil_div<long long>(p.k, BLOCK_K)));
  }

  // Units of work per split (a unit: a cluster's CLUSTER_M x CLUSTER_N tiles), and the tiles they
  // hold (including those of a unit that lie past C's edge: the workspace has room for them).
  static long long units(const tut::GemmProblem& p, int shape) {
    return tut::ceil_div<long long>(p.m, CLUSTER_M * SHAPE_BLOCK_M[shape]) *
           tut::ceil_div<long long>(p.n, CLUSTER_N * BLOCK_N);
  }
  static long long tiles(const tut::GemmProblem& p, int shape) { return units(p, shape) * CLUSTER_M * CLUSTER_N; }

  // Stream-K's tail for a plan (StreamK above): the units shared out (0: none) and the most
  // clusters that share one. Possible for a one-split plan with more units than clusters, a last
  // round that is not full, at least one K step per cluster's range, W x (C + 1) < 2^31 (the
  // kernel's 32-bit arithmetic: K below about 15 million), and at most SK_MOST_PARTS clusters on
  // a unit (a tail of a third of the clusters or more).
  struct Tail {
    int units = 0;
    int most_parts = 0;
    StreamK sk;
  };
  static Tail tail_on(const DeviceFacts& d, const tut::GemmProblem& p, tut::GemmChoice c) {
    const Tail none;
    const long long u = units(p, c.tile), clusters = d.clusters[c.tile];
    const long long k_steps = tut::ceil_div<long long>(p.k, BLOCK_K);
    if (!has_stream_k(SHAPE_BLOCK_M[c.tile]) || !PERSISTENT || c.splits != 1 || u <= clusters || u % clusters == 0 ||
        (u % clusters) * k_steps < clusters || (u % clusters) * k_steps * (clusters + 1) >= (1LL << 31)) {
      return none;
    }
    Tail tail;
    tail.units = int(u % clusters);
    tail.sk = StreamK{int(tail.units * k_steps), int(k_steps), int(clusters)};
    for (int t = 0; t < tail.units; ++t) {
      int first = 0, parts = 0;
      tail.sk.parts_of(t, first, parts);
      tail.most_parts = std::max(tail.most_parts, parts);
    }
    return tail.most_parts <= SK_MOST_PARTS ? tail : none;  // (a short tail: more parts than the kernel adds)
  }
  // The tail the launch uses: shared out where STREAM_K = 2, or where the model finds it cheaper.
  static Tail stream_k_on(const DeviceFacts& d, const tut::GemmProblem& p, tut::GemmChoice c) {
    const Tail tail = tail_on(d, p, c);
    if (tail.units == 0 || STREAM_K == 2) return tail;
    return cost_on(d, p, c, nullptr, &tail).us < cost_on(d, p, c, nullptr, nullptr).us ? tail : Tail{};
  }

  tut::GemmWaves waves(const tut::GemmProblem& p, tut::GemmChoice c) const override {
    return waves_on(device_facts(), p, c);
  }
  // The same from given device facts (no GPU needed: the rule can be checked on any machine).
  static tut::GemmWaves waves_on(const DeviceFacts& d, const tut::GemmProblem& p, tut::GemmChoice c) {
    tut::GemmWaves w;
    const Tail tail = stream_k_on(d, p, c);
    const Cost cost = cost_on(d, p, c, &w, tail.units > 0 ? &tail : nullptr);
    w.model_us = cost.us;
    if (tail.units > 0) {
      w.note = "the last " + std::to_string(tail.units) + " units shared stream-K by " + std::to_string(tail.sk.clusters) +
               " clusters (up to " + std::to_string(tail.most_parts) + " per unit)";
    }
    if (cost.b_unreadable) w.model_us += b_in_place(cost) ? cost.b_direct_us : cost.b_copy_us;
    return w;
  }
  // The modelled time of a plan without B's load path (us), and what each path would add where
  // the TMA cannot read B: its copy, or the slower K steps of B read in place.
  struct Cost {
    double us = 0;
    double b_copy_us = 0;
    double b_direct_us = 0;
    bool b_unreadable = false;
  };
  // B read in place (cp.async) rather than copied: where its rows are unreadable by the TMA,
  // DIRECT_B allows it, the tile can (the 128-row one: see Registers), and (DIRECT_B = 1)
  // the slower K steps cost less than the copy.
  static bool b_in_place(const Cost& c) {
    return c.b_unreadable && DIRECT_B != 0 && std::isfinite(c.b_direct_us) &&
           (DIRECT_B == 2 || c.b_direct_us < c.b_copy_us);
  }
  static bool b_in_place_on(const DeviceFacts& d, const tut::GemmProblem& p, tut::GemmChoice c, bool b_unreadable) {
    const Tail tail = stream_k_on(d, p, c);
    Cost cost = cost_on(d, p, c, nullptr, tail.units > 0 ? &tail : nullptr);
    cost.b_unreadable = b_unreadable;  // (also a B pointer off 16 bytes, which the plan cannot see)
    return b_in_place(cost);
  }
  // (report: the wave arithmetic, for waves_on; tail: the plan's stream-K tail, or none.)
  static Cost cost_on(const DeviceFacts& d, const tut::GemmProblem& p, tut::GemmChoice c, tut::GemmWaves* report,
                      const Tail* tail) {
    const int bm = SHAPE_BLOCK_M[c.tile];
    tut::GemmWaves w;
    // What the harness reports: the tiles of C, a "block" = a tile's split (an item's block),
    // one at a time per SM.
    w.tiles = tut::ceil_div<long long>(p.m, bm) * tut::ceil_div<long long>(p.n, BLOCK_N);
    w.blocks = tiles(p, c.tile) * c.splits;
    w.blocks_per_sm = 1;
    w.sms = d.clusters[c.tile] * CLUSTER_N * CLUSTER_M;
    const long long k_steps = tut::ceil_div<long long>(p.k, BLOCK_K);
    w.k_steps = tut::ceil_div<long long>(k_steps, c.splits);
    if (report != nullptr) *report = w;
    // The busiest cluster's rounds, and the SMs busy at once.
    const long long items = units(p, c.tile) * c.splits;
    const long long rounds = tut::ceil_div<long long>(items, d.clusters[c.tile]);
    const double busy_sms = double(std::min<long long>(items, d.clusters[c.tile]) * CLUSTER_N * CLUSTER_M);
    // One K step: the tensor cores, the stage's fill, the floor, or the L2's share, whichever is slowest.
    const double tc_clk = double(bm) * BLOCK_N * BLOCK_K / (d.tc_fma_per_clk * TC_EFFICIENCY);
    const double fill_clk = double(bm + BLOCK_N) * BLOCK_K * 4 / FILL_BYTES_PER_CLK;
    const double step_bytes = double(bm / CLUSTER_N + BLOCK_N / CLUSTER_M) * BLOCK_K * 4;
    const double l2_clk = step_bytes * busy_sms / (L2_BYTES_PER_CLK * d.sms);
    const double clk_per_us = d.clock_ghz * 1e3;
    const double step_us = std::max({tc_clk, fill_clk, STEP_MIN_CLK, l2_clk}) / clk_per_us;
    // Split-K: the partial's store on every item, the reduction once per round (the convoy).
    const double tile_bytes = double(bm) * BLOCK_N * 4;
    double split_us = 0;
    if (c.splits > 1) {
      const int chunks = bm >= 256 ? bm / 8 : bm / 8 / 4;  // the kernel's VECS / CHUNK (one float4 a chunk at 256 rows)
      split_us = SPLIT_US + tile_bytes / STORE_BYTES_PER_US + chunks * tut::ceil_div(c.splits, SPLITS_PER_TRIP) * TRIP_US +
                 c.splits * tile_bytes / REDUCE_BYTES_PER_US;
    }
    const double round_us = double(w.k_steps) * step_us + ITEM_US + split_us;
    double compute_us = LAUNCH_US + double(rounds) * round_us;
    double busiest_steps = double(rounds) * double(w.k_steps);  // the busiest cluster's K steps
    double partials = c.splits > 1 ? 2.0 * c.splits * double(tiles(p, c.tile)) * tile_bytes : 0.0;
    if (tail != nullptr && tail->units > 0) {
      // Stream-K: the whole rounds, then each cluster's range of the tail.
      const double range_steps = double(tut::ceil_div<long long>(tail->sk.steps, tail->sk.clusters));
      const double sk_us = range_steps * step_us * (1.0 + SK_STEP_EXTRA) + 2 * ITEM_US + SK_US;
      compute_us = LAUNCH_US + double(rounds - 1) * round_us + sk_us;
      busiest_steps = double(rounds - 1) * double(w.k_steps) + range_steps;
      partials = 2.0 * (tail->most_parts - 1) * tail->units * CLUSTER_M * CLUSTER_N * tile_bytes;
    }
    const double bytes =
        4.0 * (double(p.m) * p.k + double(p.k) * p.n + double(p.m) * p.n * (p.beta != 0.0f ? 2 : 1)) + partials;
    const double dram_us = LAUNCH_US + bytes / (d.dram_bytes_per_us * DRAM_EFFICIENCY);
    Cost cost;
    cost.us = std::max(compute_us, dram_us);
    // B's paths: the copy (read and write) before the kernel, or every K step of the busiest
    // cluster at DIRECT_STEP_US at least (inside the kernel: DRAM may still hide it).
    cost.b_unreadable = !tma_compatible_ld(p.ldb);
    cost.b_copy_us = 2.0 * 4.0 * double(p.k) * p.n / COPY_BYTES_PER_US;
    const double direct_extra_us = busiest_steps * std::max(0.0, DIRECT_STEP_US - step_us);
    cost.b_direct_us = reads_b_in_place(bm) ? std::max(compute_us + direct_extra_us, dram_us) - cost.us
                                            : std::numeric_limits<double>::infinity();  // (the tile cannot)
    if (!tma_compatible_ld(p.lda)) cost.us += 2.0 * 4.0 * double(p.m) * p.k / COPY_BYTES_PER_US;
    return cost;
  }
  static bool tma_compatible_ld(int ld) { return ld % 4 == 0; }

  // Rows of the tile grid past M: work the tensor cores do on zeros.
  static long long padded_rows(const tut::GemmProblem& p, int shape) {
    return tut::ceil_div<long long>(p.m, SHAPE_BLOCK_M[shape]) * SHAPE_BLOCK_M[shape] - p.m;
  }

  // The rule: the least modelled time over every shape and split count. Ties (plans that all wait
  // for DRAM, say) go to the shape with fewer rows past M, then to the larger tile and to fewer
  // splits.
  tut::GemmChoice choose(const tut::GemmProblem& p, tut::GemmChoice forced) const override {
    return choose_on(device_facts(), p, forced);
  }
  static tut::GemmChoice choose_on(const DeviceFacts& d, const tut::GemmProblem& p, tut::GemmChoice forced) {
    if (forced.tile >= 0 && forced.splits >= 1) return forced;
    tut::GemmChoice best;
    double best_us = 0;
    for (int t = 0; t < NUM_SHAPES; ++t) {  // larger tiles first: they win ties
      if (forced.tile >= 0 && t != forced.tile) continue;
      for (int s = 1; s <= most_splits(p); ++s) {  // fewer splits first: they win ties
        if (forced.splits >= 1 && s != forced.splits) continue;
        const double us = waves_on(d, p, tut::GemmChoice{t, s}).model_us;
        const bool tie = best.tile >= 0 && us <= best_us * (1.0 + 1e-9) && us >= best_us * (1.0 - 1e-9);
        if (best.tile < 0 || us < best_us * (1.0 - 1e-9) || (tie && padded_rows(p, t) < padded_rows(p, best.tile))) {
          best = tut::GemmChoice{t, s};
          best_us = us;
        }
      }
    }
    return best;
  }

  // The workspace of a split plan: the partial tiles (S x tiles x BLOCK_M x BLOCK_N floats), then
  // one arrival counter per tile.
  static std::size_t partials_bytes(const tut::GemmProblem& p, tut::GemmChoice c) {
    return std::size_t(c.splits) * tiles(p, c.tile) * SHAPE_BLOCK_M[c.tile] * BLOCK_N * sizeof(float);
  }
  // Stream-K's: (most parts - 1) partial tiles per tile of the tail, then one counter per tile.
  static std::size_t sk_partials_bytes(const Tail& tail, int shape) {
    return std::size_t(tail.most_parts - 1) * tail.units * CLUSTER_M * CLUSTER_N * SHAPE_BLOCK_M[shape] * BLOCK_N *
           sizeof(float);
  }
  std::size_t workspace_bytes(const tut::GemmProblem& p, tut::GemmChoice c) const override {
    if (c.splits <= 1) {
      const Tail tail = stream_k_on(device_facts(), p, c);
      if (tail.units == 0) return 0;
      return sk_partials_bytes(tail, c.tile) + std::size_t(tail.units) * CLUSTER_M * CLUSTER_N * sizeof(int);
    }
    return partials_bytes(p, c) + tiles(p, c.tile) * sizeof(int);
  }

  void launch(const tut::GemmProblem& p, tut::GemmChoice c, const float* A, const float* B, float* C,
              void* workspace, cudaStream_t stream) const override {
    const DeviceFacts& d = device_facts();  // also: the shared-memory consent, once
    const int bm = SHAPE_BLOCK_M[c.tile];
    static Scratch scratch_a, scratch_b;
    int lda = p.lda, ldb = p.ldb;
    const float* a = tma_readable(A, p.m, p.k, lda, scratch_a, stream);
    // B's load path is part of the plan: read in place where the model finds that cheaper than the
    // copy (and DIRECT_B allows it), copied otherwise.
    const bool direct_b = !tma_compatible(B, ldb) && b_in_place_on(d, p, c, true);
    const float* b = direct_b ? B : tma_readable(B, p.k, p.n, ldb, scratch_b, stream);
    // A: (M x K), boxes of A_BOX_M rows x BLOCK_K columns. B: (K x N), boxes of BLOCK_K rows x
    // B_BOX_N (a direct B needs no map: the kernel gets A's again, unused).
    const CUtensorMap map_a = cached_tensor_map(a, p.m, p.k, lda, bm / CLUSTER_N, BLOCK_K);
    const CUtensorMap map_b = direct_b ? map_a : cached_tensor_map(b, p.k, p.n, ldb, BLOCK_K, B_BOX_N);

    // Persistent: as many clusters as fit on the GPU at once (one block per SM), or one per item
    // of work if there are fewer. The grid is CLUSTER_M blocks tall; its width counts clusters.
    const long long items = units(p, c.tile) * c.splits;
    const long long clusters = PERSISTENT ? std::min<long long>(items, d.clusters[c.tile]) : items;
    const dim3 grid(unsigned(clusters * CLUSTER_N), CLUSTER_M);
    float4* partials = nullptr;
    int* counters = nullptr;
    const Tail tail = stream_k_on(d, p, c);  // (none for a split plan)
    if (c.splits > 1 || tail.units > 0) {
      partials = static_cast<float4*>(workspace);
      const std::size_t bytes = c.splits > 1 ? partials_bytes(p, c) : sk_partials_bytes(tail, c.tile);
      counters = reinterpret_cast<int*>(static_cast<char*>(workspace) + bytes);
    }
    kernel_for(c.tile)<<<grid, NUM_THREADS, smem_bytes_for(c.tile), stream>>>(
        map_a, map_b, p.m, p.n, p.k, p.alpha, p.beta, C, p.ldc, direct_b ? B : nullptr, ldb, c.splits, tail.units,
        partials, counters);
    TUT_CHECK_LAUNCH();
  }
};

inline const Planner& planner() {
  static const Planner instance;
  return instance;
}

}  // namespace ch12
