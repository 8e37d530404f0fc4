// The family-agnostic harness (docs/architecture.md, the core): what every binary does the same way,
// whatever problem it solves. A family adapter (gemm/, conv/) implements `Family` and its
// `xxx_main` is one call of `harness_main`. The core never names a family's problem.
//
// harness_main: parse the flags (exit 2 on a bad one), --help, the GPU check (exit 3, or 77 under
// --self-test), --device-info, the banner and device report, then the family's self-test or
// benchmark, with ArgError -> 2 and any other error -> 4.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "tut/core/args.hpp"
#include "tut/core/check.cuh"
#include "tut/core/csv.hpp"
#include "tut/core/device.cuh"
#include "tut/core/device_buffer.cuh"
#include "tut/core/stats.hpp"
#include "tut/core/step.hpp"
#include "tut/core/timing.cuh"
#include "tut/core/verify.hpp"

namespace tut {

enum ExitCode { kOk = 0, kVerifyFailed = 1, kBadArgs = 2, kNoGpu = 3, kRuntimeError = 4, kSkipped = 77 };

class Family {
 public:
  virtual ~Family() = default;
  // Parses argv into the family's options (the shared ones included) and returns the shared ones.
  // Throws ArgError.
  virtual CommonOptions parse(int argc, const char* const* argv) = 0;
  virtual std::string usage(const std::string& program) const = 0;
  // A request the family answers without a GPU (a table listing, say): true when it printed the
  // answer and the run is over (exit 0).
  virtual bool answer_without_gpu() { return false; }
  // Reads what the flags name (a --graph file, say) before any GPU work and before the banner, so a
  // malformed input gets its one error line as a bad flag does. Throws ArgError (exit 2).
  virtual void prepare() {}
  virtual int self_test(const DeviceInfo& dev) = 0;
  virtual int benchmark(const DeviceInfo& dev) = 0;
};

int harness_main(int argc, char** argv, const StepInfo& step, Family& family);

// A step whose main.cu does not match its CMake declaration (a planner without the tag "planned", a
// fused epilogue without OP conv_bias_relu, a family's *_main called for another PART...): prints
// "error: NAME: WHY" and returns kRuntimeError. `why` empty: returns kOk and prints nothing.
int declaration_error(const StepInfo& step, const std::string& why);

// A CUDA stream that destroys itself.
struct Stream {
  cudaStream_t s = nullptr;
  Stream() { TUT_CUDA_CHECK(cudaStreamCreate(&s)); }
  ~Stream() { cudaStreamDestroy(s); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
};

// Vendor libraries allocate their own workspace on first use; leave room for it.
constexpr std::size_t kLibraryWorkspaceMargin = std::size_t(64) << 20;

// Throws ArgError (naming `flags`, the flags that set the problem) when `needed` bytes, plus the
// L2 flusher's buffer and kLibraryWorkspaceMargin, exceed the device's free memory.
void require_memory(std::size_t needed, const DeviceInfo& dev, const std::string& what, const std::string& flags);
// The output flags, checked before any work: --dump names an existing folder, --csv a file that
// can be appended to.
void check_output_paths(const CommonOptions& o);

// The step's scratch memory for p: what its `workspace_bytes` asks for, 0 when the step has none
// (null). A step may refuse p by throwing ArgError.
template <class Problem>
std::size_t step_workspace(std::size_t (*workspace_bytes)(const Problem&), const Problem& p) {
  return workspace_bytes ? workspace_bytes(p) : 0;
}

// Runs `launch` once on `stream`, waits for it and returns `out` as it then is. T is float or
// double (the two core/harness.cu instantiates).
template <class T>
std::vector<T> run_and_download(DeviceBuffer<T>& out, const std::function<void(cudaStream_t)>& launch,
                                cudaStream_t stream);
// The same with `out` poisoned first: every byte 0xFF, a NaN in every float and double, so an
// element the launch does not write stays NaN and fails verification.
template <class T>
std::vector<T> run_poisoned(DeviceBuffer<T>& out, const std::function<void(cudaStream_t)>& launch, cudaStream_t stream);

// The benchmark's check: "check: against AGAINST: <the result's summary>" and its first mismatches.
// `against` names the reference and says how the step is compared with it.
void print_check(const std::string& against, const VerifyResult& vr);
// "check: skipped (--no-verify)"
void print_check_skipped();

// The timing table: one row per step or baseline, with one "% <ref>" column per ratio (the
// reference's median over the row's), the rate against the FP32 FMA peak ("% peak") and GB/s from
// min_bytes. `name_width`: the first column's width. With copy_gbps > 0 (a bandwidth-bound family)
// the "% peak" column becomes "% copy": GB/s against the measured copy bandwidth.
struct TimedRow {
  std::string name;
  TimeStats t;
};
struct RatioColumn {
  std::string header;  // "% cuBLAS"
  double ref_ms;
};

// A library the step is timed against: its name (its row of the timing table, the CSV's baseline
// column) and one run of it on a stream.
struct Baseline {
  std::string name;
  std::function<void(cudaStream_t)> run;
};

// The timing of one benchmark, set up once, so that the step and every baseline are timed the same
// way in the same process: o's warm-up and timed runs, L2 flushed before every timed run
// (timing.cuh), on one stream. `before_each` (may be empty) runs before every run, outside the timed
// region (GEMM with beta != 0 gives C its initial values back).
class BenchTimer {
 public:
  BenchTimer(const CommonOptions& o, const DeviceInfo& dev, cudaStream_t stream,
             std::function<void(cudaStream_t)> before_each = nullptr);
  TimeStats time(const std::function<void(cudaStream_t)>& run);
  TimedRow time_baseline(const Baseline& b) { return {b.name, time(b.run)}; }
  // The device-to-device copy bandwidth (measure_copy_bandwidth), timed the same way.
  CopyBandwidth copy_bandwidth(std::size_t bytes);

 private:
  TimingPlan plan_;
  L2Flusher flusher_;
  cudaStream_t stream_;
  std::function<void(cudaStream_t)> before_each_;
};

// "timing: 5 warm-up + 20 timed runs each, CUDA events, L2 flushed before every timed run", saying
// for a TF32 step that its % of peak is of the tensor cores' peak; then a blank line.
void print_timing_plan(const CommonOptions& o, Math math = Math::Fp32);

// A TF32 step's second look, printed under its check against true FP32: its difference from the
// library's own TF32 result (step_vs_lib; `lib_is_step`: the step is that library, a run-to-run
// check), and that result's own error against the FP32 reference (lib_vs_ref). Both TF32 results
// carry their own roundings, each within half the tolerance of the exact one; the FP32 check decides.
void print_tf32_comparison(const std::string& lib_name, const std::string& ref_name, const VerifyResult& step_vs_lib,
                           const VerifyResult& lib_vs_ref, bool lib_is_step = false);

void print_timing_table(const std::vector<TimedRow>& rows, const std::vector<RatioColumn>& ratios, double flops,
                        double min_bytes, double peak_gflops, int name_width = 32, double copy_gbps = 0);

// A CSV row with everything but the baselines filled in: device, the step (name, title, part, math,
// op, tags), problem, the step's times and rates, the verification result (`vr` is ignored when
// o.verify is false), iterations. The peak (and % of peak) is that of the step's math: the FP32 FMA
// units, the TF32 tensor cores or the FP64 units.
ResultRow make_result_row(const DeviceInfo& dev, const StepInfo& step, const CommonOptions& o,
                          const std::string& problem, int m, int n, int k, const TimeStats& ts, double flops,
                          double min_bytes, const VerifyResult& vr);
// Appends it to o.csv (nothing when o.csv is empty) and says so.
void write_result_row(const CommonOptions& o, const ResultRow& r);
// The baseline columns of r from the baselines as timed: baselines[0] is the headline (baseline,
// baseline_time_ms, ratio_to_baseline: its median over the step's), baselines[1], if any, the
// second (alt_baseline, alt_baseline_time_ms).
void set_baselines(ResultRow& r, const std::vector<TimedRow>& baselines);
// The end of a benchmark: r's baseline columns (set_baselines), r appended to o.csv
// (write_result_row), then "RESULT: verification FAILED" when the check failed. Returns the exit
// code: kOk, or kVerifyFailed when the check failed (`vr` is ignored when o.verify is false).
int finish_benchmark(const CommonOptions& o, ResultRow r, const std::vector<TimedRow>& baselines,
                     const VerifyResult& vr);

// The self-test's tally, its cases' lines and its closing line: "self-test NAME: X of Y checks
// passed[, Z skipped]".
struct SelfTestTally {
  int checks = 0, failures = 0, skipped = 0;
  // A case not run: "SKIP  WHAT  (WHY)".
  void skip(const std::string& what, const std::string& why);
  // A case run: counted, and its line "PASS  WHAT  <how the step's result compared>NOTES" (FAIL
  // when !ok: the step's check or another of the case's failed), then, when the step's check
  // failed, its summary and first mismatches. `against` names the reference ("CPU", "cuBLAS");
  // `notes` what else the case checked, each with its separator ("; cuBLAS vs CPU: ok").
  void report(bool ok, const std::string& what, const VerifyResult& vr, const std::string& against,
              const std::string& notes);
  int finish(const StepInfo& step) const;  // prints the closing line; returns the exit code
};

}  // namespace tut
