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

// Device pointers a step works on. x, w: the inputs (NCHW, KCRS); y: the output (NKPQ), poisoned
// with NaN before a checked run, so every element must be written. workspace: scratch memory of
// the size the step's `workspace_bytes` asked for (null when it asks for none). bias (K floats) and
// residual (NKPQ, like y): the fused epilogue's extra inputs (chapter 21); null for other steps.
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
  // says the epilogue (conv or conv_bias_relu). Its math Tf32 (tensor cores, chapter 23) makes the
  // baselines cuDNN in its default math (TF32 allowed) and the tolerance TF32's
  // (tut/core/verify.hpp); the check is still against true FP32 (cuDNN with FMA math), and the report
  // adds the difference from cuDNN's TF32 result.
  StepInfo info;
  ConvLauncher launch;
  ConvWorkspace workspace_bytes = nullptr;
  bool supports_dilation = true;  // false: a dilated problem is refused (exit 2), its self-test case SKIPs
  // With an epilogue: the unfused pipeline the step is also timed against (a convolution, then a
  // separate epilogue kernel), and its name. It must compute what `launch` computes.
  ConvLauncher unfused = nullptr;
  const char* unfused_name = nullptr;

  ConvEpilogue epilogue() const {
    return std::strcmp(info.op, "conv_bias_relu") == 0 ? ConvEpilogue::BiasRelu : ConvEpilogue::None;
  }
};

// Parses the flags, checks and times the step against cuDNN, prints the report, appends the CSV
// row; or runs the self-test. Returns the process exit code (see --help).
int conv_main(int argc, char** argv, const ConvStep& step);

}  // namespace tut
