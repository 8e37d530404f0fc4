// The GCN binaries' flags (gcn/args.hpp): the graph, the feature sizes, and the shared ones.
#include <doctest/doctest.h>

#include <initializer_list>
#include <string>

#include "tut/gcn/args.hpp"

#include "../args_helpers.hpp"

using test::contains;

namespace {

tut::GcnOptions parse(std::initializer_list<const char*> args) { return test::parse_list(tut::parse_gcn_args, args); }
std::string error_of(std::initializer_list<const char*> args) { return test::error_of(tut::parse_gcn_args, args); }

void check_rejected(const std::string& msg, const std::string& flag, const std::string& valid) {
  CAPTURE(msg);
  REQUIRE_FALSE(msg.empty());
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(contains(msg, flag));
  CHECK(contains(msg, valid));
}

}  // namespace

TEST_CASE("gcn flags: the defaults are web-Stanford's size, 128 -> 16") {
  const tut::GcnOptions o = parse({});
  CHECK(o.graph_file.empty());
  CHECK(o.nodes == 281903);
  CHECK(o.edges == 2312497);
  CHECK(o.rmat_seed == tut::kDefaultRmatSeed);
  CHECK(o.f_in == 128);
  CHECK(o.f_out == 16);
  CHECK(o.iters == tut::CommonOptions().iters);  // the shared flags keep theirs
}

TEST_CASE("gcn flags: values are taken, in both spellings") {
  const tut::GcnOptions o = parse({"--nodes", "1009", "--edges=7919", "--rmat-seed", "7", "--in", "19", "--out=5", "--iters", "3"});
  CHECK(o.nodes == 1009);
  CHECK(o.edges == 7919);
  CHECK(o.rmat_seed == 7);
  CHECK(o.f_in == 19);
  CHECK(o.f_out == 5);
  CHECK(o.iters == 3);
  CHECK(parse({"--graph", "web-Stanford.txt"}).graph_file == "web-Stanford.txt");
  CHECK(parse({"--in", "4096", "--out", "1024"}).f_out == 1024);
}

TEST_CASE("gcn flags: bad values name the flag and the valid range") {
  check_rejected(error_of({"--in", "0"}), "--in", "[1, 4096]");
  check_rejected(error_of({"--in", "4097"}), "--in", "[1, 4096]");
  check_rejected(error_of({"--out", "x"}), "--out", "[1, 1024]");
  check_rejected(error_of({"--out", "1025"}), "--out", "[1, 1024]");
  check_rejected(error_of({"--nodes", "0"}), "--nodes", "[1, 2147483647]");
  check_rejected(error_of({"--nodes", "-5"}), "--nodes", "[1, 2147483647]");
  check_rejected(error_of({"--edges", "-1"}), "--edges", "non-negative");
  check_rejected(error_of({"--edges", "2147483648"}), "--edges", "[0, 2147483647]");
  check_rejected(error_of({"--edges", "99999999999999999999"}), "--edges", "out of range");
  check_rejected(error_of({"--rmat-seed", "1.5"}), "--rmat-seed", "non-negative integer");
  check_rejected(error_of({"--graph", ""}), "--graph", "SNAP edge-list");
  check_rejected(error_of({"--graph"}), "--graph", "");
  check_rejected(error_of({"--bogus"}), "--bogus", "");
}

TEST_CASE("gcn flags: a file's graph excludes the R-MAT flags") {
  for (const char* flag : {"--nodes", "--edges", "--rmat-seed"}) {
    check_rejected(error_of({"--graph", "g.txt", flag, "10"}), "--graph", "not both");
  }
}

TEST_CASE("gcn flags: V x F must fit 32-bit indexing") {
  // 2^31 / 4096 = 524288 nodes at most with --in 4096.
  CHECK(error_of({"--nodes", "524287", "--in", "4096"}).empty());
  check_rejected(error_of({"--nodes", "524288", "--in", "4096"}), "--nodes/--in", "at most 2147483647");
  check_rejected(error_of({"--nodes", "2147483647", "--in", "1", "--out", "2"}), "--nodes/--out", "at most 2147483647");
  CHECK_THROWS_AS(tut::check_gcn_sizes(3000000, 1024, 16, "--graph"), tut::ArgError);
  CHECK_NOTHROW(tut::check_gcn_sizes(281903, 128, 16, "--graph"));
}

TEST_CASE("gcn usage names every flag") {
  const std::string u = tut::gcn_usage("prog");
  for (const char* flag : {"--graph", "--nodes", "--edges", "--rmat-seed", "--in", "--out", "--self-test", "--dump"}) {
    CAPTURE(flag);
    CHECK(contains(u, flag));
  }
}
