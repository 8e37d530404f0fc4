#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "tut/gemm/args.hpp"

#include "../args_helpers.hpp"

using tut::ArgError;
using tut::GemmOptions;

namespace {

GemmOptions parse(std::initializer_list<const char*> args) { return test::parse_list(tut::parse_gemm_args, args); }

// The message of the ArgError that parsing `args` raises ("" when none is raised).
std::string error_of(std::initializer_list<const char*> args) { return test::error_of(tut::parse_gemm_args, args); }

using test::contains;

}  // namespace

TEST_CASE("defaults are the headline problem") {
  const GemmOptions o = parse({});
  CHECK(o.m == 4096);
  CHECK(o.n == 4096);
  CHECK(o.k == 4096);
  CHECK(o.alpha == 1.0f);
  CHECK(o.beta == 0.0f);
  CHECK(o.iters >= 1);
  CHECK(o.verify);
  CHECK_FALSE(o.self_test);
  CHECK(o.csv.empty());
  CHECK(o.device == 0);
}

TEST_CASE("every flag is accepted, with a separate or an = value") {
  const GemmOptions o = parse({"--m", "127", "--n=257", "--k", "63", "--alpha", "-1.5", "--beta=2e-1", "--iters", "7",
                               "--warmup", "0", "--seed", "18446744073709551615", "--no-verify", "--csv", "out.csv",
                               "--dump", "dir", "--device", "1", "--self-test", "--quick", "--device-info"});
  CHECK(o.m == 127);
  CHECK(o.n == 257);
  CHECK(o.k == 63);
  CHECK(o.alpha == -1.5f);
  CHECK(o.beta == doctest::Approx(0.2f));
  CHECK(o.iters == 7);
  CHECK(o.warmup == 0);
  CHECK(o.seed == 18446744073709551615ull);
  CHECK_FALSE(o.verify);
  CHECK(o.csv == "out.csv");
  CHECK(o.dump == "dir");
  CHECK(o.device == 1);
  CHECK(o.self_test);
  CHECK(o.quick);
  CHECK(o.device_info);
  CHECK(parse({"--help"}).help);
  CHECK(parse({"-h"}).help);
}

TEST_CASE("sizes: non-numeric, zero, negative, too large, trailing junk are rejected naming the flag") {
  for (const char* flag : {"--m", "--n", "--k"}) {
    CAPTURE(flag);
    for (const char* bad : {"abc", "0", "-5", "12x", "1.5", "", " 7", "99999999999999999999", "1048577"}) {
      CAPTURE(bad);
      const std::string msg = error_of({flag, bad});
      CHECK(contains(msg, flag));
      CHECK(contains(msg, "valid: an integer in [1, 1048576]"));
    }
  }
  // The largest value of each dimension is accepted (the others kept small).
  CHECK(parse({"--m", "1048576", "--n", "1", "--k", "1"}).m == 1048576);
  CHECK(parse({"--n", "1048576", "--m", "1", "--k", "1"}).n == 1048576);
  CHECK(parse({"--k", "1048576", "--m", "1", "--n", "1"}).k == 1048576);
}

TEST_CASE("a matrix with 2^31 or more elements is rejected") {
  const std::string msg = error_of({"--m", "65536", "--k", "32768", "--n", "1"});
  CHECK(contains(msg, "--m/--n/--k"));
  CHECK(contains(msg, "A (--m x --k)"));
  CHECK(contains(msg, "2147483647"));
  CHECK(error_of({"--m", "65535", "--k", "32768", "--n", "1"}).empty());
}

TEST_CASE("alpha and beta must be finite numbers") {
  for (const char* flag : {"--alpha", "--beta"}) {
    CAPTURE(flag);
    for (const char* bad : {"nan", "inf", "-inf", "1e39", "x", "1.0f", "", "--"}) {
      CAPTURE(bad);
      const std::string msg = error_of({flag, bad});
      CHECK(contains(msg, flag));
      CHECK(contains(msg, "finite"));
    }
  }
  CHECK(parse({"--alpha", "0"}).alpha == 0.0f);
  CHECK(parse({"--beta", "-3.25"}).beta == -3.25f);
}

TEST_CASE("iters, warmup, seed and device ranges") {
  CHECK(contains(error_of({"--iters", "0"}), "--iters: 0 is out of range (valid: an integer in [1, 100000])"));
  CHECK(contains(error_of({"--iters", "100001"}), "[1, 100000]"));
  CHECK(contains(error_of({"--warmup", "-1"}), "--warmup"));
  CHECK(contains(error_of({"--warmup", "10001"}), "[0, 10000]"));
  CHECK(parse({"--warmup", "0"}).warmup == 0);
  CHECK(contains(error_of({"--seed", "-1"}), "--seed"));
  CHECK(contains(error_of({"--seed", "18446744073709551616"}), "out of range"));
  CHECK(contains(error_of({"--device", "-1"}), "--device"));
  CHECK(contains(error_of({"--device", "one"}), "--device"));
}

TEST_CASE("unknown flags, missing values, values on switches, stray words") {
  CHECK(contains(error_of({"--mm", "3"}), "'--mm': unknown flag"));
  CHECK(contains(error_of({"--M", "3"}), "unknown flag"));
  CHECK(contains(error_of({"4096"}), "'4096': unknown flag"));
  CHECK(contains(error_of({"--m"}), "--m: missing value"));
  CHECK(contains(error_of({"--csv"}), "--csv: missing value"));
  CHECK(contains(error_of({"--csv="}), "--csv: empty"));
  CHECK(contains(error_of({"--dump="}), "--dump: empty"));
  CHECK(contains(error_of({"--no-verify=1"}), "--no-verify: takes no value"));
  CHECK(contains(error_of({"--self-test=yes"}), "--self-test: takes no value"));
  CHECK(contains(error_of({"--quick"}), "--quick: only valid together with --self-test"));
}

TEST_CASE("every message is one line") {
  for (auto msg : {error_of({"--m", "0"}), error_of({"--bogus"}), error_of({"--alpha", "nan"}),
                   error_of({"--m", "65536", "--k", "65536"})}) {
    CHECK_FALSE(msg.empty());
    CHECK(msg.find('\n') == std::string::npos);
  }
}

TEST_CASE("usage lists every flag and the exit codes") {
  const std::string u = tut::gemm_usage("01_naive_gemm");
  for (const char* flag : {"--m", "--n", "--k", "--alpha", "--beta", "--tile", "--split", "--explain", "--iters",
                           "--warmup", "--seed", "--no-verify", "--csv", "--dump", "--self-test", "--quick", "--device",
                           "--device-info", "--help"}) {
    CAPTURE(flag);
    CHECK(contains(u, flag));
  }
  CHECK(contains(u, "exit codes"));
  CHECK(contains(u, "77"));
}

TEST_CASE("a planning step's flags: --tile, --split, --explain") {
  const GemmOptions d = parse({});
  CHECK(d.tile.empty());  // the rule decides
  CHECK(d.splits == 0);
  CHECK_FALSE(d.explain);
  const GemmOptions o = parse({"--tile", "128x64", "--split=7", "--explain"});
  CHECK(o.tile == "128x64");  // checked against the step's shapes by the harness, which knows them
  CHECK(o.splits == 7);
  CHECK(o.explain);
  CHECK(parse({"--tile", "auto", "--split", "auto"}).tile.empty());
  CHECK(parse({"--tile", "auto", "--split", "auto"}).splits == 0);
  CHECK(parse({"--split", "1024"}).splits == 1024);
  for (const char* bad : {"0", "-1", "1025", "two", "", "3.5"}) {
    CAPTURE(bad);
    const std::string msg = error_of({"--split", bad});
    CHECK(contains(msg, "--split"));
    CHECK(contains(msg, "valid: auto, or an integer in [1, 1024]"));
    CHECK(msg.find('\n') == std::string::npos);
  }
  CHECK(contains(error_of({"--tile="}), "--tile: empty"));
  CHECK(contains(error_of({"--tile"}), "--tile: missing value"));
  CHECK(contains(error_of({"--explain=1"}), "--explain: takes no value"));
}
