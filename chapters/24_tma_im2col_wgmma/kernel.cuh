// Chapter 24: implicit GEMM on Hopper: TMA im2col + wgmma, channels last (TF32).
//
// What changed:  chapter 23's TF32 implicit GEMM moved onto chapter 12's machinery, which needs the
//                tensors channels-last: x NHWC, w KRSC, y NPQK. The GEMM is now
//                  D[pixel][k] = sum over (r, s, c) of X(pixel shifted by r, s)[c] * W[k][r][s][c],
//                M = N*P*Q output pixels, N = K filters, and both operands are K-major (channels
//                contiguous), the layout TF32 wgmma reads from shared memory.
//                (1) The gather is gone from the SMs: the TMA's im2col mode copies, for one filter
//                offset (r, s) and one span of 32 channels, the 32 channels of BLOCK_M consecutive
//                output pixels' input pixels into shared memory, 128-byte swizzled, zeros where the
//                pixel lies in the padding, conv stride as its traversal stride. The filter tile is
//                a tiled copy of the 4D KRSC tensor. One thread issues both per K step.
//                (2) Chapter 12's pipeline: a ring of STAGES buffers with full/empty mbarriers, a
//                producer warpgroup (setmaxnreg down) and two consumer warpgroups (setmaxnreg up),
//                a persistent grid whose producer fills the ring for the next tile while the
//                consumers store the last.
//                (3) Both wgmma operands come from shared memory (descriptors): no fragment loads,
//                no rounding code (the TMA rounds to TF32 as it copies). Accumulators in registers;
//                the epilogue writes each consumer's piece of the tile into a swizzled staging
//                buffer, 32 filters at a time, and a TMA store copies it to NPQK (edges clipped by
//                the TMA; from registers instead where K % 4 != 0).
//                (4) A plan per layer: four tile shapes (256 x 128, 256 x 64, 128 x 256, 128 x 128
//                pixels x filters) and a split of the reduction for the small images.
//                Fallbacks, inside the timed run: few channels at a stride (r50_conv1: C = 3,
//                stride 2) -> space to depth: 2 x 2 pixels of C rounded up to 4 become one pixel of
//                16 channels, a stride-1 convolution with a 4 x 4 filter; other C % 4 != 0 (the TMA
//                wants 16-byte rows) -> x and w copied with C rounded up to 4; a shape the im2col
//                mode cannot express (stride > 8, padding or filter reach past its 8-bit corners)
//                -> the im2col matrix materialized and treated as a 1x1 convolution.
// Prediction:    (written before the first measurement) seed_3x3 is 59.2 GFLOP: 0.111 ms at the
//                TF32 peak (535 TFLOP/s at 1980 MHz). A 256 x 128 tile takes 18 K steps of 32
//                channels, 1024 tensor-core cycles each (256 x 128 x 32 multiply-adds at 1024 per
//                cycle per SM), while the TMA brings 48 KB per step: 48 bytes per cycle into each SM,
//                as in chapter 12 (without multicast). 1568 tiles on 132 SMs: 11.9 waves. With the
//                store of y (205 MB) not fully hidden we expect 60-70% of peak: ~0.17 ms, at or
//                below cuDNN's NHWC time.
// Metric:        the tensor pipe's share of the elapsed cycles (Nsight Compute, Compute Workload
//                Analysis); issue slots used stay low (no gather, no fragment loads).
// Measured:      (H100, committed rows; README.md) seed_3x3 0.2020 ms, 293 TFLOP/s (55% of the 535
//                TFLOP/s peak): 101.0% of cuDNN's best TF32 time (NHWC, 0.2040 ms), short of the
//                prediction. Ahead of cuDNN's best on 9 of 10 layers, 123.7% in geometric mean;
//                behind on r50_c3_3x3_s2 (97.0%). The tensor pipe is busy 64% of the elapsed cycles:
//                the epilogue stops the math (ping-pong consumers hide it, tuning run 32, but lose
//                4.4% over the table).
// Assumes:       sm_90a. Any problem; x, w, y 16-byte aligned (cudaMalloc); fast path C % 4 == 0,
//                stride <= 8, padding <= 128, pad - (R - 1) * dil in [-128, 127] (and the same for
//                W), (R - 1) * dil <= 254. Shared memory: STAGES x 48 KB + 2 x 16 KB (staging) +
//                1 KB, one block per SM.
#pragma once

#include <cuda.h>          // CUtensorMap and its enums (types only: nothing here links libcuda)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000, PFN_cuTensorMapEncodeIm2col_v12000
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "tut/conv/harness.cuh"

namespace ch24 {

// ---- Tunables ----------------------------------------------------------------------------------
// CH channels per copy: 32 floats = 128 bytes, one row of the 128-byte swizzle (a pixel's row of the
// input tile, a filter's row of the filter tile). A reader may try STAGES = 3 (less latency
// hidden); the tile shapes are the Tile<...> aliases of the host side (shapes()).
constexpr int CH = 32;
constexpr int STAGES = 4;
constexpr int WARP_SIZE = 32;
constexpr int WARPGROUP = 4 * WARP_SIZE;
constexpr int CONSUMERS = 2;                              // consumer warpgroups
constexpr int NUM_THREADS = (1 + CONSUMERS) * WARPGROUP;  // + one producer warpgroup: 384
constexpr int WGMMA_M = 64;                               // wgmma.m64nNk8: 64 pixels x N filters x 8 channels
constexpr int WGMMA_K = 8;
constexpr int SWIZZLE_BYTES = 128;
constexpr int SWIZZLE_ATOM_BYTES = 8 * SWIZZLE_BYTES;  // 8 rows of 128 bytes: the unit the swizzle repeats over
static_assert(CH * 4 == SWIZZLE_BYTES, "a pixel's (or filter's) channels of one K step fill one swizzle row");
static_assert(CH % WGMMA_K == 0, "whole wgmma K steps per stage");
// The epilogue's TMA store writes boxes of OUT_BOX filters (128 bytes: one swizzle row) x a
// consumer's pixels.
constexpr int OUT_BOX = SWIZZLE_BYTES / 4;

// Registers: 128 x (PRODUCER_REGS + CONSUMERS x CONSUMER_REGS) <= 65536, multiples of 8.
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = 232;
static_assert(WARPGROUP * (PRODUCER_REGS + CONSUMERS * CONSUMER_REGS) <= 65536, "the SM has 64K registers");

// A tile shape: BLOCK_N filters (wgmma's N) by BLOCK_M = CONSUMERS x M_WG x 64 pixels; consumer c owns
// pixels [c * M_WG * 64, (c + 1) * M_WG * 64) of the tile: M_WG wgmmas of 64 x BLOCK_N per 8 channels.
template <int BLOCK_N_, int M_WG_>
struct Tile {
  static constexpr int BLOCK_N = BLOCK_N_;
  static constexpr int M_WG = M_WG_;
  static constexpr int BLOCK_M = CONSUMERS * M_WG * WGMMA_M;
  static constexpr int ACC = BLOCK_N / 2;  // accumulators per thread per 64 x BLOCK_N wgmma
  static constexpr int X_TILE_BYTES = BLOCK_M * SWIZZLE_BYTES;
  static constexpr int W_TILE_BYTES = BLOCK_N * SWIZZLE_BYTES;
  static constexpr int STAGE_BYTES = X_TILE_BYTES + W_TILE_BYTES;  // what a full barrier waits for
  // The epilogue's staging buffer, one per consumer: its M_WG * 64 pixels x OUT_BOX filters (one
  // 128-byte swizzled row per pixel), the box one TMA store writes to y.
  static constexpr int OUT_ROWS = M_WG * WGMMA_M;
  static constexpr int OUT_BYTES = OUT_ROWS * SWIZZLE_BYTES;
  static constexpr int SMEM_BYTES =
      STAGES * STAGE_BYTES + CONSUMERS * OUT_BYTES + SWIZZLE_ATOM_BYTES + 2 * STAGES * 8;
  static_assert(BLOCK_N == 64 || BLOCK_N == 128 || BLOCK_N == 256, "wgmma_tf32 below exists for N = 64, 128, 256");
  static_assert(BLOCK_N % OUT_BOX == 0, "the epilogue stores whole boxes of OUT_BOX filters");
  static_assert(BLOCK_M <= 256 && BLOCK_N <= 256, "a TMA box (or im2col column) is at most 256 long");
  static_assert(M_WG * ACC <= 128, "at most 128 accumulators per consumer thread");
  static_assert(STAGE_BYTES % SWIZZLE_ATOM_BYTES == 0 && X_TILE_BYTES % SWIZZLE_ATOM_BYTES == 0,
                "tiles start on 1024-byte boundaries");
  static_assert(SMEM_BYTES <= 227 * 1024, "an H100 block has at most 227 KB of shared memory");
};

// ---- PTX wrappers (chapter 12's, plus the im2col copy and a descriptor-only wgmma) ----------------

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(arrivals) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
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

// Tiled copy of the box at (c0, c1, c2, c3) of a 4D tensor map (the filter: channel, s, r, k).
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar)
      : "memory");
}

// The im2col copy: the map's pixelsPerColumn pixels, starting at input coordinates (w, h) of image
// n, walked in the map's traversal stride through its bounding box (row by row, image by image),
// each shifted by the filter offset (off_w, off_h); channels c .. c + channelsPerPixel of each. A
// shifted pixel outside the image, or a pixel past the last image, reads zeros.
__device__ __forceinline__ void tma_load_im2col(uint32_t dst, const CUtensorMap* map, int c, int w, int h, int n,
                                                uint16_t off_w, uint16_t off_h, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar), "h"(off_w), "h"(off_h)
      : "memory");
}

// TMA store of the box at (c0, c1, c2) of a 3D tensor map (y: filter, pixel, split) from shared
// memory; completes in bulk groups (commit, then wait: .read = until the source may be overwritten).
__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(src), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
// Makes this thread's shared-memory writes visible to the TMA (the async proxy).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// A barrier for the 128 threads of one warpgroup (id 1 + consumer; 0 is __syncthreads').
__device__ __forceinline__ void warpgroup_sync(int id) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "n"(WARPGROUP) : "memory");
}

template <int REGS>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(REGS));
}
template <int REGS>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(REGS));
}

// wgmma's shared-memory descriptor for a K-major operand in the 128-byte swizzle (chapter 12):
// address / 16, leading byte offset 1 (unused here), stride byte offset 1024 / 16 (8 rows), mode 1.
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
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void fence_accumulators(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// d (64 x N) = (scale_d ? d : 0) + A (64 x 8) * B (8 x N): both operands K-major in shared memory,
// named by their descriptors (pixels x channels, filters x channels). N = 2 x the size of d.
// clang-format off
__device__ __forceinline__ void wgmma_tf32(float (&d)[32], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32\n"
      "{%0, %1, %2, %3, %4, %5, %6, %7,"
      " %8, %9, %10, %11, %12, %13, %14, %15,"
      " %16, %17, %18, %19, %20, %21, %22, %23,"
      " %24, %25, %26, %27, %28, %29, %30, %31},\n"
      "%32, %33, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_tf32(float (&d)[64], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32\n"
      "{%0, %1, %2, %3, %4, %5, %6, %7,"
      " %8, %9, %10, %11, %12, %13, %14, %15,"
      " %16, %17, %18, %19, %20, %21, %22, %23,"
      " %24, %25, %26, %27, %28, %29, %30, %31,"
      " %32, %33, %34, %35, %36, %37, %38, %39,"
      " %40, %41, %42, %43, %44, %45, %46, %47,"
      " %48, %49, %50, %51, %52, %53, %54, %55,"
      " %56, %57, %58, %59, %60, %61, %62, %63},\n"
      "%64, %65, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_tf32(float (&d)[128], uint64_t desc_a, uint64_t desc_b, uint32_t scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
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
      "%128, %129, p, 1, 1;\n"
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
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
// clang-format on

// ---- The problem as the kernel reads it -----------------------------------------------------------
// The convolution the TMA sees (the harness's problem, or the padded or flattened copy of it that a
// fallback made): an NHWC input of c channels (c % 4 == 0), a KRSC filter, an NPQK output.
struct Params {
  int pixels;           // N*P*Q: the GEMM's M
  int filters;          // K: the GEMM's N, and the row length of y
  int q, pq;            // output width, output pixels per image
  int stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  int s;                // filter width
  int cblocks;          // channel spans of CH per filter offset: ceil(c / CH)
  int chunks;           // K steps of the whole reduction: R * S * cblocks
  int chunks_per_split; // K steps per unit of work
  int splits;           // units per tile along the reduction
  int tiles_n;          // filter tiles
  int units;            // tiles_m * tiles_n * splits
  float* out;           // y, or the split partials (splits > 1): unit (tile, split) writes out + split * split_stride
  std::size_t split_stride;
  int tma_store;        // 1: the epilogue stores through shared memory and map_y (K % 4 == 0); 0: from registers
};

// ---- The kernel ------------------------------------------------------------------------------------
// Who does what, per block, for each unit of work (a tile of BLOCK_M pixels x BLOCK_N filters and one
// split of its reduction) in turn:
//   producer (warpgroup 0, one thread): per K step (one filter offset r, s and one span of CH
//     channels), waits until the next stage is empty, arms its full barrier with the stage's bytes,
//     issues the im2col copy of the pixels and the tiled copy of the filters.
//   consumers (warpgroups 1, 2): per K step, wait until the stage is full, issue CH / 8 x M_WG
//     wgmmas from the two descriptors, release the previous stage once its wgmmas are done; after the
//     unit's last K step, store the accumulators (the producer is already filling the next unit's).
template <class T>
__global__ void __launch_bounds__(NUM_THREADS, 1)
    im2col_wgmma_kernel(const __grid_constant__ CUtensorMap map_x, const __grid_constant__ CUtensorMap map_w,
                        const __grid_constant__ CUtensorMap map_y, const Params prm) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + SWIZZLE_ATOM_BYTES - 1) / SWIZZLE_ATOM_BYTES * SWIZZLE_ATOM_BYTES;
  const uint32_t out_buf = base + STAGES * T::STAGE_BYTES;       // CONSUMERS staging buffers of OUT_BYTES
  const uint32_t full_bar = out_buf + CONSUMERS * T::OUT_BYTES;  // "stage s holds data"
  const uint32_t empty_bar = full_bar + STAGES * 8;          // "stage s may be overwritten"
  const int warpgroup = threadIdx.x / WARPGROUP;

  // Unit u -> tile (tm, tn) and split sp; split sp covers K steps [k_begin, k_end).
  struct Unit {
    int tm, tn, k_begin, k_end;
    int sp;
  };
  auto unit_of = [&](int u) {
    Unit w;
    w.sp = u % prm.splits;
    const int t = u / prm.splits;
    w.tn = t % prm.tiles_n;
    w.tm = t / prm.tiles_n;
    w.k_begin = w.sp * prm.chunks_per_split;
    w.k_end = min(prm.chunks, w.k_begin + prm.chunks_per_split);
    return w;
  };

  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full_bar + 8 * s, 1);                                        // the producer's arrive.expect_tx
      mbar_init(empty_bar + 8 * s, CONSUMERS * (WARPGROUP / WARP_SIZE));  // one arrival per consumer warp
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");  // visible to the TMA (async proxy)
  }
  __syncthreads();

  if (warpgroup == 0) {
    // ---- producer ----
    setmaxnreg_dec<PRODUCER_REGS>();
    if (threadIdx.x == 0) {
      int it = 0;  // K steps issued so far, over all units: stage it % STAGES, round it / STAGES
      for (int u = blockIdx.x; u < prm.units; u += gridDim.x) {
        const Unit w = unit_of(u);
        // The tile's first pixel (n, p, q), and where its filter window starts in the input: the
        // im2col copy's coordinates (the padding makes them negative at the top and left edges).
        const int m0 = w.tm * T::BLOCK_M;
        const int n = m0 / prm.pq;
        const int pq = m0 - n * prm.pq;
        const int p = pq / prm.q;
        const int q = pq - p * prm.q;
        const int h0 = p * prm.stride_h - prm.pad_h, w0 = q * prm.stride_w - prm.pad_w;
        const int k0 = w.tn * T::BLOCK_N;
        // K step kc: filter offset rs = kc / cblocks (r = rs / S, s = rs % S), channels
        // (kc % cblocks) * CH ..; walked incrementally.
        int rs = w.k_begin / prm.cblocks;
        int cb = w.k_begin - rs * prm.cblocks;
        int r = rs / prm.s;
        int s = rs - r * prm.s;
        for (int kc = w.k_begin; kc < w.k_end; ++kc, ++it) {
          const int st = it % STAGES;
          mbar_wait(empty_bar + 8 * st, ((it / STAGES) & 1) ^ 1);  // round 0 passes at once
          mbar_arrive_expect_tx(full_bar + 8 * st, T::STAGE_BYTES);
          const uint32_t x_dst = base + st * T::STAGE_BYTES;
          tma_load_im2col(x_dst, &map_x, cb * CH, w0, h0, n, uint16_t(s * prm.dil_w), uint16_t(r * prm.dil_h),
                          full_bar + 8 * st);
          tma_load_4d(x_dst + T::X_TILE_BYTES, &map_w, cb * CH, s, r, k0, full_bar + 8 * st);
          if (++cb == prm.cblocks) {
            cb = 0;
            if (++s == prm.s) {
              s = 0;
              ++r;
            }
          }
        }
      }
    }
  } else {
    // ---- consumers ----
    setmaxnreg_inc<CONSUMER_REGS>();
    const int consumer = warpgroup - 1;
    const int warp = (threadIdx.x / WARP_SIZE) % 4;  // rows 16*warp .. of each 64-row wgmma tile
    const int lane = threadIdx.x % WARP_SIZE;
    const int g = lane / 4, t = lane % 4;

    float acc[T::M_WG][T::ACC];
    auto fence_all = [&] {
#pragma unroll
      for (int i = 0; i < T::M_WG; ++i) fence_accumulators(acc[i]);
    };
    auto release = [&](int st) {
      if (lane == 0) mbar_arrive(empty_bar + 8 * st);
    };

    int it = 0;
    for (int u = blockIdx.x; u < prm.units; u += gridDim.x) {
      const Unit w = unit_of(u);
      const int steps = w.k_end - w.k_begin;
      for (int step = 0; step < steps; ++step, ++it) {
        const int st = it % STAGES;
        mbar_wait(full_bar + 8 * st, (it / STAGES) & 1);
        const uint32_t x_tile = base + st * T::STAGE_BYTES + consumer * T::M_WG * WGMMA_M * SWIZZLE_BYTES;
        const uint32_t w_tile = base + st * T::STAGE_BYTES + T::X_TILE_BYTES;
        fence_all();
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < CH / WGMMA_K; ++kk) {
          // Channels 8*kk .. +8: 32 bytes further along each 128-byte row. The unit's first
          // wgmma of each accumulator tile overwrites it (scale_d = 0).
          const uint64_t desc_w = smem_descriptor(w_tile + kk * WGMMA_K * 4);
#pragma unroll
          for (int i = 0; i < T::M_WG; ++i) {
            wgmma_tf32(acc[i], smem_descriptor(x_tile + i * WGMMA_M * SWIZZLE_BYTES + kk * WGMMA_K * 4), desc_w,
                       (step > 0 || kk > 0) ? 1u : 0u);
          }
        }
        wgmma_commit();
        wgmma_wait<1>();  // the previous K step's wgmmas are done: its stage is free
        fence_all();
        if (step > 0) release((it + STAGES - 1) % STAGES);
      }
      wgmma_wait<0>();
      fence_all();
      release((it + STAGES - 1) % STAGES);  // the unit's last stage

      // Epilogue. acc[i][4*j + 2*h + v] is D[16*warp + g + 8*h][8*j + 2*t + v] of wgmma tile i:
      // pixel m = m0 + (consumer*M_WG + i)*64 + 16*warp + g + 8*h, filter k = k0 + 8*j + 2*t + v,
      // y[m][k] (NPQK).
      const int m0 = w.tm * T::BLOCK_M + consumer * T::OUT_ROWS;  // this consumer's first pixel
      const int k0 = w.tn * T::BLOCK_N;
      if (prm.tma_store) {
        // Through shared memory: per box of OUT_BOX filters, the warpgroup writes its OUT_ROWS x 32
        // values into its staging buffer (row = pixel, 128 bytes, 16-byte chunks swizzled as the
        // TMA expects: chunk c of row r at c ^ (r % 8)), then one thread hands the box to the TMA,
        // which writes it to y (rows past N*P*Q and filters past K are clipped) while the
        // warpgroup goes on to the next box and the next tile. Before a box overwrites the
        // buffer, the TMA must have read the previous one.
        const uint32_t buf = out_buf + consumer * T::OUT_BYTES;
        const bool leader = threadIdx.x % WARPGROUP == 0;
#pragma unroll
        for (int b = 0; b < T::BLOCK_N / OUT_BOX; ++b) {
          if (k0 + b * OUT_BOX >= prm.filters) break;  // the same for the whole warpgroup
          if (leader) bulk_wait_read();
          warpgroup_sync(1 + consumer);
#pragma unroll
          for (int i = 0; i < T::M_WG; ++i) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int row = i * WGMMA_M + 16 * warp + g + 8 * h;  // row % 8 == g
#pragma unroll
              for (int jj = 0; jj < OUT_BOX / 8; ++jj) {
                const int j = b * (OUT_BOX / 8) + jj;  // filters 8*jj + 2*t, +1 of the box: chunk 2*jj + t/2
                const uint32_t addr = buf + row * SWIZZLE_BYTES + (((2 * jj + t / 2) ^ g) * 16) + (t % 2) * 8;
                asm volatile("st.shared.v2.f32 [%0], {%1, %2};" ::"r"(addr), "f"(acc[i][4 * j + 2 * h]),
                             "f"(acc[i][4 * j + 2 * h + 1])
                             : "memory");
              }
            }
          }
          fence_proxy_async();
          warpgroup_sync(1 + consumer);
          if (leader) {
            tma_store_3d(&map_y, buf, k0 + b * OUT_BOX, m0, w.sp);
            bulk_commit();
          }
        }
      } else {
        // From registers (K % 4 != 0: y's rows are not 16-byte aligned for the TMA). A warp's store
        // writes 8 pixels x 32 contiguous bytes.
        float* out = prm.out + std::size_t(w.sp) * prm.split_stride;
        const bool pairs = prm.filters % 2 == 0;  // rows of y start 8-byte aligned
#pragma unroll
        for (int i = 0; i < T::M_WG; ++i) {
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int m = m0 + i * WGMMA_M + 16 * warp + g + 8 * h;
            if (m >= prm.pixels) continue;
            float* row = out + std::size_t(m) * prm.filters;
#pragma unroll
            for (int j = 0; j < T::BLOCK_N / 8; ++j) {
              const int k = k0 + 8 * j + 2 * t;
              const float v0 = acc[i][4 * j + 2 * h], v1 = acc[i][4 * j + 2 * h + 1];
              if (pairs && k + 1 < prm.filters) {
                *reinterpret_cast<float2*>(row + k) = make_float2(v0, v1);
              } else {
                if (k < prm.filters) row[k] = v0;
                if (k + 1 < prm.filters) row[k + 1] = v1;
              }
            }
          }
        }
      }
    }
    // The last boxes are written before the block ends.
    if (prm.tma_store && threadIdx.x % WARPGROUP == 0) bulk_wait();
  }
}

// ---- Helper kernels: the fallbacks' copies and split-K's sum -----------------------------------------
constexpr int AUX_THREADS = 256;

// dst[i][c] = c < c_src ? src[i][c_src] : 0 for `rows` rows of c_dst >= c_src channels: x (NHWC) or
// w (KRSC) with its channels rounded up to a multiple of 4, the TMA's 16-byte rows.
__global__ void __launch_bounds__(AUX_THREADS)
    pad_channels_kernel(const float* __restrict__ src, float* __restrict__ dst, long long rows, int c_src, int c_dst) {
  const long long total = rows * c_dst;
  for (long long i = blockIdx.x * (long long)AUX_THREADS + threadIdx.x; i < total;
       i += (long long)gridDim.x * AUX_THREADS) {
    const long long row = i / c_dst;
    const int c = int(i - row * c_dst);
    dst[i] = c < c_src ? src[row * c_src + c] : 0.0f;
  }
}

// The im2col matrix, NPQ rows x R*S*c columns (column (r*S + s)*c + ch), of an NHWC input x with c
// channels: row m is output pixel (n, p, q), its element the input pixel the tap reads, or 0 in the
// padding. The fallback for shapes the im2col mode cannot express.
__global__ void __launch_bounds__(AUX_THREADS)
    im2col_kernel(const float* __restrict__ x, float* __restrict__ col, tut::ConvProblem p, int c) {
  const long long taps = (long long)p.r * p.s * c;
  const long long total = (long long)p.n * p.p * p.q * taps;
  for (long long i = blockIdx.x * (long long)AUX_THREADS + threadIdx.x; i < total;
       i += (long long)gridDim.x * AUX_THREADS) {
    const long long m = i / taps;
    const int tap = int(i - m * taps);
    const int ch = tap % c, rs = tap / c;
    const int r = rs / p.s, s = rs % p.s;
    const int n = int(m / (p.p * p.q)), pq = int(m % (p.p * p.q));
    const int ih = (pq / p.q) * p.stride_h - p.pad_h + r * p.dil_h;
    const int iw = (pq % p.q) * p.stride_w - p.pad_w + s * p.dil_w;
    const bool inside = ih >= 0 && ih < p.h && iw >= 0 && iw < p.w;
    col[i] = inside ? x[((std::size_t(n) * p.h + ih) * p.w + iw) * c + ch] : 0.0f;
  }
}

// Space to depth, the fallback for few channels at a stride (r50_conv1: C = 3, stride 2): an
// fh x fw block of input pixels becomes one pixel of fh*fw*cf channels, and the strided convolution
// one of stride 1 on the folded tensor (Fold below has the index maps). x' (NHWC, folded):
//   x'[n][h'][w'][(eh*fw + ew)*cf + c] = x[n][fh*h' + eh][fw*w' + ew][c], 0 outside x or for c >= C.
struct Fold {
  int fh, fw;          // the strides: pixels folded per axis
  int cf;              // channels per folded sub-pixel (>= C, a multiple of 4)
  int h2, w2;          // folded extents: ceil(H / fh), ceil(W / fw)
  int r2, s2;          // folded filter extents
  int amin_h, amin_w;  // tap f of the original filter lands on folded tap floor((f - pad) / stride) - amin
};
__global__ void __launch_bounds__(AUX_THREADS)
    fold_input_kernel(const float* __restrict__ x, float4* __restrict__ xf, tut::ConvProblem p, Fold f) {
  // One thread per 4 channels (cf % 4 == 0): a 16-byte store.
  const int q2 = f.fh * f.fw * f.cf / 4;  // float4s per folded pixel
  const long long total = (long long)p.n * f.h2 * f.w2 * q2;
  for (long long i = blockIdx.x * (long long)AUX_THREADS + threadIdx.x; i < total;
       i += (long long)gridDim.x * AUX_THREADS) {
    const long long pix = i / q2;
    const int ch = int(i - pix * q2) * 4;
    const int sub = ch / f.cf, c0 = ch % f.cf;
    const int w2 = int(pix % f.w2);
    const long long nh = pix / f.w2;
    const int h2 = int(nh % f.h2), n = int(nh / f.h2);
    const int ih = h2 * f.fh + sub / f.fw, iw = w2 * f.fw + sub % f.fw;
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (ih < p.h && iw < p.w) {
      const float* src = x + ((std::size_t(n) * p.h + ih) * p.w + iw) * p.c;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        if (c0 + e < p.c) v[e] = src[c0 + e];
      }
    }
    xf[i] = make_float4(v[0], v[1], v[2], v[3]);
  }
}
// w' (KRSC, folded): w'[k][r'][s'][(eh*fw + ew)*cf + c] = w[k][r][s][c] where r = fh*(r' + amin_h) +
// eh + pad_h (and the same for s), 0 where r or s falls outside the filter or c >= C.
__global__ void __launch_bounds__(AUX_THREADS)
    fold_filter_kernel(const float* __restrict__ w, float* __restrict__ wf, tut::ConvProblem p, Fold f) {
  const int c2 = f.fh * f.fw * f.cf;
  const long long total = (long long)p.k * f.r2 * f.s2 * c2;
  for (long long i = blockIdx.x * (long long)AUX_THREADS + threadIdx.x; i < total;
       i += (long long)gridDim.x * AUX_THREADS) {
    const long long tap = i / c2;
    const int ch = int(i - tap * c2);
    const int sub = ch / f.cf, c = ch % f.cf;
    const int s2 = int(tap % f.s2);
    const long long kr = tap / f.s2;
    const int r2 = int(kr % f.r2), k = int(kr / f.r2);
    const int r = f.fh * (r2 + f.amin_h) + sub / f.fw + p.pad_h;
    const int s = f.fw * (s2 + f.amin_w) + sub % f.fw + p.pad_w;
    const bool inside = c < p.c && r >= 0 && r < p.r && s >= 0 && s < p.s;
    wf[i] = inside ? w[((std::size_t(k) * p.r + r) * p.s + s) * p.c + c] : 0.0f;
  }
}

// Split-K's second pass: y[i] = part[0][i] + part[1][i] + ..., in that order every run.
__global__ void __launch_bounds__(AUX_THREADS)
    sum_splits_kernel(const float* __restrict__ part, float* __restrict__ y, long long count, long long stride,
                      int splits) {
  const long long n4 = count / 4;
  for (long long i = blockIdx.x * (long long)AUX_THREADS + threadIdx.x; i < n4;
       i += (long long)gridDim.x * AUX_THREADS) {
    float4 sum = reinterpret_cast<const float4*>(part)[i];
    for (int s = 1; s < splits; ++s) {
      const float4 v = reinterpret_cast<const float4*>(part + s * stride)[i];
      sum.x += v.x;
      sum.y += v.y;
      sum.z += v.z;
      sum.w += v.w;
    }
    reinterpret_cast<float4*>(y)[i] = sum;
  }
  // The last count % 4 elements, by the first threads.
  const long long i = n4 * 4 + blockIdx.x * (long long)AUX_THREADS + threadIdx.x;
  if (i < count && blockIdx.x * (long long)AUX_THREADS + threadIdx.x < 4) {
    float sum = part[i];
    for (int s = 1; s < splits; ++s) sum += part[s * stride + i];
    y[i] = sum;
  }
}

// ---- Host side ------------------------------------------------------------------------------------

// The tile shapes a plan may use (one kernel instance each).
using Tile256x128 = Tile<128, 2>;  // 256 pixels x 128 filters
using Tile256x64 = Tile<64, 2>;    // 256 x 64: layers with 64 filters
using Tile128x256 = Tile<256, 1>;  // 128 x 256: many filters, few pixels
using Tile128x128 = Tile<128, 1>;  // 128 x 128: 128 filters, few pixels
struct ShapeInfo {
  int block_m, block_n, stage_bytes, smem_bytes;
  int out_rows;  // pixels per TMA store box (a consumer's)
  void (*kernel)(const CUtensorMap, const CUtensorMap, const CUtensorMap, const Params);
};
template <class T>
constexpr ShapeInfo shape_info() {
  return {T::BLOCK_M, T::BLOCK_N, T::STAGE_BYTES, T::SMEM_BYTES, T::OUT_ROWS, im2col_wgmma_kernel<T>};
}
inline const ShapeInfo* shapes() {
  static const ShapeInfo s[] = {shape_info<Tile256x128>(), shape_info<Tile256x64>(), shape_info<Tile128x256>(),
                                shape_info<Tile128x128>()};
  return s;
}
constexpr int NUM_SHAPES = 4;

// What the im2col mode can express (the bounding box's corners and the filter offsets are signed and
// unsigned 8-bit numbers for a 2D convolution, the traversal stride at most 8).
constexpr int MAX_TRAVERSAL_STRIDE = 8;
constexpr int CORNER_MIN = -128, CORNER_MAX = 127;
constexpr int MAX_OFFSET = 254;

// The fallbacks' sizes. A materialized im2col matrix larger than this is refused (unsupported()).
constexpr std::size_t MAX_IM2COL_BYTES = std::size_t(8) << 30;
inline int padded_channels(int c) { return (c + 3) / 4 * 4; }
inline std::size_t im2col_bytes(const tut::ConvProblem& p) {
  return std::size_t(p.gemm_n()) * std::size_t(p.r) * p.s * padded_channels(p.c) * sizeof(float);
}

// The convolution the kernel runs, as the tensor maps see it: an NHWC input of c channels (c % 4 ==
// 0), a KRSC filter, an NPQK output of p x q pixels per image, and per axis the im2col bounding box
// (lower and upper corner) that the traversal (stride) walks: p (q) positions from the lower corner.
struct View {
  int n, h, w, c, k, r, s, p, q;
  int stride_h, stride_w, dil_h, dil_w;
  int lower_h, lower_w, upper_h, upper_w;
  long long pixels() const { return (long long)n * p * q; }
};
inline bool expressible(const View& v) {
  auto axis = [](int lower, int upper, int filt, int stride, int dil) {
    return stride <= MAX_TRAVERSAL_STRIDE && lower >= CORNER_MIN && lower <= CORNER_MAX && upper >= CORNER_MIN &&
           upper <= CORNER_MAX && (long long)(filt - 1) * dil <= MAX_OFFSET;
  };
  return axis(v.lower_h, v.upper_h, v.r, v.stride_h, v.dil_h) && axis(v.lower_w, v.upper_w, v.s, v.stride_w, v.dil_w);
}
// The problem itself, c rounded up to 4: the box from -pad to pad - (R-1)*dil past the far edge.
inline View direct_view(const tut::ConvProblem& p) {
  return View{p.n, p.h, p.w, padded_channels(p.c), p.k, p.r, p.s, p.p, p.q, p.stride_h, p.stride_w, p.dil_h, p.dil_w,
              -p.pad_h, -p.pad_w, p.pad_h - (p.r - 1) * p.dil_h, p.pad_w - (p.s - 1) * p.dil_w};
}
// The im2col matrix (N*P*Q rows of R*S*c4) as a 1x1 convolution over one image of 1 x N*P*Q pixels.
inline View flat_view(const tut::ConvProblem& p) {
  return View{1, 1, p.gemm_n(), p.r * p.s * padded_channels(p.c), p.k, 1, 1, 1, p.gemm_n(), 1, 1, 1, 1, 0, 0, 0, 0};
}
// Space to depth (fold_input_kernel): per axis, tap f reads folded pixel o + floor((f - pad) / stride)
// at sub-position (f - pad) mod stride; the folded filter spans the distinct floors, the box starts
// at the smallest and is cut to exactly p (q) positions.
inline int floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
inline Fold make_fold(const tut::ConvProblem& p) {
  Fold f;
  f.fh = p.stride_h;
  f.fw = p.stride_w;
  f.cf = padded_channels(p.c);  // (filling the copy's CH channels, cf = CH / (fh*fw): r50_conv1 0.253 ms, not 0.216)
  f.h2 = tut::ceil_div(p.h, f.fh);
  f.w2 = tut::ceil_div(p.w, f.fw);
  f.amin_h = floor_div(-p.pad_h, f.fh);
  f.amin_w = floor_div(-p.pad_w, f.fw);
  f.r2 = floor_div(p.r - 1 - p.pad_h, f.fh) - f.amin_h + 1;
  f.s2 = floor_div(p.s - 1 - p.pad_w, f.fw) - f.amin_w + 1;
  return f;
}
inline View fold_view(const tut::ConvProblem& p, const Fold& f) {
  // lower = amin; the traversal's p positions end at lower + p - 1 = h2 - 1 + upper.
  return View{p.n, f.h2, f.w2, f.fh * f.fw * f.cf, p.k, f.r2, f.s2, p.p, p.q, 1, 1, 1, 1,
              f.amin_h, f.amin_w, f.amin_h + p.p - f.h2, f.amin_w + p.q - f.w2};
}
inline bool fold_pays(const tut::ConvProblem& p) {
  if (p.dilated() || (p.stride_h == 1 && p.stride_w == 1)) return false;
  if (padded_channels(p.c) * p.stride_h * p.stride_w > CH) return false;  // would not fit one copy's channels
  return expressible(fold_view(p, make_fold(p)));
}

// The plan: which fallback, which tile shape, how many splits.
enum class Path { Direct, Fold, Flat };
struct Plan {
  Path path = Path::Direct;
  bool pad = false;  // Direct or Flat with C % 4 != 0: x and w copied with C rounded up to 4
  int shape = 0;     // index into shapes()
  int splits = 1;
  int chunks_per_split = 0;
  int chunks = 0;
};
inline View plan_view(const tut::ConvProblem& p, const Plan& pl) {
  switch (pl.path) {
    case Path::Fold: return fold_view(p, make_fold(p));
    case Path::Flat: return flat_view(p);
    default: return direct_view(p);
  }
}

// Per-unit cost in SM clocks: each K step takes max(tensor-core time, copy time); a unit adds a
// fixed pipeline fill and its epilogue. The busiest SM runs ceil(units / SMs) units. Splitting adds
// the partials' round trip through memory and the second pass.
constexpr double MACS_PER_CLOCK = 1024.0;      // TF32 dense, per SM
constexpr double COPY_BYTES_PER_CLOCK = 40.0;  // what the TMA sustains into one SM from L2
constexpr double UNIT_OVERHEAD_CLOCKS = 1500.0;
constexpr double STORE_BYTES_PER_CLOCK = 64.0;
constexpr double DRAM_BYTES_PER_CLOCK = 1500.0;  // ~2.7 TB/s at ~1.8 GHz, the whole GPU
constexpr double LAUNCH_CLOCKS = 4000.0;
constexpr int MAX_SPLITS = 16;

inline Plan plan_for(const tut::ConvProblem& p, int sm_count) {
  Plan pl;
  const bool direct = expressible(direct_view(p));
  pl.path = fold_pays(p) ? Path::Fold : direct ? Path::Direct : Path::Flat;
  pl.pad = pl.path != Path::Fold && p.c % 4 != 0;
  const View v = plan_view(p, pl);
  pl.chunks = v.r * v.s * tut::ceil_div(v.c, CH);
  const double sms = sm_count;
  double best = 0.0;
  for (int sh = 0; sh < NUM_SHAPES; ++sh) {
    const ShapeInfo& si = shapes()[sh];
    const double tiles =
        double(tut::ceil_div<long long>(v.pixels(), si.block_m)) * double(tut::ceil_div(v.k, si.block_n));
    const double step = std::max(double(si.block_m) * si.block_n * CH / MACS_PER_CLOCK,
                                 si.stage_bytes / COPY_BYTES_PER_CLOCK);
    const double epilogue = double(si.block_m) * si.block_n * 4 / STORE_BYTES_PER_CLOCK;
    for (int splits = 1; splits <= std::min(MAX_SPLITS, pl.chunks); ++splits) {
      const int per = tut::ceil_div(pl.chunks, splits);
      if (tut::ceil_div(pl.chunks, per) != splits) continue;  // the same split as a smaller count
      const double units = tiles * splits;
      const double rounds = std::ceil(units / sms);
      double time = rounds * (per * step + UNIT_OVERHEAD_CLOCKS + epilogue);
      if (splits > 1) time += double(splits + 1) * double(v.pixels()) * v.k * 4 / DRAM_BYTES_PER_CLOCK + LAUNCH_CLOCKS;
      if (best == 0.0 || time < best * 0.999) {
        best = time;
        pl.shape = sh;
        pl.splits = splits;
        pl.chunks_per_split = per;
      }
    }
  }
  return pl;
}
inline Plan plan(const tut::ConvProblem& p) { return plan_for(p, tut::sm_count()); }

// The workspace, in this order, each part 256-byte aligned: x and w with padded channels (pad) or
// folded (Fold), the im2col matrix (Flat), the split partials (splits > 1).
inline std::size_t align256(std::size_t b) { return (b + 255) / 256 * 256; }
// One split's partial y, rounded up to whole float4s (the second pass reads 16 bytes at a time).
inline std::size_t split_stride(const tut::ConvProblem& p) { return (std::size_t(p.y_elems()) + 3) / 4 * 4; }
struct WorkspaceLayout {
  std::size_t x_copy = 0, w_copy = 0, col = 0, part = 0, total = 0;
};
inline WorkspaceLayout workspace_layout(const tut::ConvProblem& p, const Plan& pl) {
  WorkspaceLayout l;
  std::size_t at = 0;
  if (pl.pad || pl.path == Path::Fold) {
    std::size_t x_elems, w_elems;
    if (pl.path == Path::Fold) {
      const Fold f = make_fold(p);
      const std::size_t c2 = std::size_t(f.fh) * f.fw * f.cf;
      x_elems = std::size_t(p.n) * f.h2 * f.w2 * c2;
      w_elems = std::size_t(p.k) * f.r2 * f.s2 * c2;
    } else {
      const std::size_t c4 = padded_channels(p.c);
      x_elems = std::size_t(p.n) * p.h * p.w * c4;
      w_elems = std::size_t(p.k) * p.r * p.s * c4;
    }
    l.x_copy = at;
    at += align256(x_elems * sizeof(float));
    l.w_copy = at;
    at += align256(w_elems * sizeof(float));
  }
  if (pl.path == Path::Flat) {
    l.col = at;
    at += align256(im2col_bytes(p));
  }
  if (pl.splits > 1) {
    l.part = at;
    at += align256(std::size_t(pl.splits) * split_stride(p) * sizeof(float));
  }
  l.total = at;
  return l;
}

inline std::size_t workspace(const tut::ConvProblem& p) { return workspace_layout(p, plan(p)).total; }

inline const char* unsupported(const tut::ConvProblem& p) {
  if (plan_for(p, 1).path == Path::Flat && im2col_bytes(p) > MAX_IM2COL_BYTES) {
    return "24_tma_im2col_wgmma: the TMA's im2col mode cannot express this shape and its im2col matrix would "
           "exceed 8 GiB (valid: stride <= 8, padding <= 128, pad - (R-1)*dil in [-128, 127], (R-1)*dil <= 254, "
           "and the same along W; or N*P*Q*R*S*C*4 bytes <= 8 GiB)";
  }
  return nullptr;
}

// cuTensorMapEncodeTiled and cuTensorMapEncodeIm2col are driver functions; the runtime hands out
// their addresses (chapter 12), so the binary needs no -lcuda.
template <class Fn>
inline Fn driver_function(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  TUT_CUDA_CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || fn == nullptr) {
    throw tut::CudaError(std::string(name) + ": the driver does not provide it (needs a CUDA 12 driver)");
  }
  return reinterpret_cast<Fn>(fn);
}

inline void check_encode(CUresult r, const char* what, const View& v) {
  if (r != CUDA_SUCCESS) {
    throw tut::CudaError(std::string(what) + " failed (CUresult " + std::to_string(int(r)) + ") for an input of " +
                         std::to_string(v.n) + "x" + std::to_string(v.h) + "x" + std::to_string(v.w) + "x" +
                         std::to_string(v.c) + " (NHWC), filter " + std::to_string(v.r) + "x" + std::to_string(v.s));
  }
}

// The input as the im2col copy reads it: a 4D tensor (C, W, H, N), fastest first. Each copy brings
// `pixels` output pixels' worth of CH channels, 128-byte swizzled, rounded to TF32 (element type
// TFLOAT32, chapter 12), zeros outside the tensor.
inline CUtensorMap make_input_map(const float* x, const View& v, int pixels) {
  static const auto encode = driver_function<PFN_cuTensorMapEncodeIm2col_v12000>("cuTensorMapEncodeIm2col");
  CUtensorMap map;
  const cuuint64_t dims[4] = {cuuint64_t(v.c), cuuint64_t(v.w), cuuint64_t(v.h), cuuint64_t(v.n)};
  // Bytes from one pixel, row, image to the next (the channel stride is the element size).
  const cuuint64_t strides[3] = {cuuint64_t(v.c) * 4, cuuint64_t(v.c) * v.w * 4, cuuint64_t(v.c) * v.w * v.h * 4};
  // The bounding box of the filter window's first tap, per image, W first: its traversal visits
  // exactly the P x Q output positions (the input coordinates of their tap (0, 0)).
  const int lower[2] = {v.lower_w, v.lower_h};
  const int upper[2] = {v.upper_w, v.upper_h};
  const cuuint32_t element_strides[4] = {1, cuuint32_t(v.stride_w), cuuint32_t(v.stride_h), 1};
  check_encode(encode(&map, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, 4, const_cast<float*>(x), dims, strides, lower, upper,
                      CH, cuuint32_t(pixels), element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
               "cuTensorMapEncodeIm2col", v);
  return map;
}

// The filter as a tiled 4D tensor (C, S, R, K): boxes of CH channels x 1 x 1 x `filters`.
inline CUtensorMap make_filter_map(const float* w, const View& v, int filters) {
  static const auto encode = driver_function<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled");
  CUtensorMap map;
  const cuuint64_t dims[4] = {cuuint64_t(v.c), cuuint64_t(v.s), cuuint64_t(v.r), cuuint64_t(v.k)};
  const cuuint64_t strides[3] = {cuuint64_t(v.c) * 4, cuuint64_t(v.c) * v.s * 4, cuuint64_t(v.c) * v.s * v.r * 4};
  const cuuint32_t box[4] = {CH, 1, 1, cuuint32_t(filters)};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  check_encode(encode(&map, CU_TENSOR_MAP_DATA_TYPE_TFLOAT32, 4, const_cast<float*>(w), dims, strides, box,
                      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
               "cuTensorMapEncodeTiled", v);
  return map;
}

// The output (or the split partials) as a 3D tensor (K, N*P*Q, splits) that the epilogue's TMA
// stores write in boxes of OUT_BOX filters x `pixels`, 128-byte swizzled. Needs K % 4 == 0.
inline CUtensorMap make_output_map(float* y, int filters, int pixels_total, int splits, std::size_t split_stride,
                                   int pixels, const View& v) {
  static const auto encode = driver_function<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled");
  CUtensorMap map;
  const cuuint64_t dims[3] = {cuuint64_t(filters), cuuint64_t(pixels_total), cuuint64_t(splits)};
  const cuuint64_t strides[2] = {cuuint64_t(filters) * 4, cuuint64_t(split_stride) * 4};
  const cuuint32_t box[3] = {OUT_BOX, cuuint32_t(pixels), 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  check_encode(encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3, y, dims, strides, box, element_strides,
                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
               "cuTensorMapEncodeTiled (output)", v);
  return map;
}

// Each kernel instance may use more than 48 KB of dynamic shared memory: allowed once per process.
inline void allow_shared_memory() {
  static const bool done = [] {
    for (int s = 0; s < NUM_SHAPES; ++s) {
      TUT_CUDA_CHECK(cudaFuncSetAttribute(shapes()[s].kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          shapes()[s].smem_bytes));
    }
    return true;
  }();
  (void)done;
}

inline int aux_blocks(long long work) {
  return int(std::min<long long>(tut::ceil_div<long long>(work, AUX_THREADS), 32LL * tut::sm_count()));
}

inline void launch(const tut::ConvProblem& p, const tut::ConvArgs& a, cudaStream_t stream) {
  allow_shared_memory();
  const Plan pl = plan(p);
  const WorkspaceLayout wl = workspace_layout(p, pl);
  char* ws = static_cast<char*>(a.workspace);
  const float* x = a.x;
  const float* w = a.w;
  // The fallbacks' copies, on the stream: part of the timed run.
  if (pl.path == Path::Fold) {  // few channels at a stride: space to depth, then a stride-1 convolution
    const Fold f = make_fold(p);
    float* xf = reinterpret_cast<float*>(ws + wl.x_copy);
    float* wf = reinterpret_cast<float*>(ws + wl.w_copy);
    const long long c2 = (long long)f.fh * f.fw * f.cf;
    fold_input_kernel<<<aux_blocks((long long)p.n * f.h2 * f.w2 * c2 / 4), AUX_THREADS, 0, stream>>>(
        x, reinterpret_cast<float4*>(xf), p, f);
    TUT_CHECK_LAUNCH();
    fold_filter_kernel<<<aux_blocks((long long)p.k * f.r2 * f.s2 * c2), AUX_THREADS, 0, stream>>>(w, wf, p, f);
    TUT_CHECK_LAUNCH();
    x = xf;
    w = wf;
  }
  const int c4 = padded_channels(p.c);
  if (pl.pad) {  // 16-byte rows for the TMA: C rounded up to 4 with zero channels
    float* xp = reinterpret_cast<float*>(ws + wl.x_copy);
    float* wp = reinterpret_cast<float*>(ws + wl.w_copy);
    const long long x_rows = (long long)p.n * p.h * p.w, w_rows = (long long)p.k * p.r * p.s;
    pad_channels_kernel<<<aux_blocks(x_rows * c4), AUX_THREADS, 0, stream>>>(x, xp, x_rows, p.c, c4);
    TUT_CHECK_LAUNCH();
    pad_channels_kernel<<<aux_blocks(w_rows * c4), AUX_THREADS, 0, stream>>>(w, wp, w_rows, p.c, c4);
    TUT_CHECK_LAUNCH();
    x = xp;
    w = wp;
  }
  if (pl.path == Path::Flat) {  // a shape the im2col mode cannot express: the im2col matrix, then a 1x1 conv
    float* col = reinterpret_cast<float*>(ws + wl.col);
    const long long elems = (long long)p.gemm_n() * p.r * p.s * c4;
    im2col_kernel<<<aux_blocks(elems), AUX_THREADS, 0, stream>>>(x, col, p, c4);
    TUT_CHECK_LAUNCH();
    x = col;  // w (KRSC, c4 channels) is also the flat view's K x 1 x 1 x R*S*c4 filter
  }
  const View v = plan_view(p, pl);
  const ShapeInfo& si = shapes()[pl.shape];
  const CUtensorMap map_x = make_input_map(x, v, si.block_m);
  const CUtensorMap map_w = make_filter_map(w, v, si.block_n);

  Params prm;
  prm.pixels = int(v.pixels());
  prm.filters = v.k;
  prm.q = v.q;
  prm.pq = v.p * v.q;
  prm.stride_h = v.stride_h;
  prm.stride_w = v.stride_w;
  prm.pad_h = -v.lower_h;
  prm.pad_w = -v.lower_w;
  prm.dil_h = v.dil_h;
  prm.dil_w = v.dil_w;
  prm.s = v.s;
  prm.cblocks = tut::ceil_div(v.c, CH);
  prm.chunks = pl.chunks;
  prm.chunks_per_split = pl.chunks_per_split;
  prm.splits = pl.splits;
  prm.tiles_n = tut::ceil_div(v.k, si.block_n);
  const long long units = tut::ceil_div<long long>(v.pixels(), si.block_m) * prm.tiles_n * pl.splits;
  prm.units = int(units);
  float* part = reinterpret_cast<float*>(ws + wl.part);
  prm.out = pl.splits > 1 ? part : a.y;
  prm.split_stride = split_stride(p);
  // The TMA store needs 16-byte rows of y: K % 4 == 0. Otherwise the epilogue stores from registers
  // and map_y is a placeholder that the kernel never reads.
  prm.tma_store = v.k % 4 == 0 ? 1 : 0;
  const CUtensorMap map_y = prm.tma_store ? make_output_map(prm.out, v.k, prm.pixels, pl.splits, prm.split_stride,
                                                            si.out_rows, v)
                                          : map_w;

  // Persistent: one block per SM, or one per unit if there are fewer.
  const int grid = int(std::min<long long>(units, tut::sm_count()));
  si.kernel<<<grid, NUM_THREADS, si.smem_bytes, stream>>>(map_x, map_w, map_y, prm);
  TUT_CHECK_LAUNCH();
  if (pl.splits > 1) {
    sum_splits_kernel<<<aux_blocks(p.y_elems() / 4 + 1), AUX_THREADS, 0, stream>>>(
        part, a.y, p.y_elems(), (long long)prm.split_stride, pl.splits);
    TUT_CHECK_LAUNCH();
  }
}

}  // namespace ch24
