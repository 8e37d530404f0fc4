// The GCN binaries' flags (Part III) on top of the shared ones (core/args.hpp): the graph (the
// default R-MAT graph, another R-MAT size, or a SNAP edge-list file) and the feature sizes.
#pragma once

#include <cstdint>
#include <string>

#include "tut/core/args.hpp"
#include "tut/gcn/graph.hpp"

namespace tut {

struct GcnOptions : CommonOptions {
  std::string graph_file;                     // --graph FILE; empty: R-MAT
  int nodes = kWebStanfordNodes;              // --nodes
  long long edges = kWebStanfordEdges;        // --edges
  std::uint64_t rmat_seed = kDefaultRmatSeed; // --rmat-seed
  int f_in = 128;                             // --in
  int f_out = 16;                             // --out
};

// Feature sizes: F_in in [1, kMaxFeaturesIn], F_out in [1, kMaxFeaturesOut]; every V x F matrix
// must hold fewer than 2^31 elements (32-bit indexing in the kernels), checked once the graph's V
// is known (check_gcn_sizes).
constexpr int kMaxFeaturesIn = 4096;
constexpr int kMaxFeaturesOut = 1024;

// Parses argv[1..argc). Throws ArgError on an unknown flag, a malformed or out-of-range value, and
// on --graph together with --nodes, --edges or --rmat-seed.
GcnOptions parse_gcn_args(int argc, const char* const* argv);

// Throws ArgError naming the flags that set the sizes when V x F_in (X) or V x F_out has 2^31 or
// more elements.
void check_gcn_sizes(long long nodes, int f_in, int f_out, const std::string& graph_flags);

std::string gcn_usage(const std::string& program);

}  // namespace tut
