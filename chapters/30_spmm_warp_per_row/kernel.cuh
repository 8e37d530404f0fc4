// Chapter 30: SpMM, warp per row.
//
// What changed:  chapter 29 gave each row to one thread. Here a warp is the unit of work, and a row
//                of the output is held by each half-warp, lane c of a half holding feature c (GROUP =
//                16 lanes: a row of Z, 16 doubles, is one coalesced 128-byte load). Two kernels:
//                - spmm_plan_kernel, one thread per row, lists every row longer than LONG_ROW = 64
//                  entries as pieces of SEGMENT = 512 entries (an integer atomic reserves a row's
//                  consecutive slots in the workspace).
//                - spmm_kernel, one warp per block, does all the rows, both kinds at once. Its first
//                  blocks, LONG_WARPS_PER_SM = 16 per SM, are long-row warps that stay: each takes a
//                  piece, then the next from an atomic ticket, until the list is done. Every other
//                  block is a short-row warp for ROWS_PER_WARP = 16 consecutive rows: it walks the
//                  entries of those of its rows that are not long, contiguous in CSR, as one stream.
//                Both kinds load 32 entries at a time (lane l loads entry l: one coalesced load of
//                indices, one of values), stage them in shared memory and walk them as 16 pairs:
//                the lower half gathers the even entry of each pair, the upper half the odd one,
//                IN_FLIGHT = 16 pairs (the whole chunk, 32 rows of Z) loaded before the first FMA.
//                Each half sums its own entries; where a row ends (a bit of a ballot taken once per
//                chunk, the same in every lane: the warp never diverges) one shuffle adds the two
//                halves and the warp stores the row. A piece's halves are added at its end; a row of
//                one piece is stored by its warp, a row of several by the last of its warps to
//                finish (an integer atomic), which adds the pieces' sums in piece order. Every sum
//                has a fixed order, so the output has the same bits on every run. F_out may be 1 to
//                16 (lanes c >= F_out gather feature F_out - 1 again); chapter 29 took 16 only.
// Prediction:    default graph (V = 281903, nnz = 2594400, F = 16): the minimum traffic is 104.4 MB
//                (spmm_cost), 35 us at 3.0 TB/s. The bound is the gather: every entry reads a 128-byte
//                row of Z, 332.1 MB in all from L2 or L1 (Z, 36.1 MB, stays in the 50 MB L2 after its
//                first touch from DRAM): 42 to 60 us if L2 delivers 5.5 to 8 TB/s of such reads (an
//                assumed range: this tutorial does not measure L2), less what L1 keeps. Issue: 9 warp
//                instructions per pair of entries (cuobjdump -sass: 5 per gather, 4 per FMA step),
//                about 20 more per row end, 50 per chunk of a stream: about 22 M in all, 21 us on 528
//                schedulers at 1.98 GHz issuing every cycle, so the gathers hide it if the schedulers
//                issue half the time. Plus the memset and the plan kernel (1.1 MB of indptr) in front,
//                3 to 6 us. In all 0.05 to 0.07 ms, 1.4x to 2x the floor's time.
// Metric:        lts__t_sectors_srcunit_tex_op_read.sum: 10.4 M sectors of Z (2,594,400 gathers x 4)
//                less the L1 hits, plus 1.0 M of A_hat; lts__throughput.avg.pct_of_peak_sustained
//                _elapsed the highest of the memory units, above dram__throughput; smsp__inst_executed
//                .sum about 22 M in spmm_kernel; sm__warps_active.avg.pct_of_peak_sustained_active
//                near 50% (32 one-warp blocks per SM) until the last blocks.
// Assumes:       1 <= F_out <= 16 (refuses others); A_hat in CSR with int indices (nnz < 2^31),
//                column indices < V; Z and out V x F_out, row-major, packed, not overlapping; any
//                V >= 1 and rows of any length, including 0 (zeros are stored). The workspace
//                (workspace()) holds two counters and the piece list: 2.6 bytes per entry of A_hat,
//                6.7 MB on the default graph. Every stored row goes through store_row, called by the
//                whole warp with both halves holding the row, the place for a fused epilogue (chapter
//                32: bias + log_softmax over each half's 16 lanes, with xor shuffles below 16).
#pragma once

#include <cuda/atomic>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "tut/gcn/harness.cuh"

namespace ch30 {

// Features per row the kernels hold: one per lane of a half-warp. F_out < 16 leaves lanes idle.
constexpr int F_MAX = 16;

// Lanes per row: half a warp, one feature each, so that the gather of a row of Z (16 doubles,
// 128 bytes) is one coalesced load. The two halves of a warp take alternate entries of one stream.
constexpr int GROUP = 16;
constexpr int WARP_SIZE = 32;
constexpr unsigned FULL_MASK = 0xffffffffu;
static_assert(GROUP == F_MAX, "one feature per lane");
static_assert(2 * GROUP == WARP_SIZE, "two halves per warp");

// Entries of A_hat loaded at once by a warp, one per lane: a chunk, walked as CHUNK / 2 pairs.
constexpr int CHUNK = WARP_SIZE;
constexpr int PAIRS = CHUNK / 2;
// Pairs whose rows of Z a warp gathers before the first FMA that needs one: the memory-level
// parallelism of a warp, 2 * IN_FLIGHT rows of Z (128 bytes each). 16: the whole chunk. A reader
// may try 8 or 4 (registers, in-flight bytes).
constexpr int IN_FLIGHT = 16;
static_assert(PAIRS % IN_FLIGHT == 0, "a chunk is whole batches of pairs");

// The short-row warps. A warp takes ROWS_PER_WARP consecutive rows (lanes 0..ROWS_PER_WARP load
// their ROWS_PER_WARP + 1 row pointers at once); rows longer than LONG_ROW entries are left to the
// long-row warps, so a warp's stream holds at most ROWS_PER_WARP * LONG_ROW entries.
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

// Both kinds of warp run in one kernel with blocks of BLOCK_WARPS independent warps (no block-wide
// synchronization anywhere): a short-row block is done when its warps are, so small blocks free
// their place on the SM soon after their work. RESIDENT_WARPS per SM set the register cap through
// __launch_bounds__: 32 warps, 64 registers each (an SM holds 64 K registers and at most 32 blocks).
constexpr int BLOCK_WARPS = 1;
constexpr int RESIDENT_WARPS = 32;
constexpr int THREADS = BLOCK_WARPS * WARP_SIZE;
constexpr int MIN_BLOCKS = RESIDENT_WARPS / BLOCK_WARPS;
static_assert(RESIDENT_WARPS % BLOCK_WARPS == 0 && THREADS <= 1024, "whole blocks of whole warps");

// The plan kernel: one thread per row.
constexpr int PLAN_THREADS = 256;

// One piece of a long row, as spmm_plan_kernel lists it: the row, its first piece's slot in the list
// (a row's pieces are consecutive), where the row starts in A_hat and how many entries it has.
struct alignas(16) Piece {
  int row;
  int first;
  int begin;
  int len;
};
static_assert(sizeof(Piece) == 16, "one 16-byte load per piece");

// The step's scratch memory, written by spmm_plan_kernel and read by spmm_kernel.
struct Workspace {
  int* num_pieces;   // pieces listed (set to 0 by the launcher before each run)
  int* ticket;       // pieces handed out after each long-row warp's first (set to 0 likewise)
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

// The two counters, then the three arrays, each 256-byte aligned.
inline std::size_t workspace(const tut::GcnProblem& p) {
  const std::size_t n = static_cast<std::size_t>(max_pieces(p));
  return align_up(2 * sizeof(int)) + align_up(n * sizeof(Piece)) + align_up(n * sizeof(int)) +
         align_up(n * GROUP * sizeof(double));
}

inline Workspace carve(void* base, const tut::GcnProblem& p) {
  const std::size_t n = static_cast<std::size_t>(max_pieces(p));
  char* at = static_cast<char*>(base);
  Workspace ws;
  ws.num_pieces = reinterpret_cast<int*>(at);
  ws.ticket = ws.num_pieces + 1;
  at += align_up(2 * sizeof(int));
  ws.pieces = reinterpret_cast<Piece*>(at);
  at += align_up(n * sizeof(Piece));
  ws.done = reinterpret_cast<int*>(at);
  at += align_up(n * sizeof(int));
  ws.partials = reinterpret_cast<double*>(at);
  return ws;
}

// The one place a finished row leaves the kernel. Every call is made by the whole warp together,
// both halves holding the same row: lane c and lane 16 + c hold feature feat = min(c, f - 1) of it
// (lanes c >= f gathered feature f - 1 all along, so they hold its value), and row_out points at the
// row (out + row * f). Every lane stores: the 32 lanes write the row's f values, each value by two
// or more lanes with the same bits, in one 128-byte store request, and nothing past the row; no
// branch, no lane mask. A fused epilogue (bias, log_softmax: chapter 32) would transform `value`
// here, before the store, reducing over each half's 16 lanes with __shfl_xor_sync(FULL_MASK, x, d)
// for d = 8, 4, 2, 1: the two halves compute the same thing side by side.
__device__ __forceinline__ void store_row(double* __restrict__ row_out, int feat, double value) {
  row_out[feat] = value;
}

// This lane's feature of row j of Z: z_lane = z + feat, row_bytes = 8 f. One
// 32 x 32 -> 64-bit multiply-add (IMAD.WIDE.U32) per gather, exact for any j < 2^31. Written in
// C++ (a 64-bit product of two widened 32-bit values), the multiply reaches the assembler as a
// 64 x 64-bit one when j comes from shared memory, and costs a move and an add more per gather;
// PTX's mul.wide.u32 says what is meant.
__device__ __forceinline__ const double* z_at(const double* z_lane, unsigned row_bytes, int j) {
  unsigned long long offset;
  asm("mul.wide.u32 %0, %1, %2;" : "=l"(offset) : "r"(static_cast<unsigned>(j)), "r"(row_bytes));
  return reinterpret_cast<const double*>(reinterpret_cast<const char*>(z_lane) + offset);
}

// A warp's staging area in shared memory: the chunk being walked (entry l of the chunk in slot l),
// and for a short-row warp its rows' places.
struct Stage {
  double a[CHUNK];  // values[k]
  int j[CHUNK];     // indices[k]: the row of Z to gather
  int end_of[CHUNK];  // short rows: the row (0 .. ROWS_PER_WARP - 1 of the warp's) that this entry ends, else -1
  int ptr[ROWS_PER_WARP];    // each row's first entry in A_hat
  int start[ROWS_PER_WARP];  // ... its first position in the stream
  int stop[ROWS_PER_WARP];   // ... one past its last
};

// One entry as a lane loads it, before staging. Past the end of its stream or piece: {0, 0, -1}.
struct Entry {
  double a;
  int j;
  int end_of;
};

// Walks the `count` staged entries of a chunk: entry 2p + half of pair p is this half's, so the lower
// half sums the even entries and the upper half the odd ones, each into its own acc, in stored order.
// IN_FLIGHT pairs of rows of Z are loaded before their FMAs. With ROW_ENDS (short rows), `ends` has
// bit e set where entry e ends a row (a ballot, the same in every lane): there the two halves' sums
// of the row are added with one shuffle (each half gets the same total: a + b == b + a), the warp
// stores the row (rows_out + end_of * f, rows_out = out + row0 * f) and both halves start the next
// row from 0. Staged entries past `count` are {0, 0, -1} and their rows of Z are not loaded (zv = 0):
// their FMA adds 0 * 0, they end no row.
template <bool ROW_ENDS>
__device__ __forceinline__ double walk_chunk(const Stage& st, unsigned ends, int count,
                                             const double* __restrict__ z_lane, unsigned row_bytes, int half,
                                             int feat, int f, double* __restrict__ rows_out, double acc) {
  for (int p0 = 0; 2 * p0 < count; p0 += IN_FLIGHT) {
    const int left = count - half - 2 * p0;  // this half's entry of pair p0 + u exists if 2 u < left
    double zv[IN_FLIGHT];
#pragma unroll
    for (int u = 0; u < IN_FLIGHT; ++u) {
      zv[u] = 0.0;
      if (2 * u < left) zv[u] = __ldg(z_at(z_lane, row_bytes, st.j[2 * (p0 + u) + half]));
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
        store_row(rows_out + st.end_of[2 * p] * f, feat, row);
        sum_to_even = 0.0;
      }
      acc = half == 1 ? fma(a, zv[u], sum_to_even) : sum_to_even;  // entry 2p + 1, the upper half's
      if (pair_ends & 2u) {  // entry 2p + 1 ends a row
        const double row = acc + __shfl_xor_sync(FULL_MASK, acc, GROUP);
        store_row(rows_out + st.end_of[2 * p + 1] * f, feat, row);
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
    e.a = __ldcs(values + k);  // read once: evict first, so that L1 and L2 keep rows of Z
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

// The list of long-row pieces: thread r looks at row r; a row longer than LONG_ROW reserves
// ceil(len / SEGMENT) consecutive slots (one atomic; the compiler merges a warp's into one) and
// resets its counter of finished pieces. Where a row lands changes from run to run, its sums do not.
__global__ void __launch_bounds__(PLAN_THREADS)
    spmm_plan_kernel(int v, const int* __restrict__ indptr, const Workspace ws) {
  const long long r = static_cast<long long>(blockIdx.x) * PLAN_THREADS + threadIdx.x;
  if (r >= v) return;
  const int begin = __ldg(indptr + r);
  const int len = __ldg(indptr + r + 1) - begin;
  if (len <= LONG_ROW) return;
  const int pieces = (len - 1) / SEGMENT + 1;
  const int first = atomicAdd(ws.num_pieces, pieces);
  for (int s = 0; s < pieces; ++s) ws.pieces[first + s] = Piece{static_cast<int>(r), first, begin, len};
  ws.done[first] = 0;
}

// A short-row warp: out = A_hat z for rows row0 .. row0 + ROWS_PER_WARP - 1 (those past V and those
// longer than LONG_ROW excepted). As plain loops: for each short row r, in order: out[r][c] = sum
// over k in row r of values[k] * z[indices[k]][c], the even positions of the warp's stream summed by
// the lower half, the odd ones by the upper half, the two sums added at the row's last entry.
__device__ __forceinline__ void short_rows(long long row0, int v, int f, const int* __restrict__ indptr,
                                           const int* __restrict__ indices, const double* __restrict__ values,
                                           const double* __restrict__ z, double* __restrict__ out, Stage& st) {
  const int lane = threadIdx.x % WARP_SIZE;
  const int half = lane / GROUP;
  const int feat = min(lane % GROUP, f - 1);  // the feature this lane gathers and stores
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
  const unsigned empty = __ballot_sync(FULL_MASK, lane < rows && len == 0);
  if (lane < ROWS_PER_WARP) {
    st.ptr[lane] = ptr;
    st.start[lane] = stop - in_stream;
    st.stop[lane] = stop;
  }
  // An empty row (A_hat has none: each row holds its diagonal) is all zeros.
  double* rows_out = out + row0 * f;  // the warp's first row
  for (unsigned m = empty; m != 0; m &= m - 1) store_row(rows_out + (__ffs(m) - 1) * f, feat, 0.0);
  __syncwarp();  // st.ptr, st.start, st.stop written

  // The stream, a chunk at a time: stage it, load the next one, walk this one.
  const double* z_lane = z + feat;  // lanes c >= f repeat feature f - 1: no extra bytes
  const unsigned row_bytes = static_cast<unsigned>(f) * sizeof(double);
  double acc = 0.0;
  Entry next = load_stream_entry(lane, total, st, indices, values);
  for (int c0 = 0; c0 < total; c0 += CHUNK) {
    st.a[lane] = next.a;
    st.j[lane] = next.j;
    st.end_of[lane] = next.end_of;
    const unsigned ends = __ballot_sync(FULL_MASK, next.end_of >= 0);
    __syncwarp();
    next = load_stream_entry(c0 + CHUNK + lane, total, st, indices, values);
    acc = walk_chunk<true>(st, ends, min(CHUNK, total - c0), z_lane, row_bytes, half, feat, f, rows_out, acc);
    __syncwarp();  // everyone is done with this chunk before the next overwrites it
  }
}

// A long-row warp: takes piece `warp_id`, then piece long_warps + (its ticket), until the list is
// done. Piece s of a row covers the row's entries [(s - first) * SEGMENT, ... + SEGMENT), walked a
// chunk at a time like a stream without row ends; the halves' sums are added at the piece's end. As
// plain loops, per piece: sum[c] = sum over its entries k of values[k] * z[indices[k]][c] (even
// entries, then odd, then added); per row: out[row] = sum of its pieces' sums, in piece order.
__device__ __forceinline__ void long_rows(int warp_id, int long_warps, int f, const int* __restrict__ indices,
                                          const double* __restrict__ values, const double* __restrict__ z,
                                          double* __restrict__ out, const Workspace& ws, Stage& st) {
  const int lane = threadIdx.x % WARP_SIZE;
  const int half = lane / GROUP;
  const int feat = min(lane % GROUP, f - 1);
  const int num_pieces = *ws.num_pieces;  // written by the plan kernel: final here
  const double* z_lane = z + feat;
  const unsigned row_bytes = static_cast<unsigned>(f) * sizeof(double);

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
      acc = walk_chunk<false>(st, 0u, min(CHUNK, count - c0), z_lane, row_bytes, half, feat, f, nullptr, acc);
      __syncwarp();
    }
    const double sum = acc + __shfl_xor_sync(FULL_MASK, acc, GROUP);  // even entries' + odd entries'
    double* row_out = out + static_cast<long long>(piece.row) * f;

    if (pieces == 1) {  // the same in every lane
      store_row(row_out, feat, sum);
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
      // halves, the same loads: one request serves the two).
      if (last) {
        const double* part = ws.partials + static_cast<long long>(piece.first) * GROUP + feat;
        double row = __ldcg(part);  // from L2: other warps wrote these
#pragma unroll 4
        for (int t = 1; t < pieces; ++t) row += __ldcg(part + static_cast<long long>(t) * GROUP);
        store_row(row_out, feat, row);
      }
    }
    s = __shfl_sync(FULL_MASK, next_s, 0);
  }
}

// out = A_hat z: blocks 0 .. long_blocks - 1 are long-row warps, the others short-row warps. The
// block scheduler hands out blocks in order, so the long-row warps start first and stay; the
// short-row blocks fill every other place, and the places the long-row warps leave when the list is
// done.
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
    spmm_kernel(int v, int f, int long_blocks, const int* __restrict__ indptr, const int* __restrict__ indices,
                const double* __restrict__ values, const double* __restrict__ z, double* __restrict__ out,
                const Workspace ws) {
  __shared__ Stage s_stage[BLOCK_WARPS];
  const int w = threadIdx.x / WARP_SIZE;
  if (static_cast<int>(blockIdx.x) < long_blocks) {
    long_rows(blockIdx.x * BLOCK_WARPS + w, long_blocks * BLOCK_WARPS, f, indices, values, z, out, ws, s_stage[w]);
  } else {
    const long long warp_id = (static_cast<long long>(blockIdx.x) - long_blocks) * BLOCK_WARPS + w;
    const long long row0 = warp_id * ROWS_PER_WARP;
    if (row0 < v) short_rows(row0, v, f, indptr, indices, values, z, out, s_stage[w]);
  }
}

// One line for a size this step does not run, or nullptr.
inline const char* refuses(const tut::GcnProblem& p) {
  if (p.f_out < 1 || p.f_out > F_MAX) {
    return "F_out must be at most 16, one feature per lane of a half-warp (valid: --out 1 to 16)";
  }
  return nullptr;
}

// The launcher: reset the two counters, list the pieces, then the one kernel that does all the rows.
// Plan: ceil(V / 256) blocks of 256 threads (1,102 on the default graph). spmm_kernel: one warp per
// block; LONG_WARPS_PER_SM long-row warps per SM (2,112 on 132 SMs, fewer when the list cannot hold
// that many pieces), then ceil(V / 16) short-row warps (17,619), 19,731 blocks in all (at most
// 2^27 + 2,112 for V < 2^31).
inline void spmm_warp_per_row(const tut::GcnProblem& p, const tut::GcnArgs& a, cudaStream_t stream) {
  if (p.v == 0) return;  // nothing to compute, and a grid of 0 blocks is a launch error
  const Workspace ws = carve(a.workspace, p);
  TUT_CUDA_CHECK(cudaMemsetAsync(ws.num_pieces, 0, 2 * sizeof(int), stream));

  const long long plan_blocks = tut::ceil_div(static_cast<long long>(p.v), static_cast<long long>(PLAN_THREADS));
  spmm_plan_kernel<<<static_cast<unsigned>(plan_blocks), PLAN_THREADS, 0, stream>>>(p.v, a.a.indptr, ws);
  TUT_CHECK_LAUNCH();

  const long long long_warps =
      std::min<long long>(static_cast<long long>(tut::sm_count()) * LONG_WARPS_PER_SM, max_pieces(p));
  const long long long_blocks = tut::ceil_div(long_warps, static_cast<long long>(BLOCK_WARPS));
  const long long short_blocks =
      tut::ceil_div(static_cast<long long>(p.v), static_cast<long long>(ROWS_PER_WARP) * BLOCK_WARPS);
  spmm_kernel<<<static_cast<unsigned>(long_blocks + short_blocks), THREADS, 0, stream>>>(
      p.v, p.f_out, static_cast<int>(long_blocks), a.a.indptr, a.a.indices, a.a.values, a.z, a.out, ws);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch30
