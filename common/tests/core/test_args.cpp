#include <doctest/doctest.h>

#include <string>

#include "tut/core/args.hpp"

#include "../args_helpers.hpp"

using tut::ArgError;

namespace {

using test::contains;

}  // namespace

TEST_CASE("device id is checked against the devices present") {
  CHECK_NOTHROW(tut::check_device_id(0, 1));
  CHECK_NOTHROW(tut::check_device_id(3, 4));
  try {
    tut::check_device_id(2, 2);
    FAIL("expected ArgError");
  } catch (const ArgError& e) {
    CHECK(std::string(e.what()) == "--device: 2 does not exist (valid: [0, 1], 2 device(s) found)");
  }
  CHECK_THROWS_AS(tut::check_device_id(-1, 2), ArgError);
}

TEST_CASE("memory check says how much is needed and how much is free") {
  CHECK_NOTHROW(tut::check_fits_in_memory(100, 100, "4x4x4"));
  try {
    tut::check_fits_in_memory(std::size_t(3) << 30, std::size_t(1) << 30, "30000x30000x30000");
    FAIL("expected ArgError");
  } catch (const ArgError& e) {
    const std::string msg = e.what();
    CHECK(contains(msg, "--m/--n/--k: 30000x30000x30000 needs 3.00 GiB"));
    CHECK(contains(msg, "only 1.00 GiB is free"));
  }
}

TEST_CASE("format_bytes picks a readable unit") {
  CHECK(tut::format_bytes(12) == "12 bytes");
  CHECK(tut::format_bytes(1536) == "1.5 KiB");
  CHECK(tut::format_bytes(256.0 * 1024 * 1024) == "256.0 MiB");
  CHECK(tut::format_bytes(3.0 * 1024 * 1024 * 1024) == "3.00 GiB");
}

TEST_CASE("the memory check names the flags it is given") {
  try {
    tut::check_fits_in_memory(std::size_t(3) << 30, std::size_t(1) << 30, "seed_3x3", "--layer/--shape");
    FAIL("expected ArgError");
  } catch (const ArgError& e) {
    CHECK(contains(e.what(), "--layer/--shape: seed_3x3 needs 3.00 GiB"));
  }
}

TEST_CASE("a family's flags are tried first, then the shared ones") {
  int seen = 0;
  const tut::FlagHandler family = [&](const tut::Flag& f) {
    if (f.name == "--x") {
      seen = tut::parse_int(f.name, f.value(), 1, 9);
      return true;
    }
    if (f.name == "--flag") {
      f.no_value();
      seen = -1;
      return true;
    }
    return false;
  };
  const char* argv[] = {"prog", "--x=7", "--iters", "3"};
  const tut::CommonOptions o = tut::parse_flags(4, argv, family);
  CHECK(seen == 7);
  CHECK(o.iters == 3);
  const char* bad[] = {"prog", "--x", "10"};
  CHECK_THROWS_WITH_AS(tut::parse_flags(3, bad, family), "--x: 10 is out of range (valid: an integer in [1, 9])",
                       ArgError);
  const char* inline_value[] = {"prog", "--flag=1"};
  CHECK_THROWS_WITH_AS(tut::parse_flags(2, inline_value, family), "--flag: takes no value (got '1')", ArgError);
  const char* unknown[] = {"prog", "--y"};
  CHECK_THROWS_WITH_AS(tut::parse_flags(2, unknown, nullptr), "'--y': unknown flag (see --help for the valid flags)",
                       ArgError);
}

TEST_CASE("--run takes a run id of safe characters, written as given") {
  const char* ok[] = {"prog", "--run", "2026-11-27T02:00:00Z"};
  CHECK(tut::parse_flags(3, ok, nullptr).run == "2026-11-27T02:00:00Z");
  const char* none[] = {"prog"};
  CHECK(tut::parse_flags(1, none, nullptr).run.empty());
  const char* comma[] = {"prog", "--run=a,b"};
  CHECK_THROWS_WITH_AS(tut::parse_flags(2, comma, nullptr),
                       "--run: 'a,b' is not a run id (valid: 1 to 64 of the characters A-Z a-z 0-9 : . _ -)", ArgError);
  const char* empty[] = {"prog", "--run="};
  CHECK_THROWS_AS(tut::parse_flags(2, empty, nullptr), ArgError);
  const std::string long_id(65, 'a');
  const char* too_long[] = {"prog", "--run", long_id.c_str()};
  CHECK_THROWS_AS(tut::parse_flags(3, too_long, nullptr), ArgError);
}
