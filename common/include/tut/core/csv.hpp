// The results CSV: one row per step x problem, the schema of docs/measuring.md. The plots read it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tut {

struct ResultRow {
  std::string gpu, cuda, chapter, step, problem;
  int m = 0, n = 0, k = 0;             // the problem's three sizes, in its family's words: GEMM's M, N, K;
                                       // conv's implicit GEMM (K, N*P*Q, C*R*S); GCN's V, F_out, F_in
  double time_ms_median = 0, time_ms_min = 0, time_ms_max = 0;
  double gflops = 0, gbps = 0;
  std::string baseline;
  double baseline_time_ms = 0, ratio_to_baseline = 0, pct_of_peak = 0;
  double rel_err = -1;                 // < 0: not verified (--no-verify)
  std::string verified;                // "yes", "no" or "skipped"
  std::string timestamp;               // ISO 8601, UTC
  double alpha = 1, beta = 0;          // GEMM's scalars; every other family's rows keep 1 and 0
  int iters = 0;
  double clock_mhz = 0;                // the SM clock the peak was computed from
  double peak_gflops = 0;              // FP32 FMA peak (device_facts.hpp), 0 when unknown
  double peak_gbps = 0;                // theoretical DRAM bandwidth
  std::string part;                    // the family: "gemm", "conv", ...
  std::string alt_baseline;            // a second baseline timed in the same process (empty: none)
  double alt_baseline_time_ms = 0;     // its median; written empty when alt_baseline is empty
  double copy_gbps = 0;                // the device-to-device copy bandwidth measured in the same
                                       // process (bytes read + written per second); 0: not measured,
                                       // written empty (families that are not bandwidth-bound)
  std::string config;                  // the plan a step chose for this problem, when it chooses one
                                       // (chapter 10: "128x64 split 4"); empty otherwise
  // What the step is, as its CMake line declares it (core/step.hpp): the arithmetic ("fp32", "tf32",
  // "fp64"), what it computes ("gemm", "conv_bias_relu", "spmm", ...) and its tags ("suite planned").
  // The plots classify rows by these, never by a chapter's number.
  std::string math, op, tags;
  // The run the process belonged to (--run; empty when none was given): plots/bench.py gives every
  // process it starts the same id, so the plots can tell the processes of one run apart from older
  // ones, a step run several times included (docs/measuring.md: the library's best of N processes).
  std::string run;
};

// The header, in order.
const std::vector<std::string>& result_columns();
std::vector<std::string> to_fields(const ResultRow& r);

// RFC 4180 quoting: fields with a comma, quote or newline are quoted, quotes doubled.
std::string csv_escape(const std::string& field);
std::string csv_line(const std::vector<std::string>& fields);

// Appends one row. A new or empty file gets the header first; an existing file must start with
// the same header, or std::runtime_error says what differs (never a silently mixed file). One
// exception: a file whose header is the first columns of `header` (written before columns were
// added at the end) is migrated first: rewritten whole with the new header, each old row extended
// by `legacy` (column name -> value; empty for columns it does not name). The migration is said on
// stderr.
void append_csv_row(const std::string& path, const std::vector<std::string>& header,
                    const std::vector<std::string>& fields,
                    const std::vector<std::pair<std::string, std::string>>& legacy = {});

// What result rows written before the `part` column was added were: Part I's, the only family then.
// Rows written before the math, op and tags columns get them empty: a row does not say which step
// of which build wrote it, so only the build's step list can fill them (plots/bench.py does, before
// it runs anything; the plots refuse a row without them and say how).
const std::vector<std::pair<std::string, std::string>>& legacy_result_values();

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// Parses a whole CSV file (quoted fields allowed). Throws std::runtime_error with the path and
// line number on an unterminated quote or a row whose field count differs from the header's.
CsvTable read_csv(const std::string& path);
CsvTable parse_csv(const std::string& text, const std::string& origin = "<text>");

// The current time as "2026-11-22T07:30:00Z".
std::string utc_timestamp();

}  // namespace tut
