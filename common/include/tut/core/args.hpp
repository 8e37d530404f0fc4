// Command-line flags every binary shares (docs/architecture.md, the core), parsed without touching the GPU
// so the parser is unit-tested on any machine. A family adapter (gemm/, conv/) adds its own flags
// through a handler. Every rejected value raises ArgError whose message is one line naming the flag
// and its valid range; the harness prints it and exits with code 2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>

namespace tut {

struct ArgError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CommonOptions {
  int iters = 20;                    // timed runs; the median is reported
  int warmup = 5;                    // untimed runs before the timed ones
  std::uint64_t seed = 2024;
  bool verify = true;
  std::string csv;                   // append one result row to this file
  std::string run;                   // the run this process belongs to, written in its row's `run` column
                                     // (plots/bench.py gives one id to every process it starts)
  std::string dump;                  // write the run's tensors as .npy into this folder
  bool self_test = false;
  bool quick = false;                // with --self-test: only the small problems
  bool device_info = false;          // print the device's key facts and exit
  int device = 0;
  bool help = false;
};

constexpr int kMaxIters = 100000;
constexpr int kMaxWarmup = 10000;

// One flag as the parser hands it to a family: its name ("--m"), value() for its value (from
// "--flag=value" or the next argument; throws ArgError when missing) and no_value() for a flag that
// takes none (throws when one was given inline).
struct Flag {
  const std::string& name;
  const std::function<std::string()>& value;
  const std::function<void()>& no_value;
};
// Returns true when it recognised the flag (and consumed its value), false to let the core try.
using FlagHandler = std::function<bool(const Flag&)>;

// Parses argv[1..argc): the family's flags first (through `family`), then the shared ones. Throws
// ArgError on an unknown flag, a missing value, a malformed or out-of-range value, and on --quick
// without --self-test. Accepts "--flag value" and "--flag=value".
CommonOptions parse_flags(int argc, const char* const* argv, const FlagHandler& family);

// The --help lines of the shared flags. `dump_what` says what --dump writes ("A, B, C_in, C_out").
std::string common_usage(const std::string& dump_what);
// The exit-code paragraph that ends every --help.
std::string exit_codes_usage(const std::string& runtime_libraries);

// Checks that need the device: throw ArgError with the valid range. `flags` names the flags that
// set the problem's size ("--m/--n/--k"); `what` the problem.
void check_device_id(int id, int device_count);
void check_fits_in_memory(std::size_t needed_bytes, std::size_t free_bytes, const std::string& what,
                          const std::string& flags = "--m/--n/--k");

// Strict number parsing: the whole string must be the number. Throw ArgError naming `flag`.
int parse_int(const std::string& flag, const std::string& text, int lo, int hi);
std::uint64_t parse_u64(const std::string& flag, const std::string& text);
float parse_finite_float(const std::string& flag, const std::string& text);

// "1.5 GiB", "256.0 MiB", "12 bytes".
std::string format_bytes(double bytes);

}  // namespace tut
