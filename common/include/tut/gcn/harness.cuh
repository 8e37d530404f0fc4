// The GCN harness: everything a Part III chapter needs that is not its own kernel. A chapter's
// main.cu is one call:
//
//   int main(int argc, char** argv) {
//     return tut::gcn_main(argc, argv, {TUT_THIS_STEP, my_launcher});
//   }
//
// One GCN layer, FP64 (docs/gcn-layer.md):  out = log_softmax(A_hat (X W) + b). A step solves
// one of its four pieces (GcnKind, from the OP of its CMake line); the harness builds the graph (graph.hpp), the inputs, the
// reference, the library baselines, and times the step against them with L2 flushed.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "tut/core/check.cuh"
#include "tut/core/step.hpp"

namespace tut {

// Which piece of the layer a step computes. Every matrix is row-major and packed (row r of a
// V x F matrix starts at r * F).
enum class GcnKind {
  Xw,          // out = X W                          X: V x F_in, W: F_in x F_out, out: V x F_out
  Spmm,        // out = A_hat Z                      Z: V x F_out (F = F_out), out: V x F_out
  LogSoftmax,  // out = log_softmax(Z), row by row   Z: V x F_out, out: V x F_out (no bias)
  Layer,       // out = log_softmax(A_hat (X W) + b) the whole layer; b: F_out
};

// The piece an OP names (xw, spmm, log_softmax, layer: chapters/CMakeLists.txt); false for another word.
bool gcn_kind_of(const char* op, GcnKind* kind);

// The sizes of a run: V nodes, A_hat with nnz entries (edges + V: the self-loops), F_in -> F_out.
struct GcnProblem {
  int v = 0;
  long long nnz = 0;
  int f_in = 0;
  int f_out = 0;
};

// A_hat on the device, CSR with one row per target node (graph.hpp): row r's column indices
// (ascending) and values are indices/values[indptr[r] .. indptr[r + 1]); every row holds at least
// its diagonal entry. rows == cols == V; indptr has V + 1 entries; nnz < 2^31.
struct DeviceCsr {
  int rows = 0;
  int cols = 0;
  long long nnz = 0;
  const int* indptr = nullptr;
  const int* indices = nullptr;
  const double* values = nullptr;
};

// Device pointers a step works on; what a kind does not use is null. out is poisoned with NaN
// before a checked run, so every element must be written; the inputs are never written.
struct GcnArgs {
  const double* x = nullptr;  // Xw, Layer: V x F_in
  const double* w = nullptr;  // Xw, Layer: F_in x F_out
  const double* b = nullptr;  // Layer: F_out
  DeviceCsr a;                // Spmm, Layer
  const double* z = nullptr;  // Spmm, LogSoftmax: V x F_out
  double* out = nullptr;      // V x F_out
  void* workspace = nullptr;  // the step's scratch memory (workspace_bytes), null when none
};

// Computes the step's piece on `stream`; checks its launches with TUT_CHECK_LAUNCH().
using GcnLauncher = void (*)(const GcnProblem& p, const GcnArgs& a, cudaStream_t stream);
// Scratch bytes the step needs for p (the layer's X W, say); null: none. The harness allocates it
// zeroed before the first launch and hands every launch the same buffer: counters kept there must
// be left at zero again by each launch (the self-test runs such a step twice and wants the same bits).
using GcnWorkspace = std::size_t (*)(const GcnProblem& p);
// nullptr when the step runs p; otherwise one line saying which sizes it supports ("F_out must be
// 16 (valid: --out 16)"). The benchmark then exits 2 with it; the self-test SKIPs the case.
using GcnRefusal = const char* (*)(const GcnProblem& p);

struct GcnStep {
  StepInfo info;  // what the step is (core/step.hpp): main.cu passes TUT_THIS_STEP; its op is the piece
  GcnLauncher launch;
  GcnRefusal refuses = nullptr;          // null: every size
  GcnWorkspace workspace_bytes = nullptr;

  GcnKind kind() const {  // gcn_main refuses an op that names no piece before anything runs
    GcnKind k = GcnKind::Layer;
    gcn_kind_of(info.op, &k);
    return k;
  }
};

// Parses the flags, checks and times the step against the libraries, prints the report, appends
// the CSV row; or runs the self-test. Returns the process exit code (see --help).
int gcn_main(int argc, char** argv, const GcnStep& step);

}  // namespace tut
