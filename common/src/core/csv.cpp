#include "tut/core/csv.hpp"

#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tut {

namespace {

std::string num(double v, const char* fmt = "%.6g") {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

const std::vector<std::string>& result_columns() {
  static const std::vector<std::string> cols = {
      "gpu", "cuda", "chapter", "step", "problem", "m", "n", "k", "time_ms_median", "time_ms_min",
      "time_ms_max", "gflops", "gbps", "baseline", "baseline_time_ms", "ratio_to_baseline", "pct_of_peak",
      "rel_err", "verified", "timestamp", "alpha", "beta", "iters", "clock_mhz", "peak_gflops", "peak_gbps", "part", "alt_baseline",
      "alt_baseline_time_ms", "copy_gbps", "config", "math", "op", "tags", "run"};
  return cols;
}

std::vector<std::string> to_fields(const ResultRow& r) {
  return {r.gpu, r.cuda, r.chapter, r.step, r.problem, std::to_string(r.m), std::to_string(r.n),
          std::to_string(r.k), num(r.time_ms_median), num(r.time_ms_min), num(r.time_ms_max),
          num(r.gflops, "%.1f"), num(r.gbps, "%.1f"), r.baseline, num(r.baseline_time_ms),
          num(r.ratio_to_baseline, "%.4f"), num(r.pct_of_peak, "%.2f"),
          r.rel_err < 0 ? std::string() : num(r.rel_err, "%.3e"), r.verified, r.timestamp, num(r.alpha),
          num(r.beta), std::to_string(r.iters), num(r.clock_mhz, "%.0f"), num(r.peak_gflops, "%.1f"),
          num(r.peak_gbps, "%.1f"), r.part, r.alt_baseline,
          r.alt_baseline.empty() ? std::string() : num(r.alt_baseline_time_ms),
          r.copy_gbps > 0 ? num(r.copy_gbps, "%.1f") : std::string(), r.config, r.math, r.op, r.tags, r.run};
}

std::string csv_escape(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string line;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) line += ',';
    line += csv_escape(fields[i]);
  }
  return line;
}

CsvTable parse_csv(const std::string& text, const std::string& origin) {
  CsvTable t;
  std::vector<std::vector<std::string>> records;
  std::vector<int> record_line;
  std::vector<std::string> rec;
  std::string field;
  bool in_quotes = false, field_started = false;
  int line = 1, rec_line = 1;
  auto end_field = [&] {
    rec.push_back(field);
    field.clear();
    field_started = false;
  };
  auto end_record = [&] {
    end_field();
    if (!(rec.size() == 1 && rec[0].empty())) {  // skip blank lines
      records.push_back(rec);
      record_line.push_back(rec_line);
    }
    rec.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"' && !field_started && field.empty()) {
      in_quotes = true;
      field_started = true;
    } else if (c == ',') {
      end_field();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_record();
      ++line;
      rec_line = line;
    } else {
      field += c;
      field_started = true;
    }
  }
  if (in_quotes) throw std::runtime_error(origin + ":" + std::to_string(rec_line) + ": unterminated quoted field");
  if (!field.empty() || !rec.empty()) end_record();
  if (records.empty()) throw std::runtime_error(origin + ": empty CSV (no header)");
  t.header = records[0];
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (records[r].size() != t.header.size()) {
      throw std::runtime_error(origin + ":" + std::to_string(record_line[r]) + ": " +
                               std::to_string(records[r].size()) + " fields, the header has " +
                               std::to_string(t.header.size()));
    }
    t.rows.push_back(records[r]);
  }
  return t;
}

CsvTable read_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open for reading");
  std::ostringstream s;
  s << in.rdbuf();
  return parse_csv(s.str(), path);
}

const std::vector<std::pair<std::string, std::string>>& legacy_result_values() {
  static const std::vector<std::pair<std::string, std::string>> v = {{"part", "gemm"}};
  return v;
}

namespace {

// Rewrites `path` (whose header is `old_header`, the first columns of `header`) with `header`, old
// rows extended by `legacy`. Written to a temporary file first and renamed, so a failure leaves the
// old file as it was.
void migrate_csv(const std::string& path, const std::vector<std::string>& header,
                 const std::vector<std::pair<std::string, std::string>>& legacy) {
  const CsvTable old = read_csv(path);
  std::vector<std::string> extra;
  for (std::size_t c = old.header.size(); c < header.size(); ++c) {
    std::string v;
    for (const auto& kv : legacy) {
      if (kv.first == header[c]) v = kv.second;
    }
    extra.push_back(v);
  }
  const std::string tmp = path + ".migrating";
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    if (!out) throw std::runtime_error(tmp + ": cannot open for writing (migrating " + path + ")");
    out << csv_line(header) << '\n';
    for (auto row : old.rows) {
      row.insert(row.end(), extra.begin(), extra.end());
      out << csv_line(row) << '\n';
    }
    if (!out) throw std::runtime_error(tmp + ": write failed (migrating " + path + ")");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": could not replace it with its migrated copy");
  }
  std::fprintf(stderr, "csv: %s migrated to the current header (%zu rows, %zu column(s) added)\n", path.c_str(),
               old.rows.size(), extra.size());
}

bool is_prefix(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() >= b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

void append_csv_row(const std::string& path, const std::vector<std::string>& header,
                    const std::vector<std::string>& fields,
                    const std::vector<std::pair<std::string, std::string>>& legacy) {
  if (fields.size() != header.size()) {
    throw std::runtime_error("internal error: CSV row has " + std::to_string(fields.size()) +
                             " fields, header " + std::to_string(header.size()));
  }
  bool need_header = true;
  bool migrate = false;
  {
    std::ifstream in(path, std::ios::binary);
    std::string first;
    if (in && std::getline(in, first)) {
      if (!first.empty() && first.back() == '\r') first.pop_back();
      if (!first.empty()) {
        if (first != csv_line(header)) {
          const CsvTable head = parse_csv(first + "\n", path);
          if (!is_prefix(head.header, header)) {
            throw std::runtime_error(path + ": existing file has a different header (expected '" + csv_line(header) +
                                     "'); write to a new file");
          }
          migrate = true;
        }
        need_header = false;
      }
    }
  }
  if (migrate) migrate_csv(path, header, legacy);
  std::ofstream out(path, std::ios::app | std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot open for appending");
  if (need_header) out << csv_line(header) << '\n';
  out << csv_line(fields) << '\n';
  if (!out) throw std::runtime_error(path + ": write failed");
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace tut
