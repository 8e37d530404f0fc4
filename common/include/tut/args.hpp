// Command-line flags shared by every GEMM binary, parsed without touching the GPU so the parser
// is unit-tested on any machine. Every rejected value raises ArgError whose message is one line
// naming the flag and its valid range; the harness prints it and exits with code 2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace tut {

struct ArgError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct GemmOptions {
  int m = 4096, n = 4096, k = 4096;  // the headline problem
  float alpha = 1.0f, beta = 0.0f;
  int iters = 20;                    // timed runs; the median is reported
  int warmup = 5;                    // untimed runs before the timed ones
  std::uint64_t seed = 2024;
  bool verify = true;
  std::string csv;                   // append one result row to this file
  std::string dump;                  // write A, B, C_in, C_out as .npy into this folder
  bool self_test = false;
  bool quick = false;                // with --self-test: only the small problems
  bool device_info = false;          // print the device's key facts and exit
  int device = 0;
  bool help = false;
};

// Each dimension at most 2^20: every step launches a 2D grid whose y extent (at most 65535 blocks)
// covers one dimension in tiles of 16 or more elements, so 2^20 fits every chapter's grid.
constexpr int kMaxDim = 1 << 20;
constexpr std::int64_t kMaxElems = 2147483647;  // elements per matrix (32-bit indexing)
constexpr int kMaxIters = 100000;
constexpr int kMaxWarmup = 10000;

// Parses argv[1..argc). Throws ArgError on any unknown flag, missing value, malformed or
// out-of-range value. Accepts "--flag value" and "--flag=value".
GemmOptions parse_gemm_args(int argc, const char* const* argv);

// The --help text.
std::string gemm_usage(const std::string& program);

// Checks that need the device: throw ArgError with the valid range.
void check_device_id(int id, int device_count);
void check_fits_in_memory(std::size_t needed_bytes, std::size_t free_bytes, const std::string& what);

// Strict number parsing: the whole string must be the number. Throw ArgError naming `flag`.
int parse_int(const std::string& flag, const std::string& text, int lo, int hi);
std::uint64_t parse_u64(const std::string& flag, const std::string& text);
float parse_finite_float(const std::string& flag, const std::string& text);

// "1.5 GiB", "256.0 MiB", "12 bytes".
std::string format_bytes(double bytes);

}  // namespace tut
