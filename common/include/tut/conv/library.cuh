// The vendor side of Part II: the reference every step is checked against and the baselines every
// step is timed against, in the same process.
//
// With cuDNN (found at build time, TUT_HAVE_CUDNN): all of it in FP32 with CUDNN_FMA_MATH (no
// TF32). The reference is IMPLICIT_PRECOMP_GEMM; the baselines are cuDNN's fastest FMA algorithm
// on this problem (Winograd and FFT included: the candidates are those
// cudnnFindConvolutionForwardAlgorithmEx runs, each then timed by the harness like a step), and
// IMPLICIT_PRECOMP_GEMM, the same method as the chapters'.
// Without cuDNN: the reference and the one baseline are im2col + cuBLAS SGEMM (FP32, no TF32),
// and every output says so.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <string>

#include "tut/conv/problem.hpp"
#include "tut/core/device_buffer.cuh"

namespace tut {

// im2col + cuBLAS SGEMM (FP32, no TF32) + a copy back to NKPQ: the reference of a build without
// cuDNN, and a second opinion in the self-test of a build with it. Its buffers (the column matrix
// and the GEMM's output) are allocated once, here.
class Im2colCublasConv {
 public:
  explicit Im2colCublasConv(const ConvProblem& p);
  std::size_t workspace() const { return col_.bytes() + y_gemm_.bytes(); }
  void run(const float* x, const float* w, float* y, cudaStream_t stream);
  // The same, then y = max(y + bias[k] (+ residual), 0) in a second kernel.
  void run_fused(const float* x, const float* w, const float* bias, const float* residual, float* y,
                 cudaStream_t stream);

 private:
  ConvProblem p_;
  DeviceBuffer<float> col_, y_gemm_;
};

class ConvLibrary {
 public:
  // Sets up problem p. With `rank`, also runs cuDNN's search over its algorithms on x and w into y
  // (device buffers of p's sizes; y's contents are overwritten). The search and the algorithms may
  // use up to `workspace_limit` bytes of workspace.
  ConvLibrary(const ConvProblem& p, bool rank, const float* x, const float* w, float* y, std::size_t workspace_limit,
              cudaStream_t stream);
  ~ConvLibrary();
  ConvLibrary(const ConvLibrary&) = delete;
  ConvLibrary& operator=(const ConvLibrary&) = delete;

  static bool have_cudnn();
  static std::string version();  // "cuDNN 9.14.0" or "no cuDNN in this build"

  std::string reference_name() const;
  void run_reference(const float* x, const float* w, float* y, cudaStream_t stream);

  // The algorithms to time as baselines. With `rank`: every algorithm cuDNN's search ran with FMA
  // math on this problem (within the workspace limit), the reference's included; the harness times
  // each the way it times a step and calls the fastest "cuDNN fastest FMA" (the search's own
  // ranking comes from one run of each and moves between processes). Without `rank`, or without
  // cuDNN: the reference's algorithm alone.
  int algorithms() const;
  std::string algorithm_name(int i) const;      // "FFT_TILING", "im2col + cuBLAS"
  std::size_t algorithm_workspace(int i) const;  // bytes
  int reference_algorithm() const;               // the reference's index among them
  void run_algorithm(int i, const float* x, const float* w, float* y, cudaStream_t stream);

  // The library's convolution with chapter 20's epilogue, y = max(conv + bias[k] (+ residual), 0):
  // cuDNN's cudnnConvolutionBiasActivationForward (IMPLICIT_PRECOMP_GEMM, which cuDNN requires for
  // a fused ReLU; FMA math), or im2col + cuBLAS + an epilogue kernel without cuDNN. residual may be null.
  std::string fused_name() const;
  void run_fused(const float* x, const float* w, const float* bias, const float* residual, float* y,
                 cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tut
