// The GEMM adapter (design.md, "The harness"): the problem, its flags, seeded inputs, the cuBLAS
// and CPU references, poisoned output, verification, the benchmark and the self-test. Everything a
// family does the same way (flags, device, timing, table, CSV, exit codes) is in core/.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "tut/core/device_buffer.cuh"
#include "tut/core/harness.cuh"
#include "tut/core/npy.hpp"
#include "tut/core/random.hpp"
#include "tut/core/timing.cuh"
#include "tut/gemm/args.hpp"
#include "tut/gemm/cpu_reference.hpp"
#include "tut/gemm/harness.cuh"
#include "tut/gemm/verify.hpp"

namespace tut {

namespace {

// Host copies of one problem's inputs.
struct HostInputs {
  std::vector<float> A, B, C0;
};

HostInputs make_inputs(const GemmProblem& p, Inputs kind, std::uint64_t seed) {
  HostInputs h;
  h.A.resize(std::size_t(p.a_elems()));
  h.B.resize(std::size_t(p.b_elems()));
  h.C0.resize(std::size_t(p.c_elems()));
  fill(kind, h.A.data(), h.A.size(), derive_seed(seed, 0));
  fill(kind, h.B.data(), h.B.size(), derive_seed(seed, 1));
  fill(kind, h.C0.data(), h.C0.size(), derive_seed(seed, 2));
  return h;
}

// Device copies: A, B, the initial C (C0) and the output C.
struct DeviceInputs {
  DeviceBuffer<float> A, B, C0, C;
  explicit DeviceInputs(const HostInputs& h) : A(h.A.size()), B(h.B.size()), C0(h.C0.size()), C(h.C0.size()) {
    A.upload(h.A.data());
    B.upload(h.B.data());
    C0.upload(h.C0.data());
  }
  // Before a run: with beta == 0 the kernel must not read C, so C is poisoned with NaN and any
  // element the kernel fails to write stays NaN and fails verification. With beta != 0, C is an
  // input and gets its initial values back.
  void reset_output(const GemmProblem& p, cudaStream_t s) {
    if (p.beta == 0.0f) {
      C.fill_bytes(0xFF, s);
    } else {
      C.copy_from(C0, s);
    }
  }
};

// A, B, C0, C and (with_reference) the reference's C.
void require_memory(const GemmProblem& p, bool with_reference, const DeviceInfo& dev) {
  const std::size_t c = std::size_t(p.c_elems());
  const std::size_t elems = std::size_t(p.a_elems()) + std::size_t(p.b_elems()) + 2 * c + (with_reference ? c : 0);
  require_memory(elems * sizeof(float), dev, p.label(), "--m/--n/--k");
}

std::vector<float> run_step_once(GemmLauncher launch, const GemmProblem& p, DeviceInputs& d, cudaStream_t s) {
  d.reset_output(p, s);
  launch(p, d.A.data(), d.B.data(), d.C.data(), s);
  TUT_CUDA_CHECK(cudaStreamSynchronize(s));
  return d.C.download();
}

// ---------------------------------------------------------------------------------------------
// The benchmark: one problem, verified, timed against cuBLAS.

int run_benchmark(const GemmOptions& o, const GemmStep& step, const DeviceInfo& dev) {
  const GemmProblem p = GemmProblem::packed(o.m, o.n, o.k, o.alpha, o.beta);
  const bool is_baseline = (step.launch == &cublas_sgemm);
  check_output_paths(o);
  require_memory(p, o.verify, dev);

  std::printf("problem: C = alpha*A*B + beta*C, M=%d N=%d K=%d, alpha=%g beta=%g, row-major FP32\n", p.m, p.n, p.k,
              double(p.alpha), double(p.beta));
  std::printf("         %.4g GFLOP, at least %s moved (%.0f FLOP/byte)\n", p.flops() / 1e9,
              format_bytes(p.min_bytes()).c_str(), p.flops() / p.min_bytes());
  std::fflush(stdout);

  Stream stream;
  const HostInputs h = make_inputs(p, Inputs::Random, o.seed);
  DeviceInputs d(h);

  // Correctness first: the reference, then the step once on a poisoned output.
  std::vector<float> ref;
  if (o.verify) {
    DeviceBuffer<float> c_ref(d.C0.size());
    c_ref.copy_from(d.C0, stream.s);
    cublas_sgemm(p, d.A.data(), d.B.data(), c_ref.data(), stream.s);
    TUT_CUDA_CHECK(cudaStreamSynchronize(stream.s));
    ref = c_ref.download();
  }
  const std::vector<float> out = run_step_once(step.launch, p, d, stream.s);

  VerifyResult vr;
  if (o.verify) {
    vr = verify_gemm(p, h.A.data(), h.B.data(), h.C0.data(), out.data(), ref.data(), Match::Rounded);
    std::printf("check: against %s%s: %s\n", cublas_sgemm_name(), is_baseline ? " (itself: run-to-run check)" : "",
                vr.summary().c_str());
    std::fputs(vr.details().c_str(), stdout);
  } else {
    std::printf("check: skipped (--no-verify)\n");
  }
  if (!o.dump.empty()) {
    write_npy_f32(o.dump + "/A.npy", h.A.data(), p.m, p.k, p.lda);
    write_npy_f32(o.dump + "/B.npy", h.B.data(), p.k, p.n, p.ldb);
    write_npy_f32(o.dump + "/C_in.npy", h.C0.data(), p.m, p.n, p.ldc);
    write_npy_f32(o.dump + "/C_out.npy", out.data(), p.m, p.n, p.ldc);
    if (o.verify) write_npy_f32(o.dump + "/C_ref.npy", ref.data(), p.m, p.n, p.ldc);
    std::printf("dump: A.npy B.npy C_in.npy C_out.npy%s written to %s\n", o.verify ? " C_ref.npy" : "", o.dump.c_str());
  }
  std::fflush(stdout);

  // Timing: the step and cuBLAS, the same way, in the same process.
  L2Flusher flusher(dev.l2_bytes);
  const TimingPlan plan{o.warmup, o.iters};
  std::function<void(cudaStream_t)> restore;
  if (p.beta != 0.0f) restore = [&](cudaStream_t s) { d.C.copy_from(d.C0, s); };
  auto run_with = [&](GemmLauncher launch) {
    return summarize(time_runs([&](cudaStream_t s) { launch(p, d.A.data(), d.B.data(), d.C.data(), s); }, restore,
                               plan, flusher, stream.s));
  };
  const TimeStats ts = run_with(step.launch);
  const TimeStats tb = run_with(&cublas_sgemm);

  std::printf("timing: %d warm-up + %d timed runs each, CUDA events, L2 flushed before every timed run\n\n",
              o.warmup, o.iters);
  print_timing_table({{std::string(step.name) + " (" + step.title + ")", ts}, {cublas_sgemm_name(), tb}},
                     {{"% cuBLAS", tb.median}}, p.flops(), p.min_bytes(), dev.fp32_peak_gflops());

  const bool verified = !o.verify || vr.passed;
  ResultRow r = make_result_row(dev, {step.name, step.title}, o, "gemm", p.label(), p.m, p.n, p.k, ts, p.flops(),
                                p.min_bytes(), vr);
  r.baseline = cublas_sgemm_name();
  r.baseline_time_ms = tb.median;
  r.ratio_to_baseline = tb.median / ts.median;
  r.alpha = p.alpha;
  r.beta = p.beta;
  write_result_row(o, r);
  if (!verified) std::printf("RESULT: verification FAILED\n");
  return verified ? kOk : kVerifyFailed;
}

// ---------------------------------------------------------------------------------------------
// The self-test: awkward shapes, integer inputs (exact) and random inputs (tolerance).

struct Shape {
  int m, n, k;
};

// Non-multiples of every tile size used in Part I (8, 16, 32, 64, 128), single rows and columns,
// K = 1, tall and skinny, and the headline size with its odd neighbours.
const Shape kShapes[] = {
    {1, 1, 1},     {1, 1, 1000},   {7, 5, 3},        {127, 257, 63},    {255, 1, 511},     {129, 131, 9},
    {300, 200, 1}, {1, 4097, 17},  {2000, 3, 64},    {33, 65, 129},     {1000, 1000, 1000}, {4095, 4095, 4095},
    {4096, 4096, 4096}, {4097, 4093, 4099},
};
// Shapes up to this many multiply-adds are "small": --quick runs only these, and their reference
// is the CPU in float64 (larger ones use cuBLAS, itself checked against the CPU on the small ones).
constexpr double kSmallMacs = 8.0e6;

struct Variant {
  Inputs inputs;
  float alpha, beta;
  Match match;
  bool padded;  // leading dimensions rounded up to a multiple of 4, plus 4: aligned rows, partial edges
};
const Variant kVariants[] = {
    {Inputs::SmallInts, 2.0f, 0.0f, Match::Exact, false},     // beta = 0: C poisoned, must be fully written
    {Inputs::SmallInts, -1.0f, 3.0f, Match::Exact, false},    // beta != 0: C read and updated
    {Inputs::SmallInts, 1.0f, 1.0f, Match::Exact, true},      // lda, ldb, ldc > k, n, n: padding never written
    {Inputs::Random, 0.75f, -1.25f, Match::Rounded, false},   // real values: the tolerance of verify.hpp
};

GemmProblem make_problem(const Shape& s, const Variant& v) {
  GemmProblem p = GemmProblem::packed(s.m, s.n, s.k, v.alpha, v.beta);
  if (v.padded) {
    auto pad = [](int x) { return (x + 3) / 4 * 4 + 4; };
    p.lda = pad(s.k);
    p.ldb = pad(s.n);
    p.ldc = pad(s.n);
  }
  return p;
}

// Elements of C between column n and ldc that the run changed (a kernel must not write them).
std::size_t padding_writes(const GemmProblem& p, const std::vector<float>& before, const std::vector<float>& after) {
  std::size_t changed = 0;
  for (int i = 0; i < p.m; ++i) {
    for (int j = p.n; j < p.ldc; ++j) {
      const std::size_t idx = std::size_t(i) * p.ldc + j;
      if (std::memcmp(&before[idx], &after[idx], sizeof(float)) != 0) ++changed;
    }
  }
  return changed;
}

int run_self_test(const GemmOptions& o, const GemmStep& step, const DeviceInfo& dev) {
  const bool is_baseline = (step.launch == &cublas_sgemm);
  std::printf("self-test %s (%s): %s shapes x {integers: exact; random: tolerance}\n", step.name, step.title,
              o.quick ? "small" : "all");
  Stream stream;
  SelfTestTally tally;
  std::uint64_t case_seed = o.seed;
  for (const Shape& s : kShapes) {
    const double macs = double(s.m) * s.n * s.k;
    const bool small = macs <= kSmallMacs;
    if (o.quick && !small) continue;
    for (const Variant& v : kVariants) {
      const GemmProblem p = make_problem(s, v);
      char label[128];
      std::snprintf(label, sizeof label, "%-16s %-6s alpha=%-5g beta=%-5g %s", p.label().c_str(),
                    v.inputs == Inputs::Random ? "random" : "ints", double(v.alpha), double(v.beta),
                    v.padded ? "ld+pad" : "packed");
      ++case_seed;
      if (is_baseline && !small) {
        std::printf("SKIP  %s  (large shapes are checked against cuBLAS, which is this step)\n", label);
        ++tally.skipped;
        continue;
      }
      require_memory(p, true, dev);
      const HostInputs h = make_inputs(p, v.inputs, case_seed);
      DeviceInputs d(h);

      // The reference: CPU float64 for small shapes; cuBLAS (checked on the small ones) otherwise.
      std::vector<double> ref_cpu;
      std::vector<float> ref_gpu;
      std::string cublas_note;
      bool ok = true;
      if (small) {
        ref_cpu.resize(h.C0.size());
        gemm_cpu_f64(p, h.A.data(), h.B.data(), h.C0.data(), ref_cpu.data());
        const std::vector<float> cub = run_step_once(&cublas_sgemm, p, d, stream.s);
        const VerifyResult cv = verify_gemm(p, h.A.data(), h.B.data(), h.C0.data(), cub.data(), ref_cpu.data(), v.match);
        cublas_note = std::string("; cuBLAS vs CPU float64: ") + (cv.passed ? "ok" : "FAILED");
        if (!cv.passed) {
          ok = false;
          std::printf("      cuBLAS: %s\n%s", cv.summary().c_str(), cv.details().c_str());
        }
      } else {
        ref_gpu = run_step_once(&cublas_sgemm, p, d, stream.s);
      }

      const std::vector<float> out = run_step_once(step.launch, p, d, stream.s);
      const VerifyResult vr =
          small ? verify_gemm(p, h.A.data(), h.B.data(), h.C0.data(), out.data(), ref_cpu.data(), v.match)
                : verify_gemm(p, h.A.data(), h.B.data(), h.C0.data(), out.data(), ref_gpu.data(), v.match);
      const std::size_t pad_writes = padding_writes(p, h.C0, out);
      if (pad_writes > 0) std::printf("      %zu elements of C's padding (columns n .. ldc-1) were written\n", pad_writes);
      ok = ok && vr.passed && pad_writes == 0;
      tally.pass_or_fail(ok);
      char detail[200];
      if (v.match == Match::Exact) {
        std::snprintf(detail, sizeof detail, "exact vs %s: %zu of %zu differ", small ? "CPU" : "cuBLAS",
                      vr.mismatches, vr.checked);
      } else {
        std::snprintf(detail, sizeof detail, "rel_err %.2e (tol %.2e) vs %s", vr.rel_err, vr.tolerance,
                      small ? "CPU" : "cuBLAS");
      }
      std::printf("%s  %s  %s%s%s\n", ok ? "PASS" : "FAIL", label, detail, cublas_note.c_str(),
                  p.beta == 0.0f ? " (C poisoned)" : "");
      if (!vr.passed) std::printf("      %s\n%s", vr.summary().c_str(), vr.details().c_str());
      std::fflush(stdout);
    }
  }
  return tally.finish({step.name, step.title});
}

class GemmFamily : public Family {
 public:
  explicit GemmFamily(const GemmStep& step) : step_(step) {}
  CommonOptions parse(int argc, const char* const* argv) override {
    o_ = parse_gemm_args(argc, argv);
    return o_;
  }
  std::string usage(const std::string& program) const override { return gemm_usage(program); }
  int self_test(const DeviceInfo& dev) override { return run_self_test(o_, step_, dev); }
  int benchmark(const DeviceInfo& dev) override { return run_benchmark(o_, step_, dev); }

 private:
  GemmStep step_;
  GemmOptions o_;
};

}  // namespace

int gemm_main(int argc, char** argv, const GemmStep& step) {
  GemmFamily family(step);
  return harness_main(argc, argv, {step.name, step.title}, family);
}

}  // namespace tut
