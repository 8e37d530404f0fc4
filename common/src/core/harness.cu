// The family-agnostic harness (core/harness.cuh).
#include "tut/core/harness.cuh"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <utility>

#include "tut/core/timing.cuh"

namespace tut {

namespace {

bool is_dir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

int harness_main(int argc, char** argv, const StepInfo& step, Family& family) {
  CommonOptions o;
  try {
    o = family.parse(argc, argv);
  } catch (const ArgError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kBadArgs;
  }
  if (o.help) {
    std::fputs(family.usage(argc > 0 ? argv[0] : step.name).c_str(), stdout);
    return kOk;
  }
  if (family.answer_without_gpu()) return kOk;
  try {
    family.prepare();
  } catch (const ArgError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kBadArgs;
  }

  std::string why;
  const int count = cuda_device_count(&why);
  if (count == 0) {
    if (o.self_test) {
      std::printf("SKIP: no CUDA GPU available (%s)\n", why.c_str());
      return kSkipped;
    }
    std::fprintf(stderr, "error: no CUDA GPU available: %s\n", why.c_str());
    return kNoGpu;
  }
  try {
    check_device_id(o.device, count);
    const DeviceInfo dev = open_device(o.device);
    if (o.device_info) {
      print_device_facts(std::cout, dev);
      return kOk;
    }
    if (step.only_cc != 0 && dev.cc_major * 10 + dev.cc_minor != step.only_cc) {
      const std::string why = std::string(step.name) + " runs only on compute capability " +
                              std::to_string(step.only_cc / 10) + "." + std::to_string(step.only_cc % 10) +
                              " (built for sm_" + std::to_string(step.only_cc) + "a); " + dev.name + " is " +
                              std::to_string(dev.cc_major) + "." + std::to_string(dev.cc_minor);
      if (o.self_test) {
        std::printf("SKIP: %s\n", why.c_str());
        return kSkipped;
      }
      std::fprintf(stderr, "error: %s\n", why.c_str());
      return kNoGpu;
    }
    std::printf("== %s: %s ==\n", step.name, step.title);
    print_device(std::cout, dev);
    std::cout.flush();
    return o.self_test ? family.self_test(dev) : family.benchmark(dev);
  } catch (const ArgError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return kBadArgs;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return kRuntimeError;
  }
}

int declaration_error(const StepInfo& step, const std::string& why) {
  if (why.empty()) return kOk;
  std::fprintf(stderr, "error: %s: %s (its tut_add_chapter line in CMake and its main.cu disagree)\n", step.name,
               why.c_str());
  return kRuntimeError;
}


void require_memory(std::size_t needed, const DeviceInfo& dev, const std::string& what, const std::string& flags) {
  std::size_t free_b = 0, total_b = 0;
  TUT_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  check_fits_in_memory(needed + l2_flusher_bytes(dev.l2_bytes) + kLibraryWorkspaceMargin, free_b, what, flags);
}

void check_output_paths(const CommonOptions& o) {
  if (!o.dump.empty() && !is_dir(o.dump)) {
    throw ArgError("--dump: '" + o.dump + "' is not an existing folder (valid: a folder to write .npy files into)");
  }
  if (!o.csv.empty() && !std::ofstream(o.csv, std::ios::app)) {
    throw ArgError("--csv: cannot open '" + o.csv + "' for appending (valid: a writable file path)");
  }
}

template <class T>
std::vector<T> run_and_download(DeviceBuffer<T>& out, const std::function<void(cudaStream_t)>& launch,
                                cudaStream_t stream) {
  launch(stream);
  TUT_CUDA_CHECK(cudaStreamSynchronize(stream));
  return out.download();
}

template <class T>
std::vector<T> run_poisoned(DeviceBuffer<T>& out, const std::function<void(cudaStream_t)>& launch, cudaStream_t stream) {
  out.fill_bytes(0xFF, stream);
  return run_and_download(out, launch, stream);
}

template std::vector<float> run_and_download(DeviceBuffer<float>&, const std::function<void(cudaStream_t)>&,
                                             cudaStream_t);
template std::vector<double> run_and_download(DeviceBuffer<double>&, const std::function<void(cudaStream_t)>&,
                                              cudaStream_t);
template std::vector<float> run_poisoned(DeviceBuffer<float>&, const std::function<void(cudaStream_t)>&, cudaStream_t);
template std::vector<double> run_poisoned(DeviceBuffer<double>&, const std::function<void(cudaStream_t)>&, cudaStream_t);

void print_check(const std::string& against, const VerifyResult& vr) {
  std::printf("check: against %s: %s\n", against.c_str(), vr.summary().c_str());
  std::fputs(vr.details().c_str(), stdout);
}

void print_check_skipped() { std::printf("check: skipped (--no-verify)\n"); }

BenchTimer::BenchTimer(const CommonOptions& o, const DeviceInfo& dev, cudaStream_t stream,
                       std::function<void(cudaStream_t)> before_each)
    : plan_{o.warmup, o.iters}, flusher_(dev.l2_bytes), stream_(stream), before_each_(std::move(before_each)) {}

TimeStats BenchTimer::time(const std::function<void(cudaStream_t)>& run) {
  return summarize(time_runs(run, before_each_, plan_, flusher_, stream_));
}

CopyBandwidth BenchTimer::copy_bandwidth(std::size_t bytes) {
  return measure_copy_bandwidth(bytes, plan_, flusher_, stream_);
}

void print_timing_plan(const CommonOptions& o, Math math) {
  std::printf("timing: %d warm-up + %d timed runs each, CUDA events, L2 flushed before every timed run%s\n\n",
              o.warmup, o.iters, math == Math::Tf32 ? "; % peak: of the TF32 tensor-core peak (device line)" : "");
}

void print_tf32_comparison(const std::string& lib_name, const std::string& ref_name, const VerifyResult& step_vs_lib,
                           const VerifyResult& lib_vs_ref, bool lib_is_step) {
  std::printf("       against %s%s: rel_err %.3g, max |err| %.3g (%zu elements over the TF32 bound)\n", lib_name.c_str(),
              lib_is_step ? " (itself: run-to-run check)" : "", step_vs_lib.rel_err, step_vs_lib.max_abs_err,
              step_vs_lib.mismatches);
  std::printf("       %s itself against %s: rel_err %.3g, max |err| %.3g\n", lib_name.c_str(), ref_name.c_str(),
              lib_vs_ref.rel_err, lib_vs_ref.max_abs_err);
}

void print_timing_table(const std::vector<TimedRow>& rows, const std::vector<RatioColumn>& ratios, double flops,
                        double min_bytes, double peak_gflops, int name_width, double copy_gbps) {
  auto gflops = [&](double ms) { return flops / (ms * 1e-3) / 1e9; };
  std::printf("%-*s %28s %9s", name_width, "step", "time ms: median [min, max]", "TFLOP/s");
  for (const RatioColumn& c : ratios) std::printf(" %9s", c.header.c_str());
  std::printf(" %8s %9s\n", copy_gbps > 0 ? "% copy" : "% peak", "GB/s");
  for (const TimedRow& r : rows) {
    char range[64];
    std::snprintf(range, sizeof range, "%.4g [%.4g, %.4g]", r.t.median, r.t.min, r.t.max);
    std::printf("%-*s %28s %9.2f", name_width, r.name.c_str(), range, gflops(r.t.median) / 1e3);
    for (const RatioColumn& c : ratios) std::printf(" %8.1f%%", 100.0 * c.ref_ms / r.t.median);
    const double gbps = min_bytes / (r.t.median * 1e-3) / 1e9;
    const double pct = copy_gbps > 0 ? 100.0 * gbps / copy_gbps
                                     : (peak_gflops > 0 ? 100.0 * gflops(r.t.median) / peak_gflops : 0.0);
    std::printf(" %7.1f%% %9.1f\n", pct, gbps);
  }
  std::printf("\n");
}

ResultRow make_result_row(const DeviceInfo& dev, const StepInfo& step, const CommonOptions& o,
                          const std::string& problem, int m, int n, int k, const TimeStats& ts, double flops,
                          double min_bytes, const VerifyResult& vr) {
  const double peak = dev.peak_gflops(step.math);
  ResultRow r;
  r.gpu = dev.name;
  r.cuda = dev.cuda_version();
  r.chapter = step.name;
  r.step = step.title;
  r.problem = problem;
  r.m = m;
  r.n = n;
  r.k = k;
  r.time_ms_median = ts.median;
  r.time_ms_min = ts.min;
  r.time_ms_max = ts.max;
  r.gflops = flops / (ts.median * 1e-3) / 1e9;
  r.gbps = min_bytes / (ts.median * 1e-3) / 1e9;
  r.pct_of_peak = peak > 0 ? 100.0 * r.gflops / peak : 0.0;
  r.rel_err = o.verify ? vr.rel_err : -1.0;
  r.verified = !o.verify ? "skipped" : (vr.passed ? "yes" : "no");
  r.timestamp = utc_timestamp();
  r.iters = o.iters;
  r.clock_mhz = dev.clock_mhz;
  r.peak_gflops = peak;
  r.peak_gbps = dev.dram_peak_gbps();
  r.part = step.part;
  r.math = math_key(step.math);
  r.op = step.op;
  r.tags = step.tags;
  r.run = o.run;
  return r;
}

void write_result_row(const CommonOptions& o, const ResultRow& r) {
  if (o.csv.empty()) return;
  append_csv_row(o.csv, result_columns(), to_fields(r), legacy_result_values());
  std::printf("csv: row appended to %s\n", o.csv.c_str());
}

void set_baselines(ResultRow& r, const std::vector<TimedRow>& baselines) {
  if (baselines.empty()) return;
  r.baseline = baselines[0].name;
  r.baseline_time_ms = baselines[0].t.median;
  r.ratio_to_baseline = baselines[0].t.median / r.time_ms_median;
  if (baselines.size() > 1) {
    r.alt_baseline = baselines[1].name;
    r.alt_baseline_time_ms = baselines[1].t.median;
  }
}

int finish_benchmark(const CommonOptions& o, ResultRow r, const std::vector<TimedRow>& baselines,
                     const VerifyResult& vr) {
  set_baselines(r, baselines);
  write_result_row(o, r);
  const bool verified = !o.verify || vr.passed;
  if (!verified) std::printf("RESULT: verification FAILED\n");
  return verified ? kOk : kVerifyFailed;
}

void SelfTestTally::skip(const std::string& what, const std::string& why) {
  std::printf("SKIP  %s  (%s)\n", what.c_str(), why.c_str());
  ++skipped;
}

void SelfTestTally::report(bool ok, const std::string& what, const VerifyResult& vr, const std::string& against,
                           const std::string& notes) {
  ++checks;
  if (!ok) ++failures;
  char detail[200];
  if (vr.match == Match::Exact) {
    std::snprintf(detail, sizeof detail, "exact vs %s: %zu of %zu differ", against.c_str(), vr.mismatches, vr.checked);
  } else {
    std::snprintf(detail, sizeof detail, "rel_err %.2e (tol %.2e) vs %s", vr.rel_err,
                  vr.norm_tolerance > 0 ? vr.norm_tolerance : vr.tolerance, against.c_str());
  }
  std::printf("%s  %s  %s%s\n", ok ? "PASS" : "FAIL", what.c_str(), detail, notes.c_str());
  if (!vr.passed) std::printf("      %s\n%s", vr.summary().c_str(), vr.details().c_str());
  std::fflush(stdout);
}

int SelfTestTally::finish(const StepInfo& step) const {
  std::printf("self-test %s: %d of %d checks passed%s%s\n", step.name, checks - failures, checks, skipped ? ", " : "",
              skipped ? (std::to_string(skipped) + " skipped").c_str() : "");
  return failures == 0 ? kOk : kVerifyFailed;
}

}  // namespace tut
