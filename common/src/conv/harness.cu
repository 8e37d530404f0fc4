// The convolution adapter (docs/architecture.md): the problem and its flags, seeded inputs, the
// cuDNN (or im2col + cuBLAS) and CPU references, poisoned output, verification, the benchmark
// against both cuDNN baselines, and the self-test. Everything a family does the same way is in core/.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tut/conv/args.hpp"
#include "tut/conv/harness.cuh"
#include "tut/conv/layers.hpp"
#include "tut/conv/library.cuh"
#include "tut/conv/reference.hpp"
#include "tut/core/device_buffer.cuh"
#include "tut/core/harness.cuh"
#include "tut/core/npy.hpp"
#include "tut/core/random.hpp"
#include "tut/core/timing.cuh"

namespace tut {

namespace {

const char* kProblemFlags = "--layer/--shape";

struct HostTensors {
  std::vector<float> x, w, bias, residual;  // bias, residual: only for a step with an epilogue
  const float* bias_or_null() const { return bias.empty() ? nullptr : bias.data(); }
  const float* residual_or_null() const { return residual.empty() ? nullptr : residual.data(); }
};

HostTensors make_inputs(const ConvProblem& p, Inputs kind, std::uint64_t seed, bool bias, bool residual) {
  HostTensors h;
  h.x.resize(std::size_t(p.x_elems()));
  h.w.resize(std::size_t(p.w_elems()));
  fill(kind, h.x.data(), h.x.size(), derive_seed(seed, 0));
  fill(kind, h.w.data(), h.w.size(), derive_seed(seed, 1));
  if (bias) {
    h.bias.resize(std::size_t(p.k));
    fill(kind, h.bias.data(), h.bias.size(), derive_seed(seed, 2));
  }
  if (residual) {
    h.residual.resize(std::size_t(p.y_elems()));
    fill(kind, h.residual.data(), h.residual.size(), derive_seed(seed, 3));
  }
  return h;
}

// [outer][mid][inner] -> [outer][inner][mid] (x NCHW -> NHWC is (N, C, H*W), w KCRS -> KRSC is
// (K, C, R*S)), and back (inverse: y NPQK -> NKPQ is (N, K, P*Q)), on the host: a channels-last
// step's inputs are made this way, so that no kernel runs before the step's own (make profile
// profiles the process's first kernels).
std::vector<float> move_mid_last(const std::vector<float>& v, std::int64_t outer, std::int64_t mid, std::int64_t inner,
                                 bool inverse = false) {
  std::vector<float> out(v.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t m = 0; m < mid; ++m)
      for (std::int64_t i = 0; i < inner; ++i) {
        const std::size_t first = std::size_t((o * mid + m) * inner + i), last = std::size_t((o * inner + i) * mid + m);
        if (inverse) {
          out[first] = v[last];
        } else {
          out[last] = v[first];
        }
      }
  return out;
}

// Channels-last x (NHWC) and w (KRSC) and an output y in that layout (NPQK): the tensors of a step
// of layout nhwc, and of cuDNN's NHWC baselines; made once, outside every timed run.
struct ChannelsLast {
  DeviceBuffer<float> x, w, y;
  // From the host tensors (a channels-last step's inputs: no kernel runs before the step's).
  ChannelsLast(const ConvProblem& p, const HostTensors& h)
      : x(std::size_t(p.x_elems())), w(std::size_t(p.w_elems())), y(std::size_t(p.y_elems())) {
    x.upload(move_mid_last(h.x, p.n, p.c, std::int64_t(p.h) * p.w).data());
    w.upload(move_mid_last(h.w, p.k, p.c, std::int64_t(p.r) * p.s).data());
  }
  // From the NCHW device tensors (an NCHW step's TF32 baselines).
  ChannelsLast(const ConvProblem& p, const ConvArgs& a, cudaStream_t s)
      : x(std::size_t(p.x_elems())), w(std::size_t(p.w_elems())), y(std::size_t(p.y_elems())) {
    copy_from(p, a, s);
    TUT_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  // x and w made again from the NCHW ones, on the device (the copy a caller holding NCHW tensors pays).
  void copy_from(const ConvProblem& p, const ConvArgs& a, cudaStream_t s) {
    to_channels_last(a.x, x.data(), p.n, p.c, std::int64_t(p.h) * p.w, s);
    to_channels_last(a.w, w.data(), p.k, p.c, std::int64_t(p.r) * p.s, s);
  }
  // y (NPQK) back in NKPQ, downloaded: to check the baseline computes the same convolution.
  std::vector<float> y_nkpq(const ConvProblem& p, cudaStream_t s) const {
    DeviceBuffer<float> back(y.size());
    to_channels_first(y.data(), back.data(), p.n, p.k, std::int64_t(p.p) * p.q, s);
    TUT_CUDA_CHECK(cudaStreamSynchronize(s));
    std::vector<float> out(y.size());
    back.download(out.data());
    return out;
  }
};

// Device copies of the inputs, the output y and the step's workspace; for a channels-last step also
// its NHWC / KRSC / NPQK tensors (cl). The library always works on the NCHW ones.
struct DeviceTensors {
  DeviceBuffer<float> x, w, y, bias, residual;
  DeviceBuffer<char> workspace;
  std::unique_ptr<ChannelsLast> cl;
  DeviceTensors(const ConvProblem& p, const HostTensors& h, std::size_t workspace_bytes, Layout layout = Layout::Nchw)
      : x(h.x.size()), w(h.w.size()), y(std::size_t(p.y_elems())), bias(h.bias.size()), residual(h.residual.size()),
        workspace(workspace_bytes) {
    x.upload(h.x.data());
    w.upload(h.w.data());
    if (bias.size()) bias.upload(h.bias.data());
    if (residual.size()) residual.upload(h.residual.data());
    if (layout == Layout::Nhwc) cl = std::make_unique<ChannelsLast>(p, h);
  }
  // The NCHW tensors (the library's, and an NCHW step's).
  ConvArgs args() {
    return ConvArgs{x.data(), w.data(), y.data(), workspace.data(), bias.size() ? bias.data() : nullptr,
                    residual.size() ? residual.data() : nullptr};
  }
  // The step's tensors, in its layout (a channels-last step has no epilogue: conv_main refuses one).
  ConvArgs step_args() {
    if (!cl) return args();
    return ConvArgs{cl->x.data(), cl->w.data(), cl->y.data(), workspace.data(), nullptr, nullptr};
  }
};

// Why the step does not compute p (its `unsupported` hook), or null.
const char* unsupported(const ConvStep& step, const ConvProblem& p) {
  return step.unsupported ? step.unsupported(p) : nullptr;
}
void check_supported(const ConvStep& step, const ConvProblem& p) {
  if (const char* why = unsupported(step, p)) throw ArgError(std::string(kProblemFlags) + ": " + why);
}

// The step's result `out` (NKPQ) against `ref`, in the step's math, with the step's own per-element
// bound and norm-wise threshold where it states them (0: its math's; reference.hpp).
template <class Ref>
VerifyResult verify_step(const ConvStep& step, const ConvProblem& p, const HostTensors& h, const float* out,
                         const Ref* ref, Match match, const float* bias, const float* residual) {
  return verify_conv(p, h.x.data(), h.w.data(), out, ref, match, 5, bias, residual, step.info.math,
                     step.tolerance ? step.tolerance(p) : 0.0, step.norm_tolerance ? step.norm_tolerance(p) : 0.0);
}

// x, w, y and (with_reference) the reference's y, plus the step's workspace; a channels-last step's
// copies of x, w and y too.
void require_memory(const ConvProblem& p, bool with_reference, bool residual, std::size_t workspace,
                    const DeviceInfo& dev, const std::string& what, bool channels_last = false) {
  const std::size_t elems = (std::size_t(p.x_elems()) + std::size_t(p.w_elems())) * (channels_last ? 2 : 1) +
                            std::size_t(p.k) +
                            std::size_t(p.y_elems()) * ((with_reference ? 2 : 1) + (residual ? 1 : 0) + (channels_last ? 1 : 0));
  require_memory(elems * sizeof(float) + workspace, dev, what, kProblemFlags);
}

// Workspace the library may use for its search and baselines: what is free, less a margin, at most 4 GiB.
std::size_t library_workspace_limit() {
  std::size_t free_b = 0, total_b = 0;
  TUT_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  const std::size_t margin = std::size_t(256) << 20, cap = std::size_t(4) << 30;
  return free_b > margin ? std::min(cap, free_b - margin) : 0;
}

// The step once, on a poisoned output; the result in NKPQ (a channels-last step's NPQK turned back).
std::vector<float> run_step_once(const ConvStep& step, const ConvProblem& p, DeviceTensors& d, cudaStream_t s) {
  const ConvArgs a = d.step_args();
  if (!d.cl) return run_poisoned(d.y, [&](cudaStream_t st) { step.launch(p, a, st); }, s);
  const std::vector<float> npqk = run_poisoned(d.cl->y, [&](cudaStream_t st) { step.launch(p, a, st); }, s);
  return move_mid_last(npqk, p.n, p.k, std::int64_t(p.p) * p.q, true);
}

// The library's result: the plain convolution, or (epilogue) the fused one with the same bias and residual.
std::vector<float> run_reference(ConvLibrary& lib, const ConvStep& step, const ConvProblem& p, DeviceTensors& d,
                                 cudaStream_t s) {
  DeviceBuffer<float> y_ref(std::size_t(p.y_elems()));
  if (step.epilogue() == ConvEpilogue::None) {
    return run_poisoned(y_ref, [&](cudaStream_t st) { lib.run_reference(d.x.data(), d.w.data(), y_ref.data(), st); }, s);
  }
  y_ref.fill_bytes(0, s);  // cuDNN reads y as its residual input, times 0, when there is none
  const ConvArgs a = d.args();
  return run_and_download(
      y_ref, [&](cudaStream_t st) { lib.run_fused(a.x, a.w, a.bias, a.residual, y_ref.data(), st); }, s);
}

void print_problem(const ConvProblem& p, const std::string& label, Math math, Layout layout) {
  // Each tensor's extents in the order its layout stores them.
  const auto dims = [](int a, int b, int c, int d) {
    return std::to_string(a) + "x" + std::to_string(b) + "x" + std::to_string(c) + "x" + std::to_string(d);
  };
  const bool cl = layout == Layout::Nhwc;
  const std::string x = cl ? dims(p.n, p.h, p.w, p.c) : dims(p.n, p.c, p.h, p.w);
  const std::string w = cl ? dims(p.k, p.r, p.s, p.c) : dims(p.k, p.c, p.r, p.s);
  const std::string y = cl ? dims(p.n, p.p, p.q, p.k) : dims(p.n, p.k, p.p, p.q);
  std::printf("problem: %s: y = conv(x, w), FP32%s; x %s (%s), w %s (%s) -> y %s (%s)\n", label.c_str(),
              math == Math::Tf32 ? " in and out, TF32 math" : "", x.c_str(), cl ? "NHWC" : "NCHW", w.c_str(),
              cl ? "KRSC" : "KCRS", y.c_str(), cl ? "NPQK" : "NKPQ");
  if (math == Math::Tf32) {
    std::printf("         TF32 math: tensor cores, x and w rounded to TF32 (10 fraction bits), products summed in FP32\n");
  }
  std::printf("         pad %s, stride %s, dilation %s; implicit GEMM M = K = %d, N = N*P*Q = %d, K = C*R*S = %d\n",
              conv_pair_text(p.pad_h, p.pad_w).c_str(), conv_pair_text(p.stride_h, p.stride_w).c_str(),
              conv_pair_text(p.dil_h, p.dil_w).c_str(), p.gemm_m(), p.gemm_n(), p.gemm_k());
  std::printf("         %.4g GFLOP, at least %s moved (%.0f FLOP/byte)\n", p.flops() / 1e9,
              format_bytes(p.min_bytes()).c_str(), p.flops() / p.min_bytes());
}

// ---------------------------------------------------------------------------------------------
// The benchmark: one problem, verified, timed against the library's baselines.

// The name a baseline goes by in the table and the CSV (plots/results.py reads the math from it).
// A TF32 step's baselines name their layout ("cuDNN fastest TF32 allowed, NHWC (ALGO)"); the FMA
// ones are NCHW only (cuDNN's FMA path is fastest there: Winograd and FFT exist only in NCHW).
std::string baseline_name(const ConvLibrary& lib, int i, bool fastest, Layout layout = Layout::Nchw) {
  if (!ConvLibrary::have_cudnn()) return "im2col + cuBLAS " + lib.math_label() + " (no cuDNN in this build)";
  const std::string where = lib.math() == Math::Tf32 ? std::string(", ") + layout_name(layout) : "";
  if (fastest) return "cuDNN fastest " + lib.math_label() + where + " (" + lib.algorithm_name(i, layout) + ")";
  return "cuDNN " + lib.algorithm_name(i, layout) + " (" + lib.math_label() + ")";
}

int run_benchmark(const ConvOptions& o, const ConvStep& step, const DeviceInfo& dev) {
  const ConvProblem& p = o.problem;
  const bool epilogue = step.epilogue() != ConvEpilogue::None;
  const bool tf32 = step.info.math == Math::Tf32;
  const Layout layout = step.layout();
  check_output_paths(o);
  check_supported(step, p);
  if (o.residual && !epilogue) {
    throw ArgError(std::string("--residual: ") + step.info.name + " has no epilogue (valid: a step with a fused epilogue)");
  }
  const std::size_t ws = step_workspace(step.workspace_bytes, p);
  // With verification, a TF32 step keeps the library's TF32 result beside the FP32 reference.
  std::size_t extra_ref = (o.verify && tf32) ? std::size_t(p.y_elems()) * sizeof(float) : 0;
  // A TF32 step's NHWC baselines: channels-last copies of x, w and y (and y back in NKPQ for their check).
  // A channels-last step's own copies serve them; an NCHW step gets copies of its own.
  const bool channels_last = tf32 && !epilogue && ConvLibrary::have_cudnn();
  if (channels_last && layout != Layout::Nhwc) {
    extra_ref += (std::size_t(p.x_elems()) + std::size_t(p.w_elems()) + std::size_t(p.y_elems())) * sizeof(float);
  }
  if (channels_last && o.verify) extra_ref += std::size_t(p.y_elems()) * sizeof(float);
  require_memory(p, o.verify, o.residual, ws + extra_ref, dev, o.label, layout == Layout::Nhwc);

  print_problem(p, o.label, step.info.math, layout);
  if (epilogue) std::printf("epilogue: y = max(conv + bias[k]%s, 0), fused into the step\n", o.residual ? " + residual" : "");
  if (ws > 0) std::printf("workspace: %s of this step's own buffers\n", format_bytes(double(ws)).c_str());
  std::fflush(stdout);

  Stream stream;
  const HostTensors h = make_inputs(p, Inputs::Random, o.seed, epilogue, o.residual);
  DeviceTensors d(p, h, ws, layout);
  const ConvArgs args = d.args(), step_args = d.step_args();
  // The step first, once, on a poisoned output: with --no-verify its kernels are the process's first
  // (make profile relies on it); then the library's search and its reference.
  const std::vector<float> out = run_step_once(step, p, d, stream.s);
  ConvLibrary lib(p, !epilogue, args.x, args.w, args.y, library_workspace_limit(), stream.s, step.info.math);
  if (!tf32) {
    std::printf("library: %s, FMA math (no TF32)\n", ConvLibrary::version().c_str());
  } else if (ConvLibrary::have_cudnn()) {
    std::printf("library: %s; the reference in FMA math (true FP32), the baselines in cuDNN's default math "
                "(TF32 tensor cores allowed)\n", ConvLibrary::version().c_str());
  } else {
    std::printf("library: %s; the reference im2col + cuBLAS FP32, the baseline im2col + cuBLAS TF32 (%s)\n",
                ConvLibrary::version().c_str(), lib.algorithm_math(0).c_str());
  }
  std::unique_ptr<ChannelsLast> own_nhwc;
  ChannelsLast* nhwc = nullptr;  // the NHWC baselines' tensors: the step's own when it is channels-last
  if (channels_last) {
    if (!d.cl) own_nhwc = std::make_unique<ChannelsLast>(p, args, stream.s);
    nhwc = d.cl ? d.cl.get() : own_nhwc.get();
    if (!lib.add_layout(Layout::Nhwc, nhwc->x.data(), nhwc->w.data(), nhwc->y.data(), stream.s)) nhwc = nullptr;
  }
  if (!epilogue && ConvLibrary::have_cudnn()) {
    for (Layout l : {Layout::Nchw, Layout::Nhwc}) {
      if (l == Layout::Nhwc && !nhwc) continue;
      std::printf("         %d algorithms from cuDNN's search%s, each timed below like the step:", lib.algorithms(l),
                  tf32 ? (std::string(" in ") + layout_name(l)).c_str() : "");
      for (int i = 0; i < lib.algorithms(l); ++i) {
        std::printf(" %s", lib.algorithm_name(i, l).c_str());
        if (tf32) std::printf(" [%s]", lib.algorithm_math(i, l).c_str());
      }
      std::printf("\n");
    }
    if (nhwc) {
      std::printf("         NHWC: x and w copied once to channels-last (NHWC, KRSC) outside the timed runs, y NPQK%s\n",
                  d.cl ? " (the step's own tensors)" : "");
    } else if (channels_last) {
      std::printf("         NHWC: cuDNN's search returned no algorithm on channels-last tensors; NCHW only\n");
    }
  }
  std::vector<float> ref;
  if (o.verify) ref = run_reference(lib, step, p, d, stream.s);
  VerifyResult vr;
  if (o.verify) {
    vr = verify_step(step, p, h, out.data(), ref.data(), Match::Rounded, h.bias_or_null(), h.residual_or_null());
    print_check((epilogue ? lib.fused_name() : lib.reference_name()) +
                    (step.tolerance ? ", the step's own tolerance" : tf32 ? ", the TF32 tolerance" : "") +
                    (d.cl ? " (y turned back from NPQK)" : ""),
                vr);
    if (tf32 && !epilogue) {
      // The library's own TF32 result: IMPLICIT_PRECOMP_GEMM in default math.
      const int pre = lib.reference_algorithm();
      DeviceBuffer<float> y_tf32(std::size_t(p.y_elems()));
      const std::vector<float> ref_tf32 = run_poisoned(
          y_tf32, [&](cudaStream_t s) { lib.run_algorithm(pre, args.x, args.w, y_tf32.data(), s); }, stream.s);
      print_tf32_comparison(
          baseline_name(lib, pre, false), lib.reference_name(),
          verify_conv(p, h.x.data(), h.w.data(), out.data(), ref_tf32.data(), Match::Rounded, 5, nullptr, nullptr,
                      step.info.math),
          verify_conv(p, h.x.data(), h.w.data(), ref_tf32.data(), ref.data(), Match::Rounded, 5, nullptr, nullptr,
                      step.info.math));
    }
  } else {
    print_check_skipped();
  }
  if (!o.dump.empty()) {
    const std::vector<long long> xs{p.n, p.c, p.h, p.w}, wsh{p.k, p.c, p.r, p.s}, ys{p.n, p.k, p.p, p.q};
    write_npy_f32(o.dump + "/x.npy", h.x.data(), xs);
    write_npy_f32(o.dump + "/w.npy", h.w.data(), wsh);
    write_npy_f32(o.dump + "/y_out.npy", out.data(), ys);
    if (o.verify) write_npy_f32(o.dump + "/y_ref.npy", ref.data(), ys);
    if (epilogue) write_npy_f32(o.dump + "/bias.npy", h.bias.data(), std::vector<long long>{p.k});
    if (o.residual) write_npy_f32(o.dump + "/residual.npy", h.residual.data(), ys);
    std::printf("dump: x.npy w.npy y_out.npy%s%s%s written to %s\n", o.verify ? " y_ref.npy" : "",
                epilogue ? " bias.npy" : "", o.residual ? " residual.npy" : "", o.dump.c_str());
  }
  std::fflush(stdout);

  // Timing: the step and every baseline, the same way, in the same process.
  BenchTimer timer(o, dev, stream.s);
  const TimeStats ts = timer.time([&](cudaStream_t s) { step.launch(p, step_args, s); });
  std::vector<TimedRow> baselines;     // [0] the headline baseline, [1] the second (if any)
  std::vector<std::size_t> workspace;  // the workspace of each, for the report
  if (!epilogue) {
    // Every algorithm of the search, timed like the step; the fastest is the headline baseline, the
    // reference's algorithm (IMPLICIT_PRECOMP_GEMM) the second.
    std::vector<TimeStats> at;
    for (int i = 0; i < lib.algorithms(); ++i) {
      at.push_back(timer.time([&lib, i, args](cudaStream_t s) { lib.run_algorithm(i, args.x, args.w, args.y, s); }));
    }
    auto fastest = [](const std::vector<TimeStats>& t) {
      int b = 0;
      for (int i = 1; i < int(t.size()); ++i) {
        if (t[std::size_t(i)].median < t[std::size_t(b)].median) b = i;
      }
      return b;
    };
    const int best = fastest(at);
    const int ref_i = lib.reference_algorithm();
    std::vector<TimeStats> at_nhwc;
    if (nhwc) {
      for (int i = 0; i < lib.algorithms(Layout::Nhwc); ++i) {
        at_nhwc.push_back(timer.time([&lib, i, nhwc](cudaStream_t s) {
          lib.run_algorithm(i, nhwc->x.data(), nhwc->w.data(), nhwc->y.data(), s, Layout::Nhwc);
        }));
      }
    }
    if (ConvLibrary::have_cudnn()) {
      for (Layout l : {Layout::Nchw, Layout::Nhwc}) {
        const std::vector<TimeStats>& t = l == Layout::Nchw ? at : at_nhwc;
        if (t.empty()) continue;
        const int f = fastest(t);
        std::printf("cuDNN %s algorithms%s (median ms):", lib.math_label().c_str(),
                    tf32 ? (std::string(", ") + layout_name(l)).c_str() : "");
        for (int i = 0; i < int(t.size()); ++i) {
          std::printf(" %s", lib.algorithm_name(i, l).c_str());
          if (tf32) std::printf(" [%s]", lib.algorithm_math(i, l).c_str());
          std::printf(" %.4g%s", t[std::size_t(i)].median, i == f ? " (fastest)" : "");
        }
        std::printf("\n");
      }
      if (nhwc) {
        // TF32: the fastest in each layout; the better of the two is the reference (docs/measuring.md).
        const int bn = fastest(at_nhwc);
        baselines = {{baseline_name(lib, bn, true, Layout::Nhwc), at_nhwc[std::size_t(bn)]},
                     {baseline_name(lib, best, true, Layout::Nchw), at[std::size_t(best)]}};
        workspace = {lib.algorithm_workspace(bn, Layout::Nhwc), lib.algorithm_workspace(best)};
        if (o.verify) {
          // The NHWC baseline computes the same convolution: its result, back in NKPQ, against the
          // FP32 reference with the TF32 tolerance (a wrong layout copy would fail here).
          lib.run_algorithm(bn, nhwc->x.data(), nhwc->w.data(), nhwc->y.data(), stream.s, Layout::Nhwc);
          const std::vector<float> back = nhwc->y_nkpq(p, stream.s);
          const VerifyResult nv = verify_conv(p, h.x.data(), h.w.data(), back.data(), ref.data(), Match::Rounded, 5,
                                              nullptr, nullptr, step.info.math);
          std::printf("check:  %s against %s, the TF32 tolerance: %s\n", baselines[0].name.c_str(),
                      lib.reference_name().c_str(), nv.summary().c_str());
          if (!nv.passed) {
            std::printf("%sRESULT: the NHWC baseline does not compute the reference's convolution\n", nv.details().c_str());
            vr.passed = false;
          }
        }
      } else {
        baselines = {{baseline_name(lib, best, true), at[std::size_t(best)]},
                     {baseline_name(lib, ref_i, false), at[std::size_t(ref_i)]}};
        workspace = {lib.algorithm_workspace(best), lib.algorithm_workspace(ref_i)};
      }
    } else {
      baselines = {{baseline_name(lib, ref_i, false), at[std::size_t(ref_i)]}};
      workspace = {lib.algorithm_workspace(ref_i)};
    }
  } else {
    // The library's fused convolution, then the step's unfused pipeline.
    baselines.push_back(timer.time_baseline(
        {lib.fused_name(),
         [&lib, args](cudaStream_t s) { lib.run_fused(args.x, args.w, args.bias, args.residual, args.y, s); }}));
    workspace.push_back(lib.algorithm_workspace(lib.reference_algorithm()));
    if (step.unfused) {
      baselines.push_back(
          timer.time_baseline({step.unfused_name, [&step, &p, args](cudaStream_t s) { step.unfused(p, args, s); }}));
      workspace.push_back(0);
    }
  }
  // The baselines are known only now for a plain step (the fastest of cuDNN's algorithms, as timed).
  for (std::size_t i = 0; i < baselines.size(); ++i) {
    std::printf("baseline %zu: %s, workspace %s\n", i + 1, baselines[i].name.c_str(),
                format_bytes(double(workspace[i])).c_str());
  }
  if (d.cl) {
    // What a caller holding NCHW tensors would pay around a channels-last step: timed like the step,
    // reported apart (the step's time and cuDNN's NHWC baselines start from channels-last tensors).
    ChannelsLast* cl = d.cl.get();
    const TimeStats to_last = timer.time([&p, args, cl](cudaStream_t s) { cl->copy_from(p, args, s); });
    const TimeStats to_first = timer.time([&p, args, cl](cudaStream_t s) {
      to_channels_first(cl->y.data(), args.y, p.n, p.k, std::int64_t(p.p) * p.q, s);
    });
    std::printf("layout: x NCHW -> NHWC and w KCRS -> KRSC %.4g ms, y NPQK -> NKPQ %.4g ms (medians; in no time below)\n",
                to_last.median, to_first.median);
  }
  print_timing_plan(o, step.info.math);
  std::vector<TimedRow> rows{{std::string(step.info.name) + " (" + step.info.title + ")", ts}};
  rows.insert(rows.end(), baselines.begin(), baselines.end());
  std::vector<RatioColumn> ratios;
  if (epilogue) {
    ratios.push_back({"% fused", baselines[0].t.median});
    if (baselines.size() > 1) ratios.push_back({"% unfused", baselines[1].t.median});
  } else {
    ratios.push_back({!ConvLibrary::have_cudnn() ? "% im2col" : nhwc ? "% NHWC" : "% fastest", baselines[0].t.median});
    if (baselines.size() > 1) ratios.push_back({nhwc ? "% NCHW" : "% precomp", baselines[1].t.median});
  }
  int width = 32;
  for (const TimedRow& r : rows) width = std::max(width, int(r.name.size()));
  print_timing_table(rows, ratios, p.flops(), p.min_bytes(), dev.peak_gflops(step.info.math), width);

  const ResultRow r = make_result_row(dev, step.info, o, o.label, p.gemm_m(), p.gemm_n(), p.gemm_k(), ts, p.flops(),
                                      p.min_bytes(), vr);
  return finish_benchmark(o, r, baselines, vr);
}

// ---------------------------------------------------------------------------------------------
// The self-test: awkward problems and every layer, integer inputs (exact) and random (tolerance).

struct Case {
  const char* what;
  ConvProblem p;
};

std::vector<Case> self_test_cases() {
  using P = ConvProblem;
  std::vector<Case> cases = {
      {"smallest", P::make(1, 1, 1, 1, 1, 1, 1)},
      {"C=3 7x7 /2 pad 3", P::make(2, 3, 23, 23, 8, 7, 7, 3, 3, 2, 2)},
      {"pad 1:0 stride 2:1", P::make(3, 5, 17, 13, 7, 3, 2, 1, 0, 2, 1)},
      {"H=W=1 pad 1", P::make(2, 4, 1, 1, 5, 3, 3, 1, 1)},
      {"1x1 stride 2", P::make(2, 16, 15, 15, 24, 1, 1, 0, 0, 2, 2)},
      {"K=129", P::make(1, 8, 9, 9, 129, 3, 3, 1, 1)},
      {"CRS=21 (1x3)", P::make(2, 7, 12, 10, 33, 1, 3, 0, 1)},
      {"NPQ=121", P::make(1, 16, 11, 11, 40, 3, 3, 1, 1)},
      {"pad 2 > 3x3/2", P::make(2, 3, 10, 10, 6, 3, 3, 2, 2)},
      {"pad 1, 1x1 filter", P::make(2, 6, 5, 7, 10, 1, 1, 1, 1)},
      {"5x4 /3 pad 2:1", P::make(1, 3, 31, 29, 17, 5, 4, 2, 1, 3, 3)},
      {"dilated 3x3 d2", P::make(2, 6, 14, 14, 10, 3, 3, 2, 2, 1, 1, 2, 2)},
      {"dilated 3x2 d3:2 /2", P::make(1, 5, 19, 16, 9, 3, 2, 3, 1, 2, 1, 3, 2)},
      {"several tiles", P::make(2, 32, 20, 20, 96, 3, 3, 1, 1)},
      {"4 images, 160 ch", P::make(4, 64, 28, 28, 160, 3, 3, 1, 1)},
  };
  for (const ConvLayer& l : conv_layers()) cases.push_back({l.name, l.problem()});
  return cases;
}

// Problems up to this many multiply-adds are "small": --quick runs only these, and their reference
// is the CPU in float64 (larger ones use the library, itself checked against the CPU on the small ones).
constexpr double kSmallMacs = 4.0e7;

struct Variant {
  Inputs inputs;
  Match match;
  bool residual;  // a step with an epilogue also adds a residual in this variant
};
const Variant kVariants[] = {{Inputs::SmallInts, Match::Exact, false}, {Inputs::Random, Match::Rounded, true}};

int run_self_test(const ConvOptions& o, const ConvStep& step, const DeviceInfo& dev) {
  const bool epilogue = step.epilogue() != ConvEpilogue::None;
  const bool tf32 = step.info.math == Math::Tf32;
  std::printf("self-test %s (%s): %s problems x {integers: exact; random: %s tolerance}; reference %s (FP32)%s\n",
              step.info.name, step.info.title, o.quick ? "small" : "all", math_name(step.info.math), ConvLibrary::version().c_str(),
              epilogue ? "; epilogue bias + ReLU (integers), bias + residual + ReLU (random)" : "");
  if (tf32) {
    // Why the integer cases stay exact in TF32: every input is an integer in [-3, 3], at most 2
    // significant bits where TF32 keeps 11, so the rounding to TF32 leaves it unchanged (checked on
    // every case's inputs below); the products are exact, and every partial sum is an integer below
    // 2^24, exact in the FP32 accumulator whatever its rounding. Random inputs are rounded, so they
    // get TF32's tolerance for C*R*S terms, against the FP32 reference.
    std::printf("TF32: the integer cases are exact: their inputs are integers in [-3, 3] (<= 11 significant bits: "
                "unchanged by the rounding to TF32), their partial sums integers below 2^24\n");
  }
  Stream stream;
  SelfTestTally tally;
  std::uint64_t case_seed = o.seed;
  for (const Case& c : self_test_cases()) {
    const ConvProblem& p = c.p;
    const double macs = p.flops() / 2;
    const bool small = macs <= kSmallMacs;
    if (o.quick && !small) continue;
    char label[160];
    std::snprintf(label, sizeof label, "%-20s %-28s", c.what, p.label().c_str());
    if (const char* why = unsupported(step, p)) {
      tally.skip(label, why);
      continue;
    }
    // Every path of the step (one unless it names several): the workspace of the largest.
    const int paths = step.force_path != nullptr ? std::max(step.num_paths, 1) : 1;
    std::size_t ws = 0;
    for (int path = 0; path < paths; ++path) {
      if (step.force_path != nullptr) step.force_path(path);
      ws = std::max(ws, step_workspace(step.workspace_bytes, p));
    }
    for (const Variant& v : kVariants) {
      ++case_seed;
      const bool residual = epilogue && v.residual;
      require_memory(p, true, residual, ws, dev, c.what, step.layout() == Layout::Nhwc);
      const HostTensors h = make_inputs(p, v.inputs, case_seed, epilogue, residual);
      const float* bias = h.bias_or_null();
      const float* res = h.residual_or_null();
      DeviceTensors d(p, h, ws, step.layout());
      ConvLibrary lib(p, false, d.x.data(), d.w.data(), d.y.data(), library_workspace_limit(), stream.s);
      bool ok = true;
      std::string notes;
      if (tf32 && v.match == Match::Exact) {
        // The premise of an exact TF32 check: no input changes when rounded to TF32.
        const bool exact = exact_in_tf32(h.x.data(), h.x.size()) && exact_in_tf32(h.w.data(), h.w.size());
        if (!exact) {
          ok = false;
          std::printf("      integer inputs are not exact in TF32: the exact check cannot apply\n");
        }
      }

      // The reference: CPU float64 for small problems (the library checked against it, and im2col +
      // cuBLAS too); the library otherwise.
      std::vector<double> ref_cpu;
      std::vector<float> ref_gpu;
      if (small) {
        ref_cpu.resize(std::size_t(p.y_elems()));
        conv_direct_cpu_f64(p, h.x.data(), h.w.data(), ref_cpu.data());
        if (epilogue) conv_epilogue_cpu_f64(p, ref_cpu.data(), bias, res, true);
        const std::vector<float> lib_out = run_reference(lib, step, p, d, stream.s);
        const VerifyResult lv =
            verify_conv(p, h.x.data(), h.w.data(), lib_out.data(), ref_cpu.data(), v.match, 5, bias, res);
        notes += std::string("; ") + (ConvLibrary::have_cudnn() ? "cuDNN" : "im2col+cuBLAS") + " vs CPU: " +
                 (lv.passed ? "ok" : "FAILED");
        if (!lv.passed) {
          ok = false;
          std::printf("      %s: %s\n%s", lib.reference_name().c_str(), lv.summary().c_str(), lv.details().c_str());
        }
        if (ConvLibrary::have_cudnn()) {
          Im2colCublasConv second(p);
          const ConvArgs a = d.args();
          const std::vector<float> alt = run_poisoned(
              d.y,
              [&](cudaStream_t s) {
                if (epilogue) {
                  second.run_fused(a.x, a.w, a.bias, a.residual, a.y, s);
                } else {
                  second.run(a.x, a.w, a.y, s);
                }
              },
              stream.s);
          const VerifyResult av =
              verify_conv(p, h.x.data(), h.w.data(), alt.data(), ref_cpu.data(), v.match, 5, bias, res);
          notes += std::string(", im2col+cuBLAS vs CPU: ") + (av.passed ? "ok" : "FAILED");
          if (!av.passed) {
            ok = false;
            std::printf("      im2col + cuBLAS: %s\n%s", av.summary().c_str(), av.details().c_str());
          }
        }
      } else {
        ref_gpu = run_reference(lib, step, p, d, stream.s);
      }

      // The step's check, the same on every path: exact on integers unless its arithmetic is not
      // (exact_on_integers).
      const Match match = v.match == Match::Exact && !step.exact_on_integers ? Match::Rounded : v.match;
      for (int path = 0; path < paths; ++path) {
        if (step.force_path != nullptr) step.force_path(path);
        const std::vector<float> out = run_step_once(step, p, d, stream.s);
        const VerifyResult vr = small ? verify_step(step, p, h, out.data(), ref_cpu.data(), match, bias, res)
                                      : verify_step(step, p, h, out.data(), ref_gpu.data(), match, bias, res);
        char what[240];
        std::snprintf(what, sizeof what, "%s %-6s%s%s", label, v.inputs == Inputs::Random ? "random" : "ints",
                      paths > 1 ? " " : "", paths > 1 ? step.paths[path] : "");
        tally.report(ok && vr.passed, what, vr,
                     small ? "CPU" : (ConvLibrary::have_cudnn() ? "cuDNN" : "im2col+cuBLAS"),
                     notes + " (y poisoned)" + (residual ? " +residual" : ""));
      }
      if (step.force_path != nullptr) step.force_path(-1);
    }
  }
  return tally.finish(step.info);
}

class ConvFamily : public Family {
 public:
  explicit ConvFamily(const ConvStep& step) : step_(step) {}
  CommonOptions parse(int argc, const char* const* argv) override {
    o_ = parse_conv_args(argc, argv);
    return o_;
  }
  std::string usage(const std::string& program) const override {
    return conv_usage(program, step_.info.math, step_.layout());
  }
  bool answer_without_gpu() override {
    if (!o_.list_layers) return false;
    std::fputs(conv_layer_table().c_str(), stdout);
    return true;
  }
  int self_test(const DeviceInfo& dev) override { return run_self_test(o_, step_, dev); }
  int benchmark(const DeviceInfo& dev) override { return run_benchmark(o_, step_, dev); }

 private:
  ConvStep step_;
  ConvOptions o_;
};

}  // namespace

int conv_main(int argc, char** argv, const ConvStep& step) {
  std::string why = check_declaration(step.info, "conv", {Math::Fp32, Math::Tf32});
  if (why.empty() && step.epilogue() != ConvEpilogue::None && !(step.unfused && step.unfused_name)) {
    why = "declares OP conv_bias_relu but hands over no unfused pipeline to time it against";
  }
  if (why.empty() && step.epilogue() == ConvEpilogue::None && step.unfused) {
    why = "hands over an unfused pipeline but declares no epilogue (OP conv_bias_relu)";
  }
  if (why.empty() && step.layout() == Layout::Nhwc && step.epilogue() != ConvEpilogue::None) {
    why = "declares LAYOUT nhwc with an epilogue (OP conv_bias_relu): bias and residual exist in NCHW only";
  }
  if (why.empty() && ((step.paths != nullptr) != (step.force_path != nullptr) || (step.paths && step.num_paths < 1))) {
    why = "names code paths without force_path, or force_path without the paths' names";
  }
  if (!why.empty()) return declaration_error(step.info, why);
  ConvFamily family(step);
  return harness_main(argc, argv, step.info, family);
}

}  // namespace tut
