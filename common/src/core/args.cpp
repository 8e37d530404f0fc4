#include "tut/core/args.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace tut {

namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace

int parse_int(const std::string& flag, const std::string& text, int lo, int hi) {
  const std::string range = " (valid: an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "])";
  long long value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != last) {
    throw ArgError(flag + ": " + quoted(text) + " is not an integer" + range);
  }
  if (ec == std::errc::result_out_of_range || value < lo || value > hi) {
    throw ArgError(flag + ": " + text + " is out of range" + range);
  }
  return static_cast<int>(value);
}

std::uint64_t parse_u64(const std::string& flag, const std::string& text) {
  const std::string range = " (valid: an integer in [0, 18446744073709551615])";
  std::uint64_t value = 0;
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), last, value);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != last) {
    throw ArgError(flag + ": " + quoted(text) + " is not a non-negative integer" + range);
  }
  if (ec == std::errc::result_out_of_range) throw ArgError(flag + ": " + text + " is out of range" + range);
  return value;
}

float parse_finite_float(const std::string& flag, const std::string& text) {
  const std::string range = " (valid: a finite number, e.g. 1.5 or -2e-3)";
  if (text.empty()) throw ArgError(flag + ": empty value" + range);
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || std::isspace(static_cast<unsigned char>(text[0]))) {
    throw ArgError(flag + ": " + quoted(text) + " is not a number" + range);
  }
  if (!std::isfinite(value) || errno == ERANGE || std::fabs(value) > 3.4028234663852886e38) {
    throw ArgError(flag + ": " + text + " is not a finite FP32 value" + range);
  }
  return static_cast<float>(value);
}

std::string format_bytes(double bytes) {
  char buf[64];
  if (bytes >= 1024.0 * 1024.0 * 1024.0) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  } else if (bytes >= 1024.0 * 1024.0) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024.0));
  } else if (bytes >= 1024.0) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f bytes", bytes);
  }
  return buf;
}

CommonOptions parse_flags(int argc, const char* const* argv, const FlagHandler& family) {
  CommonOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_inline_value = false;
    if (arg.rfind("--", 0) == 0) {
      const auto eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline_value = true;
      }
    }
    const std::function<std::string()> take_value = [&]() -> std::string {
      if (has_inline_value) return value;
      if (i + 1 >= argc) throw ArgError(arg + ": missing value (see --help)");
      return argv[++i];
    };
    const std::function<void()> no_value = [&]() {
      if (has_inline_value) throw ArgError(arg + ": takes no value (got '" + value + "')");
    };

    if (family && family(Flag{arg, take_value, no_value})) {
      continue;
    } else if (arg == "--iters") {
      o.iters = parse_int(arg, take_value(), 1, kMaxIters);
    } else if (arg == "--warmup") {
      o.warmup = parse_int(arg, take_value(), 0, kMaxWarmup);
    } else if (arg == "--seed") {
      o.seed = parse_u64(arg, take_value());
    } else if (arg == "--device") {
      o.device = parse_int(arg, take_value(), 0, 1023);
    } else if (arg == "--csv") {
      o.csv = take_value();
      if (o.csv.empty()) throw ArgError("--csv: empty file name (valid: a path to a CSV file)");
    } else if (arg == "--run") {
      o.run = take_value();
      const bool ok = !o.run.empty() && o.run.size() <= 64 &&
                      o.run.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789:._-") ==
                          std::string::npos;
      if (!ok) {
        throw ArgError("--run: '" + o.run + "' is not a run id (valid: 1 to 64 of the characters A-Z a-z 0-9 : . _ -)");
      }
    } else if (arg == "--dump") {
      o.dump = take_value();
      if (o.dump.empty()) throw ArgError("--dump: empty folder name (valid: a path to a folder)");
    } else if (arg == "--no-verify") {
      no_value();
      o.verify = false;
    } else if (arg == "--self-test") {
      no_value();
      o.self_test = true;
    } else if (arg == "--quick") {
      no_value();
      o.quick = true;
    } else if (arg == "--device-info") {
      no_value();
      o.device_info = true;
    } else if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else {
      throw ArgError(quoted(argv[i]) + ": unknown flag (see --help for the valid flags)");
    }
  }
  if (o.quick && !o.self_test) throw ArgError("--quick: only valid together with --self-test");
  return o;
}

void check_device_id(int id, int device_count) {
  if (id < 0 || id >= device_count) {
    throw ArgError("--device: " + std::to_string(id) + " does not exist (valid: [0, " +
                   std::to_string(device_count - 1) + "], " + std::to_string(device_count) +
                   " device(s) found)");
  }
}

void check_fits_in_memory(std::size_t needed_bytes, std::size_t free_bytes, const std::string& what,
                          const std::string& flags) {
  if (needed_bytes > free_bytes) {
    throw ArgError(flags + ": " + what + " needs " + format_bytes(double(needed_bytes)) +
                   " of device memory but only " + format_bytes(double(free_bytes)) +
                   " is free (valid: a problem that fits)");
  }
}

std::string common_usage(const std::string& dump_what) {
  const CommonOptions d;
  std::ostringstream s;
  s << "  --iters N             timed runs, median reported, [1, " << kMaxIters << "] (default " << d.iters << ")\n"
    << "  --warmup N            untimed runs first, [0, " << kMaxWarmup << "] (default " << d.warmup << ")\n"
    << "  --seed S              seed of the random inputs (default " << d.seed << ")\n"
    << "  --no-verify           skip the correctness check (timing only)\n"
    << "  --csv FILE            append one result row to FILE (header written if new)\n"
    << "  --run ID              the run the row belongs to (its `run` column; plots/bench.py sets it)\n"
    << "  --dump DIR            write " << dump_what << " as .npy files into DIR\n"
    << "  --self-test           run the built-in awkward problems; one PASS/FAIL line each\n"
    << "  --quick               with --self-test: only the small problems (for compute-sanitizer)\n"
    << "  --device ID           CUDA device to use (default " << d.device << ")\n"
    << "  --device-info         print the device's name, slug, SMs, clock and peak, then exit\n"
    << "  --help                this text\n";
  return s.str();
}

std::string exit_codes_usage(const std::string& runtime_libraries) {
  return "\nexit codes: 0 verified, 1 verification failed, 2 bad arguments, 3 no GPU (77 with\n"
         "--self-test, so CTest reports it as skipped), 4 " + runtime_libraries + " runtime error\n";
}

}  // namespace tut
