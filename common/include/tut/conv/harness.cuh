// The convolution harness: everything a Part II chapter needs that is not its own kernel. A
// chapter's main.cu is one call:
//
//   int main(int argc, char** argv) {
//     return tut::conv_main(argc, argv, {TUT_STEP_NAME, TUT_STEP_TITLE, my_launcher});
//   }
//
// (TUT_STEP_NAME and TUT_STEP_TITLE come from the chapter's tut_add_chapter line in CMake.)
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "tut/conv/problem.hpp"
#include "tut/core/check.cuh"
#include "tut/core/verify.hpp"

namespace tut {

// Device pointers a step works on. x, w: the inputs (NCHW, KCRS); y: the output (NKPQ), poisoned
// with NaN before a checked run, so every element must be written. workspace: scratch memory of
// the size the step's `workspace_bytes` asked for (null when it asks for none). bias (K floats) and
// residual (NKPQ, like y): the fused epilogue's extra inputs (chapter 20); null for other steps.
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

// What a step applies to the convolution before its store. BiasRelu (chapter 20):
//   y = max(conv(x, w) + bias[k] (+ residual[n][k][p][q]), 0)
// with the residual only when the run asks for it (--residual; ConvArgs::residual non-null).
enum class ConvEpilogue { None, BiasRelu };

struct ConvStep {
  const char* name;   // "15_implicit_gemm_naive"
  const char* title;  // "implicit GEMM, naive"
  ConvLauncher launch;
  ConvWorkspace workspace_bytes = nullptr;
  bool supports_dilation = true;  // false: a dilated problem is refused (exit 2), its self-test case SKIPs
  ConvEpilogue epilogue = ConvEpilogue::None;
  // With an epilogue: the unfused pipeline the step is also timed against (a convolution, then a
  // separate epilogue kernel), and its name. It must compute what `launch` computes.
  ConvLauncher unfused = nullptr;
  const char* unfused_name = nullptr;
  // The math the step computes in. Math::Tf32 (tensor cores, chapter 21) makes the baselines cuDNN
  // in its default math (TF32 allowed) and the tolerance TF32's (tut/core/verify.hpp); the check is
  // still against true FP32 (cuDNN with FMA math), and the report adds the difference from cuDNN's
  // TF32 result. main.cu passes TUT_STEP_MATH, which CMake defines from the chapter's MATH.
  Math math = Math::Fp32;
};

// Parses the flags, checks and times the step against cuDNN, prints the report, appends the CSV
// row; or runs the self-test. Returns the process exit code (see --help).
int conv_main(int argc, char** argv, const ConvStep& step);

}  // namespace tut
