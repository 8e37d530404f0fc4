// Chapter 27: SpMM, warp per row.
//
// What changed:  chapter 26 gave each row to one thread. Here a row of the output belongs to a group
//                of GROUP = 16 lanes (half a warp), lane c holding feature c, and the work is split
//                by row length into two kernels:
//                - spmm_short_rows_kernel: a group takes ROWS_PER_GROUP = 8 consecutive rows of at
//                  most LONG_ROW = 64 entries and walks their entries, which are contiguous in CSR,
//                  as one stream: 16 at a time, lane l loading entry l (one coalesced load of
//                  indices and one of values), staged in shared memory, then gathered one entry
//                  after the other by the whole group, each gather one 128-byte row of Z, IN_FLIGHT
//                  = 8 of them issued before the first FMA; the next 16 entries are loaded while
//                  these are gathered. A row's result is stored at its last entry. A row with only
//                  its diagonal costs one slot of a coalesced load, one gather and one store.
//                - rows longer than LONG_ROW are skipped by that kernel, which appends them (an
//                  atomic counter) to a list of SEGMENT = 512-entry pieces in the workspace;
//                  spmm_long_rows_kernel, a fixed grid looping over that list, gives each piece a
//                  block of 16 groups, each group one 16-entry chunk in turn, and adds the 16
//                  groups' sums in shared memory in a fixed order. A row of one piece is stored by
//                  its block; a row of several (the 9782-entry row: 20) by the last of its blocks
//                  to finish, which adds the pieces' sums in piece order. The list's order changes
//                  from run to run, the sums do not: every output is the same bits on every run.
//                F_out may be 1 to 16 (lanes c >= F_out idle in the gathers); chapter 26 took 16 only.
// Prediction:    default graph (V = 281903, nnz = 2594400, F = 16): the minimum traffic is 104.4 MB
//                (spmm_cost), 35 us at 3.0 TB/s. What bounds this step is the gather: every entry
//                reads a 128-byte row of Z, 332 MB in all from L2 (Z, 36 MB, fits in the 50 MB L2
//                after its first touch), less what L1 keeps (the 2000 most-used rows of Z, 250 KB,
//                serve 34% of the entries). The short-row kernel: 277167 rows, 1,326,649 entries,
//                170 MB of gathers and 89 MB of DRAM traffic (its indices and values, Z's first
//                touch, the output), about 30 us. The long-row kernel: 4736 rows, 1,267,751 entries
//                in 5227 pieces, 162 MB of gathers, about 25 us. Plus the memset and two launches
//                behind each other, a few us. In all 0.05 to 0.07 ms, 1.5x to 2x the floor's time, and
//                20x to 60x faster than chapter 26, whose time was one row's. The target, at least
//                1.2x cuSPARSE's fastest CSR algorithm (timed in the same process), holds if that
//                algorithm needs more than 0.06 to 0.085 ms.
// Metric:        sm__cycles_active.avg.pct_of_peak_sustained_elapsed near 100% (chapter 26: a few %);
//                global load requests l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum 1.5 M to 2.7 M (a
//                warp instruction gathers one entry for each of its one or two active groups: 2.6 M
//                entries / 2 or / 1, plus the chunk loads; chapter 26: 23.6 M),
//                l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
//                about 2.6 M * 4 (a row of Z) + 31 MB / 32 B (A_hat) = 11.4 M;
//                lts__t_sectors_srcunit_tex_op_read.sum the same less the L1 hits.
// Assumes:       1 <= F_out <= 16 (refuses others); A_hat in CSR with int indices (nnz < 2^31),
//                column indices < V; Z and out V x F_out, row-major, packed, not overlapping; any
//                V >= 1 and rows of any length, including 0 (zeros are stored). The workspace
//                (workspace()) holds the list: about 2.4 bytes per entry of A_hat, 6.3 MB on the
//                default graph. Every stored row goes through store_row with all 16 lanes of its
//                group present (a group-uniform branch), the place for a fused epilogue (chapter 29:
//                bias + log_softmax over the 16 lanes, with shuffles on the group's lane mask).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "tut/gcn/harness.cuh"

namespace ch27 {

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

// The one place a finished row leaves the kernels: lane c of the row's group holds feature c, and
// row_out points at the row (out + row * f). Every call is made by all 16 lanes of the group
// together. A fused epilogue (bias, log_softmax: chapter 29) would transform `value` here, before
// the store, reducing over the group with shuffles on its 16-lane mask.
__device__ __forceinline__ void store_row(double* __restrict__ row_out, int f, int lane, double value) {
  if (lane < f) row_out[lane] = value;
}

// This lane's feature of row j of Z: z_lane = z + lane, row_bytes = 8 f. One 32 x 32 -> 64-bit
// multiply-add (IMAD.WIDE.U32) per gather, exact for any j < 2^31.
__device__ __forceinline__ const double* z_at(const double* z_lane, unsigned row_bytes, int j) {
  return reinterpret_cast<const double*>(reinterpret_cast<const char*>(z_lane) +
                                         static_cast<unsigned long long>(static_cast<unsigned>(j)) * row_bytes);
}

// Gathers and accumulates `count` staged entries in order: acc += a * z[j][lane], IN_FLIGHT rows of
// Z loaded before their FMAs. With ROW_ENDS (short rows), an entry that ends a row stores the row
// (rows_out + end_of * f, rows_out = out + row0 * f) and starts the next from 0. Every lane of the
// group runs this with the same count. The staged entries past `count` are empty ({0, 0, -1}, see
// the loaders below): their FMA adds 0 * 0 and they end no row, so only the gathers test `count`.
template <bool ROW_ENDS>
__device__ __forceinline__ double gather_chunk(const Entry (&entries)[CHUNK], int count,
                                               const double* __restrict__ z_lane, unsigned row_bytes, int f,
                                               int lane, double* __restrict__ rows_out, double acc) {
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
        store_row(rows_out + entries[e0 + u].end_of * f, f, lane, acc);
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

// out = A_hat z for the rows of at most LONG_ROW entries; longer rows are listed for the long-row
// kernel. Block b, group g takes rows r0 .. r0 + 7, r0 = (b * SHORT_GROUPS + g) * ROWS_PER_GROUP. As
// plain loops, per group: for each short row r of the 8, in order: acc = 0; for k in row r: acc +=
// values[k] * z[indices[k]][lane]; out[r][lane] = acc.
__global__ void __launch_bounds__(SHORT_THREADS, SHORT_MIN_BLOCKS)
    spmm_short_rows_kernel(int v, int f, const int* __restrict__ indptr, const int* __restrict__ indices,
                           const double* __restrict__ values, const double* __restrict__ z,
                           double* __restrict__ out, const Workspace ws) {
  __shared__ Entry s_entries[SHORT_GROUPS][CHUNK];       // the chunk being gathered
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
  const unsigned empty = (__ballot_sync(FULL_MASK, lane < rows && len == 0) >> half) & 0xffffu;
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
  // An empty row (A_hat has none: each row holds its diagonal) is all zeros.
  double* rows_out = out + row0 * f;  // the group's first row
  for (unsigned m = empty; m != 0; m &= m - 1) store_row(rows_out + (__ffs(m) - 1) * f, f, lane, 0.0);
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
    acc = gather_chunk<true>(s_entries[g], min(CHUNK, total - c0), z_lane, row_bytes, f, lane, rows_out, acc);
    __syncwarp(group_mask);  // everyone is done with this chunk before the next overwrites it
  }
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

// out = A_hat z for the rows listed by spmm_short_rows_kernel. Block b takes pieces b, b + grid, ...
// Piece s of row r covers the row's entries [(s - first) * SEGMENT, ... + SEGMENT); group g of the
// block takes its chunks g, g + LONG_GROUPS, ... (16 entries each), and the block adds its 16 groups'
// sums in group order. As plain loops, per piece: for g: for chunk of g: for k: part[g] +=
// values[k] * z[indices[k]][lane]; sum = part[0] + part[1] + ... + part[15].
__global__ void __launch_bounds__(LONG_THREADS, LONG_MIN_BLOCKS)
    spmm_long_rows_kernel(int f, const int* __restrict__ indptr, const int* __restrict__ indices,
                          const double* __restrict__ values, const double* __restrict__ z,
                          double* __restrict__ out, const Workspace ws) {
  __shared__ Entry s_entries[LONG_GROUPS][CHUNK];
  __shared__ double s_sums[LONG_GROUPS][GROUP];
  __shared__ int s_last;

  const int lane = threadIdx.x % GROUP;
  const int g = threadIdx.x / GROUP;
  const unsigned group_mask = 0xffffu << (threadIdx.x % WARP_SIZE / GROUP * GROUP);
  const int num_segments = *ws.num_segments;  // written by the previous kernel: final here
  const double* z_lane = z + lane;
  const unsigned row_bytes = static_cast<unsigned>(f) * sizeof(double);

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
        store_row(row_out, f, lane, sum);
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
        store_row(row_out, f, lane, sum);
      }
    }
    __syncthreads();  // s_entries, s_sums and s_last are reused by the next piece
  }
}

// One line for a size this step does not run, or nullptr.
inline const char* refuses(const tut::GcnProblem& p) {
  if (p.f_out < 1 || p.f_out > F_MAX) {
    return "F_out must be at most 16, one feature per lane of a half-warp (valid: --out 1 to 16)";
  }
  return nullptr;
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

// The launcher: reset the list's counter, then the two kernels, in stream order (the second reads
// the list the first wrote). Short rows: ceil(V / 64) blocks of 128 threads (4405 on the default
// graph; at most 2^25 for V < 2^31). Long rows: 4 blocks of 256 threads per SM (528 on 132 SMs),
// fewer when the list cannot hold that many pieces.
inline void spmm_warp_per_row(const tut::GcnProblem& p, const tut::GcnArgs& a, cudaStream_t stream) {
  if (p.v == 0) return;  // nothing to compute, and a grid of 0 blocks is a launch error
  const Workspace ws = carve(a.workspace, p);
  TUT_CUDA_CHECK(cudaMemsetAsync(ws.num_segments, 0, sizeof(int), stream));

  constexpr long long ROWS_PER_BLOCK = static_cast<long long>(SHORT_GROUPS) * ROWS_PER_GROUP;
  const unsigned short_blocks = static_cast<unsigned>(tut::ceil_div(static_cast<long long>(p.v), ROWS_PER_BLOCK));
  spmm_short_rows_kernel<<<short_blocks, SHORT_THREADS, 0, stream>>>(p.v, p.f_out, a.a.indptr, a.a.indices,
                                                                     a.a.values, a.z, a.out, ws);
  TUT_CHECK_LAUNCH();

  const unsigned long_blocks = static_cast<unsigned>(std::min<long long>(long_rows_grid(), max_segments(p)));
  spmm_long_rows_kernel<<<long_blocks, LONG_THREADS, 0, stream>>>(p.f_out, a.a.indptr, a.a.indices, a.a.values,
                                                                  a.z, a.out, ws);
  TUT_CHECK_LAUNCH();
}

}  // namespace ch27
