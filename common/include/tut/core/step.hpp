// What a step is, declared once: its chapter line in CMake (cmake/TutChapters.cmake) says it, CMake
// checks it against the family's vocabulary and hands it to the binary as compile definitions, and
// main.cu passes it whole to its family's *_main as TUT_THIS_STEP. The harness writes it into every
// CSV row (columns part, math, op, tags), and the bench and plot scripts read it there and in
// <build>/chapters.tsv: no tool decides what a step is from its number or from a name's text.
// docs/architecture.md follows a step from its CMake line to its README table.
#pragma once

#include <initializer_list>
#include <string>

#include "tut/core/verify.hpp"

namespace tut {

struct StepInfo {
  const char* name;   // "09_double_buffering", the folder (a baseline: "cublas_sgemm")
  const char* title;  // "double buffering"
  const char* part;   // the family: "gemm", "conv" or "gcn"
  // The arithmetic the step computes in: FP32 FMA, TF32 tensor cores (Parts I and II), FP64 (Part III).
  Math math = Math::Fp32;
  // What the step computes, in the family's words: gemm | conv, conv_bias_relu (the fused epilogue) |
  // xw, spmm, log_softmax, layer (the GCN layer's pieces).
  const char* op = "";
  // Space-separated words for what the step does beyond its op: "suite" (runs chapter 10's suite of
  // small and odd GEMMs), "planned" (chooses a plan per problem), "all_layers" (runs every layer of
  // the conv table), "layer_chart" (shown in Part II's per-layer chart and table).
  const char* tags = "";
  // Nonzero: the step's kernels exist for this one compute capability only (90: built for sm_90a,
  // chapter 12). On another GPU the run says so in one line: a self-test is skipped (exit 77), a
  // benchmark exits 3.
  int only_cc = 0;
  // Where the step's tensors keep their channels (conv: "nchw" or "nhwc", from CMake's LAYOUT); ""
  // for a family without layouts.
  const char* layout = "";

  bool has_tag(const std::string& tag) const;
};

// "fp32", "tf32", "fp64": how CMake's MATH and the CSV's math column spell a Math.
const char* math_key(Math m);

// The checks every family's *_main makes before anything runs: the step's part is `part` and its
// math one of `maths`. Returns why not (empty when it is); declaration_error (core/harness.cuh)
// reports it.
std::string check_declaration(const StepInfo& step, const char* part, std::initializer_list<Math> maths);

}  // namespace tut

// The step this binary was built for, from the definitions that tut_add_chapter / tut_add_baseline
// give its target (TUT_STEP_NAME, TUT_STEP_TITLE, TUT_STEP_PART, TUT_STEP_MATH, TUT_STEP_OP,
// TUT_STEP_TAGS, TUT_STEP_ONLY_CC, TUT_STEP_LAYOUT). A chapter's main.cu hands it to its family:
//   return tut::conv_main(argc, argv, {TUT_THIS_STEP, my_launcher});
#define TUT_THIS_STEP                                                                                          \
  ::tut::StepInfo { TUT_STEP_NAME, TUT_STEP_TITLE, TUT_STEP_PART, TUT_STEP_MATH, TUT_STEP_OP, TUT_STEP_TAGS, \
                    TUT_STEP_ONLY_CC, TUT_STEP_LAYOUT }
