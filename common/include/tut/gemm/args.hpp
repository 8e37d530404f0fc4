// The GEMM binaries' flags: --m --n --k --alpha --beta on top of the shared ones (core/args.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "tut/core/args.hpp"

namespace tut {

struct GemmOptions : CommonOptions {
  int m = 4096, n = 4096, k = 4096;  // the headline problem
  float alpha = 1.0f, beta = 0.0f;
};

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
