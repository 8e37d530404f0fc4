#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

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

// A fresh path of this process alone: "/tmp/tut_test_<pid>_<name>", removed first.
std::string unique_temp_path(const char* name) {
  std::string p = "/tmp/tut_test_" + std::to_string(long(getpid())) + "_" + name;
  std::remove(p.c_str());
  std::remove((p + ".migrating").c_str());
  return p;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

// The result columns before the last `dropped` were added.
// The columns added last, after config: what a step is (math, op, tags) and the run.
constexpr std::size_t kStepColumns = 4;
const std::vector<std::string> kNoStep(kStepColumns, "");

std::vector<std::string> old_columns(std::size_t dropped) {
  const auto& cols = tut::result_columns();
  return std::vector<std::string>(cols.begin(), cols.end() - long(dropped));
}

// A row of `n` fields "<tag>0", "<tag>1", ... (the first one with a comma, to exercise quoting).
std::vector<std::string> row_of(std::size_t n, const std::string& tag) {
  std::vector<std::string> r;
  for (std::size_t i = 0; i < n; ++i) r.push_back(tag + std::to_string(i));
  r[0] += ", quoted";
  return r;
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
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

TEST_CASE("append writes the header once, then rows, and read_csv gets them back") {
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

TEST_CASE("result rows end with part, alt_baseline, alt_baseline_time_ms, copy_gbps, config, math, op, tags, run") {
  const auto& cols = tut::result_columns();
  REQUIRE(cols.size() >= 9);
  const std::vector<std::string> last(cols.end() - 9, cols.end());
  CHECK(last == std::vector<std::string>{"part", "alt_baseline", "alt_baseline_time_ms", "copy_gbps", "config", "math",
                                         "op", "tags", "run"});
  // Every column name is unique.
  for (std::size_t i = 0; i < cols.size(); ++i)
    for (std::size_t j = i + 1; j < cols.size(); ++j) CHECK(cols[i] != cols[j]);

  tut::ResultRow r;
  r.part = "conv";
  r.alt_baseline = "cuDNN fastest (WINOGRAD_NONFUSED)";
  r.alt_baseline_time_ms = 0.5;
  std::vector<std::string> f = tut::to_fields(r);
  REQUIRE(f.size() == cols.size());
  CHECK(f[f.size() - 9] == "conv");
  CHECK(f[f.size() - 8] == "cuDNN fastest (WINOGRAD_NONFUSED)");
  CHECK(f[f.size() - 7] == "0.5");
  CHECK(f[f.size() - 6].empty());  // no copy bandwidth measured: empty
  CHECK(f[f.size() - 5].empty());  // no plan of its own: empty
  // No second baseline: its time is written empty, whatever the field holds.
  r.alt_baseline.clear();
  f = tut::to_fields(r);
  CHECK(f[f.size() - 8].empty());
  CHECK(f[f.size() - 7].empty());
  r.alt_baseline_time_ms = 0;
  CHECK(tut::to_fields(r)[f.size() - 7].empty());
  // A baseline that took no measurable time still writes its time.
  r.alt_baseline = "x";
  CHECK(tut::to_fields(r)[f.size() - 7] == "0");
  // A measured copy bandwidth is written with one decimal.
  r.part = "gcn";
  r.copy_gbps = 2987.25;
  CHECK(tut::to_fields(r)[f.size() - 6] == "2987.2");
  // A step's plan is written as it names it.
  r.config = "128x64 split 4";
  CHECK(tut::to_fields(r)[f.size() - 5] == "128x64 split 4");
  // What the step is, as declared: written as given.
  r.math = "tf32";
  r.op = "conv_bias_relu";
  r.tags = "all_layers layer_chart";
  f = tut::to_fields(r);
  CHECK(f[f.size() - 4] == "tf32");
  CHECK(f[f.size() - 3] == "conv_bias_relu");
  CHECK(f[f.size() - 2] == "all_layers layer_chart");
  CHECK(f.back().empty());  // no --run: empty
  r.run = "2026-11-27T02:00:00Z";
  CHECK(tut::to_fields(r).back() == "2026-11-27T02:00:00Z");
}

TEST_CASE("legacy values: rows from before the part column were GEMM rows") {
  const auto& legacy = tut::legacy_result_values();
  REQUIRE(legacy.size() >= 1);
  bool has_part = false;
  for (const auto& kv : legacy) {
    if (kv.first == "part") {
      has_part = true;
      CHECK(kv.second == "gemm");
    }
  }
  CHECK(has_part);
}

TEST_CASE("append migrates a file whose header is a prefix of the new one") {
  const std::string path = unique_temp_path("migrate.csv");
  const auto& cols = tut::result_columns();
  const std::vector<std::string> old_header = old_columns(5 + kStepColumns);  // before part ... config and the step columns
  const std::vector<std::string> a = row_of(old_header.size(), "a"), b = row_of(old_header.size(), "b");
  write_file(path, tut::csv_line(old_header) + "\n" + tut::csv_line(a) + "\n" + tut::csv_line(b) + "\n");

  tut::ResultRow r;
  r.gpu = "G";
  r.part = "conv";
  r.alt_baseline = "cuDNN fastest";
  r.alt_baseline_time_ms = 1.25;
  const std::vector<std::string> fields = tut::to_fields(r);
  tut::append_csv_row(path, cols, fields, tut::legacy_result_values());

  const tut::CsvTable t = tut::read_csv(path);
  CHECK(t.header == cols);
  REQUIRE(t.rows.size() == 3);
  CHECK(t.rows[0] == concat(concat(a, {"gemm", "", "", "", ""}), kNoStep));
  CHECK(t.rows[1] == concat(concat(b, {"gemm", "", "", "", ""}), kNoStep));
  CHECK(t.rows[2] == fields);
  CHECK_FALSE(exists(path + ".migrating"));

  // The next append finds the current header: nothing to migrate, one more row.
  tut::append_csv_row(path, cols, fields, tut::legacy_result_values());
  const tut::CsvTable t2 = tut::read_csv(path);
  REQUIRE(t2.rows.size() == 4);
  CHECK(t2.rows[0] == t.rows[0]);
  CHECK(t2.rows[3] == fields);
  std::remove(path.c_str());
}

TEST_CASE("append migrates a file that has part but not the alt_baseline columns") {
  const std::string path = unique_temp_path("migrate_part.csv");
  const auto& cols = tut::result_columns();
  const std::vector<std::string> old_header = old_columns(4 + kStepColumns);
  REQUIRE(old_header.back() == "part");
  std::vector<std::string> a = row_of(old_header.size(), "a");
  a.back() = "conv";  // the row's own part is kept, not overwritten by the legacy value
  write_file(path, tut::csv_line(old_header) + "\n" + tut::csv_line(a) + "\n");
  const std::vector<std::string> fields = tut::to_fields(tut::ResultRow{});
  tut::append_csv_row(path, cols, fields, tut::legacy_result_values());
  const tut::CsvTable t = tut::read_csv(path);
  CHECK(t.header == cols);
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0] == concat(concat(a, {"", "", "", ""}), kNoStep));
  CHECK(t.rows[1] == fields);
  std::remove(path.c_str());
}

TEST_CASE("append migrates a file of Parts I and II (no copy_gbps column): their rows get it empty") {
  const std::string path = unique_temp_path("migrate_copy.csv");
  const auto& cols = tut::result_columns();
  const std::vector<std::string> old_header = old_columns(2 + kStepColumns);
  REQUIRE(old_header.back() == "alt_baseline_time_ms");
  std::vector<std::string> a = row_of(old_header.size(), "a");
  a[a.size() - 3] = "conv";
  write_file(path, tut::csv_line(old_header) + "\n" + tut::csv_line(a) + "\n");
  tut::ResultRow r;
  r.part = "gcn";
  r.copy_gbps = 3000;
  const std::vector<std::string> fields = tut::to_fields(r);
  tut::append_csv_row(path, cols, fields, tut::legacy_result_values());
  const tut::CsvTable t = tut::read_csv(path);
  CHECK(t.header == cols);
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0] == concat(concat(a, {"", ""}), kNoStep));
  CHECK(t.rows[1] == fields);
  CHECK(t.rows[1][t.rows[1].size() - 2 - kStepColumns] == "3000.0");
  std::remove(path.c_str());
}

TEST_CASE("append migrates a file of Parts I-III (no config column): their rows get it empty") {
  const std::string path = unique_temp_path("migrate_config.csv");
  const auto& cols = tut::result_columns();
  const std::vector<std::string> old_header = old_columns(1 + kStepColumns);
  REQUIRE(old_header.back() == "copy_gbps");
  const std::vector<std::string> a = row_of(old_header.size(), "a");
  write_file(path, tut::csv_line(old_header) + "\n" + tut::csv_line(a) + "\n");
  tut::ResultRow r;
  r.config = "64x64 split 3";
  const std::vector<std::string> fields = tut::to_fields(r);
  tut::append_csv_row(path, cols, fields, tut::legacy_result_values());
  const tut::CsvTable t = tut::read_csv(path);
  CHECK(t.header == cols);
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0] == concat(concat(a, {""}), kNoStep));
  CHECK(t.rows[1][t.rows[1].size() - 1 - kStepColumns] == "64x64 split 3");
  std::remove(path.c_str());
}

TEST_CASE("append migrates a header-only file and a CRLF file") {
  const std::string path = unique_temp_path("migrate_empty.csv");
  const auto& cols = tut::result_columns();
  const std::vector<std::string> old_header = old_columns(5 + kStepColumns);
  const std::vector<std::string> fields = tut::to_fields(tut::ResultRow{});
  write_file(path, tut::csv_line(old_header) + "\n");
  tut::append_csv_row(path, cols, fields, tut::legacy_result_values());
  CHECK(slurp(path) == tut::csv_line(cols) + "\n" + tut::csv_line(fields) + "\n");

  const std::string crlf = unique_temp_path("migrate_crlf.csv");
  const std::vector<std::string> a = row_of(old_header.size(), "a");
  write_file(crlf, tut::csv_line(old_header) + "\r\n" + tut::csv_line(a) + "\r\n");
  tut::append_csv_row(crlf, cols, fields, tut::legacy_result_values());
  const tut::CsvTable t = tut::read_csv(crlf);
  CHECK(t.header == cols);
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0] == concat(concat(a, {"gemm", "", "", "", ""}), kNoStep));
  std::remove(path.c_str());
  std::remove(crlf.c_str());
}

TEST_CASE("append without legacy values extends old rows with empty fields") {
  const std::string path = unique_temp_path("migrate_plain.csv");
  write_file(path, "a,b\n1,2\n");
  tut::append_csv_row(path, {"a", "b", "c", "d"}, {"3", "4", "5", "6"});
  CHECK(slurp(path) == "a,b,c,d\n1,2,,\n3,4,5,6\n");
  std::remove(path.c_str());
}

TEST_CASE("append still refuses a header that is not a prefix, and leaves the file untouched") {
  const auto& cols = tut::result_columns();
  const std::vector<std::string> fields = tut::to_fields(tut::ResultRow{});
  std::vector<std::string> renamed = old_columns(3 + kStepColumns);
  renamed[11] = "gflop_s";
  std::vector<std::string> reordered = old_columns(3 + kStepColumns);
  std::swap(reordered[0], reordered[1]);
  const std::vector<std::string> longer = concat(cols, {"extra"});
  std::vector<std::string> not_at_start(cols.begin() + 1, cols.end());
  int i = 0;
  for (const auto& header : {renamed, reordered, longer, not_at_start, std::vector<std::string>{"gpu", "cuda", "x"}}) {
    CAPTURE(tut::csv_line(header));
    const std::string path = unique_temp_path(("refuse" + std::to_string(i++) + ".csv").c_str());
    const std::string before = tut::csv_line(header) + "\n" + tut::csv_line(row_of(header.size(), "a")) + "\n";
    write_file(path, before);
    CHECK_THROWS_AS(tut::append_csv_row(path, cols, fields, tut::legacy_result_values()), std::runtime_error);
    CHECK(slurp(path) == before);
    CHECK_FALSE(exists(path + ".migrating"));
    std::remove(path.c_str());
  }
}

TEST_CASE("a prefix-header file with a malformed row is not migrated, and left untouched") {
  const std::string path = unique_temp_path("migrate_bad.csv");
  const std::vector<std::string> old_header = old_columns(3 + kStepColumns);
  const std::string before = tut::csv_line(old_header) + "\n" + tut::csv_line(row_of(old_header.size(), "a")) +
                             "\nonly,three,fields\n";
  write_file(path, before);
  CHECK_THROWS_AS(tut::append_csv_row(path, tut::result_columns(), tut::to_fields(tut::ResultRow{}),
                                      tut::legacy_result_values()),
                  std::runtime_error);
  CHECK(slurp(path) == before);
  CHECK_FALSE(exists(path + ".migrating"));
  std::remove(path.c_str());
}
