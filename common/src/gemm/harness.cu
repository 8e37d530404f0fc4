// The GEMM adapter (docs/architecture.md): the problem, its flags, seeded inputs, the cuBLAS
// and CPU references, poisoned output, verification, the benchmark and the self-test. Everything a
// family does the same way (flags, device, timing, table, CSV, exit codes) is in core/.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
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
};

// A, B, C0, C, (with_reference) the reference's C and a step's workspace.
void require_memory(const GemmProblem& p, bool with_reference, const DeviceInfo& dev, std::size_t workspace = 0) {
  const std::size_t c = std::size_t(p.c_elems());
  const std::size_t elems = std::size_t(p.a_elems()) + std::size_t(p.b_elems()) + 2 * c + (with_reference ? c : 0);
  require_memory(elems * sizeof(float) + workspace, dev, p.label(), "--m/--n/--k");
}

// One way of running a problem: a plain launcher, or a planner with its choice (resolved: both
// fields set) and the zeroed workspace that choice needs, held for as long as the runner lives.
class Runner {
 public:
  explicit Runner(GemmLauncher launch) : launch_(launch) {}
  Runner(const GemmPlanner& planner, const GemmProblem& p, GemmChoice c, cudaStream_t s)
      : planner_(&planner), choice_(c), workspace_(planner.workspace_bytes(p, c)) {
    if (workspace_.size() > 0) {
      workspace_.fill_bytes(0, s);
      TUT_CUDA_CHECK(cudaStreamSynchronize(s));
    }
  }
  void operator()(const GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t s) {
    if (planner_) {
      planner_->launch(p, choice_, A, B, C, workspace_.data(), s);
    } else {
      launch_(p, A, B, C, s);
    }
  }

 private:
  GemmLauncher launch_ = nullptr;
  const GemmPlanner* planner_ = nullptr;
  GemmChoice choice_;
  DeviceBuffer<unsigned char> workspace_;
};

// One run of `run` on the problem's device inputs, as the core's checks and timing take it.
std::function<void(cudaStream_t)> launch_on(Runner& run, const GemmProblem& p, DeviceInputs& d) {
  return [&run, &p, &d](cudaStream_t s) { run(p, d.A.data(), d.B.data(), d.C.data(), s); };
}

// One checked run. With beta == 0 the kernel must not read C, so C is poisoned with NaN and any
// element the kernel fails to write stays NaN and fails verification. With beta != 0, C is an
// input and gets its initial values back first.
std::vector<float> run_step_once(Runner& run, const GemmProblem& p, DeviceInputs& d, cudaStream_t s) {
  if (p.beta == 0.0f) return run_poisoned(d.C, launch_on(run, p, d), s);
  d.C.copy_from(d.C0, s);
  return run_and_download(d.C, launch_on(run, p, d), s);
}

std::vector<float> run_step_once(GemmLauncher launch, const GemmProblem& p, DeviceInputs& d, cudaStream_t s) {
  Runner run(launch);
  return run_step_once(run, p, d, s);
}

// cuBLAS in `math` (Tf32: CUBLAS_COMPUTE_32F_FAST_TF32; otherwise true FP32): the library a step
// of that math is timed against.
GemmLauncher cublas_in(Math math) { return math == Math::Tf32 ? &cublas_tf32_gemm : &cublas_sgemm; }
Baseline cublas_baseline(Math math, const GemmProblem& p, DeviceInputs& d) {
  const GemmLauncher launch = cublas_in(math);
  return {math == Math::Tf32 ? cublas_tf32_name() : cublas_sgemm_name(),
          [launch, &p, &d](cudaStream_t s) { launch(p, d.A.data(), d.B.data(), d.C.data(), s); }};
}

// ---------------------------------------------------------------------------------------------
// A planning step's choices.

// --tile NAME -> its index; ArgError naming the valid ones.
int tile_index(const GemmPlanner& planner, const std::string& name) {
  const std::vector<std::string> names = planner.tile_names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return int(i);
  }
  std::string valid = "auto";
  for (const std::string& n : names) valid += ", " + n;
  throw ArgError("--tile: '" + name + "' is not a tile shape of this step (valid: " + valid + ")");
}

// What --tile / --split force (unset fields: the rule decides).
GemmChoice forced_choice(const GemmOptions& o, const GemmPlanner& planner) {
  GemmChoice c;
  if (!o.tile.empty()) c.tile = tile_index(planner, o.tile);
  c.splits = o.splits;
  return c;
}

// ArgError when --split asks for more splits than p has K steps (or the step's cap).
void check_splits(const GemmPlanner& planner, const GemmProblem& p, int splits) {
  const int most = planner.max_splits(p);
  if (splits > most) {
    throw ArgError("--split: " + std::to_string(splits) + " splits for K = " + std::to_string(p.k) +
                   " (valid: 1 to " + std::to_string(most) + " for this problem, or auto)");
  }
}

// "plan: 128x128 split 4 (rule): 256 blocks, 264 per wave (132 SMs x 2); 0.97 waves, the last 97%
// full; 16 K steps per block; model 41.2 us"
std::string plan_line(const GemmPlanner& planner, const GemmProblem& p, GemmChoice c, GemmChoice forced) {
  const GemmWaves w = planner.waves(p, c);
  const char* how = forced.tile >= 0 && forced.splits >= 1 ? "forced"
                    : forced.tile >= 0                     ? "tile forced, split by the rule"
                    : forced.splits >= 1                   ? "split forced, tile by the rule"
                                                           : "the rule's choice";
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "plan: %s (%s): %lld tiles x %d = %lld blocks, %lld per wave (%d SMs x %d); %.2f waves, the "
                "last %.0f%% full; %lld K steps per block; model %.1f us",
                choice_label(planner, c).c_str(), how, w.tiles, c.splits, w.blocks, w.per_wave(), w.sms,
                w.blocks_per_sm, w.waves(), 100.0 * w.last_wave_fill(), w.k_steps, w.model_us);
  return w.note.empty() ? std::string(buf) : buf + ("; " + w.note);
}

// The choices --explain times: every tile shape with 1, 2, 3, 4, 6, 8, ... splits (about 1.5x
// apart, up to the problem's most) and the rule's split for that shape.
std::vector<GemmChoice> explain_candidates(const GemmPlanner& planner, const GemmProblem& p) {
  const int most = planner.max_splits(p);
  std::vector<GemmChoice> out;
  const int tiles = int(planner.tile_names().size());
  for (int t = 0; t < tiles; ++t) {
    std::vector<int> splits;
    for (int s : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}) {
      if (s <= most) splits.push_back(s);
    }
    splits.push_back(planner.choose(p, GemmChoice{t, 0}).splits);
    std::sort(splits.begin(), splits.end());
    splits.erase(std::unique(splits.begin(), splits.end()), splits.end());
    for (int s : splits) out.push_back(GemmChoice{t, s});
  }
  return out;
}

// The choices the self-test runs for p: the rule's; every tile shape with the rule's split for it,
// 1, 2, 3 and the most p allows. Under --tile / --split only the forced choice.
std::vector<GemmChoice> test_choices(const GemmPlanner& planner, const GemmProblem& p, GemmChoice forced) {
  std::vector<GemmChoice> out;
  auto add = [&out](GemmChoice c) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  if (forced.tile >= 0 || forced.splits >= 1) {
    add(planner.choose(p, forced));
    return out;
  }
  add(planner.choose(p, GemmChoice{}));
  const int most = planner.max_splits(p);
  const int tiles = int(planner.tile_names().size());
  for (int t = 0; t < tiles; ++t) {
    add(planner.choose(p, GemmChoice{t, 0}));
    for (int s : {1, 2, 3, most}) {
      if (s <= most) add(GemmChoice{t, s});
    }
  }
  return out;
}

// The core's result row of a run of p, with GEMM's alpha and beta.
ResultRow gemm_row(const DeviceInfo& dev, const GemmStep& step, const GemmOptions& o, const GemmProblem& p,
                   const TimeStats& t, const VerifyResult& vr) {
  ResultRow r = make_result_row(dev, step.info, o, p.label(), p.m, p.n, p.k, t, p.flops(), p.min_bytes(), vr);
  r.alpha = p.alpha;
  r.beta = p.beta;
  return r;
}

// --explain: every candidate choice, its wave arithmetic, the rule's model and the measured time,
// each run verified like the step; one CSV row per candidate (its config names it). Returns false
// when a candidate failed verification.
bool explain(const GemmOptions& o, const GemmStep& step, const DeviceInfo& dev, const GemmProblem& p, GemmChoice rule,
             const HostInputs& h, DeviceInputs& d, const std::vector<float>& ref, BenchTimer& timer, cudaStream_t s) {
  const GemmPlanner& planner = *step.planner;
  const std::vector<GemmChoice> cands = explain_candidates(planner, p);
  std::printf("\nexplain: %zu candidate plans; model = the rule's estimate, measured = median of %d runs (L2 "
              "flushed); * = the rule's choice\n", cands.size(), o.iters);
  std::printf("  %-16s %8s %7s %9s %7s %9s %12s %9s %8s\n", "plan", "blocks", "waves", "last wave", "K steps",
              "model us", "measured us", "x fastest", "check");
  struct Measured {
    GemmChoice c;
    TimeStats t;
    VerifyResult vr;
  };
  std::vector<Measured> done;
  bool all_ok = true;
  const TimedRow tb = timer.time_baseline(cublas_baseline(step.info.math, p, d));
  for (const GemmChoice& c : cands) {
    const std::size_t ws = planner.workspace_bytes(p, c);
    std::size_t free_b = 0, total_b = 0;
    TUT_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    if (ws + kLibraryWorkspaceMargin > free_b) {
      std::printf("  %-16s skipped: needs %s of workspace, %s free\n", choice_label(planner, c).c_str(),
                  format_bytes(double(ws)).c_str(), format_bytes(double(free_b)).c_str());
      continue;
    }
    Runner run(planner, p, c, s);
    Measured m{c, {}, {}};
    if (o.verify) {
      const std::vector<float> out = run_step_once(run, p, d, s);
      m.vr = verify_gemm(p, h.A.data(), h.B.data(), h.C0.data(), out.data(), ref.data(), Match::Rounded, step.info.math);
      all_ok = all_ok && m.vr.passed;
    }
    m.t = timer.time(launch_on(run, p, d));
    done.push_back(m);
    ResultRow r = gemm_row(dev, step, o, p, m.t, m.vr);
    set_baselines(r, {tb});
    r.config = choice_label(planner, c);
    if (!o.csv.empty()) append_csv_row(o.csv, result_columns(), to_fields(r), legacy_result_values());
  }
  double fastest = 0;
  for (const Measured& m : done) fastest = (fastest == 0 || m.t.median < fastest) ? m.t.median : fastest;
  for (const Measured& m : done) {
    const GemmWaves w = planner.waves(p, m.c);
    char last[16];
    std::snprintf(last, sizeof last, "%.0f%%", 100.0 * w.last_wave_fill());
    const std::string name = (m.c == rule ? "* " : "  ") + choice_label(planner, m.c);
    std::printf("%-18s %8lld %7.2f %9s %7lld %9.1f %12.1f %9.2f %8s\n", name.c_str(), w.blocks, w.waves(), last,
                w.k_steps, w.model_us, 1e3 * m.t.median, m.t.median / fastest,
                !o.verify ? "skipped" : (m.vr.passed ? "ok" : "FAILED"));
  }
  std::printf("%s: %.1f us in the same process%s\n\n", tb.name.c_str(), 1e3 * tb.t.median,
              o.csv.empty() ? "" : ("; one row per candidate appended to " + o.csv).c_str());
  std::fflush(stdout);
  return all_ok;
}

// ---------------------------------------------------------------------------------------------
// The benchmark: one problem, verified, timed against cuBLAS.

int run_benchmark(const GemmOptions& o, const GemmStep& step, const DeviceInfo& dev) {
  const GemmProblem p = GemmProblem::packed(o.m, o.n, o.k, o.alpha, o.beta);
  const bool tf32 = step.info.math == Math::Tf32;
  const bool is_baseline = (step.launch == cublas_in(step.info.math));
  check_output_paths(o);
  GemmChoice forced, choice;
  if (step.planner) {
    forced = forced_choice(o, *step.planner);
    if (forced.splits >= 1) check_splits(*step.planner, p, forced.splits);
    choice = step.planner->choose(p, forced);
  }
  // With verification, TF32 keeps a second reference (cuBLAS TF32) beside the FP32 one.
  const std::size_t extra_ref = (o.verify && tf32) ? std::size_t(p.c_elems()) * sizeof(float) : 0;
  require_memory(p, o.verify, dev, (step.planner ? step.planner->workspace_bytes(p, choice) : 0) + extra_ref);

  std::printf("problem: C = alpha*A*B + beta*C, M=%d N=%d K=%d, alpha=%g beta=%g, row-major FP32%s\n", p.m, p.n,
              p.k, double(p.alpha), double(p.beta),
              tf32 ? " in and out, TF32 math (tensor cores: A and B rounded to TF32, products summed in FP32)" : "");
  std::printf("         %.4g GFLOP, at least %s moved (%.0f FLOP/byte)\n", p.flops() / 1e9,
              format_bytes(p.min_bytes()).c_str(), p.flops() / p.min_bytes());
  if (step.planner) std::printf("%s\n", plan_line(*step.planner, p, choice, forced).c_str());
  std::fflush(stdout);

  Stream stream;
  const HostInputs h = make_inputs(p, Inputs::Random, o.seed);
  DeviceInputs d(h);
  Runner run = step.planner ? Runner(*step.planner, p, choice, stream.s) : Runner(step.launch);

  // Correctness first: the reference, then the step once on a poisoned output.
  // The reference is true FP32 in either math; a TF32 step is also compared with cuBLAS TF32.
  std::vector<float> ref, ref_tf32;
  auto library_result = [&](GemmLauncher launch) {
    DeviceBuffer<float> c_ref(d.C0.size());
    c_ref.copy_from(d.C0, stream.s);
    return run_and_download(
        c_ref, [&](cudaStream_t s) { launch(p, d.A.data(), d.B.data(), c_ref.data(), s); }, stream.s);
  };
  if (o.verify) {
    ref = library_result(&cublas_sgemm);
    if (tf32) ref_tf32 = library_result(&cublas_tf32_gemm);
  }
  const std::vector<float> out = run_step_once(run, p, d, stream.s);

  VerifyResult vr;
  if (o.verify) {
    vr = verify_gemm(p, h.A.data(), h.B.data(), h.C0.data(), out.data(), ref.data(), Match::Rounded, step.info.math);
    print_check(std::string(cublas_sgemm_name()) + (step.launch == &cublas_sgemm ? " (itself: run-to-run check)" : "") +
                    (tf32 ? ", the TF32 tolerance" : ""),
                vr);
    if (tf32) {
      print_tf32_comparison(
          cublas_tf32_name(), cublas_sgemm_name(),
          verify_gemm(p, h.A.data(), h.B.data(), h.C0.data(), out.data(), ref_tf32.data(), Match::Rounded, step.info.math),
          verify_gemm(p, h.A.data(), h.B.data(), h.C0.data(), ref_tf32.data(), ref.data(), Match::Rounded, step.info.math),
          is_baseline);
    }
  } else {
    print_check_skipped();
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

  // Timing: the step and cuBLAS, the same way, in the same process; with beta != 0 every run gets
  // C's initial values back first.
  std::function<void(cudaStream_t)> restore;
  if (p.beta != 0.0f) restore = [&](cudaStream_t s) { d.C.copy_from(d.C0, s); };
  BenchTimer timer(o, dev, stream.s, restore);
  bool explained_ok = true;
  if (o.explain) {
    explained_ok = explain(o, step, dev, p, choice, h, d, ref, timer, stream.s);
  }
  const TimeStats ts = timer.time(launch_on(run, p, d));
  std::vector<TimedRow> baselines{timer.time_baseline(cublas_baseline(step.info.math, p, d))};
  // A TF32 step also shows what the tensor cores buy: cuBLAS in true FP32, timed the same way.
  if (tf32) baselines.push_back(timer.time_baseline(cublas_baseline(Math::Fp32, p, d)));

  print_timing_plan(o, step.info.math);
  std::vector<TimedRow> rows{{std::string(step.info.name) + " (" + step.info.title + ")", ts}};
  rows.insert(rows.end(), baselines.begin(), baselines.end());
  print_timing_table(rows, {{tf32 ? "% cuBLAS TF32" : "% cuBLAS", baselines[0].t.median}}, p.flops(), p.min_bytes(),
                     dev.peak_gflops(step.info.math), tf32 ? 44 : 32);

  ResultRow r = gemm_row(dev, step, o, p, ts, vr);
  if (step.planner) r.config = choice_label(*step.planner, choice);
  const int verdict = finish_benchmark(o, r, baselines, vr);
  if (!explained_ok) std::printf("RESULT: a candidate plan of --explain failed verification\n");
  return explained_ok ? verdict : kVerifyFailed;
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
  // Only true-FP32 cuBLAS is its own large-shape reference; cuBLAS TF32 is checked against it.
  const bool is_baseline = (step.launch == &cublas_sgemm);
  const GemmChoice forced = step.planner ? forced_choice(o, *step.planner) : GemmChoice{};
  std::printf("self-test %s (%s): %s shapes x {integers: exact; random: tolerance}%s\n", step.info.name, step.info.title,
              o.quick ? "small" : "all",
              !step.planner ? ""
              : (forced.tile >= 0 || forced.splits >= 1)
                  ? " x the forced plan"
                  : " x {the rule's plan; each tile shape with the rule's split, 1, 2, 3 and the most splits}; "
                    "each split plan on random inputs twice (the same bits)");
  if (step.info.math == Math::Tf32) {
    std::printf("TF32 math: the integer cases stay exact (entries in {-3..3} need 2 significant bits, TF32 keeps "
                "11; every product and partial sum is an integer below 2^24, exact in the FP32 sums); the random "
                "cases use the TF32 tolerance (K = 4096: %.2e, FP32's %.2e) against true FP32\n",
                tf32_reduction_tolerance(4096), reduction_tolerance(4096));
  }
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
        tally.skip(label, "large shapes are checked against cuBLAS, which is this step");
        continue;
      }
      // The plans this case runs (one "plan" without a planner: the step's launcher).
      std::vector<GemmChoice> choices{GemmChoice{}};
      if (step.planner) {
        if (forced.splits > step.planner->max_splits(p)) {
          tally.skip(label, "--split " + std::to_string(forced.splits) + ": this problem has at most " +
                                std::to_string(step.planner->max_splits(p)));
          continue;
        }
        choices = test_choices(*step.planner, p, forced);
      }
      std::size_t most_workspace = 0;
      for (const GemmChoice& c : choices) {
        if (step.planner) most_workspace = std::max(most_workspace, step.planner->workspace_bytes(p, c));
      }
      require_memory(p, true, dev, most_workspace);
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

      for (const GemmChoice& c : choices) {
        Runner run = step.planner ? Runner(*step.planner, p, c, stream.s) : Runner(step.launch);
        const std::vector<float> out = run_step_once(run, p, d, stream.s);
        const VerifyResult vr =
            small ? verify_gemm(p, h.A.data(), h.B.data(), h.C0.data(), out.data(), ref_cpu.data(), v.match, step.info.math)
                  : verify_gemm(p, h.A.data(), h.B.data(), h.C0.data(), out.data(), ref_gpu.data(), v.match, step.info.math);
        const std::size_t pad_writes = padding_writes(p, h.C0, out);
        if (pad_writes > 0) std::printf("      %zu elements of C's padding (columns n .. ldc-1) were written\n", pad_writes);
        // A split reduction must not depend on which block finishes last: on real values, a second
        // run of the plan gives the same bits.
        std::size_t changed = 0;
        const bool repeat = c.splits > 1 && v.inputs == Inputs::Random;
        if (repeat) {
          const std::vector<float> again = run_step_once(run, p, d, stream.s);
          for (std::size_t i = 0; i < out.size(); ++i) {
            if (std::memcmp(&out[i], &again[i], sizeof(float)) != 0) ++changed;
          }
          if (changed > 0) std::printf("      a second run changed %zu elements: the result is not deterministic\n", changed);
        }
        const bool case_ok = ok && vr.passed && pad_writes == 0 && changed == 0;
        const std::string plan = step.planner ? "  [" + choice_label(*step.planner, c) + "]" : "";
        tally.report(case_ok, label + plan, vr, small ? "CPU" : "cuBLAS",
                     cublas_note + (p.beta == 0.0f ? " (C poisoned)" : "") +
                         (repeat && changed == 0 ? "; a second run: same bits" : ""));
        cublas_note.clear();  // said once per case
      }
    }
  }
  return tally.finish(step.info);
}

class GemmFamily : public Family {
 public:
  explicit GemmFamily(const GemmStep& step) : step_(step) {}
  CommonOptions parse(int argc, const char* const* argv) override {
    o_ = parse_gemm_args(argc, argv);
    if (step_.planner) {
      if (!o_.tile.empty()) tile_index(*step_.planner, o_.tile);  // throws on an unknown shape
    } else {
      const char* flag = !o_.tile.empty() ? "--tile" : o_.splits >= 1 ? "--split" : o_.explain ? "--explain" : nullptr;
      if (flag) {
        throw ArgError(std::string(flag) + ": this step runs one kernel for every problem (valid only for a step "
                       "that plans each problem: chapter 10)");
      }
    }
    return o_;
  }
  std::string usage(const std::string& program) const override {
    std::string u = gemm_usage(program);
    if (step_.info.math == Math::Tf32) {
      u += std::string("\nThis step computes in TF32 (tensor cores): it is checked against ") + cublas_sgemm_name() +
           " with the TF32 tolerance, compared with " + cublas_tf32_name() + " and timed against it.\n";
    }
    if (step_.planner) {
      std::string names;
      for (const std::string& n : step_.planner->tile_names()) names += " " + n;
      u += "\nThis step plans each problem. Its tile shapes (--tile):" + names + "\n";
    }
    return u;
  }
  int self_test(const DeviceInfo& dev) override { return run_self_test(o_, step_, dev); }
  int benchmark(const DeviceInfo& dev) override { return run_benchmark(o_, step_, dev); }

 private:
  GemmStep step_;
  GemmOptions o_;
};

}  // namespace

std::string choice_label(const GemmPlanner& planner, GemmChoice c) {
  const std::vector<std::string> names = planner.tile_names();
  const std::string tile = c.tile >= 0 && c.tile < int(names.size()) ? names[std::size_t(c.tile)] : "auto";
  return tile + " split " + (c.splits >= 1 ? std::to_string(c.splits) : std::string("auto"));
}

int gemm_main(int argc, char** argv, const GemmStep& step) {
  std::string why = check_declaration(step.info, "gemm", {Math::Fp32, Math::Tf32});
  if (why.empty() && (step.planner != nullptr) != step.info.has_tag("planned")) {
    why = step.planner ? "hands over a planner but is not tagged 'planned'"
                       : "is tagged 'planned' but hands over one launcher, no planner";
  }
  if (why.empty() && (step.planner == nullptr) == (step.launch == nullptr)) {
    why = "needs exactly one of a launcher and a planner";
  }
  if (!why.empty()) return declaration_error(step.info, why);
  GemmFamily family(step);
  return harness_main(argc, argv, step.info, family);
}

}  // namespace tut
