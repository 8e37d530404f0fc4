// The GEMM binaries' flags: --m --n --k --alpha --beta on top of the shared ones (core/args.hpp),
// and, for a step that plans each problem (chapter 10), --tile --split --explain.
#pragma once

#include <cstdint>
#include <string>

#include "tut/core/args.hpp"

namespace tut {

struct GemmOptions : CommonOptions {
  int m = 4096, n = 4096, k = 4096;  // the headline problem
  float alpha = 1.0f, beta = 0.0f;
  // A planning step's choice, forced: a tile shape by name ("" = the step's rule) and a number of
  // splits of K (0 = the rule). Which names and counts are valid depends on the step and the
  // problem: the harness checks them (ArgError) once it knows both.
  std::string tile;
  int splits = 0;
  bool explain = false;  // time every candidate plan next to the rule's model
};

// --split at most this (a step's own cap and the problem's K steps are checked later).
constexpr int kMaxSplitsFlag = 1024;

// Each dimension at most 2^20: every step launches a 2D grid whose y extent (at most 65535 blocks)
// covers one dimension in tiles of 16 or more elements, so 2^20 fits every chapter's grid.
constexpr int kMaxDim = 1 << 20;
constexpr std::int64_t kMaxElems = 2147483647;  // elements per matrix (32-bit indexing)

// Parses argv[1..argc). Throws ArgError on any unknown flag, missing value, malformed or
// out-of-range value, and on a matrix of more than kMaxElems elements.
GemmOptions parse_gemm_args(int argc, const char* const* argv);

// The --help text.
std::string gemm_usage(const std::string& program);

}  // namespace tut
