// The graph of Part III (docs/gcn-layer.md): where it comes from (a seeded R-MAT generator with
// web-Stanford's size, or a SNAP edge-list file), and the one matrix the GCN layer multiplies by,
//   A_hat = D^-1/2 (A + I) D^-1/2,
// stored in CSR with one row per TARGET node: an edge u -> v puts u in row v, so row v of A_hat * H
// gathers the features of v's in-neighbours (and v's own, through I). D holds the row lengths of
// A + I: d_v = in-degree(v) + 1, never 0.
//
// Everything here is host code, unit-tested without a GPU. Bad flag values and bad files raise
// ArgError with one line naming the flag (and the file and line); the harness exits with code 2.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tut {

// One directed edge src -> dst, ids in [0, nodes).
struct Edge {
  int src;
  int dst;
  friend bool operator==(const Edge& x, const Edge& y) { return x.src == y.src && x.dst == y.dst; }
  friend bool operator!=(const Edge& x, const Edge& y) { return !(x == y); }
};

// A directed graph without self-loops or duplicate edges.
struct EdgeList {
  std::string name;                    // "rmat_281903_2312497_s1", or the file's name
  int nodes = 0;                       // ids are 0..nodes-1
  std::vector<Edge> edges;             // distinct, src != dst
  std::vector<int> file_ids;           // load_snap: node i was id file_ids[i] in the file (ascending); else empty
  long long dropped_duplicates = 0;    // load_snap: edge lines that repeated an earlier edge
  long long dropped_self_loops = 0;    // load_snap: edge lines u -> u
};

// The default graph: web-Stanford's size (SNAP), generated, not downloaded.
constexpr int kWebStanfordNodes = 281903;
constexpr long long kWebStanfordEdges = 2312497;
constexpr std::uint64_t kDefaultRmatSeed = 1;

// The R-MAT recursion's quadrant probabilities (Chakrabarti, Zhan, Faloutsos 2004; the Graph500
// values): at each of `scale` levels an edge falls into the top-left (a), top-right (b),
// bottom-left (c) or bottom-right (d) quarter of the adjacency matrix (rows = sources).
// a > d skews both ids towards 0: a power-law in- and out-degree.
struct RmatParams {
  double a, b, c, d;
};
constexpr RmatParams kRmatParams{0.57, 0.19, 0.19, 0.05};

// The largest graph the CSR holds with int indices: nnz(A + I) = edges + nodes <= 2^31 - 1.
constexpr long long kMaxGraphNonzeros = 2147483647;

// Exactly `edges` distinct directed edges over `nodes` nodes, no self-loops, a pure function of
// (nodes, edges, seed) on every platform. How:
//   1. scale = ceil(log2(nodes)); each candidate edge descends `scale` levels of the recursion with
//      kRmatParams (one SplitMix64 draw per level, stream derive_seed(seed, 0));
//   2. a candidate with an id >= nodes, a self-loop, or an edge already drawn is rejected and drawn
//      again, until `edges` distinct edges are accepted (in the order accepted);
//   3. node ids are relabelled by a seeded random permutation (stream derive_seed(seed, 1)), as
//      Graph500 does: R-MAT puts every hub at a low id, real graphs do not, and neither the
//      degree distribution nor the edge set's shape changes.
// Throws ArgError naming --nodes (valid: [1, 2^31 - 1]) or --edges (valid: [0, min(nodes * (nodes - 1),
// kMaxGraphNonzeros - nodes)]). R-MAT reaches the last few cells of a nearly complete graph only with
// vanishing probability: after 2^20 + 256 * nodes candidates (a budget that depends on `nodes` alone)
// it throws ArgError naming --edges with the count it reached, which the same nodes and seed then
// always reach.
EdgeList rmat_graph(int nodes, long long edges, std::uint64_t seed);

// A SNAP edge list (https://snap.stanford.edu/data/, e.g. web-Stanford.txt): one edge "source target"
// per line, two whitespace-separated non-negative integer ids below 2^31; lines whose first
// non-blank character is '#' are comments; blank lines are skipped; "\r\n" line ends are accepted.
// Every id that appears becomes a node (also one seen only in a self-loop); ids are remapped to
// 0..V-1 in ascending order (file_ids keeps the map), so a file that numbers its nodes 1..V keeps
// their order. Self-loops and repeated edges are dropped (the first occurrence is kept) and counted.
// Throws ArgError with one line "--graph: FILE:LINE: what was wrong" on a line that is not two ids
// (a non-integer, one id, three or more fields, an id past 2^31 - 1), on an empty file (line 1) and
// on a file of comments and blank lines only (its last line); "--graph: FILE: ..." on a file that
// is missing, a directory or unreadable, or too large for int CSR indices.
EdgeList load_snap(const std::string& path);

// "281903 nodes, 2312497 edges" plus the dropped counts when a file had any.
std::string describe(const EdgeList& g);

// Compressed sparse rows. indptr has rows + 1 entries; row r's entries are
// indices/values[indptr[r] .. indptr[r + 1]), column indices ascending. int indices: nnz < 2^31.
struct Csr {
  int rows = 0;
  int cols = 0;
  std::vector<int> indptr;
  std::vector<int> indices;
  std::vector<double> values;
  long long nnz() const { return static_cast<long long>(indices.size()); }
};

// A_hat = D^-1/2 (A + I) D^-1/2 with rows = targets: row v holds v itself and every u with an edge
// u -> v, ascending, with the value 1 / sqrt(d_v * d_u), d = row length = in-degree + 1. Throws
// std::invalid_argument when the list has an id outside [0, nodes), a self-loop or a duplicate
// edge, and std::length_error past kMaxGraphNonzeros.
Csr normalized_adjacency(const EdgeList& g);

// The in-degree of A (each row's length less the added self-loop): the work per row of the SpMM.
struct DegreeStats {
  int nodes = 0;
  long long edges = 0;
  int min = 0;
  int max = 0;
  int median = 0;  // the lower median
  double mean = 0;
  // Nodes per log2 bucket: [0] degree 0, [k] degrees 2^(k-1) .. 2^k - 1; the last bucket holds max.
  std::vector<long long> histogram;
};
DegreeStats degree_stats(const Csr& a_hat);

// Two lines: "in-degree: max M, mean X, median Y, min Z" and the histogram "0: n | 1: n | 2-3: n | ...".
std::string describe(const DegreeStats& s);

}  // namespace tut
