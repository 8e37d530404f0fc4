// The GEMM harness: everything a Part I chapter needs that is not its own kernel. A chapter's
// main.cu is one call:
//
//   int main(int argc, char** argv) {
//     return tut::gemm_main(argc, argv, {TUT_THIS_STEP, my_launcher});
//   }
//
// (TUT_THIS_STEP, what the step is, comes from the chapter's tut_add_chapter line in CMake.) A step
// that chooses how to run each problem (chapter 10) hands over a GemmPlanner instead of a launcher.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <vector>

#include "tut/core/check.cuh"
#include "tut/core/step.hpp"
#include "tut/core/verify.hpp"
#include "tut/gemm/problem.hpp"

namespace tut {

// Computes C = alpha*A*B + beta*C for the row-major problem p on `stream`. A, B and C are device
// pointers. With beta == 0, C must not be read (BLAS semantics: it may hold NaN). A launcher checks
// its launches with TUT_CHECK_LAUNCH().
using GemmLauncher = void (*)(const GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream);

// How a planning step runs one problem: which of its tile shapes (an index into tile_names()) and
// into how many parts it splits the reduction over K. tile < 0 or splits < 1 mean "the step's rule
// decides"; --tile and --split force them.
struct GemmChoice {
  int tile = -1;
  int splits = 0;
  bool operator==(const GemmChoice& o) const { return tile == o.tile && splits == o.splits; }
};

// The wave arithmetic of one choice, for the report (the harness prints it) and for the rule.
struct GemmWaves {
  long long tiles = 0;       // blocks of the output tile grid
  long long blocks = 0;      // tiles x splits: blocks launched
  int blocks_per_sm = 0;     // how many fit on one SM at once (the occupancy, from the CUDA runtime)
  int sms = 0;
  long long k_steps = 0;     // K steps of the longest split (BLOCK_K columns of A each)
  double model_us = 0;       // the rule's modelled time (its README derives it)
  std::string note;          // anything else the plan does, for the report ("" if nothing)
  long long per_wave() const { return (long long)blocks_per_sm * sms; }
  double waves() const { return double(blocks) / double(per_wave()); }
  // The last wave's share of its slots that has a block (1.0: full).
  double last_wave_fill() const {
    const long long rest = blocks % per_wave();
    return rest == 0 ? 1.0 : double(rest) / double(per_wave());
  }
};

// A step that plans each problem (chapter 10). Everything it reports is computed from the problem
// and the device's properties; the harness prints it, times it and tests every choice.
class GemmPlanner {
 public:
  virtual ~GemmPlanner() = default;
  // The names --tile accepts ("128x128", ...), in index order.
  virtual std::vector<std::string> tile_names() const = 0;
  // The most splits p allows (>= 1): one K step per split at the least, and the step's own cap.
  virtual int max_splits(const GemmProblem& p) const = 0;
  // The choice for p: what `forced` fixes, the rule's pick for the rest. Both fields set.
  virtual GemmChoice choose(const GemmProblem& p, GemmChoice forced) const = 0;
  // The wave arithmetic and the modelled time of a (complete) choice.
  virtual GemmWaves waves(const GemmProblem& p, GemmChoice c) const = 0;
  // Scratch memory the choice needs (0: none). The harness allocates it zeroed before the first
  // launch and hands the same memory to every launch of that problem and choice; a step that keeps
  // counters there must leave them zero when a launch ends.
  virtual std::size_t workspace_bytes(const GemmProblem& p, GemmChoice c) const = 0;
  virtual void launch(const GemmProblem& p, GemmChoice c, const float* A, const float* B, float* C, void* workspace,
                      cudaStream_t stream) const = 0;
};

struct GemmStep {
  // What the step is (core/step.hpp), from its CMake line: main.cu passes TUT_THIS_STEP. Its math
  // Tf32 (the tensor-core chapters) makes the baseline cuBLAS with CUBLAS_COMPUTE_32F_FAST_TF32 and
  // the tolerance TF32's (tut/core/verify.hpp); the check is still against true FP32 (cuBLAS FP32),
  // and the report adds the difference from cuBLAS TF32. The tag "planned" goes with a planner.
  StepInfo info;
  GemmLauncher launch = nullptr;         // one kernel for every problem (chapters 01-09, 11, 12)
  const GemmPlanner* planner = nullptr;  // or a plan per problem (chapter 10)

  GemmStep(const StepInfo& info_, GemmLauncher launch_) : info(info_), launch(launch_) {}
  GemmStep(const StepInfo& info_, const GemmPlanner& planner_) : info(info_), planner(&planner_) {}
};

// Parses the flags, checks and times the step against cuBLAS, prints the report, appends the CSV
// row; or runs the self-test. Returns the process exit code (see --help).
int gemm_main(int argc, char** argv, const GemmStep& step);

// The baseline: cuBLAS SGEMM with CUBLAS_COMPUTE_32F (true FP32, no TF32), on a process-wide handle.
void cublas_sgemm(const GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream);
const char* cublas_sgemm_name();  // "cuBLAS FP32 (no TF32)"
// The TF32 baseline: the same call with CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores, TF32 inputs).
void cublas_tf32_gemm(const GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream);
const char* cublas_tf32_name();  // "cuBLAS TF32 (CUBLAS_COMPUTE_32F_FAST_TF32)"

// "128x128 split 4": a choice as the report and the CSV's config column name it.
std::string choice_label(const GemmPlanner& planner, GemmChoice c);

}  // namespace tut
