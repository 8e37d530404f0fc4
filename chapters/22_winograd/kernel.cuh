// Chapter 22: Winograd convolution (FP32), fused into one kernel or in three.
//
// What changed:  not the implicit GEMM's loop but the arithmetic. A 3x3 filter slid over an
//                (m+2) x (m+2) input patch gives an m x m output tile; Winograd's minimal filtering
//                F(m x m, 3 x 3) computes that tile with (m+2)^2 multiplications per channel
//                instead of 9 m^2: transform the filter (U = G g G^T, once per call, into the
//                workspace), transform the patch (V = B^T d B), multiply element by element and sum
//                over the channels (M = sum_c U_c . V_c: (m+2)^2 independent GEMMs, filters x
//                tiles, each C deep), and transform back (Y = A^T M A). Both F(2x2,3x3) (16
//                products for 36) and F(4x4,3x3) (36 for 144) are here, as the template parameter M;
//                the plan runs F(4x4) (TILE = 2 or 4 forces one: `scripts/variant.sh 22_winograd
//                TILE=4`). The kernel is fused: a block owns BT = 32 output tiles x BK filters and
//                runs two roles. Its 4 producer warps copy each chunk of BC = 8 channels (the raw
//                patches and the chunk's transformed filter, cp.async) into one of two buffers (three
//                for F(2x2)) and transform the patches there (V, as many buffers); its consumer warps (12 for F(4x4),
//                8 for F(2x2)) run the (m+2)^2 small GEMMs of the chunk on 96 or 128 accumulators per
//                thread, a warp owning whole points (all BK x BT sums of each: 8 x 4 or 16 x 4 per
//                lane), while the
//                producers prepare the next chunk. Named barriers hand the buffers back and forth. The
//                output transform is the epilogue: the accumulators go through shared memory so that
//                one thread holds all (m+2)^2 sums of one (filter, tile), and leave as m x m outputs.
//                Split over the channels (a second, deterministic summing kernel) when the grid would
//                not fill the GPU, by chapter 20's rule in units of one chunk.
//                Where the fused F(4x4) grid runs two waves or fewer (few tiles, large C and K: the
//                28x28, 14x14 and 7x7 layers), the plan takes three kernels instead (KERNELS): one
//                transforms the filter into U and the input into V in global memory (they fit in
//                L2 there), chapter 10's GEMM block runs the 36 products M = U V as one batched launch
//                (blockIdx.z = the point; its tiles fill the SMs whatever the tile count), and a third
//                applies A^T M A, two threads per (filter, tile). Each is launched as a programmatic
//                dependent of the one before. F(4x4) there too.
// Prediction:    (written before the first measurement) seed_3x3 is 59.2 GFLOP direct. F(4x4,3x3):
//                36 products per 16 outputs and channel instead of 144: 7.40 G FMA in the
//                transformed domain (14.8 GFLOP), 0.25 ms at the FMA units' 29.6 T FMA/s (1755 MHz) if
//                nothing else cost anything; with the input transform (~15% of the FMAs' issue
//                slots), the barriers between transform and GEMM and the epilogue, ~0.40 ms at 70% of
//                the FMA rate. F(2x2,3x3): 16 products per 4 outputs (13.2 G FMA), ~0.65 ms.
//                Memory: x once from DRAM (103 MB), y once (206 MB), the transformed filter (1.2 MB)
//                and the patches' halo from L2: ~0.1 ms of DRAM time, hidden under the math.
//                (The second version, before its measurements) One block of 8 warps that alternately transform
//                and multiply leaves the FMA pipe idle during the transforms and the barriers, and 2
//                warps per scheduler do not hide the shared loads' latency: producer warps that copy
//                and transform while the consumers multiply should take the transform off the
//                critical path (the consumers' channel step: 144 FFMA of 182 instructions, against 144
//                of 234 with the copies inside) and raise the issue rate: ~1.2x on every layer. The
//                filter transform's 44 float64 divisions per thread (a subroutine each) become
//                multiplications: most of its 27 us on r50_c5_3x3 should go.
//                (The third version, before its measurements) F(4x4)'s consumers wait on their shared
//                loads with 2 warps per scheduler: 12 consumer warps of 3 whole points (96
//                accumulators, 512 threads at 128 registers) give each scheduler 3, for 5.7% more
//                consumer instructions per chunk (the SASS): seed_3x3 ~0.66 to 0.70 ms.
//                (The fourth version, before its measurements) With 12 consumer warps the consumers wait
//                at the "buffer full" barrier: the producers, one warp per scheduler beside 3 busy
//                consumers, set the pace. F(4x4)'s producers issue 946 instructions per chunk (SASS);
//                a thread owning two adjacent tiles of one channel (float2 loads of the patches and
//                stores of V), branch-free copies and the transformed filter blocked per chunk take
//                that to 610: 8.6% fewer per scheduler and chunk, seed_3x3 ~0.67 to 0.69 ms.
//                (The fifth change) The fused kernel is launched as a programmatic dependent of the
//                filter transform (griddepcontrol): its blocks start, zero their padding and copy the
//                first patches while the transform runs, and wait for it only before copying U.
//                (The seventh version, before its measurements) On r50_c3/c4/c5_3x3 the fused grid
//                is 1 to 3 waves of one block per SM and its chunks run the FMA pipe at ~52%; cuDNN's
//                WINOGRAD_NONFUSED runs c3 as four kernels of 21, 4, 56 and 16 us (tuning run 68)
//                and chapter 10 runs the GEMMs' shapes side by side (128 x 56448 x 128, 256 x 18432
//                x 256, 512 x 4608 x 512) in 54, 65 and 75 us. Three kernels with F(4x4) (0.56 to 0.75
//                times F(2x2)'s multiply-adds there): c3 ~54 + 2 x 14 (the input and output
//                transforms, 42 MB each at the DRAM's speed) = ~0.085 ms, c4 ~0.090, c5 ~0.100 (its
//                filter transform writes 38 MB).
// Measured:      (H100; README.md) 12 consumer warps for F(4x4): seed_3x3 0.7934 -> 0.7338 ms and
//                r50_c2_3x3 0.1087 -> 0.1008 ms (tuning run 51, bit-identical results); the short
//                scoreboard stall 1.89 -> 0.43 per instruction, the barrier stall 0.77 -> 2.01 (the
//                producers now set the pace). Cheaper producers: 0.7345 -> 0.7028 ms, 0.1011 ->
//                0.0984 ms (tuning run 53, bit-identical), the barrier stall 2.06 -> 1.06. The
//                dependent launch: seed_3x3 0.7020 -> 0.6938 ms, r50_c2_3x3 0.0985 -> 0.0938 ms,
//                r50_c3_3x3 0.1156 -> 0.1128 ms (tuning run 54, bit-identical). F(2x2)'s producers
//                transforming their two patches together: c3 0.1134 -> 0.1092, c4 0.1222 -> 0.1177, c5
//                0.1474 -> 0.1405 ms (tuning run 65, the same errors); three buffers for F(2x2): c4 0.1181
//                -> 0.1174, c5 0.1402 -> 0.1399 ms (tuning run 67). Three kernels (tuning run 73,
//                two alternating rounds, against the fused kernel's F(2x2)): c3 0.1080 -> 0.0803,
//                c4 0.1155 -> 0.0881, c5 0.1385 -> 0.1160 ms; on seed_3x3 and r50_c2_3x3 they lose
//                (0.737 against 0.694 ms, 0.118 against 0.094). The filter transform's GEMM layout
//                written a whole 128-byte line per warp store (blocks of 8 filters x 32 channels):
//                c4 0.0889 -> 0.0873, c5 0.1181 -> 0.1143 ms (tuning run 77). The second version: c3, c4 and c5
//                run F(2x2), 1.18 to 1.28x faster than the first version (tuning run 41).
//                The producer warps did not pay for F(4x4): 0.7882 ms on seed_3x3 against 0.7719 ms
//                for the previous kernel with the new filter transform (same session); with 168
//                registers per thread (384 threads) its consumers wait on their shared loads (short
//                scoreboard 1.81 per instruction in the rolled version). F(2x2), 128 accumulators, runs
//                1.17 to 1.21x faster with them than before (tuning run 34); the filter transform
//                without divisions saves 2.3 to 10.5 us.
// Metric:        sm__pipe_fma_cycles_active (the GEMMs), smsp__average_warps_issue_stalled_short_scoreboard
//                (the consumers' shared loads), smsp__average_warps_issue_stalled_barrier (the roles
//                waiting for each other).
// Assumes:       3x3 filters, stride 1, dilation 1 (unsupported() refuses anything else); any N, C,
//                H, W, K and padding; tensors (the transformed filter too) below 2^31 elements; x, w,
//                y need no alignment (the float4 / float2 output stores need Q % M == 0 and y 16-byte
//                aligned, else scalar).
//                Workspace: the transformed filter, (m+2)^2 x ceil(C/8)*8 x ceil(K/BK)*BK floats,
//                plus splits x N*K*P*Q floats when the channels are split; the three kernels: U, V
//                ((m+2)^2 x C x tiles) and M ((m+2)^2 x K x tiles), tiles rounded up to 4. Shared memory (dynamic):
//                216 KiB (F4: two buffers) or 192 KiB (F2: three), one block per SM: 512 threads at 128
//                registers (F4) or 384 at 165 (F2).
//                Sm_80 or newer (cp.async).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "../10_small_problems/kernel.cuh"  // ch10::gemm_block and its planner's model, used as they are
#include "tut/conv/harness.cuh"
#include "tut/core/verify.hpp"

namespace ch22 {

// Which F(m x m, 3 x 3) runs: 0, the plan's choice per problem (below); 4 or 2 forces one
// (`scripts/variant.sh 22_winograd TILE=4`, `TILE=2`: the README's forced rows).
constexpr int TILE = 0;
static_assert(TILE == 0 || TILE == 2 || TILE == 4, "the plan's choice, F(2x2,3x3) or F(4x4,3x3)");
// TILE = 0: F(4x4); with the fused kernel forced (KERNELS = 1), F(4x4) where its grid runs more than
// F2_MAX_WAVES waves of blocks and F(2x2) otherwise (the sixth version's rule).
constexpr int F2_MAX_WAVES = 2;
// How many kernels: 0, the plan's choice (the fused kernel where its F(4x4) grid runs more than
// F2_MAX_WAVES waves, the three kernels otherwise); 1, the fused kernel always (with TILE = 0 the
// tile size as above); 3, the three kernels always (`scripts/variant.sh 22_winograd KERNELS=1`).
constexpr int KERNELS = 0;
static_assert(KERNELS == 0 || KERNELS == 1 || KERNELS == 3, "the plan's choice, fused, or three kernels");
// The three kernels' batched GEMM: 0, chapter 10's model picks the tile shape; 1, 2, 3 force 128 x 128,
// 128 x 64, 64 x 64 (`scripts/variant.sh 22_winograd KERNELS=3 GEMM_TILE=1`).
constexpr int GEMM_TILE = 0;
static_assert(GEMM_TILE >= 0 && GEMM_TILE <= 3, "the model's choice or one of chapter 10's three shapes");
// 1: a call skips the filter transform when the filter, the problem and the workspace are those of
// the previous call (weights fixed between calls, as in inference). A measurement variant, not the
// chapter (`scripts/variant.sh 22_winograd FILTER_ONCE=1`: the README's "filter transformed once"
// rows): it trusts that nobody rewrote the filter in place between calls.
constexpr int FILTER_ONCE = 0;

// The block: consumer warps (the GEMMs: NUM_WARPS, or CONSUMER_WARPS_F4 for F(4x4), below) and
// PRODUCER_WARPS producer warps (the copies and the input transform); BT output tiles x BK filters
// (BK per tile size, below); channels in chunks of BC. A chunk has BC x BT patches, one per thread
// of NUM_THREADS (the filter transform's and the split sum's blocks), PATCHES per producer thread.
constexpr int WARP_SIZE = 32;
constexpr int NUM_WARPS = 8;
constexpr int NUM_THREADS = NUM_WARPS * WARP_SIZE;  // 256
constexpr int BC = 8;
constexpr int BT = 32;
static_assert(BC * BT == NUM_THREADS, "one (channel, tile) pair of a chunk per GEMM thread");
constexpr int VEC = 4;  // floats per 128-bit access
// The producers: PRODUCER_WARPS more warps (one per scheduler) copy the chunks and transform the
// patches while the consumer warps run the GEMMs, PATCHES patches per producer thread and chunk.
// F(2x2) has NUM_WARPS consumer warps (384 threads: 165 registers each, 128 accumulators); F(4x4)
// has CONSUMER_WARPS_F4 (3 per scheduler, 3 whole points each: 512 threads, 128 registers each, 96
// accumulators). With 8 (144 accumulators in 168 registers) its consumers waited on their shared
// loads, 2 warps per scheduler: 8% slower (tuning run 51).
constexpr int PRODUCER_WARPS = 4;
constexpr int PRODUCER_THREADS = PRODUCER_WARPS * WARP_SIZE;  // 128
constexpr int CONSUMER_WARPS_F4 = 12;
static_assert(PRODUCER_THREADS % BT == 0 && (BC * BT) % PRODUCER_THREADS == 0, "whole patches per producer");
constexpr int PATCHES = BC * BT / PRODUCER_THREADS;  // 2
// The consumers' channel loop, per tile size: 1 (rolled) or BC (unrolled). Measured (README):
// unrolled, F(4x4) 0.794 ms on seed_3x3 against 0.847 rolled; F(2x2) is 1% to 3% faster rolled.
constexpr int UNROLL_F4 = 8;
constexpr int UNROLL_F2 = 1;
// Buffers of the pipeline between producers and consumers: F(2x2) has room for STAGES_F2 (3 x 64 KB),
// F(4x4) for 2 (2 x 108 KB).
constexpr int STAGES_F2 = 3;

// The (m+2)^2 GEMMs of a chunk are shared by the warps by points: warp w owns FULL whole points
// (all BK filters x BT tiles of each), and when the consumer warps do not divide (m+2)^2 the REM points
// left over are split by filters, REM_SPLIT warps to a point. The lanes of a warp form LANES_K x
// LANES_T, lane (lk, lt) holding LK filters x LT tiles of each whole point: filters s*16 + lk*4 + e
// (s < LK/4, e < 4), tiles lt*4 + e. F(4x4), 12 warps: 3 whole points at 8 x 4 per lane (2 float4s
// of U and 1 of V for 32 FMAs), 96 sums (with 8 warps: 4 whole points plus half of one of the last
// 4 at 4 x 4, 144 sums); F(2x2), 8 warps: 2 whole points at 16 x 4. A lane's 4 filters (and 4 tiles) are one float4 in shared
// memory. Measured on seed_3x3 (README, "What the profiler says"): a warp's float4 load of U (4
// distinct float4s) costs 2 shared-memory wavefronts and one of V (8 distinct) 4, whatever the order
// of the lanes, so a warp that owns a whole point (32 x 32 sums) pays 8 wavefronts per 32 FMAs per
// lane where two warps sharing it (16 x 32 each, 4 x 4 per lane) paid 12.
constexpr int LANES_K = 4;
constexpr int LANES_T = 8;
static_assert(LANES_K * LANES_T == WARP_SIZE, "the lanes cover a warp's tile");

template <int M>
struct Tile {
  static constexpr int ALPHA = M + 2;             // patch side
  static constexpr int NXI = ALPHA * ALPHA;       // points of the transformed domain: 16 or 36
  // Filters per block: 64 for F(2x2), 32 for F(4x4), so that a thread holds 128 or 144
  // accumulators: NXI x BK x BT / NUM_THREADS (the register file, 64K words per SM, holds one
  // block's 36 x 32 x 32 = 36,864 sums; F(4x4) cannot have both BK and BT at 64).
  static constexpr int BK = M == 2 ? 64 : 32;
  static_assert(BK % (NUM_THREADS / BC) == 0, "the filter transform's blocks tile the padded K");
  // The fused kernel's consumer warps: CONSUMER_WARPS_F4 for F(4x4) (3 per scheduler, 3 whole points
  // each), NUM_WARPS for F(2x2). THREADS: the whole block, with the 4 producer warps.
  static constexpr int CONSUMER_WARPS = M == 4 ? CONSUMER_WARPS_F4 : NUM_WARPS;
  static constexpr int CONSUMER_THREADS = CONSUMER_WARPS * WARP_SIZE;  // 384 or 256
  static constexpr int THREADS = CONSUMER_THREADS + PRODUCER_THREADS;  // 512 or 384
  static_assert(CONSUMER_THREADS % BT == 0, "a consumer thread's epilogue tile is the same for every pair");
  static constexpr int FULL = NXI / CONSUMER_WARPS;                          // whole points per warp: 3 or 2
  static constexpr int REM = NXI % CONSUMER_WARPS;                           // points left over: 0 and 0
  static constexpr int REM_SPLIT = REM == 0 ? 1 : CONSUMER_WARPS / REM;      // warps per left-over point
  static_assert(REM == 0 || CONSUMER_WARPS % REM == 0, "the left-over points split evenly over the warps");
  static_assert(BK % (REM_SPLIT * LANES_K * VEC) == 0, "a left-over point's filters split in float4s");
  static constexpr int LK = BK / LANES_K;                          // 8 or 16 filters per lane
  static constexpr int LT = BT / LANES_T;                          // 4 tiles per lane
  static constexpr int LKR = REM > 0 ? BK / REM_SPLIT / LANES_K : VEC;  // 4 filters per lane (left-over point)
  static constexpr int SUB_K = LK / VEC;
  static constexpr int SUB_KR = LKR / VEC;
  static constexpr int SUB_T = LT / VEC;
  static_assert(LK % VEC == 0 && LT % VEC == 0, "a lane's filters and tiles are whole float4s");
  static constexpr int ACCS = FULL * LK * LT + (REM > 0 ? LKR * LT : 0);  // 96 or 128
  static_assert(ACCS * CONSUMER_THREADS == NXI * BK * BT, "the lanes hold every sum once");
  // Shared memory, in floats. The pipeline: the chunk's transformed filter Us[S][NXI][BC][BK], its
  // raw patches Ds[S][BC][NXI][BT] and its transformed patches Vs[S][NXI][BC][BT], S = STAGES
  // buffers of each. The epilogue reuses it all for the sums Ms[NXI][BK][BT].
  static constexpr int U_FLOATS = NXI * BC * BK;
  static constexpr int D_FLOATS = BC * NXI * BT;
  static constexpr int V_FLOATS = NXI * BC * BT;
  static constexpr int STAGES = M == 2 ? STAGES_F2 : 2;
  static_assert(STAGES >= 2 && STAGES <= 3, "the named barriers below have ids for 3 buffers");
  static constexpr int PIPE_FLOATS = STAGES * (U_FLOATS + D_FLOATS + V_FLOATS);
  static constexpr int M_FLOATS = NXI * BK * BT;
  static constexpr std::size_t SMEM_BYTES =
      sizeof(float) * std::size_t(PIPE_FLOATS > M_FLOATS ? PIPE_FLOATS : M_FLOATS);
  static_assert(U_FLOATS % (VEC * PRODUCER_THREADS) == 0, "the filter copy is whole float4s per thread");
  static constexpr int U_VECS = U_FLOATS / (VEC * PRODUCER_THREADS);  // 16 or 18 per producer thread
  // 1,024 pairs over 384 consumer threads do not split evenly for F(4x4): OUTS rounds up
  // (3), and a thread's pair o exists while its filter kk = tid / BT + o * CONSUMER_THREADS / BT < BK
  // (warps 0-7 take 3 pairs, warps 8-11 take 2: 8 per scheduler, as the chapter's 2 warps x 4).
  static constexpr int OUTS = (BK * BT + CONSUMER_THREADS - 1) / CONSUMER_THREADS;  // 3 or 8
  // Transform depths for the error bound (docs/measuring.md): the longest sum of a 1-D input
  // transform row (B^T) and of a 1-D output transform row (A^T), in terms.
  static constexpr int IN_TERMS = M == 2 ? 2 : 4;
  static constexpr int OUT_TERMS = M == 2 ? 3 : 5;
};

// ---- The transforms ------------------------------------------------------------------------------
// 1-D, for the points 0, 1, -1 (F(2,3)) and 0, 1, -1, 2, -2 (F(4,3)), plus infinity. Checked by hand in
// the README: F(2,3) of d = (1, 2, 3, 4), g = (2, 1, -1) gives (1, 3).
//   input  v = B^T d    filter  u = G g    output  y = A^T m
// F(2,3):
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]   G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1]
//   A^T = [1 1 1 0; 0 1 -1 -1]
__host__ __device__ __forceinline__ void input_1d(const float (&d)[4], float (&v)[4]) {
  v[0] = d[0] - d[2];
  v[1] = d[1] + d[2];
  v[2] = d[2] - d[1];
  v[3] = d[1] - d[3];
}
__host__ __device__ __forceinline__ void filter_1d(const double (&g)[3], double (&u)[4]) {
  u[0] = g[0];
  u[1] = 0.5 * (g[0] + g[1] + g[2]);
  u[2] = 0.5 * (g[0] - g[1] + g[2]);
  u[3] = g[2];
}
__host__ __device__ __forceinline__ void output_1d(const float (&m)[4], float (&y)[2]) {
  y[0] = m[0] + m[1] + m[2];
  y[1] = m[1] - m[2] - m[3];
}
// F(4,3):
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
//   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
// (sums shared between rows computed once: 12 adds and 6 multiply-adds for B^T d).
__host__ __device__ __forceinline__ void input_1d(const float (&d)[6], float (&v)[6]) {
  const float s12 = d[1] + d[2], s34 = d[3] + d[4];
  const float d12 = d[1] - d[2], d43 = d[4] - d[3];
  const float d42 = d[4] - d[2], d31 = d[3] - d[1];
  v[0] = fmaf(4.0f, d[0], fmaf(-5.0f, d[2], d[4]));
  v[1] = fmaf(-4.0f, s12, s34);
  v[2] = fmaf(4.0f, d12, d43);
  v[3] = fmaf(2.0f, d31, d42);
  v[4] = fmaf(-2.0f, d31, d42);
  v[5] = fmaf(4.0f, d[1], fmaf(-5.0f, d[3], d[5]));
}
__host__ __device__ __forceinline__ void filter_1d(const double (&g)[3], double (&u)[6]) {
  // Multiplications by the rounded reciprocals, not divisions (a float64 division is a
  // subroutine of ~10 instructions): a relative error of a few units of float64's 2^-53, far
  // below the one FP32 rounding of the result.
  constexpr double SIXTH = 1.0 / 6, TWENTYFOURTH = 1.0 / 24;
  const double s02 = g[0] + g[2], e = g[0] + 4 * g[2];
  u[0] = g[0] * 0.25;
  u[1] = -(s02 + g[1]) * SIXTH;
  u[2] = -(s02 - g[1]) * SIXTH;
  u[3] = (e + 2 * g[1]) * TWENTYFOURTH;
  u[4] = (e - 2 * g[1]) * TWENTYFOURTH;
  u[5] = g[2];
}
__host__ __device__ __forceinline__ void output_1d(const float (&m)[6], float (&y)[4]) {
  const float s12 = m[1] + m[2], d12 = m[1] - m[2];
  const float s34 = m[3] + m[4], d34 = m[3] - m[4];
  y[0] = m[0] + s12 + s34;
  y[1] = fmaf(2.0f, d34, d12);
  y[2] = fmaf(4.0f, s34, s12);
  y[3] = fmaf(8.0f, d34, d12) + m[5];
}

// 2-D by nesting: the 1-D transform down every column, then along every row.
//   V = B^T d B:  t = B^T d (columns), V[i][.] = B^T t[i][.] (rows)
template <int A>
__device__ __forceinline__ void input_2d(float (&d)[A][A]) {  // in place
#pragma unroll
  for (int j = 0; j < A; ++j) {
    float col[A], out[A];
#pragma unroll
    for (int i = 0; i < A; ++i) col[i] = d[i][j];
    input_1d(col, out);
#pragma unroll
    for (int i = 0; i < A; ++i) d[i][j] = out[i];
  }
#pragma unroll
  for (int i = 0; i < A; ++i) {
    float out[A];
    input_1d(d[i], out);
#pragma unroll
    for (int j = 0; j < A; ++j) d[i][j] = out[j];
  }
}
//   Y = A^T m A:  t = A^T m (columns; M rows), Y[i][.] = A^T t[i][.] (rows)
template <int M, int A>
__device__ __forceinline__ void output_2d(const float (&m)[A][A], float (&y)[M][M]) {
  float t[M][A];
#pragma unroll
  for (int j = 0; j < A; ++j) {
    float col[A], out[M];
#pragma unroll
    for (int i = 0; i < A; ++i) col[i] = m[i][j];
    output_1d(col, out);
#pragma unroll
    for (int i = 0; i < M; ++i) t[i][j] = out[i];
  }
#pragma unroll
  for (int i = 0; i < M; ++i) output_1d(t[i], y[i]);
}

// ---- Kernel 1: the filter transform, U[xi][c][k] = (G g[k][c] G^T)[xi] ----------------------------
// In float64, rounded once to FP32 (error <= u |U|: the bound below counts it as one rounding). The
// layout puts a chunk's BC channels x BK filters of one point in one contiguous run of floats, so the
// fused kernel copies them with 16-byte cp.async and no bounds test: C is padded to cp (a multiple of
// BC) and K to kp (a multiple of BK, itself a multiple of FT_K) with zeros. A block transforms FT_K
// filters x BC channels: it stages their 9 taps each in shared memory (each filter's BC x 9 taps are
// contiguous in KCRS: coalesced loads), then thread (k, c) transforms one 3x3 filter, and
// consecutive threads store consecutive filters of each point (coalesced stores).
// GEMM_LAYOUT (the three-kernel path, below): U[xi][k][c] instead, a K x C matrix per point (the
// batched GEMM's A, kp rows of cp floats). Block (bx, by) of a kp / FT_K x cp / BC grid.
// For the GEMM's layout a block takes FT_K_GEMM filters x FT_C_GEMM channels instead, so that a warp
// stores 32 consecutive channels of one filter's row: 128 bytes, a whole line (grid kp / FT_K_GEMM x
// ceil(cp / FT_C_GEMM)).
constexpr int FT_K = NUM_THREADS / BC;  // 32
constexpr int FT_C_GEMM = WARP_SIZE;
constexpr int FT_K_GEMM = NUM_THREADS / FT_C_GEMM;  // 8
template <int M, bool GEMM_LAYOUT>
__device__ __forceinline__ void filter_transform_block(const float* __restrict__ w, float* __restrict__ u, int k_count,
                                                       int c_count, int kp, int cp, int bx, int by) {
  constexpr int A = M + 2;
  constexpr int FK = GEMM_LAYOUT ? FT_K_GEMM : FT_K;  // filters of the block
  constexpr int FC = GEMM_LAYOUT ? FT_C_GEMM : BC;    // channels of the block
  constexpr int TAPS = FC * 9;  // a filter's taps of the block's channels
  __shared__ float ws[FK * TAPS];
  const int k0 = bx * FK, c0 = by * FC;
  for (int i = int(threadIdx.x); i < FK * TAPS; i += NUM_THREADS) {
    const int kk = i / TAPS, tap = i % TAPS;
    const bool in = k0 + kk < k_count && c0 * 9 + tap < c_count * 9;
    ws[i] = in ? w[(std::size_t(k0 + kk) * c_count + c0) * 9 + tap] : 0.0f;
  }
  __syncthreads();
  // Consecutive threads store consecutive floats of U: consecutive filters (the fused kernel's
  // layouts), or, for the GEMM's, consecutive channels.
  const int kk = GEMM_LAYOUT ? int(threadIdx.x) / FT_C_GEMM : int(threadIdx.x) % FT_K;
  const int cc = GEMM_LAYOUT ? int(threadIdx.x) % FT_C_GEMM : int(threadIdx.x) / FT_K;
  double g[3][3];
#pragma unroll
  for (int r = 0; r < 3; ++r)
#pragma unroll
    for (int s = 0; s < 3; ++s) g[r][s] = double(ws[kk * TAPS + cc * 9 + r * 3 + s]);
  double t[A][3];  // G g, column by column
#pragma unroll
  for (int s = 0; s < 3; ++s) {
    const double col[3] = {g[0][s], g[1][s], g[2][s]};
    double out[A];
    filter_1d(col, out);
#pragma unroll
    for (int i = 0; i < A; ++i) t[i][s] = out[i];
  }
  // F(4x4)'s transformed filter is blocked, U[k block][chunk][xi][c][kk] (a block's BK = FT_K
  // filters, one chunk: NXI x BC x BK contiguous floats, in the order of the fused kernel's Us), so that
  // the producers copy a chunk with one base address and immediate offsets. F(2x2): the chapter's
  // U[xi][c][k].
  static_assert(M != 4 || Tile<4>::BK == FT_K, "one filter-transform block per k block of the fused kernel");
  constexpr bool BLOCKED = M == 4 && !GEMM_LAYOUT;
  constexpr int XI_STRIDE = BLOCKED ? BC * FT_K : 0;
  float* dst = BLOCKED       ? u + (std::size_t(bx) * (cp / BC) + by) * (A * A * XI_STRIDE) + cc * FT_K + kk
               : GEMM_LAYOUT ? u + std::size_t(k0 + kk) * cp + c0 + cc
                             : u + std::size_t(c0 + cc) * kp + k0 + kk;
  if (GEMM_LAYOUT && c0 + cc >= cp) return;  // the last channel block past the padded C
#pragma unroll
  for (int i = 0; i < A; ++i) {
    const double row[3] = {t[i][0], t[i][1], t[i][2]};
    double out[A];
    filter_1d(row, out);
#pragma unroll
    for (int j = 0; j < A; ++j) {
      if constexpr (BLOCKED) {
        dst[(i * A + j) * XI_STRIDE] = float(out[j]);
      } else {
        dst[std::size_t(i * A + j) * cp * kp] = float(out[j]);
      }
    }
  }
}
template <int M>
__global__ void __launch_bounds__(NUM_THREADS)
    filter_transform_kernel(const float* __restrict__ w, float* __restrict__ u, int k_count, int c_count, int kp,
                            int cp) {
  // The fused kernel, launched as this grid's programmatic dependent, may start now: its producers
  // wait for this grid (griddepcontrol.wait) only before they first copy U.
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  filter_transform_block<M, false>(w, u, k_count, c_count, kp, cp, int(blockIdx.x), int(blockIdx.y));
}

// ---- Kernel 2: the fused Winograd convolution ---------------------------------------------------

// cp.async (sm_80+): global to shared memory without registers; `bytes` = 0 writes zeros (the
// padding). `src` must be a valid address even then.
__device__ __forceinline__ void cp_async16(float* dst, const float* src) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src));
}
// 4 bytes when `on` is nonzero, nothing otherwise (the predicate inside the instruction, so that
// the addresses are computed once for a whole row whatever its elements do).
__device__ __forceinline__ void cp_async4_if(float* dst, const float* src, unsigned on) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile(
      "{\n .reg .pred p;\n setp.ne.u32 p, %2, 0;\n @p cp.async.ca.shared.global [%0], [%1], 4;\n}\n" ::"r"(s),
      "l"(src), "r"(on));
}
// One patch row of 6 floats, src[j] to dst[j * BT] (BT floats apart), element j when bit 8 + j
// of `cols` is set (a column outside the image is left alone: zeroed once at block start); all 6 read as
// zeros (cp.async's ignore-src) when `rows & bit` is 0 (a row outside the image, or a channel past C).
// No branch: the predicates are the instruction's own, one per row and one per column.
__device__ __forceinline__ void cp_async_row6(float* dst, const float* src, unsigned cols, unsigned rows,
                                              unsigned bit) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile(
      "{\n .reg .pred z, p;\n .reg .b32 t;\n"
      " and.b32 t, %3, %4;\n setp.eq.u32 z, t, 0;\n"
      " and.b32 t, %2, 256;\n setp.ne.u32 p, t, 0;\n @p cp.async.ca.shared.global [%0], [%1], 4, z;\n"
      " and.b32 t, %2, 512;\n setp.ne.u32 p, t, 0;\n @p cp.async.ca.shared.global [%0+%5], [%1+4], 4, z;\n"
      " and.b32 t, %2, 1024;\n setp.ne.u32 p, t, 0;\n @p cp.async.ca.shared.global [%0+%6], [%1+8], 4, z;\n"
      " and.b32 t, %2, 2048;\n setp.ne.u32 p, t, 0;\n @p cp.async.ca.shared.global [%0+%7], [%1+12], 4, z;\n"
      " and.b32 t, %2, 4096;\n setp.ne.u32 p, t, 0;\n @p cp.async.ca.shared.global [%0+%8], [%1+16], 4, z;\n"
      " and.b32 t, %2, 8192;\n setp.ne.u32 p, t, 0;\n @p cp.async.ca.shared.global [%0+%9], [%1+20], 4, z;\n"
      "}\n" ::"r"(s),
      "l"(src), "r"(cols), "r"(rows), "r"(bit), "n"(BT * 4), "n"(2 * BT * 4), "n"(3 * BT * 4), "n"(4 * BT * 4),
      "n"(5 * BT * 4));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_one() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }

// The problem as the kernel reads it (kernel parameters live in the constant bank).
struct Geometry {
  int c, h, w, k, p, q, pad_h, pad_w;
  int tiles_w, tiles_per_image, tiles;  // output tiles: per row, per image, in all (N x per image)
  int cp, kp;                           // the transformed filter's padded C and K
  int chunks;                           // ceil(C / BC)
  int chunks_per_split;                 // chunks of one block (blockIdx.z: which split)
};

// A thread's output tile: image, and the patch's top-left input pixel (may lie in the padding).
struct TileCoord {
  int n, p0, q0;
};
template <int M>
__device__ __forceinline__ TileCoord tile_coord(const Geometry& g, int tile) {
  const int n = tile / g.tiles_per_image;
  const int rem = tile - n * g.tiles_per_image;
  const int th = rem / g.tiles_w;
  return {n, th * M, (rem - th * g.tiles_w) * M};
}

// The output transform of one (filter k, tile) and its store, for the three-kernel path's last kernel
// (the fused kernel's epilogue keeps its own copy of the loop: why, there). An output whose 3x3 window lies wholly in the padding is
// exactly zero; the transforms would leave rounding residue of the neighbouring pixels there, so it
// is written as 0 (only possible with a padding of 3 or more): live_of says which rows and columns
// of a tile are not such. Rows and columns past P and Q are not stored; with vec_y (Q % M == 0, y
// aligned) a tile's row is one float4 (F(4x4)) or float2 (F(2x2)) store.
// (Rows r0 .. r0 + R - 1 of the tile, R = M: all.)
template <int M, int R = M>
struct Live {
  bool row[R], col[M];
};
template <int M, int R = M>
__device__ __forceinline__ Live<M, R> live_of(const Geometry& g, const TileCoord& tcrd, int r0 = 0) {
  Live<M, R> live;
#pragma unroll
  for (int i = 0; i < M; ++i) {
    const int pr = tcrd.p0 + r0 + i - g.pad_h, qc = tcrd.q0 + i - g.pad_w;
    if (i < R) live.row[i] = pr + 2 >= 0 && pr < g.h;
    live.col[i] = qc + 2 >= 0 && qc < g.w;
  }
  return live;
}
// Rows r0 .. r0 + R - 1 of a tile's outputs y (R = M: the whole tile).
template <int M, int R>
__device__ __forceinline__ void store_rows(const Geometry& g, float* out, const TileCoord& tcrd,
                                           const Live<M, R>& live, int k, int r0, const float (&y)[R][M], bool vec_y) {
  float* dst = out + ((std::size_t(tcrd.n) * g.k + k) * g.p + tcrd.p0 + r0) * g.q + tcrd.q0;
#pragma unroll
  for (int i = 0; i < R; ++i) {
    if (tcrd.p0 + r0 + i >= g.p) break;
    float row[M];
#pragma unroll
    for (int j = 0; j < M; ++j) row[j] = live.row[i] && live.col[j] ? y[i][j] : 0.0f;
    if (vec_y) {
      if constexpr (M == 4) {
        *reinterpret_cast<float4*>(dst + std::size_t(i) * g.q) = make_float4(row[0], row[1], row[2], row[3]);
      } else {
        *reinterpret_cast<float2*>(dst + std::size_t(i) * g.q) = make_float2(row[0], row[1]);
      }
    } else {
#pragma unroll
      for (int j = 0; j < M; ++j) {
        if (tcrd.q0 + j < g.q) dst[std::size_t(i) * g.q + j] = row[j];
      }
    }
  }
}
template <int M, int A>
__device__ __forceinline__ void output_tile(const Geometry& g, float* out, const TileCoord& tcrd, const Live<M>& live,
                                            int k, const float (&m)[A][A], bool vec_y) {
  float y[M][M];
  output_2d<M, A>(m, y);
  store_rows<M, M>(g, out, tcrd, live, k, 0, y, vec_y);
}

// Named barriers between the two roles (0 is __syncthreads): BAR_FULL + buf, "the chunk in buffer buf
// is ready" (the producers arrive, the consumers wait); BAR_EMPTY + buf, "buffer buf is free again"
// (the consumers arrive, the producers wait); BAR_CONSUMERS, the consumers' own (the epilogue).
constexpr int BAR_FULL = 1;
constexpr int BAR_EMPTY = 4;
constexpr int BAR_CONSUMERS = 7;
// bar.arrive orders the arriving thread's earlier shared-memory writes before the waiters' later
// reads (the PTX memory model: the barrier's arrive releases, its sync acquires).
__device__ __forceinline__ void bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// The producers' pipeline over a block's chunks, the same for both tile sizes (the copies and the
// transform are the caller's). Copy groups, in the order committed: P0 F0 | P1 F1 | P2 F2 ... (P:
// patches, F: filter; a group may be empty). Chunk i lives in buffer i % STAGES (buf; next: chunk
// i + 1's). At iteration i the patches of chunk i + 1 are issued first (Ds[next] held chunk
// i + 1 - STAGES, transformed by this thread in an earlier iteration); "all groups but the newest
// done" is then chunk i's patches and filter. Vs[buf] and Us[next] are the consumers': Vs[buf] was
// last read for chunk i - STAGES (waited for in iteration i - 1), and Us[next] is refilled only once
// the consumers are done with chunk i + 1 - STAGES. With 3 buffers the producers can run two chunks
// ahead of the consumers, with 2 one. `threads`: the block's, for the named barriers.
// A patch element outside the image (padding, or a tile past the last) is the same for every chunk:
// a producer thread zeroes its own such elements once, in all STAGES buffers of Ds (d_floats apart),
// and its copies never write them. outside(jp, i, j): element (i, j) of its patch jp lies outside;
// at(jp, i, j): that element's offset in a buffer.
template <int STAGES, int PATCHES, int A, class Outside, class At>
__device__ __forceinline__ void zero_outside(float* Ds, int d_floats, const Outside& outside, const At& at) {
#pragma unroll
  for (int b = 0; b < STAGES; ++b)
#pragma unroll
    for (int jp = 0; jp < PATCHES; ++jp)
#pragma unroll
      for (int i = 0; i < A; ++i)
#pragma unroll
        for (int j = 0; j < A; ++j) {
          if (outside(jp, i, j)) Ds[b * d_floats + at(jp, i, j)] = 0.0f;
        }
}

template <int STAGES, class CopyPatches, class CopyFilter, class Transform>
__device__ __forceinline__ void producer_pipeline(int chunks, int chunk_begin, int threads, CopyPatches& copy_patches,
                                                  CopyFilter& copy_filter, Transform& transform_patches) {
  if (chunks > 0) {
    copy_patches(chunk_begin, 0);
    cp_async_commit();
    // U is the filter transform's output: wait for that grid (and its writes) here, once the first
    // patches' copies are on their way (the launch is a programmatic dependent; without a filter
    // transform before it, the wait returns at once).
    asm volatile("griddepcontrol.wait;" ::: "memory");
    copy_filter(chunk_begin, 0);
    cp_async_commit();
  }
  for (int i = 0; i < chunks; ++i) {
    const int buf = i % STAGES, next = (i + 1) % STAGES;
    if (i + 1 < chunks) copy_patches(chunk_begin + i + 1, next);
    cp_async_commit();
    cp_async_wait_one();
    transform_patches(buf);
    bar_arrive(BAR_FULL + buf, threads);
    if (i + 1 < chunks) {
      if (i + 1 >= STAGES) bar_sync(BAR_EMPTY + next, threads);
      copy_filter(chunk_begin + i + 1, next);
    }
    cp_async_commit();
  }
  cp_async_wait_all();
}

template <int M>
__global__ void __launch_bounds__(Tile<M>::THREADS, 1)
    winograd_kernel(const Geometry g, const float* __restrict__ x, const float* __restrict__ u,
                    float* __restrict__ out, std::size_t split_stride, bool vec_y) {
  using T = Tile<M>;
  constexpr int A = T::ALPHA;
  constexpr int NXI = T::NXI;
  constexpr int BK = T::BK;
  extern __shared__ __align__(16) float smem[];
  float* const Us = smem;                          // [STAGES][NXI][BC][BK]
  float* const Ds = Us + T::STAGES * T::U_FLOATS;  // [STAGES][BC][NXI][BT]
  float* const Vs = Ds + T::STAGES * T::D_FLOATS;  // [STAGES][NXI][BC][BT]

  const int tid = int(threadIdx.x);
  const int warp = tid / WARP_SIZE, lane = tid % WARP_SIZE;
  // Block b takes filter block b % k_blocks of tile block b / k_blocks: the blocks that run at the
  // same time share their input patches (through L2), and the grid has no 65535 limit.
  const int k_blocks = g.kp / BK;
  const int tile0 = int(blockIdx.x) / k_blocks * BT;
  const int k0 = int(blockIdx.x) % k_blocks * BK;
  const int chunk_begin = int(blockIdx.z) * g.chunks_per_split;
  const int chunks = min(g.chunks, chunk_begin + g.chunks_per_split) - chunk_begin;  // this block's
  out += blockIdx.z * split_stride;  // this split's partial y (split_stride 0: y itself)

  constexpr int CONSUMERS = T::CONSUMER_THREADS;  // 384 (F4) or 256 (F2)
  constexpr int THREADS = T::THREADS;             // 512 (F4) or 384 (F2)
  if (M == 4 && tid >= CONSUMERS) {
    // ---- F(4x4)'s producers. Producer thread pt owns the two adjacent tiles 2 tp and 2 tp + 1
    // of channel tc (tp = pt % 16, tc = pt / 16) in every chunk: its loads of Ds and its stores of Vs
    // are float2s (one instruction for both patches), the copies are branch-free (cp_async_row6: the
    // column predicates, and ignore-src for the rows outside the image and a channel past C), and the
    // chunk's transformed filter is one contiguous run (the blocked layout of filter_transform_kernel),
    // copied from one base address with immediate offsets.
    const int pt = tid - CONSUMERS;
    constexpr int PAIRS = BT / 2;  // 16 tile pairs x BC channels = PRODUCER_THREADS
    static_assert(PAIRS * BC == PRODUCER_THREADS && PATCHES == 2, "two adjacent tiles of one channel per thread");
    const int tp = pt % PAIRS, tc = pt / PAIRS;
    // Patch jp is tile 2 tp + (jp ^ half): lanes 16-31 of a warp (the next channel, whose Ds rows lie
    // on the same banks) copy their odd tile first, so that a copy instruction's 32 lanes write 32 banks.
    const int half = tc & 1;
    unsigned in_mask[PATCHES];  // bit i: patch row i inside the image; bit 8 + j: column j
    int x_row[PATCHES][A];  // x offset of (n, channel 0, patch row i clamped into the image, patch column 0)
#pragma unroll
    for (int jp = 0; jp < PATCHES; ++jp) {
      const int tile = tile0 + 2 * tp + (jp ^ half);
      TileCoord tcrd{0, 0, 0};
      if (tile < g.tiles) tcrd = tile_coord<M>(g, tile);
      const int h0 = tcrd.p0 - g.pad_h, w0 = tcrd.q0 - g.pad_w;
      in_mask[jp] = 0;
#pragma unroll
      for (int i = 0; i < A; ++i) {
        const bool row = tile < g.tiles && unsigned(h0 + i) < unsigned(g.h);
        const bool col = tile < g.tiles && unsigned(w0 + i) < unsigned(g.w);
        in_mask[jp] |= unsigned(row) << i | unsigned(col) << (8 + i);
        x_row[jp][i] = (tcrd.n * g.c * g.h + min(max(h0 + i, 0), g.h - 1)) * g.w + w0;
      }
    }
    const int plane = g.h * g.w;
    // The elements of columns outside the image (and, as in the chapter, of rows outside it) are zeroed
    // once in every buffer; the copies never write the columns, and write zeros to the rows.
    zero_outside<T::STAGES, PATCHES, A>(
        Ds, T::D_FLOATS,
        [&](int jp, int i, int j) { return ((in_mask[jp] >> i) & (in_mask[jp] >> (8 + j)) & 1u) == 0; },
        [&](int jp, int i, int j) { return (tc * NXI + i * A + j) * BT + 2 * tp + (jp ^ half); });
    // The transformed filter: float4 number (w U_VECS + v) 32 + lane of the chunk's contiguous
    // NXI x BC x BK floats (Us's order), v < U_VECS, w = pt / 32: each copy instruction of a warp reads
    // 512 contiguous bytes, and a thread's float4s lie 512 bytes apart (8 of them within the +-2 KiB
    // that LDGSTS's immediate offset reaches: 3 base addresses per chunk, not 9).
    const int u_first = ((pt / WARP_SIZE) * T::U_VECS * WARP_SIZE + pt % WARP_SIZE) * VEC;
    const float* const u_thread = u + std::size_t(k0 / BK) * g.chunks * T::U_FLOATS + u_first;

    auto copy_patches = [&](int chunk, int buf) {
      const int ch = chunk * BC + tc;
      const bool ok = ch < g.c;
      // Channel 0 for one past C (a valid address). The offsets are summed in 32 bits (the tensors have
      // fewer than 2^31 elements): one IADD3 and one IMAD.WIDE per row, not a 64-bit sum.
      const int coff = ok ? ch * plane : 0;
      float* const d = Ds + buf * T::D_FLOATS + tc * NXI * BT + 2 * tp;
#pragma unroll
      for (int jp = 0; jp < PATCHES; ++jp) {
        const unsigned rows = ok ? in_mask[jp] : 0u;
#pragma unroll
        for (int i = 0; i < A; ++i)
          cp_async_row6(d + (jp ^ half) + i * A * BT, x + (coff + x_row[jp][i]), in_mask[jp], rows, 1u << i);
      }
    };
    auto copy_filter = [&](int chunk, int buf) {
      const float* const src = u_thread + std::size_t(chunk) * T::U_FLOATS;
      float* const dst = Us + buf * T::U_FLOATS + u_first;
#pragma unroll
      for (int v = 0; v < T::U_VECS; ++v) cp_async16(dst + v * WARP_SIZE * VEC, src + v * WARP_SIZE * VEC);
    };
    // V = B^T d B of both patches (the chapter's arithmetic per patch), float2 loads and stores.
    auto transform_patches = [&](int buf) {
      const float* const d = Ds + buf * T::D_FLOATS + tc * NXI * BT + 2 * tp;
      float v0[A][A], v1[A][A];
#pragma unroll
      for (int i = 0; i < A; ++i)
#pragma unroll
        for (int j = 0; j < A; ++j) {
          const float2 f = *reinterpret_cast<const float2*>(d + (i * A + j) * BT);
          v0[i][j] = f.x, v1[i][j] = f.y;
        }
      input_2d<A>(v0);
      input_2d<A>(v1);
      float* const vs = Vs + buf * T::V_FLOATS + tc * BT + 2 * tp;
#pragma unroll
      for (int i = 0; i < A; ++i)
#pragma unroll
        for (int j = 0; j < A; ++j)
          *reinterpret_cast<float2*>(vs + (i * A + j) * BC * BT) = make_float2(v0[i][j], v1[i][j]);
    };

    producer_pipeline<T::STAGES>(chunks, chunk_begin, THREADS, copy_patches, copy_filter, transform_patches);
    return;
  }
  if (M == 2 && tid >= CONSUMERS) {  // F(2x2): the chapter's producers
    // ---- The producers: warps CONSUMER_WARPS.., 128 threads. Producer thread pt copies and transforms
    // the patches of tile tt and channels tc0 + j * CH_STEP (j < PATCHES) of every chunk, and copies
    // its share of the chunk's transformed filter. Its raw patches are its own: Ds needs no barrier.
    const int pt = tid - CONSUMERS;
    constexpr int CH_STEP = PRODUCER_THREADS / BT;  // 4
    const int tt = pt % BT, tc0 = pt / BT;
    // Which of the patch's rows and columns lie inside the image, as bit masks (a tile past the last
    // one has none: its patch reads zeros), and the columns themselves (0 for one outside: every
    // address stays inside x, even those that cp.async reads 0 bytes of).
    unsigned row_in = 0, col_in = 0;
    int x_thread = 0;  // x offset of (n, channel tc0, patch row 0, patch column 0), maybe in the padding
    {
      const int tile = tile0 + tt;
      TileCoord tcrd{0, 0, 0};
      if (tile < g.tiles) tcrd = tile_coord<M>(g, tile);
      const int h0 = tcrd.p0 - g.pad_h, w0 = tcrd.q0 - g.pad_w;
#pragma unroll
      for (int i = 0; i < A; ++i) {
        const bool row = tile < g.tiles && unsigned(h0 + i) < unsigned(g.h);
        const bool col = tile < g.tiles && unsigned(w0 + i) < unsigned(g.w);
        row_in |= unsigned(row) << i;
        col_in |= unsigned(col) << i;
      }
      x_thread = ((tcrd.n * g.c + tc0) * g.h + h0) * g.w + w0;
    }
    const int plane = g.h * g.w;
    // Its patch elements outside the image: zeroed once, never copied.
    zero_outside<T::STAGES, PATCHES, A>(
        Ds, T::D_FLOATS, [&](int, int i, int j) { return ((row_in >> i) & (col_in >> j) & 1u) == 0; },
        [&](int jp, int i, int j) { return ((tc0 + jp * CH_STEP) * NXI + i * A + j) * BT + tt; });

    // The transformed filter's copy: float4 number pt + v * PRODUCER_THREADS of the chunk's
    // NXI x BC x BK floats, for v < U_VECS; the thread's channel and filters are the same for every
    // v, its point advances by U_XI_STEP.
    constexpr int ROW_VECS = BK / VEC;  // float4s per (point, channel) row of BK filters
    static_assert(PRODUCER_THREADS % (BC * ROW_VECS) == 0, "a thread keeps its channel and filters");
    constexpr int U_XI_STEP = PRODUCER_THREADS / (BC * ROW_VECS);  // 2 (F4) or 1 (F2)
    const int u_xi = pt / (BC * ROW_VECS), u_c = pt % (BC * ROW_VECS) / ROW_VECS, u_k = pt % ROW_VECS * VEC;
    const float* const u_thread = u + (std::size_t(u_xi) * g.cp + u_c) * g.kp + k0 + u_k;
    const int u_step = U_XI_STEP * g.cp * g.kp;  // (the transformed filter has fewer than 2^31 floats)
    const int us_thread = (u_xi * BC + u_c) * BK + u_k;

    // Chunk `chunk`'s raw patches of this thread into Ds[buf] (zeros for a channel past C).
    auto copy_patches = [&](int chunk, int buf) {
#pragma unroll
      for (int jp = 0; jp < PATCHES; ++jp) {
        const int tc = tc0 + jp * CH_STEP;
#pragma unroll
        for (int i = 0; i < A; ++i) {
          if (((row_in >> i) & 1u) == 0) continue;
          float* d = Ds + buf * T::D_FLOATS + (tc * NXI + i * A) * BT + tt;  // Ds[buf][tc][i][j][tt]
          if (chunk * BC + tc < g.c) {
            const float* row = x + (x_thread + (chunk * BC + jp * CH_STEP) * plane + i * g.w);
#pragma unroll
            for (int j = 0; j < A; ++j) cp_async4_if(d + j * BT, row + j, (col_in >> j) & 1u);
          } else {
#pragma unroll
            for (int j = 0; j < A; ++j) d[j * BT] = 0.0f;
          }
        }
      }
    };
    // Chunk `chunk`'s transformed filter, this thread's U_VECS float4s, into Us[buf].
    auto copy_filter = [&](int chunk, int buf) {
      const float* src = u_thread + std::size_t(chunk) * BC * g.kp;
#pragma unroll
      for (int v = 0; v < T::U_VECS; ++v)
        cp_async16(Us + buf * T::U_FLOATS + us_thread + v * U_XI_STEP * BC * BK, src + v * u_step);
    };
    // V = B^T d B of this thread's patches, from Ds[buf] into Vs[buf][xi][tc][tt]. The patches are
    // independent: unrolled, their loads, adds and stores interleave, and the producer, one warp per
    // scheduler beside two consumer warps, finishes a chunk sooner (README: 4% to 5% on the F(2x2)
    // layers against one patch after the other).
    auto transform_patches = [&](int buf) {
#pragma unroll
      for (int jp = 0; jp < PATCHES; ++jp) {
        const int tc = tc0 + jp * CH_STEP;
        const float* d = Ds + buf * T::D_FLOATS + tc * NXI * BT + tt;
        float v[A][A];
#pragma unroll
        for (int i = 0; i < A; ++i)
#pragma unroll
          for (int j = 0; j < A; ++j) v[i][j] = d[(i * A + j) * BT];
        input_2d<A>(v);
        float* vs = Vs + buf * T::V_FLOATS + tc * BT + tt;
#pragma unroll
        for (int i = 0; i < A; ++i)
#pragma unroll
          for (int j = 0; j < A; ++j) vs[(i * A + j) * BC * BT] = v[i][j];
      }
    };

    producer_pipeline<T::STAGES>(chunks, chunk_begin, THREADS, copy_patches, copy_filter, transform_patches);
    return;
  }

  // ---- The consumers: warps 0..CONSUMER_WARPS-1, the GEMMs and the epilogue.
  // acc[p][i][j] += U[xi][c][filter i] * V[xi][c][tile j] over the chunk's channels, for this warp's
  // whole points xi = warp * FULL + p, and accr[i][j] for its share of the left-over point
  // xi = FULL * CONSUMER_WARPS + warp / REM_SPLIT (filters rs * BK / REM_SPLIT + ...).
  const int lane_k = lane / LANES_T, lane_t = lane % LANES_T;
  const int rs = warp % T::REM_SPLIT;
  float acc[T::FULL][T::LK][T::LT];
  float accr[T::LKR][T::LT];
#pragma unroll
  for (int p_ = 0; p_ < T::FULL; ++p_)
#pragma unroll
    for (int i = 0; i < T::LK; ++i)
#pragma unroll
      for (int j = 0; j < T::LT; ++j) acc[p_][i][j] = 0.0f;
#pragma unroll
  for (int i = 0; i < T::LKR; ++i)
#pragma unroll
    for (int j = 0; j < T::LT; ++j) accr[i][j] = 0.0f;
  const int u_lane = warp * T::FULL * BC * BK + lane_k * VEC;
  const int v_lane = warp * T::FULL * BC * BT + lane_t * VEC;
  const int xr = T::FULL * T::CONSUMER_WARPS + (T::REM > 0 ? warp / T::REM_SPLIT : 0);
  const int ur_lane = xr * BC * BK + rs * (BK / T::REM_SPLIT) + lane_k * VEC;
  const int vr_lane = xr * BC * BT + lane_t * VEC;
  constexpr int UNROLL = M == 2 ? UNROLL_F2 : UNROLL_F4;
  auto multiply = [&](int buf) {
    const float* us = Us + buf * T::U_FLOATS + u_lane;
    const float* vs = Vs + buf * T::V_FLOATS + v_lane;
#pragma unroll UNROLL
    for (int c = 0; c < BC; ++c) {
#pragma unroll
      for (int p_ = 0; p_ < T::FULL; ++p_) {
        float a[T::LK], b[T::LT];
#pragma unroll
        for (int s = 0; s < T::SUB_K; ++s) {
          const float4 f = *reinterpret_cast<const float4*>(us + (p_ * BC + c) * BK + s * LANES_K * VEC);
          a[s * VEC + 0] = f.x, a[s * VEC + 1] = f.y, a[s * VEC + 2] = f.z, a[s * VEC + 3] = f.w;
        }
#pragma unroll
        for (int s = 0; s < T::SUB_T; ++s) {
          const float4 f = *reinterpret_cast<const float4*>(vs + (p_ * BC + c) * BT + s * LANES_T * VEC);
          b[s * VEC + 0] = f.x, b[s * VEC + 1] = f.y, b[s * VEC + 2] = f.z, b[s * VEC + 3] = f.w;
        }
#pragma unroll
        for (int i = 0; i < T::LK; ++i)
#pragma unroll
          for (int j = 0; j < T::LT; ++j) acc[p_][i][j] = fmaf(a[i], b[j], acc[p_][i][j]);
      }
      if constexpr (T::REM > 0) {
        float a[T::LKR], b[T::LT];
        const float* ur = Us + buf * T::U_FLOATS + ur_lane + c * BK;
        const float* vr = Vs + buf * T::V_FLOATS + vr_lane + c * BT;
#pragma unroll
        for (int s = 0; s < T::SUB_KR; ++s) {
          const float4 f = *reinterpret_cast<const float4*>(ur + s * LANES_K * VEC);
          a[s * VEC + 0] = f.x, a[s * VEC + 1] = f.y, a[s * VEC + 2] = f.z, a[s * VEC + 3] = f.w;
        }
#pragma unroll
        for (int s = 0; s < T::SUB_T; ++s) {
          const float4 f = *reinterpret_cast<const float4*>(vr + s * LANES_T * VEC);
          b[s * VEC + 0] = f.x, b[s * VEC + 1] = f.y, b[s * VEC + 2] = f.z, b[s * VEC + 3] = f.w;
        }
#pragma unroll
        for (int i = 0; i < T::LKR; ++i)
#pragma unroll
          for (int j = 0; j < T::LT; ++j) accr[i][j] = fmaf(a[i], b[j], accr[i][j]);
      }
    }
  };

  // The chunk loop: wait until the producers have chunk i in buffer i % STAGES, multiply, and hand the
  // buffer back (only when the producers will refill it: chunk i + STAGES exists).
  for (int i = 0; i < chunks; ++i) {
    const int buf = i % T::STAGES;
    bar_sync(BAR_FULL + buf, THREADS);
    multiply(buf);
    if (i + T::STAGES < chunks) bar_arrive(BAR_EMPTY + buf, THREADS);
  }

  // Epilogue. The (m+2)^2 sums of one (filter, tile) are spread over the warps: they meet in
  // shared memory, Ms[xi][filter][tile] (over the pipeline's buffers: the producers are done with
  // them, and so is every consumer after the barrier), and each thread then transforms whole
  // (filter, tile) pairs: Y = A^T M A.
  bar_sync(BAR_CONSUMERS, CONSUMERS);
  float* const Ms = smem;
#pragma unroll
  for (int p_ = 0; p_ < T::FULL; ++p_) {
    const int xi = warp * T::FULL + p_;
#pragma unroll
    for (int i = 0; i < T::LK; ++i) {
      const int kk = (i / VEC) * LANES_K * VEC + lane_k * VEC + i % VEC;
#pragma unroll
      for (int s = 0; s < T::SUB_T; ++s) {
        *reinterpret_cast<float4*>(Ms + (xi * BK + kk) * BT + s * LANES_T * VEC + lane_t * VEC) = make_float4(
            acc[p_][i][s * VEC], acc[p_][i][s * VEC + 1], acc[p_][i][s * VEC + 2], acc[p_][i][s * VEC + 3]);
      }
    }
  }
  if constexpr (T::REM > 0) {
#pragma unroll
    for (int i = 0; i < T::LKR; ++i) {
      const int kk = rs * (BK / T::REM_SPLIT) + (i / VEC) * LANES_K * VEC + lane_k * VEC + i % VEC;
#pragma unroll
      for (int s = 0; s < T::SUB_T; ++s) {
        *reinterpret_cast<float4*>(Ms + (xr * BK + kk) * BT + s * LANES_T * VEC + lane_t * VEC) =
            make_float4(accr[i][s * VEC], accr[i][s * VEC + 1], accr[i][s * VEC + 2], accr[i][s * VEC + 3]);
      }
    }
  }
  bar_sync(BAR_CONSUMERS, CONSUMERS);

  // Pairs tid + o * CONSUMERS: tile tid % BT (the same for every o, CONSUMERS being a multiple
  // of BT), filter tid / BT + o * CONSUMERS / BT. Lanes take consecutive tiles: conflict-free reads.
  const int t_out = tid % BT;
  const int tile = tile0 + t_out;
  if (tile >= g.tiles) return;
  const TileCoord tcrd = tile_coord<M>(g, tile);
  // An output whose 3x3 window lies wholly in the padding is exactly zero (live_of, above). This
  // epilogue keeps its own copy of output_tile's loop: calling it reallocated the whole kernel's
  // registers (the same instructions otherwise), and seed_3x3 and r50_c2_3x3 ran 0.7% to 1.5% slower
  // in both rounds of tuning run 71.
  bool row_live[M], col_live[M];
#pragma unroll
  for (int i = 0; i < M; ++i) {
    const int pr = tcrd.p0 + i - g.pad_h, qc = tcrd.q0 + i - g.pad_w;
    row_live[i] = pr + 2 >= 0 && pr < g.h;
    col_live[i] = qc + 2 >= 0 && qc < g.w;
  }
#pragma unroll 1
  for (int o = 0; o < T::OUTS; ++o) {
    const int kk = tid / BT + o * (CONSUMERS / BT);
    if ((BK * BT) % CONSUMERS != 0 && kk >= BK) break;  // F(4x4): warps 8-11 have no third pair
    const int k = k0 + kk;
    if (k >= g.k) break;
    float m[A][A];
#pragma unroll
    for (int i = 0; i < A; ++i)
#pragma unroll
      for (int j = 0; j < A; ++j) m[i][j] = Ms[((i * A + j) * BK + kk) * BT + t_out];
    float y[M][M];
    output_2d<M, A>(m, y);
    float* dst = out + ((std::size_t(tcrd.n) * g.k + k) * g.p + tcrd.p0) * g.q + tcrd.q0;
#pragma unroll
    for (int i = 0; i < M; ++i) {
      if (tcrd.p0 + i >= g.p) break;
      float row[M];
#pragma unroll
      for (int j = 0; j < M; ++j) row[j] = row_live[i] && col_live[j] ? y[i][j] : 0.0f;
      if (vec_y) {  // Q % M == 0: the tile's row is whole and aligned
        if constexpr (M == 4) {
          *reinterpret_cast<float4*>(dst + std::size_t(i) * g.q) = make_float4(row[0], row[1], row[2], row[3]);
        } else {
          *reinterpret_cast<float2*>(dst + std::size_t(i) * g.q) = make_float2(row[0], row[1]);
        }
      } else {
#pragma unroll
        for (int j = 0; j < M; ++j) {
          if (tcrd.q0 + j < g.q) dst[std::size_t(i) * g.q + j] = row[j];
        }
      }
    }
  }
}

// Split over the channels: the partial outputs of the splits, summed in a fixed order (the same
// bits every run; no atomics), VEC consecutive outputs per thread, float4 when vec.
__global__ void __launch_bounds__(NUM_THREADS)
    sum_splits_kernel(const float* __restrict__ part, float* __restrict__ y, int count, int splits, bool vec) {
  const int i0 = (int(blockIdx.x) * NUM_THREADS + int(threadIdx.x)) * VEC;
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

// ---- The three-kernel path -------------------------------------------------------------------------
// Where the fused kernel's grid is too small to fill the GPU (few tiles, large C and K: r50_c3-c5),
// V and M go through global memory instead (9 to 29 MB each there) and the (m+2)^2 products run as
// one batched GEMM on chapter 10's kernel, whose tiles fill the SMs whatever the tile count:
//   1. transforms_kernel: its first blocks transform the filter into U[xi][k][c] (a K x C matrix per
//      point), the others the input patches into V[xi][c][t] (C x tiles, tp floats per row), one
//      thread per (channel, tile);
//   2. batched_gemm_kernel: M[xi] = U[xi] V[xi] for every point xi = blockIdx.z (K x tiles, C deep),
//      chapter 10's block as it is (ch10::gemm_block, one split);
//   3. output_transform_kernel: OUTPUT_LANES threads per (filter, tile) gather its (m+2)^2 sums and
//      store Y.
template <int M>
__global__ void __launch_bounds__(NUM_THREADS)
    transforms_kernel(const Geometry g, const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ u,
                      float* __restrict__ v, int tp, int filter_blocks_x, int filter_blocks) {
  // No griddepcontrol.launch_dependents: the GEMM, this grid's programmatic dependent, launches as
  // its last blocks exit (its launch overlapping their tail), onto free SMs. Triggered at the start,
  // its blocks launched while this grid still filled the GPU, where they could only take the first
  // SMs that freed (up to 8 blocks of 64 x 64 on one): r50_c5_3x3 took 0.150 ms instead of 0.126
  // (tuning run 71).
  constexpr int A = M + 2;
  const int b = int(blockIdx.x);
  if (b < filter_blocks) {
    filter_transform_block<M, true>(w, u, g.k, g.c, g.kp, g.cp, b % filter_blocks_x, b / filter_blocks_x);
    return;
  }
  const long long i = static_cast<long long>(b - filter_blocks) * NUM_THREADS + threadIdx.x;  // c x tiles + t
  if (i >= static_cast<long long>(g.c) * g.tiles) return;
  const int c = int(i / g.tiles), t = int(i % g.tiles);
  const TileCoord tc = tile_coord<M>(g, t);
  const float* xc = x + (std::size_t(tc.n) * g.c + c) * g.h * g.w;
  float d[A][A];
#pragma unroll
  for (int i = 0; i < A; ++i) {
    const int h = tc.p0 - g.pad_h + i;
#pragma unroll
    for (int j = 0; j < A; ++j) {
      const int wq = tc.q0 - g.pad_w + j;
      d[i][j] = h >= 0 && h < g.h && wq >= 0 && wq < g.w ? xc[std::size_t(h) * g.w + wq] : 0.0f;
    }
  }
  input_2d<A>(d);
  float* dst = v + std::size_t(c) * tp + t;
#pragma unroll
  for (int xi = 0; xi < A * A; ++xi) dst[std::size_t(xi) * g.cp * tp] = d[xi / A][xi % A];
}

template <int BLOCK_M, int BLOCK_N>
__global__ void __launch_bounds__(ch10::Tile<BLOCK_M, BLOCK_N>::NUM_THREADS,
                                  ch10::Tile<BLOCK_M, BLOCK_N>::MIN_BLOCKS_PER_SM)
    batched_gemm_kernel(int k_count, int tiles, int c_count, const float* u, int ldu, std::size_t u_stride,
                        const float* v, int ldv, std::size_t v_stride, float* m, std::size_t m_stride) {
  asm volatile("griddepcontrol.wait;" ::: "memory");  // U and V: the transforms kernel's
  const std::size_t xi = blockIdx.z;
  ch10::gemm_block<BLOCK_M, BLOCK_N, false, true>(k_count, tiles, c_count, 1.0f, u + xi * u_stride, ldu,
                                                  v + xi * v_stride, ldv, 0.0f, m + xi * m_stride, ldv, nullptr,
                                                  nullptr);
}

// OUTPUT_LANES = 2: two threads per (filter, tile), each loading half the columns of its sums
// (A x A/2 instead of A x A), transforming them, and trading the halves of the rows the other one
// stores (M/2 x A/2 shuffles): twice the threads, half the loads in flight per thread.
constexpr int OUTPUT_LANES = 2;
static_assert(OUTPUT_LANES == 1 || OUTPUT_LANES == 2, "one or two threads per (filter, tile)");
template <int M>
__global__ void __launch_bounds__(NUM_THREADS)
    output_transform_kernel(const Geometry g, const float* __restrict__ sums, float* __restrict__ y, int tp,
                            bool vec_y) {
  asm volatile("griddepcontrol.wait;" ::: "memory");  // M: the GEMM's (a programmatic dependent of it)
  constexpr int A = M + 2;
  const long long items = static_cast<long long>(g.k) * g.tiles;
  const long long i = (static_cast<long long>(blockIdx.x) * NUM_THREADS + threadIdx.x) / OUTPUT_LANES;  // k x tiles + t
  if constexpr (OUTPUT_LANES == 1) {
    if (i >= items) return;
    const int k = int(i / g.tiles), t = int(i % g.tiles);
    const TileCoord tc = tile_coord<M>(g, t);
    float m[A][A];
#pragma unroll
    for (int r = 0; r < A; ++r)
#pragma unroll
      for (int j = 0; j < A; ++j) m[r][j] = sums[(std::size_t(r * A + j) * g.kp + k) * tp + t];
    output_tile<M, A>(g, y, tc, live_of<M>(g, tc), k, m, vec_y);
  } else {
    constexpr int HA = A / 2, HM = M / 2;
    const int half = int(threadIdx.x) & 1;  // columns half * HA.., output rows half * HM..
    const bool live_item = i < items;       // both threads of a pair stay for the shuffles
    const int k = live_item ? int(i / g.tiles) : 0, t = live_item ? int(i % g.tiles) : 0;
    float tcol[M][HA];  // A^T m, this thread's columns
#pragma unroll
    for (int jj = 0; jj < HA; ++jj) {
      float col[A], out[M];
#pragma unroll
      for (int r = 0; r < A; ++r) col[r] = sums[(std::size_t(r * A + half * HA + jj) * g.kp + k) * tp + t];
      output_1d(col, out);
#pragma unroll
      for (int r = 0; r < M; ++r) tcol[r][jj] = out[r];
    }
    float yr[HM][M];  // this thread's output rows
#pragma unroll
    for (int rr = 0; rr < HM; ++rr) {
      float row[A];
#pragma unroll
      for (int jj = 0; jj < HA; ++jj) {
        const float mine = half ? tcol[HM + rr][jj] : tcol[rr][jj];  // my row, my column
        const float send = half ? tcol[rr][jj] : tcol[HM + rr][jj];  // the other's row, my column
        const float got = __shfl_xor_sync(0xffffffffu, send, 1);     // my row, the other's column
        row[jj] = half ? got : mine;
        row[HA + jj] = half ? mine : got;
      }
      output_1d(row, yr[rr]);
    }
    if (!live_item) return;
    const TileCoord tc = tile_coord<M>(g, t);
    store_rows<M, HM>(g, y, tc, live_of<M, HM>(g, tc, half * HM), k, half * HM, yr, vec_y);
  }
}

// ---- Host side -------------------------------------------------------------------------------------

inline const char* unsupported(const tut::ConvProblem& p) {
  if (p.r != 3 || p.s != 3 || p.stride_h != 1 || p.stride_w != 1 || p.dil_h != 1 || p.dil_w != 1) {
    return "22_winograd computes 3x3 filters at stride 1 and dilation 1 (valid: R = S = 3, stride 1:1, "
           "dilation 1:1)";
  }
  return nullptr;
}

// The error bound (docs/measuring.md, "Winograd's error"): for output (i, j) of a tile,
//   |y^ - y| <= gamma_{C + t} h_i h_j ||w[k]||_2 ||D||_2,   h_i = sum_xi |A[xi][i]| ||G[xi][:]||_2 ||B[:][xi]||_2
// with D the tile's C x (m+2)^2 input patch and t = 1 + 2 IN_TERMS + 2 OUT_TERMS the transforms'
// depth; ||D|| <= rho ||x_col(:, j)|| with rho = 3 (m+2) for inputs of magnitude 1 to 3 (the
// self-test's integers) whenever the window holds one pixel of the image. The reference's own
// rounding, 2 gamma_{9C+2}, is added. h_max^2 is computed here from the matrices above.
template <int M>
double transform_gain() {
  constexpr int A = M + 2;
  double h_max = 0;
  for (int i = 0; i < M; ++i) {
    double h = 0;
    for (int xi = 0; xi < A; ++xi) {
      // Column xi of A^T, B^T and G, by transforming the unit vectors.
      double gcol[A][3] = {}, bcol[A] = {}, acol[M] = {};
      for (int r = 0; r < 3; ++r) {
        double e[3] = {}, uu[A];
        e[r] = 1;
        filter_1d(e, uu);
        for (int a = 0; a < A; ++a) gcol[a][r] = uu[a];
      }
      float ein[A] = {}, vv[A];
      for (int l = 0; l < A; ++l) {  // row xi of B^T: (B^T e_l)[xi] over l
        for (int a = 0; a < A; ++a) ein[a] = a == l ? 1.0f : 0.0f;
        input_1d(ein, vv);
        bcol[l] = double(vv[xi]);
      }
      float em[A] = {};
      em[xi] = 1.0f;
      float yy[M];
      output_1d(em, yy);
      for (int a = 0; a < M; ++a) acol[a] = double(yy[a]);
      double gn = 0, bn = 0;
      for (int r = 0; r < 3; ++r) gn += gcol[xi][r] * gcol[xi][r];
      for (int l = 0; l < A; ++l) bn += bcol[l] * bcol[l];
      h += std::fabs(acol[i]) * std::sqrt(gn) * std::sqrt(bn);
    }
    h_max = std::max(h_max, h);
  }
  return h_max * h_max;
}

inline int choose_m(const tut::ConvProblem& p);
inline double tolerance(const tut::ConvProblem& p) {
  const int m = choose_m(p);
  const int t = 1 + 2 * (m == 2 ? Tile<2>::IN_TERMS : Tile<4>::IN_TERMS) +
                2 * (m == 2 ? Tile<2>::OUT_TERMS : Tile<4>::OUT_TERMS);
  const double nu = double(p.c + t) * 0x1p-24;
  const double gamma = nu / (1.0 - nu);
  const double rho = 3.0 * (m + 2);
  const double gain = m == 2 ? transform_gain<2>() : transform_gain<4>();
  return rho * gamma * gain + tut::reduction_tolerance(9LL * p.c);
}

// The norm-wise threshold: a model of the typical error, not a bound (docs/measuring.md, "Winograd's
// error"). Random-signed roundings add like a random walk, and the transforms scale the error of the
// transformed domain by about h_max (not its square, which only aligned signs reach); the reference
// adds its own sqrt(9C)-term walk. 64 times u (h_max + sqrt(9C)) leaves a wide margin above the
// errors the runs measure, and stays far below what a lost chunk of channels or a wrong index costs.
inline double norm_tolerance(const tut::ConvProblem& p) {
  const double h_max = std::sqrt(choose_m(p) == 2 ? transform_gain<2>() : transform_gain<4>());
  return 64.0 * 0x1p-24 * (h_max + std::sqrt(9.0 * p.c));
}

// ---- The plan: how many channel splits ------------------------------------------------------------
// As chapter 20's tile rule, in units of one chunk (BC channels) of one block: a launch of
// units = blocks x S runs ceil(units / (SMs x occ)) rounds of ceil(chunks / S) + OVERHEAD_CHUNKS
// (the first copy and the epilogue, which nothing overlaps). A split adds the partial outputs'
// traffic (written and read back: 8 bytes per output and split) at DRAM_BYTES_PER_SM_CLOCK, over
// a chunk's clocks (its multiply-adds at 128 per clock per SM), plus one chunk for the second launch.
constexpr int MAX_SPLITS = 16;
constexpr double OVERHEAD_CHUNKS = 2.0;
constexpr double DRAM_BYTES_PER_SM_CLOCK = 14.0;  // ~3.3 TB/s over 132 SMs at ~1.75 GHz
constexpr double FMA_PER_SM_CLOCK = 128.0;

struct Plan {
  int m = 4;
  bool fused = true;
  int splits = 1;
  int chunks_per_split = 1;
  int gemm_tile = 0;  // the three kernels: chapter 10's tile shape for the batched GEMM
};

struct DeviceFacts {
  int sms = 0;
  int occ[2] = {1, 1};  // blocks per SM of the F(2x2) and F(4x4) kernels
};
inline const DeviceFacts& device_facts() {
  static tut::PerDevice<DeviceFacts> cache;
  return cache.get([](int device, DeviceFacts& facts) {
    TUT_CUDA_CHECK(cudaDeviceGetAttribute(&facts.sms, cudaDevAttrMultiProcessorCount, device));
    TUT_CUDA_CHECK(cudaFuncSetAttribute(winograd_kernel<2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        int(Tile<2>::SMEM_BYTES)));
    TUT_CUDA_CHECK(cudaFuncSetAttribute(winograd_kernel<4>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        int(Tile<4>::SMEM_BYTES)));
    TUT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&facts.occ[0], winograd_kernel<2>, Tile<2>::THREADS,
                                                                 Tile<2>::SMEM_BYTES));
    TUT_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&facts.occ[1], winograd_kernel<4>, Tile<4>::THREADS,
                                                                 Tile<4>::SMEM_BYTES));
    facts.occ[0] = std::max(facts.occ[0], 1);
    facts.occ[1] = std::max(facts.occ[1], 1);
  });
}

struct Sizes {
  int tiles_w, tiles_per_image, tiles, chunks, cp, kp, bk, nxi;
};
inline Sizes sizes(const tut::ConvProblem& p, int m) {
  Sizes s{};
  s.bk = m == 2 ? Tile<2>::BK : Tile<4>::BK;
  s.nxi = (m + 2) * (m + 2);
  s.tiles_w = tut::ceil_div(p.q, m);
  s.tiles_per_image = tut::ceil_div(p.p, m) * s.tiles_w;
  s.tiles = p.n * s.tiles_per_image;
  s.chunks = tut::ceil_div(p.c, BC);
  s.cp = s.chunks * BC;
  s.kp = tut::ceil_div(p.k, s.bk) * s.bk;
  return s;
}

// The fused kernel's F(4x4) grid, in waves of blocks on this GPU (rounded up).
inline long long fused_f4_waves(const tut::ConvProblem& p) {
  const DeviceFacts& d = device_facts();
  const Sizes s = sizes(p, 4);
  const long long blocks = tut::ceil_div<long long>(s.tiles, BT) * (s.kp / s.bk);
  return tut::ceil_div<long long>(blocks, static_cast<long long>(d.sms) * d.occ[1]);
}
// KERNELS, or the path the self-test forces (tut::ConvStep::paths: it checks every case on both).
inline int& kernels_choice() {
  static int kernels = KERNELS;
  return kernels;
}
inline const char* const PATH_NAMES[] = {"fused", "three"};
inline void force_path(int path) { kernels_choice() = path < 0 ? KERNELS : path == 0 ? 1 : 3; }
inline bool choose_fused(const tut::ConvProblem& p) {
  if (kernels_choice() != 0) return kernels_choice() == 1;
  return fused_f4_waves(p) > F2_MAX_WAVES;
}
// The tile size: TILE, or (TILE = 0) F(4x4) where its grid of blocks runs more than F2_MAX_WAVES
// waves on the GPU, F(2x2) where it runs no more (a rule read off the measurements, README: on
// r50_c3/c4/c5_3x3, whose F(4x4) grids run 2, 1 and 1 waves, F(2x2) is 1.16, 1.11 and 1.22 times
// faster; on seed_3x3 and r50_c2_3x3, 24 and 3 waves, F(4x4) is 1.18 and 1.15 times faster). Few
// waves of F(4x4) blocks mean few tiles per image (its edge tiles compute 1.31 times the outputs
// of 14x14 and 7x7 images) and large C and K: F(2x2)'s blocks are twice as many, its chunks cheaper.
// The three kernels always take F(4x4).
inline int choose_m(const tut::ConvProblem& p) {
  if (TILE != 0) return TILE;
  if (!choose_fused(p)) return 4;
  return fused_f4_waves(p) > F2_MAX_WAVES ? 4 : 2;
}

// The three kernels' sizes: tiles padded to tp (a multiple of 4: the GEMM's rows are float4s), and
// the floats of U (NXI x kp x cp), V (NXI x cp x tp) and M (NXI x kp x tp).
struct ThreeSizes {
  int tp;
  std::size_t u_floats, v_floats, m_floats;
};
inline ThreeSizes three_sizes(const tut::ConvProblem& p, int m) {
  const Sizes s = sizes(p, m);
  ThreeSizes t{};
  t.tp = tut::ceil_div(s.tiles, 4) * 4;
  t.u_floats = std::size_t(s.nxi) * s.kp * s.cp;
  t.v_floats = std::size_t(s.nxi) * s.cp * t.tp;
  t.m_floats = std::size_t(s.nxi) * s.kp * t.tp;
  return t;
}
inline std::size_t round256(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

// The batched GEMM's tile shape: chapter 10's model of each shape with one split, over the batch
// laid side by side (NXI x ceil(tiles / BLOCK_N) column blocks); the least modelled time wins.
inline int choose_gemm_tile(const tut::ConvProblem& p, int m) {
  if (GEMM_TILE != 0) return GEMM_TILE - 1;
  const Sizes s = sizes(p, m);
  int best = 0;
  double best_us = 0;
  for (int t = 0; t < ch10::NUM_SHAPES; ++t) {
    const int bn = ch10::SHAPES[t].block_n;
    const long long cols = static_cast<long long>(tut::ceil_div(s.tiles, bn)) * bn * s.nxi;
    if (cols > (1LL << 30)) continue;
    const tut::GemmProblem g = tut::GemmProblem::packed(p.k, int(cols), p.c, 1.0f, 0.0f);
    const double us = ch10::planner().waves(g, tut::GemmChoice{t, 1}).model_us;
    if (t == 0 || us < best_us) {
      best = t;
      best_us = us;
    }
  }
  return best;
}

inline Plan plan(const tut::ConvProblem& p, bool allow_splits = true) {
  const DeviceFacts& d = device_facts();
  Plan best;
  best.m = choose_m(p);
  best.fused = choose_fused(p);
  if (!best.fused) {
    best.gemm_tile = choose_gemm_tile(p, best.m);
    return best;
  }
  const Sizes s = sizes(p, best.m);
  const int occ = d.occ[best.m == 2 ? 0 : 1];
  const long long blocks = tut::ceil_div<long long>(s.tiles, BT) * (s.kp / s.bk);
  const double chunk_clocks = double(s.nxi) * BC * s.bk * BT / FMA_PER_SM_CLOCK;
  const double y_bytes = 4.0 * double(p.y_elems());
  double best_time = 0;
  const int max_splits = allow_splits ? std::min(MAX_SPLITS, s.chunks) : 1;
  for (int splits = 1; splits <= max_splits; ++splits) {
    const int per = tut::ceil_div(s.chunks, splits);
    if (tut::ceil_div(s.chunks, per) != splits) continue;  // the same split as a smaller count
    const long long units = blocks * splits;
    const double rounds = double(tut::ceil_div<long long>(units, static_cast<long long>(d.sms) * occ));
    double time = rounds * (per + OVERHEAD_CHUNKS);
    if (splits > 1) time += 2.0 * splits * y_bytes / (DRAM_BYTES_PER_SM_CLOCK * d.sms) / chunk_clocks + 1.0;
    if (best_time == 0 || time < best_time) {
      best_time = time;
      best.splits = splits;
      best.chunks_per_split = per;
    }
  }
  return best;
}

// Workspace: the transformed filter, then (with splits) one partial y per split, 256-byte aligned.
inline std::size_t filter_bytes(const tut::ConvProblem& p, int m) {
  const Sizes s = sizes(p, m);
  const std::size_t bytes = sizeof(float) * std::size_t(s.nxi) * std::size_t(s.cp) * std::size_t(s.kp);
  return (bytes + 255) / 256 * 256;
}
inline std::size_t workspace(const tut::ConvProblem& p) {
  if (unsupported(p) != nullptr) return 0;
  const Plan pl = plan(p);
  if (!pl.fused) {
    const ThreeSizes t = three_sizes(p, pl.m);
    return round256(sizeof(float) * t.u_floats) + round256(sizeof(float) * t.v_floats) +
           round256(sizeof(float) * t.m_floats);
  }
  std::size_t bytes = filter_bytes(p, pl.m);
  if (pl.splits > 1) bytes += std::size_t(pl.splits) * std::size_t(p.y_elems()) * sizeof(float);
  return bytes;
}

// FILTER_ONCE = 1: the previous call's filter, problem, workspace, tile size and path. One for both
// paths and tile sizes: a call that transforms the filter (into its own layout) replaces the key.
struct FilterCache {
  const float* w = nullptr;
  void* workspace = nullptr;
  tut::ConvProblem p{};
  int m = 0;
  bool fused = false;
};
inline FilterCache& filter_cache() {
  static FilterCache cache;
  return cache;
}
inline bool filter_cached(const tut::ConvProblem& p, const tut::ConvArgs& a, int m, bool fused) {
  const FilterCache& c = filter_cache();
  return FILTER_ONCE && c.w == a.w && c.workspace == a.workspace && c.m == m && c.fused == fused &&
         std::memcmp(&c.p, &p, sizeof p) == 0;
}

// The problem as the kernels read it, for the tile size of s (chunks_per_split: the fused kernel's
// split over the channels; the three kernels read none of the chunk fields).
inline Geometry geometry(const tut::ConvProblem& p, const Sizes& s, int chunks_per_split) {
  Geometry g{};
  g.c = p.c, g.h = p.h, g.w = p.w, g.k = p.k, g.p = p.p, g.q = p.q, g.pad_h = p.pad_h, g.pad_w = p.pad_w;
  g.tiles_w = s.tiles_w, g.tiles_per_image = s.tiles_per_image, g.tiles = s.tiles;
  g.cp = s.cp, g.kp = s.kp, g.chunks = s.chunks, g.chunks_per_split = chunks_per_split;
  return g;
}

// A launch as the programmatic dependent of the previous kernel on the stream (griddepcontrol): its
// blocks may start while that kernel's last blocks run, and wait for it (griddepcontrol.wait) before
// they read what it wrote.
template <class... Params, class... Args>
void launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem, cudaStream_t stream,
                      Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  TUT_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...));
}

template <int M>
void run(const tut::ConvProblem& p, const tut::ConvArgs& a, const Plan& pl, cudaStream_t stream) {
  using T = Tile<M>;
  const Sizes s = sizes(p, M);
  float* u = static_cast<float*>(a.workspace);
  if (!filter_cached(p, a, M, true)) {
    const dim3 grid(unsigned(s.kp / FT_K), unsigned(s.cp / BC));
    filter_transform_kernel<M><<<grid, NUM_THREADS, 0, stream>>>(a.w, u, p.k, p.c, s.kp, s.cp);
    TUT_CHECK_LAUNCH();
    filter_cache() = {a.w, a.workspace, p, M, true};
  }
  float* out = a.y;
  std::size_t split_stride = 0;
  if (pl.splits > 1) {
    out = reinterpret_cast<float*>(static_cast<char*>(a.workspace) + filter_bytes(p, M));
    split_stride = std::size_t(p.y_elems());
  }
  const Geometry g = geometry(p, s, pl.chunks_per_split);
  const bool vec_y = p.q % M == 0 && reinterpret_cast<std::uintptr_t>(out) % (sizeof(float) * M) == 0;
  const dim3 grid(unsigned(tut::ceil_div(s.tiles, BT) * (s.kp / T::BK)), 1u, unsigned(pl.splits));
  // a programmatic dependent of the filter transform: its blocks start while the transform runs
  launch_dependent(winograd_kernel<M>, grid, dim3(T::THREADS), T::SMEM_BYTES, stream, g, a.x,
                   static_cast<const float*>(u), out, split_stride, vec_y);
  if (pl.splits > 1) {
    const int count = int(p.y_elems());
    const bool vec = count % VEC == 0 && reinterpret_cast<std::uintptr_t>(a.y) % 16 == 0;
    const int blocks = tut::ceil_div(tut::ceil_div(count, VEC), NUM_THREADS);
    sum_splits_kernel<<<blocks, NUM_THREADS, 0, stream>>>(out, a.y, count, pl.splits, vec);
    TUT_CHECK_LAUNCH();
  }
}

template <int BLOCK_M, int BLOCK_N>
void launch_batched_gemm(const tut::ConvProblem& p, const Sizes& s, const ThreeSizes& t, const float* u,
                         const float* v, float* sums, cudaStream_t stream) {
  const dim3 grid(unsigned(tut::ceil_div(s.tiles, BLOCK_N)), unsigned(tut::ceil_div(p.k, BLOCK_M)), unsigned(s.nxi));
  launch_dependent(batched_gemm_kernel<BLOCK_M, BLOCK_N>, grid, dim3(ch10::Tile<BLOCK_M, BLOCK_N>::NUM_THREADS), 0,
                   stream, p.k, s.tiles, p.c, u, s.cp, std::size_t(s.kp) * s.cp, v, t.tp, std::size_t(s.cp) * t.tp,
                   sums, std::size_t(s.kp) * t.tp);
}

template <int M>
void run_three(const tut::ConvProblem& p, const tut::ConvArgs& a, const Plan& pl, cudaStream_t stream) {
  const Sizes s = sizes(p, M);
  const ThreeSizes t = three_sizes(p, M);
  char* ws = static_cast<char*>(a.workspace);
  float* u = reinterpret_cast<float*>(ws);
  float* v = reinterpret_cast<float*>(ws + round256(sizeof(float) * t.u_floats));
  float* sums = reinterpret_cast<float*>(ws + round256(sizeof(float) * t.u_floats) + round256(sizeof(float) * t.v_floats));
  const Geometry g = geometry(p, s, s.chunks);
  const int filter_blocks_x = s.kp / FT_K_GEMM;
  const bool cached = filter_cached(p, a, M, false);  // FILTER_ONCE: the input transform's blocks only
  const int filter_blocks = cached ? 0 : filter_blocks_x * tut::ceil_div(s.cp, FT_C_GEMM);
  const long long input_blocks = tut::ceil_div<long long>(static_cast<long long>(p.c) * s.tiles, NUM_THREADS);
  transforms_kernel<M><<<unsigned(filter_blocks + input_blocks), NUM_THREADS, 0, stream>>>(g, a.x, a.w, u, v, t.tp,
                                                                                         filter_blocks_x, filter_blocks);
  TUT_CHECK_LAUNCH();
  if (!cached) filter_cache() = {a.w, a.workspace, p, M, false};
  switch (pl.gemm_tile) {
    case 0: launch_batched_gemm<128, 128>(p, s, t, u, v, sums, stream); break;
    case 1: launch_batched_gemm<128, 64>(p, s, t, u, v, sums, stream); break;
    default: launch_batched_gemm<64, 64>(p, s, t, u, v, sums, stream); break;
  }
  const bool vec_y = p.q % M == 0 && reinterpret_cast<std::uintptr_t>(a.y) % (sizeof(float) * M) == 0;
  const long long output_blocks =
      tut::ceil_div<long long>(static_cast<long long>(p.k) * s.tiles * OUTPUT_LANES, NUM_THREADS);
  launch_dependent(output_transform_kernel<M>, dim3(unsigned(output_blocks)), dim3(NUM_THREADS), 0, stream, g, sums,
                   a.y, t.tp, vec_y);
}

inline void winograd(const tut::ConvProblem& p, const tut::ConvArgs& a, cudaStream_t stream) {
  const Plan pl = plan(p);
  if (!pl.fused) {
    if (pl.m == 2) {
      run_three<2>(p, a, pl, stream);
    } else {
      run_three<4>(p, a, pl, stream);
    }
    return;
  }
  if (pl.m == 2) {
    run<2>(p, a, pl, stream);
  } else {
    run<4>(p, a, pl, stream);
  }
}

}  // namespace ch22
