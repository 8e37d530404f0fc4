// The convolution harness: everything a Part II chapter needs that is not its own kernel. A
// chapter's main.cu is one call:
//
//   int main(int argc, char** argv) {
//     return tut::conv_main(argc, argv, {TUT_THIS_STEP, my_launcher});
//   }
//
// (TUT_THIS_STEP, what the step is, comes from the chapter's tut_add_chapter line in CMake.)
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstring>

#include "tut/conv/problem.hpp"
#include "tut/core/check.cuh"
#include "tut/core/step.hpp"
#include "tut/core/verify.hpp"

namespace tut {

// Device pointers a step works on. x, w: the inputs (NCHW, KCRS; a step of layout nhwc: NHWC, KRSC);
// y: the output (NKPQ; nhwc: NPQK), poisoned with NaN before a checked run, so every element must be
// written. workspace: scratch memory of the size the step's `workspace_bytes` asked for (null when
// it asks for none). bias (K floats) and residual (NKPQ, like y): the fused epilogue's extra inputs
// (chapter 21); null for other steps.
struct ConvArgs {
  const float* x = nullptr;
  const float* w = nullptr;
  float* y = nullptr;
  void* workspace = nullptr;
  const float* bias = nullptr;
  const float* residual = nullptr;
};

// Computes y = conv(x, w) for problem p on `stream`. A launcher checks its launches with
// TUT_CHECK_LAUNCH().
using ConvLauncher = void (*)(const ConvProblem& p, const ConvArgs& a, cudaStream_t stream);
// Scratch bytes a step needs for problem p (im2col's column matrix, say); null: none.
using ConvWorkspace = std::size_t (*)(const ConvProblem& p);

// What a step applies to the convolution before its store. BiasRelu (chapter 21, OP conv_bias_relu):
//   y = max(conv(x, w) + bias[k] (+ residual[n][k][p][q]), 0)
// with the residual only when the run asks for it (--residual; ConvArgs::residual non-null).
enum class ConvEpilogue { None, BiasRelu };

struct ConvStep {
  // What the step is (core/step.hpp), from its CMake line: main.cu passes TUT_THIS_STEP. Its op
  // says the epilogue (conv or conv_bias_relu). Its math Tf32 (tensor cores, chapters 23-24) makes
  // the baselines cuDNN in its default math (TF32 allowed) and the tolerance TF32's
  // (tut/core/verify.hpp); the check is still against true FP32 (cuDNN with FMA math), and the report
  // adds the difference from cuDNN's TF32 result. Its layout nhwc (chapter 24) hands the step
  // channels-last tensors: ConvArgs' x is NHWC, w KRSC and y NPQK.
  StepInfo info;
  ConvLauncher launch;
  ConvWorkspace workspace_bytes = nullptr;
  // With an epilogue: the unfused pipeline the step is also timed against (a convolution, then a
  // separate epilogue kernel), and its name. It must compute what `launch` computes.
  ConvLauncher unfused = nullptr;
  const char* unfused_name = nullptr;
  // Null when the step computes p; otherwise one line saying why not, with the valid values
  // ("3x3 filters at stride 1 (valid: R = S = 3, stride 1:1, dilation 1:1)"). A benchmark of such a
  // problem exits 2 with it; the self-test reports the case skipped. Null: every problem.
  const char* (*unsupported)(const ConvProblem& p) = nullptr;
  // The step's own error bound tau on p, for arithmetic that is not a C*R*S-term dot product
  // (Winograd's transforms, chapter 22; docs/measuring.md derives it). Null: the math's bound.
  double (*tolerance)(const ConvProblem& p) = nullptr;
  // True: the self-test's integer inputs must give the reference's result exactly (any summation
  // order of small integers is exact). False (transforms with fractions such as 1/6): the integer
  // cases are checked with the tolerance, like the random ones.
  bool exact_on_integers = true;
  // With `tolerance`: the threshold of the norm-wise check, where the worst-case bound is far above
  // the typical error (a model, docs/measuring.md); null: `tolerance` for both checks.
  double (*norm_tolerance)(const ConvProblem& p) = nullptr;
  // A step whose plan picks one of several code paths (chapter 22: one fused kernel, or three
  // kernels) names them here, and the self-test checks every case on each: force_path(i) makes the
  // launcher (and the workspace and tolerance functions) take path i, force_path(-1) the plan's
  // choice again. Null: one path.
  const char* const* paths = nullptr;
  int num_paths = 0;
  void (*force_path)(int path) = nullptr;

  ConvEpilogue epilogue() const {
    return std::strcmp(info.op, "conv_bias_relu") == 0 ? ConvEpilogue::BiasRelu : ConvEpilogue::None;
  }
  Layout layout() const { return std::strcmp(info.layout, "nhwc") == 0 ? Layout::Nhwc : Layout::Nchw; }
};

// Parses the flags, checks and times the step against cuDNN, prints the report, appends the CSV
// row; or runs the self-test. Returns the process exit code (see --help).
int conv_main(int argc, char** argv, const ConvStep& step);

}  // namespace tut
