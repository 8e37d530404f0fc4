#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "tut/core/csv.hpp"

namespace {

std::string temp_path(const char* name) {
  std::string p = std::string("/tmp/tut_test_") + name;
  std::remove(p.c_str());
  return p;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("escaping: only fields that need quotes get them") {
  CHECK(tut::csv_escape("plain") == "plain");
  CHECK(tut::csv_escape("a,b") == "\"a,b\"");
  CHECK(tut::csv_escape("say \"hi\"") == "\"say \"\"hi\"\"\"");
  CHECK(tut::csv_escape("two\nlines") == "\"two\nlines\"");
  CHECK(tut::csv_line({"a", "b,c", ""}) == "a,\"b,c\",");
}

TEST_CASE("parse: quotes, commas, newlines inside fields, CRLF, blank lines") {
  const auto t = tut::parse_csv("x,y,z\r\n1,\"a,b\",\"say \"\"hi\"\"\"\n\n2,\"multi\nline\",\n");
  CHECK(t.header == std::vector<std::string>{"x", "y", "z"});
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0] == std::vector<std::string>{"1", "a,b", "say \"hi\""});
  CHECK(t.rows[1] == std::vector<std::string>{"2", "multi\nline", ""});
}

TEST_CASE("parse errors name the origin and the line") {
  try {
    tut::parse_csv("a,b\n1,2\n3\n", "f.csv");
    FAIL("expected an error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "f.csv:3: 1 fields, the header has 2");
  }
  CHECK_THROWS_WITH(tut::parse_csv("a,b\n1,\"open\n", "g.csv"), "g.csv:2: unterminated quoted field");
  CHECK_THROWS_WITH(tut::parse_csv("", "e.csv"), "e.csv: empty CSV (no header)");
  CHECK_THROWS_AS(tut::read_csv("/nonexistent/dir/x.csv"), std::runtime_error);
}

TEST_CASE("append writes the header once, then rows; read_csv gets them back") {
  const std::string path = temp_path("append.csv");
  const std::vector<std::string> header{"gpu", "step", "time"};
  tut::append_csv_row(path, header, {"NVIDIA H100 80GB HBM3", "naive, strided", "1.5"});
  tut::append_csv_row(path, header, {"NVIDIA H100 80GB HBM3", "cuBLAS", "0.1"});
  CHECK(slurp(path) == "gpu,step,time\nNVIDIA H100 80GB HBM3,\"naive, strided\",1.5\nNVIDIA H100 80GB HBM3,cuBLAS,0.1\n");
  const auto t = tut::read_csv(path);
  CHECK(t.header == header);
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0][1] == "naive, strided");
}

TEST_CASE("append refuses a file with another header") {
  const std::string path = temp_path("mismatch.csv");
  tut::append_csv_row(path, {"a", "b"}, {"1", "2"});
  CHECK_THROWS_AS(tut::append_csv_row(path, {"a", "c"}, {"1", "2"}), std::runtime_error);
  CHECK_THROWS_AS(tut::append_csv_row(path, {"a", "b"}, {"1"}), std::runtime_error);  // wrong field count
  CHECK(slurp(path) == "a,b\n1,2\n");
}

TEST_CASE("result rows have the documented columns, in order") {
  const auto& cols = tut::result_columns();
  const std::vector<std::string> first{"gpu", "cuda", "chapter", "step", "problem", "m", "n", "k", "time_ms_median",
                                       "time_ms_min", "time_ms_max", "gflops", "gbps", "baseline", "baseline_time_ms",
                                       "ratio_to_baseline", "pct_of_peak", "rel_err", "verified", "timestamp"};
  REQUIRE(cols.size() >= first.size());
  CHECK(std::vector<std::string>(cols.begin(), cols.begin() + long(first.size())) == first);

  tut::ResultRow r;
  r.gpu = "G";
  r.chapter = "01_naive_gemm";
  r.m = 3;
  r.time_ms_median = 1.25;
  r.rel_err = 2.5e-7;
  r.verified = "yes";
  const auto f = tut::to_fields(r);
  CHECK(f.size() == cols.size());
  CHECK(f[0] == "G");
  CHECK(f[5] == "3");
  CHECK(f[8] == "1.25");
  CHECK(f[17] == "2.500e-07");
  r.rel_err = -1;  // not verified: empty field
  CHECK(tut::to_fields(r)[17].empty());
}

TEST_CASE("timestamps are ISO 8601 UTC") {
  const std::string t = tut::utc_timestamp();
  CHECK(t.size() == 20);
  CHECK(t[4] == '-');
  CHECK(t[10] == 'T');
  CHECK(t.back() == 'Z');
}
