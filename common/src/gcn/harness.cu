// The GCN adapter (docs/architecture.md): the graph and its flags, seeded inputs, the library
// (cuBLAS, cuSPARSE, cuDNN) and CPU float64 references, poisoned output, verification, the
// benchmark in GB/s against the copy bandwidth measured in the same run, and the self-test.
// Everything a family does the same way is in core/.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tut/core/device_buffer.cuh"
#include "tut/core/harness.cuh"
#include "tut/core/npy.hpp"
#include "tut/core/random.hpp"
#include "tut/core/timing.cuh"
#include "tut/gcn/args.hpp"
#include "tut/gcn/harness.cuh"
#include "tut/gcn/library.cuh"
#include "tut/gcn/reference.hpp"

namespace tut {

bool gcn_kind_of(const char* op, GcnKind* kind) {
  const std::string o = op ? op : "";
  if (o == "xw") *kind = GcnKind::Xw;
  else if (o == "spmm") *kind = GcnKind::Spmm;
  else if (o == "log_softmax") *kind = GcnKind::LogSoftmax;
  else if (o == "layer") *kind = GcnKind::Layer;
  else return false;
  return true;
}

namespace {

const char* kind_text(GcnKind k) {
  switch (k) {
    case GcnKind::Xw: return "skinny GEMM: out = X W";
    case GcnKind::Spmm: return "SpMM: out = A_hat Z";
    case GcnKind::LogSoftmax: return "LogSoftmax: out = log_softmax(Z), per row";
    case GcnKind::Layer: return "GCN layer: out = log_softmax(A_hat (X W) + b)";
  }
  return "?";
}

bool uses_x(GcnKind k) { return k == GcnKind::Xw || k == GcnKind::Layer; }
bool uses_graph(GcnKind k) { return k == GcnKind::Spmm || k == GcnKind::Layer; }
bool uses_z(GcnKind k) { return k == GcnKind::Spmm || k == GcnKind::LogSoftmax; }

StepCost step_cost(GcnKind k, const GcnProblem& p) {
  switch (k) {
    case GcnKind::Xw: return xw_cost(p.v, p.f_in, p.f_out);
    case GcnKind::Spmm: return spmm_cost(p.v, p.nnz, p.f_out);
    case GcnKind::LogSoftmax: return bias_log_softmax_cost(p.v, p.f_out, false);
    case GcnKind::Layer: return gcn_layer_cost(p.v, p.nnz, p.f_in, p.f_out);
  }
  return {};
}

GcnProblem problem_of(const Csr& a, int f_in, int f_out) { return GcnProblem{a.rows, a.nnz(), f_in, f_out}; }

// The step's inputs on the host: what its kind reads (the rest stays empty).
struct HostInputs {
  std::vector<double> x, w, b, z;
};

HostInputs make_inputs(GcnKind k, const GcnProblem& p, Inputs kind, std::uint64_t seed) {
  HostInputs h;
  if (uses_x(k)) {
    h.x.resize(std::size_t(p.v) * std::size_t(p.f_in));
    h.w.resize(std::size_t(p.f_in) * std::size_t(p.f_out));
    fill(kind, h.x.data(), h.x.size(), derive_seed(seed, 0));
    fill(kind, h.w.data(), h.w.size(), derive_seed(seed, 1));
  }
  if (k == GcnKind::Layer) {
    h.b.resize(std::size_t(p.f_out));
    fill(kind, h.b.data(), h.b.size(), derive_seed(seed, 2));
  }
  if (uses_z(k)) {
    h.z.resize(std::size_t(p.v) * std::size_t(p.f_out));
    fill(kind, h.z.data(), h.z.size(), derive_seed(seed, 3));
  }
  return h;
}

// Device copies of A_hat (for the kinds that use it), the inputs, the output and the workspace
// (zeroed on `stream` before the first launch: a step may keep counters there that each launch
// leaves at zero again; GcnWorkspace).
struct DeviceData {
  DeviceBuffer<int> indptr, indices;
  DeviceBuffer<double> values, x, w, b, z, out;
  DeviceBuffer<char> workspace;
  int rows = 0;
  long long nnz = 0;
  DeviceData(GcnKind k, const Csr& a, const GcnProblem& p, const HostInputs& h, std::size_t workspace_bytes,
             cudaStream_t stream)
      : x(h.x.size()), w(h.w.size()), b(h.b.size()), z(h.z.size()), out(std::size_t(p.v) * std::size_t(p.f_out)),
        workspace(workspace_bytes), rows(a.rows), nnz(a.nnz()) {
    if (uses_graph(k)) {
      indptr = DeviceBuffer<int>(a.indptr.size());
      indices = DeviceBuffer<int>(a.indices.size());
      values = DeviceBuffer<double>(a.values.size());
      indptr.upload(a.indptr.data());
      indices.upload(a.indices.data());
      values.upload(a.values.data());
    }
    if (x.size()) x.upload(h.x.data());
    if (w.size()) w.upload(h.w.data());
    if (b.size()) b.upload(h.b.data());
    if (z.size()) z.upload(h.z.data());
    if (workspace.size()) workspace.fill_bytes(0, stream);
  }
  DeviceCsr csr() const { return DeviceCsr{rows, rows, nnz, indptr.data(), indices.data(), values.data()}; }
  GcnArgs args() {
    GcnArgs g;
    g.x = x.size() ? x.data() : nullptr;
    g.w = w.size() ? w.data() : nullptr;
    g.b = b.size() ? b.data() : nullptr;
    if (indptr.size()) g.a = csr();
    g.z = z.size() ? z.data() : nullptr;
    g.out = out.data();
    g.workspace = workspace.size() ? workspace.data() : nullptr;
    return g;
  }
};

// Device bytes of a run: the inputs, the output (and a reference copy), A_hat, the step's
// workspace, the library's temporaries (two V x F_out for the layer pipeline, one for a reference)
// and the copy probe's two buffers.
std::size_t device_bytes(GcnKind k, const GcnProblem& p, std::size_t workspace) {
  const std::size_t vo = std::size_t(p.v) * std::size_t(p.f_out);
  std::size_t doubles = 2 * vo;  // out, the reference's output
  if (uses_x(k)) doubles += std::size_t(p.v) * std::size_t(p.f_in) + std::size_t(p.f_in) * p.f_out + p.f_out;
  if (uses_z(k)) doubles += vo;
  if (k == GcnKind::Layer) doubles += 2 * vo;
  std::size_t bytes = doubles * sizeof(double) + workspace;
  if (uses_graph(k)) bytes += std::size_t(p.v + 1) * 4 + std::size_t(p.nnz) * 12;
  return bytes;
}

const char* refusal(const GcnStep& step, const GcnProblem& p) { return step.refuses ? step.refuses(p) : nullptr; }

// The CPU float64 reference of the step's piece.
std::vector<double> cpu_reference(GcnKind k, const Csr& a, const GcnProblem& p, const HostInputs& h) {
  std::vector<double> ref(std::size_t(p.v) * std::size_t(p.f_out));
  switch (k) {
    case GcnKind::Xw: xw_cpu_f64(p.v, p.f_in, p.f_out, h.x.data(), h.w.data(), ref.data()); break;
    case GcnKind::Spmm: spmm_cpu_f64(a, p.f_out, h.z.data(), ref.data()); break;
    case GcnKind::LogSoftmax:
      ref = h.z;
      bias_log_softmax_cpu_f64(p.v, p.f_out, nullptr, ref.data());
      break;
    case GcnKind::Layer: gcn_layer_cpu_f64(a, p.f_in, p.f_out, h.x.data(), h.w.data(), h.b.data(), ref.data()); break;
  }
  return ref;
}

VerifyResult verify_step(GcnKind k, const Csr& a, const GcnProblem& p, const HostInputs& h, const double* out,
                         const double* ref, Match match) {
  switch (k) {
    case GcnKind::Xw: return verify_xw(p.v, p.f_in, p.f_out, h.x.data(), h.w.data(), out, ref, match);
    case GcnKind::Spmm: return verify_spmm(a, p.f_out, h.z.data(), out, ref, match);
    case GcnKind::LogSoftmax: return verify_bias_log_softmax(p.v, p.f_out, h.z.data(), nullptr, out, ref);
    case GcnKind::Layer: return verify_gcn_layer(a, p.f_in, p.f_out, h.x.data(), h.w.data(), h.b.data(), out, ref);
  }
  return {};
}

// The library's result for the step's piece (SpMM algorithm `alg` for the kinds that use one).
// plain: the plain bias + log_softmax kernel instead of cuDNN's (LogSoftmax, Layer).
void run_library(GcnLibrary& lib, GcnKind k, int alg, const GcnArgs& g, double* out, cudaStream_t s, bool plain = false) {
  switch (k) {
    case GcnKind::Xw: lib.xw(g.x, g.w, out, s); break;
    case GcnKind::Spmm: lib.spmm(alg, g.z, out, s); break;
    case GcnKind::LogSoftmax: lib.log_softmax(g.z, out, s, plain); break;
    case GcnKind::Layer: lib.layer(alg, g.x, g.w, g.b, out, s, plain); break;
  }
}

std::vector<double> run_step_once(const GcnStep& step, const GcnProblem& p, DeviceData& d, cudaStream_t s) {
  return run_poisoned(d.out, [&](cudaStream_t st) { step.launch(p, d.args(), st); }, s);
}

// The library's result in `out` (V x F_out, poisoned first), copied back.
std::vector<double> run_library_once(GcnLibrary& lib, GcnKind k, int alg, DeviceData& d, DeviceBuffer<double>& out,
                                     cudaStream_t s, bool plain = false) {
  return run_poisoned(out, [&](cudaStream_t st) { run_library(lib, k, alg, d.args(), out.data(), st, plain); }, s);
}

// The graph a run uses, A_hat built from it.
struct GraphData {
  std::string name, description;
  Csr a;
};

GraphData make_graph(const GcnOptions& o) {
  EdgeList g = o.graph_file.empty() ? rmat_graph(o.nodes, o.edges, o.rmat_seed) : load_snap(o.graph_file);
  check_gcn_sizes(g.nodes, o.f_in, o.f_out, o.graph_file.empty() ? "--nodes" : "--graph");
  GraphData d;
  d.name = g.name;
  d.description = describe(g);
  d.a = normalized_adjacency(g);
  return d;
}

void print_problem(const GcnStep& step, const GraphData& g, const GcnProblem& p, const GcnOptions& o) {
  const StepCost c = step_cost(step.kind(), p);
  std::printf("problem: %s, FP64\n", kind_text(step.kind()));
  std::printf("graph:   %s%s; A_hat = D^-1/2 (A + I) D^-1/2 in CSR: %d rows, %lld entries (%.2f per row)\n",
              g.description.c_str(),
              o.graph_file.empty() ? (" (R-MAT a,b,c,d = 0.57,0.19,0.19,0.05, seed " + std::to_string(o.rmat_seed) + ")").c_str()
                                   : "",
              p.v, p.nnz, double(p.nnz) / p.v);
  if (uses_graph(step.kind())) {
    const DegreeStats s = degree_stats(g.a);
    std::printf("         %s\n", describe(s).c_str());
  }
  std::printf("sizes:   V = %d, F_in = %d, F_out = %d; %.4g GFLOP, at least %s moved (%.2f FLOP/byte)\n", p.v, p.f_in,
              p.f_out, c.flops / 1e9, format_bytes(c.bytes).c_str(), c.flops / c.bytes);
}

// ---------------------------------------------------------------------------------------------
// The benchmark: one problem, verified, timed against the library.

// g: the graph the flags name, built before the banner (GcnFamily::prepare).
int run_benchmark(const GcnOptions& o, const GcnStep& step, const DeviceInfo& dev, const GraphData& g) {
  check_output_paths(o);
  const GcnProblem p = problem_of(g.a, o.f_in, o.f_out);
  if (const char* why = refusal(step, p)) throw ArgError(std::string(why) + " [" + step.info.name + "]");
  const std::size_t ws = step_workspace(step.workspace_bytes, p);
  require_memory(device_bytes(step.kind(), p, ws) + 2 * kCopyProbeBytes, dev, g.name, o.graph_file.empty() ? "--nodes/--edges/--in/--out" : "--graph/--in/--out");
  print_problem(step, g, p, o);
  if (ws > 0) std::printf("workspace: %s of this step's own buffers\n", format_bytes(double(ws)).c_str());
  std::fflush(stdout);

  Stream stream;
  const HostInputs h = make_inputs(step.kind(), p, Inputs::Random, o.seed);
  DeviceData d(step.kind(), g.a, p, h, ws, stream.s);
  const GcnArgs args = d.args();
  // The step first, once, on a poisoned output: with --no-verify its kernels are the process's
  // first (make profile relies on it); then the library.
  const std::vector<double> out = run_step_once(step, p, d, stream.s);
  DeviceBuffer<double> lib_out(d.out.size());
  GcnLibrary lib(p, d.csr(), d.z.size() ? d.z.data() : lib_out.data(), lib_out.data(), step.kind() == GcnKind::Layer,
                 stream.s);
  std::printf("library: %s; FP64\n", GcnLibrary::version().c_str());
  if (uses_graph(step.kind())) {
    std::printf("         cuSPARSE SpMM, CSR, row-major dense matrices: %d algorithms, each timed below like the step;"
                " cusparseSpMM_preprocess done once per algorithm, outside the timed runs:", lib.spmm_algorithms());
    for (int i = 0; i < lib.spmm_algorithms(); ++i) {
      std::printf(" %s (buffer %s)", lib.spmm_algorithm_name(i).c_str(), format_bytes(double(lib.spmm_buffer_bytes(i))).c_str());
    }
    std::printf("\n");
  }
  std::vector<double> ref;
  VerifyResult vr;
  if (o.verify) {
    ref = run_library_once(lib, step.kind(), lib.spmm_default(), d, lib_out, stream.s);
    vr = verify_step(step.kind(), g.a, p, h, out.data(), ref.data(), Match::Rounded);
    const std::string against = step.kind() == GcnKind::Xw           ? GcnLibrary::xw_name()
                                : step.kind() == GcnKind::Spmm       ? "cuSPARSE " + lib.spmm_algorithm_name(lib.spmm_default())
                                : step.kind() == GcnKind::LogSoftmax ? lib.log_softmax_name()
                                                                   : lib.layer_name(lib.spmm_default());
    print_check(against, vr);
  } else {
    print_check_skipped();
  }
  if (!o.dump.empty()) {
    const long long v = p.v;
    std::string files;
    auto put = [&](const char* name, const std::vector<double>& a, std::vector<long long> shape) {
      write_npy(o.dump + "/" + name, a.data(), shape);
      files += std::string(files.empty() ? "" : " ") + name;
    };
    if (uses_x(step.kind())) {
      put("x.npy", h.x, {v, p.f_in});
      put("w.npy", h.w, {p.f_in, p.f_out});
    }
    if (!h.b.empty()) put("b.npy", h.b, {p.f_out});
    if (uses_z(step.kind())) put("z.npy", h.z, {v, p.f_out});
    put("out.npy", out, {v, p.f_out});
    if (o.verify) put("ref.npy", ref, {v, p.f_out});
    if (uses_graph(step.kind())) {
      write_npy(o.dump + "/indptr.npy", g.a.indptr.data(), std::vector<long long>{v + 1});
      write_npy(o.dump + "/indices.npy", g.a.indices.data(), std::vector<long long>{p.nnz});
      write_npy(o.dump + "/values.npy", g.a.values.data(), std::vector<long long>{p.nnz});
      files += " indptr.npy indices.npy values.npy";
    }
    std::printf("dump: %s written to %s\n", files.c_str(), o.dump.c_str());
  }
  std::fflush(stdout);

  // Timing: the copy probe, the step and every baseline, the same way, in the same process.
  BenchTimer timer(o, dev, stream.s);
  const CopyBandwidth copy = timer.copy_bandwidth(kCopyProbeBytes);
  const TimeStats ts = timer.time([&](cudaStream_t s) { step.launch(p, args, s); });
  double* lo = lib_out.data();
  std::vector<TimedRow> baselines;  // [0] the headline baseline, [1] the second (if any)
  std::vector<TimedRow> extra;      // pieces shown for information
  int best = lib.spmm_default();
  if (uses_graph(step.kind())) {
    // Every SpMM algorithm, timed on the step's input (Spmm) or on a V x F_out matrix of zeros (Layer:
    // the same buffer then holds X W for the pipeline's pieces below).
    DeviceBuffer<double> piece(d.z.size() ? 0 : d.out.size());
    const double* z = d.z.size() ? d.z.data() : piece.data();
    if (piece.size()) piece.fill_bytes(0, stream.s);
    std::vector<TimeStats> at;
    for (int i = 0; i < lib.spmm_algorithms(); ++i) {
      at.push_back(timer.time([&lib, i, z, lo](cudaStream_t s) { lib.spmm(i, z, lo, s); }));
      if (at.back().median < at[std::size_t(best)].median) best = i;
    }
    std::printf("cuSPARSE SpMM algorithms (median ms):");
    for (int i = 0; i < lib.spmm_algorithms(); ++i) {
      std::printf(" %s %.4g%s", lib.spmm_algorithm_name(i).c_str(), at[std::size_t(i)].median, i == best ? " (fastest)" : "");
    }
    std::printf("\n");
    if (step.kind() == GcnKind::Spmm) {
      baselines.push_back({"cuSPARSE fastest CSR (" + lib.spmm_algorithm_name(best) + ")", at[std::size_t(best)]});
      baselines.push_back({"cuSPARSE CSR default (" + lib.spmm_algorithm_name(lib.spmm_default()) + ")",
                           at[std::size_t(lib.spmm_default())]});
    } else {
      // The pipeline a user would write: cuBLAS, cuSPARSE's fastest algorithm, and a plain bias +
      // log_softmax kernel; then the same with cuDNN's FP64 softmax (and cudnnAddTensor for the
      // bias), a second line only: cuDNN's FP64 softmax is far from the memory floor.
      baselines.push_back({lib.layer_name(best, true), timer.time([&lib, best, args, lo](cudaStream_t s) {
                             lib.layer(best, args.x, args.w, args.b, lo, s, true);
                           })});
      if (lib.have_cudnn_softmax()) {
        baselines.push_back({lib.layer_name(best), timer.time([&lib, best, args, lo](cudaStream_t s) {
                               lib.layer(best, args.x, args.w, args.b, lo, s);
                             })});
      }
      // The pipeline's pieces, each timed alone, for the reader to see where its time goes.
      double* hb = piece.data();
      extra.push_back({"  piece: " + GcnLibrary::xw_name(),
                       timer.time([&lib, args, hb](cudaStream_t s) { lib.xw(args.x, args.w, hb, s); })});
      extra.push_back({"  piece: cuSPARSE " + lib.spmm_algorithm_name(best), at[std::size_t(best)]});
      extra.push_back({"  piece: " + lib.log_softmax_name() + " (no bias)",
                       timer.time([&lib, hb, lo](cudaStream_t s) { lib.log_softmax(hb, lo, s); })});
      if (lib.have_cudnn_softmax()) {
        extra.push_back({"  piece: " + lib.log_softmax_name(true) + " (no bias)",
                         timer.time([&lib, hb, lo](cudaStream_t s) { lib.log_softmax(hb, lo, s, true); })});
      }
    }
  } else if (step.kind() == GcnKind::Xw) {
    baselines.push_back({GcnLibrary::xw_name(), timer.time([&lib, args, lo](cudaStream_t s) { lib.xw(args.x, args.w, lo, s); })});
  } else {
    // The plain kernel (one thread per row) first, cuDNN's FP64 softmax second (as in the layer).
    baselines.push_back({lib.log_softmax_name(true),
                         timer.time([&lib, args, lo](cudaStream_t s) { lib.log_softmax(args.z, lo, s, true); })});
    if (lib.have_cudnn_softmax()) {
      baselines.push_back({lib.log_softmax_name(), timer.time([&lib, args, lo](cudaStream_t s) { lib.log_softmax(args.z, lo, s); })});
    }
  }
  std::printf("copy:   cudaMemcpyAsync device to device of %s: %.4g ms median, %.1f GB/s (bytes read + written)\n",
              format_bytes(double(copy.bytes)).c_str(), copy.t.median, copy.gbps());
  const StepCost c = step_cost(step.kind(), p);
  const double floor_ms = c.bytes / (copy.gbps() * 1e9) * 1e3;
  std::printf("floor:  the minimum bytes at the copy bandwidth: %.4g ms; this step takes %.2fx that\n", floor_ms,
              ts.median / floor_ms);
  print_timing_plan(o);
  std::vector<TimedRow> rows{{std::string(step.info.name) + " (" + step.info.title + ")", ts}};
  rows.insert(rows.end(), baselines.begin(), baselines.end());
  for (const TimedRow& r : extra) rows.push_back(r);
  rows.push_back({"memory floor (min bytes at copy GB/s)", TimeStats{floor_ms, floor_ms, floor_ms}});
  std::vector<RatioColumn> ratios;
  const char* ref_header = step.kind() == GcnKind::Xw           ? "% cuBLAS"
                           : step.kind() == GcnKind::Spmm       ? "% fastest"
                           : step.kind() == GcnKind::LogSoftmax ? "% kernel"
                                                              : "% pipeline";
  ratios.push_back({ref_header, baselines[0].t.median});
  if (baselines.size() > 1) {
    ratios.push_back({step.kind() == GcnKind::Spmm ? "% default" : "% cuDNN", baselines[1].t.median});
  }
  int width = 36;
  for (const TimedRow& r : rows) width = std::max(width, int(r.name.size()));
  print_timing_table(rows, ratios, c.flops, c.bytes, 0.0, width, copy.gbps());

  ResultRow r = make_result_row(dev, step.info, o, g.name, p.v, p.f_out, p.f_in, ts, c.flops,
                                c.bytes, vr);
  r.pct_of_peak = 0;  // the FP64 peak is not this part's ceiling (every piece is bandwidth-bound); copy_gbps is
  r.peak_gflops = 0;
  r.copy_gbps = copy.gbps();
  return finish_benchmark(o, r, baselines, vr);
}

// ---------------------------------------------------------------------------------------------
// The self-test: awkward graphs and the default one, against the CPU in float64.

struct Case {
  std::string what;
  std::function<EdgeList()> graph;
  bool large;  // skipped by --quick
};

EdgeList edge_list(const std::string& name, int nodes, std::vector<Edge> edges) {
  EdgeList g;
  g.name = name;
  g.nodes = nodes;
  g.edges = std::move(edges);
  return g;
}

std::vector<Case> self_test_cases() {
  std::vector<Case> cases;
  cases.push_back({"V=1", [] { return edge_list("single", 1, {}); }, false});
  cases.push_back({"isolated nodes", [] {
                     // A triangle, one edge, and two nodes with no edges at all (rows of one entry: the diagonal).
                     return edge_list("isolated", 7, {{0, 1}, {1, 2}, {2, 0}, {3, 4}});
                   },
                   false});
  cases.push_back({"chain 1000", [] {
                     std::vector<Edge> e;
                     for (int i = 0; i + 1 < 1000; ++i) e.push_back({i, i + 1});
                     return edge_list("chain", 1000, e);
                   },
                   false});
  cases.push_back({"complete 33", [] {
                     std::vector<Edge> e;
                     for (int u = 0; u < 33; ++u)
                       for (int v = 0; v < 33; ++v)
                         if (u != v) e.push_back({u, v});
                     return edge_list("complete33", 33, e);
                   },
                   false});
  for (int n : {1500, 70001}) {
    cases.push_back({"star " + std::to_string(n), [n] {
                       // Every node points at node n / 2: one row of n entries (> 1024; > 65536 for the larger).
                       std::vector<Edge> e;
                       for (int u = 0; u < n; ++u)
                         if (u != n / 2) e.push_back({u, n / 2});
                       return edge_list("star" + std::to_string(n), n, e);
                     },
                     n > 10000});
  }
  cases.push_back({"R-MAT 1009/7919", [] { return rmat_graph(1009, 7919, 7); }, false});
  cases.push_back({"R-MAT 30011/240007", [] { return rmat_graph(30011, 240007, 11); }, false});
  cases.push_back({"default R-MAT", [] { return rmat_graph(kWebStanfordNodes, kWebStanfordEdges, kDefaultRmatSeed); }, true});
  return cases;
}

struct Features {
  int f_in, f_out;
  bool small_only;  // only on the graphs --quick runs
};
const Features kFeatures[] = {{128, 16, false}, {19, 5, true}};

int run_self_test(const GcnOptions& o, const GcnStep& step, const DeviceInfo& dev) {
  std::printf("self-test %s (%s): %s; %s graphs x features {128 -> 16, 19 -> 5}; inputs %s; reference: CPU float64"
              " (and the libraries checked against it)\n",
              step.info.name, step.info.title, kind_text(step.kind()), o.quick ? "small" : "all",
              step.kind() == GcnKind::Xw ? "integers (exact) and random (tolerance)" : "random (tolerance)");
  Stream stream;
  SelfTestTally tally;
  std::uint64_t case_seed = o.seed;
  for (const Case& c : self_test_cases()) {
    if (o.quick && c.large) continue;
    const EdgeList el = c.graph();
    const Csr a = normalized_adjacency(el);
    for (const Features& f : kFeatures) {
      if (f.small_only && c.large) continue;
      const GcnProblem p = problem_of(a, f.f_in, f.f_out);
      char label[160];
      std::snprintf(label, sizeof label, "%-20s V=%-6d nnz=%-8lld %3d -> %-3d", c.what.c_str(), p.v, p.nnz, p.f_in, p.f_out);
      if (const char* why = refusal(step, p)) {
        tally.skip(label, why);
        continue;
      }
      const std::size_t ws = step_workspace(step.workspace_bytes, p);
      std::vector<std::pair<Inputs, Match>> variants{{Inputs::Random, Match::Rounded}};
      if (step.kind() == GcnKind::Xw) variants.insert(variants.begin(), {Inputs::SmallInts, Match::Exact});
      for (const auto& [inputs, match] : variants) {
        ++case_seed;
        require_memory(device_bytes(step.kind(), p, ws), dev, c.what, "--self-test");
        const HostInputs h = make_inputs(step.kind(), p, inputs, case_seed);
        DeviceData d(step.kind(), a, p, h, ws, stream.s);
        const std::vector<double> ref = cpu_reference(step.kind(), a, p, h);
        // The libraries against the CPU: every SpMM algorithm for the kinds with a graph.
        std::string notes;
        bool ok = true;
        {
          DeviceBuffer<double> scratch(d.out.size());
          GcnLibrary lib(p, d.csr(), d.z.size() ? d.z.data() : scratch.data(), scratch.data(), step.kind() == GcnKind::Layer,
                         stream.s);
          const int algs = uses_graph(step.kind()) ? lib.spmm_algorithms() : 1;
          // Both forms of the log_softmax (cuDNN's and the plain kernel) where there are two.
          const bool two = (step.kind() == GcnKind::LogSoftmax || step.kind() == GcnKind::Layer) && lib.have_cudnn_softmax();
          int lib_fail = 0;
          for (int i = 0; i < algs; ++i) {
            for (int plain = 0; plain <= (two ? 1 : 0); ++plain) {
              const std::vector<double> lo = run_library_once(lib, step.kind(), i, d, scratch, stream.s, plain == 1);
              const VerifyResult lv = verify_step(step.kind(), a, p, h, lo.data(), ref.data(), match);
              if (!lv.passed) {
                ++lib_fail;
                std::printf("      library (%s%s): %s\n%s", uses_graph(step.kind()) ? lib.spmm_algorithm_name(i).c_str() : "",
                            lib.log_softmax_name(plain == 1).c_str(), lv.summary().c_str(), lv.details().c_str());
              }
            }
          }
          notes = "; library vs CPU: " + std::string(lib_fail ? "FAILED" : "ok") +
                  (uses_graph(step.kind()) ? " (" + std::to_string(algs) + " SpMM algorithms)" : "");
          ok = lib_fail == 0;
        }
        const std::vector<double> out = run_step_once(step, p, d, stream.s);
        const VerifyResult vr = verify_step(step.kind(), a, p, h, out.data(), ref.data(), match);
        ok = ok && vr.passed;
        // A step with a workspace runs again on the same workspace (what it left there, counters
        // included): the same bits, or the case fails.
        if (ws > 0) {
          const std::vector<double> again = run_step_once(step, p, d, stream.s);
          const bool same = std::memcmp(again.data(), out.data(), out.size() * sizeof(double)) == 0;
          if (!same) std::printf("      a second run on the same workspace gave other bits\n");
          ok = ok && same;
          notes += same ? "; run twice: same bits" : "; run twice: OTHER BITS";
        }
        char what[200];
        std::snprintf(what, sizeof what, "%s %-6s", label, inputs == Inputs::Random ? "random" : "ints");
        tally.report(ok, what, vr, "CPU", notes + " (out poisoned)");
      }
    }
  }
  return tally.finish(step.info);
}

class GcnFamily : public Family {
 public:
  explicit GcnFamily(const GcnStep& step) : step_(step) {}
  CommonOptions parse(int argc, const char* const* argv) override {
    o_ = parse_gcn_args(argc, argv);
    return o_;
  }
  std::string usage(const std::string& program) const override { return gcn_usage(program); }
  void prepare() override {
    if (!o_.self_test) graph_ = make_graph(o_);  // a malformed --graph file fails here, before the banner
  }
  int self_test(const DeviceInfo& dev) override { return run_self_test(o_, step_, dev); }
  int benchmark(const DeviceInfo& dev) override { return run_benchmark(o_, step_, dev, graph_); }

 private:
  GcnStep step_;
  GcnOptions o_;
  GraphData graph_;
};

}  // namespace

int gcn_main(int argc, char** argv, const GcnStep& step) {
  GcnKind kind{};
  std::string why = check_declaration(step.info, "gcn", {Math::Fp64});
  if (why.empty() && !gcn_kind_of(step.info.op, &kind)) {
    why = std::string("declares OP '") + step.info.op + "', which is no piece of the GCN layer (valid: xw, spmm, log_softmax, layer)";
  }
  if (!why.empty()) return declaration_error(step.info, why);
  GcnFamily family(step);
  return harness_main(argc, argv, step.info, family);
}

}  // namespace tut
