// The vendor side of Part II: the reference every step is checked against and the baselines every
// step is timed against, in the same process.
//
// With cuDNN (found at build time, TUT_HAVE_CUDNN): the reference is IMPLICIT_PRECOMP_GEMM in FP32
// with CUDNN_FMA_MATH (no TF32), for every step. The baselines are in the step's math:
//   Math::Fp32: CUDNN_FMA_MATH. cuDNN's fastest FMA algorithm on this problem (Winograd and FFT
//     included: the candidates are those cudnnFindConvolutionForwardAlgorithmEx runs, each then
//     timed by the harness like a step), and IMPLICIT_PRECOMP_GEMM, the same method as the chapters'.
//   Math::Tf32: CUDNN_DEFAULT_MATH, cuDNN's default, which lets it use the tensor cores in TF32 for
//     FP32 data. The fastest of what the search runs in that math (each algorithm with the math
//     type the search reports for it), in NCHW and, after add_layout(Layout::Nhwc, ...), on
//     channels-last copies of the same tensors: cuDNN's tensor-core kernels are up to twice as fast
//     there, so a TF32 step is judged against the better of the two layouts.
// Without cuDNN: the reference is im2col + cuBLAS SGEMM (FP32, no TF32), and the one baseline the
// same in the step's math (TF32: CUBLAS_COMPUTE_32F_FAST_TF32); every output says so.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tut/conv/problem.hpp"
#include "tut/core/device_buffer.cuh"
#include "tut/core/verify.hpp"

namespace tut {

// im2col + cuBLAS SGEMM + a copy back to NKPQ: the reference of a build without cuDNN (FP32, no
// TF32), and a second opinion in the self-test of a build with it. `math` picks the GEMM's compute
// type: FP32 (CUBLAS_COMPUTE_32F) or TF32 (CUBLAS_COMPUTE_32F_FAST_TF32, the TF32 baseline of a
// build without cuDNN). Its buffers (the column matrix and the GEMM's output) are allocated once, here.
class Im2colCublasConv {
 public:
  explicit Im2colCublasConv(const ConvProblem& p);
  std::size_t workspace() const { return col_.bytes() + y_gemm_.bytes(); }
  void run(const float* x, const float* w, float* y, cudaStream_t stream, Math math = Math::Fp32);
  // The same, then y = max(y + bias[k] (+ residual), 0) in a second kernel.
  void run_fused(const float* x, const float* w, const float* bias, const float* residual, float* y,
                 cudaStream_t stream);

 private:
  ConvProblem p_;
  DeviceBuffer<float> col_, y_gemm_;
};

// dst = src with its middle axis moved last: [outer][mid][inner] -> [outer][inner][mid]. x NCHW ->
// NHWC is (N, C, H*W); w KCRS -> KRSC is (K, C, R*S). to_channels_first is the inverse ([outer][inner]
// [mid] -> [outer][mid][inner]: y NPQK -> NKPQ is (N, K, P*Q)). One thread per element; not timed.
void to_channels_last(const float* src, float* dst, std::int64_t outer, std::int64_t mid, std::int64_t inner,
                      cudaStream_t stream);
void to_channels_first(const float* src, float* dst, std::int64_t outer, std::int64_t mid, std::int64_t inner,
                       cudaStream_t stream);

class ConvLibrary {
 public:
  // Sets up problem p. With `rank`, also runs cuDNN's search over its algorithms on x and w into y
  // (device buffers of p's sizes; y's contents are overwritten). The search and the algorithms may
  // use up to `workspace_limit` bytes of workspace. `math`: the math of the baselines (the step's);
  // the reference is FP32 either way.
  ConvLibrary(const ConvProblem& p, bool rank, const float* x, const float* w, float* y, std::size_t workspace_limit,
              cudaStream_t stream, Math math = Math::Fp32);
  ~ConvLibrary();
  ConvLibrary(const ConvLibrary&) = delete;
  ConvLibrary& operator=(const ConvLibrary&) = delete;

  static bool have_cudnn();
  static std::string version();  // "cuDNN 9.14.0" or "no cuDNN in this build"

  std::string reference_name() const;  // "cuDNN IMPLICIT_PRECOMP_GEMM (FMA)"
  void run_reference(const float* x, const float* w, float* y, cudaStream_t stream);

  // The math of the baselines, as their names say it: "FMA" (FP32) or "TF32 allowed" (cuDNN's
  // default math), "FP32" or "TF32" without cuDNN.
  Math math() const;
  std::string math_label() const;

  // The algorithms to time as baselines. With `rank`: every algorithm cuDNN's search ran in the
  // baselines' math on this problem (within the workspace limit), IMPLICIT_PRECOMP_GEMM included;
  // the harness times each the way it times a step and calls the fastest "cuDNN fastest <math>" (the
  // search's own ranking comes from one run of each and moves between processes). Without `rank`,
  // or without cuDNN: IMPLICIT_PRECOMP_GEMM (im2col + cuBLAS) alone.
  // `layout`: the algorithms of the NCHW search (the constructor's) or of the NHWC one
  // (add_layout; none before it). run_algorithm's x, w and y are tensors of that layout.
  int algorithms(Layout layout = Layout::Nchw) const;
  std::string algorithm_name(int i, Layout layout = Layout::Nchw) const;  // "FFT_TILING", "im2col + cuBLAS"
  std::string algorithm_math(int i, Layout layout = Layout::Nchw) const;  // the math cuDNN ran it in: "FMA", "tensor cores", ...
  std::size_t algorithm_workspace(int i, Layout layout = Layout::Nchw) const;  // bytes
  // The index of IMPLICIT_PRECOMP_GEMM (the reference's algorithm) among the NCHW ones, in the
  // baselines' math: with Math::Fp32 it computes what the reference computes.
  int reference_algorithm() const;
  void run_algorithm(int i, const float* x, const float* w, float* y, cudaStream_t stream,
                     Layout layout = Layout::Nchw);

  // Runs cuDNN's search in the baselines' math on channels-last tensors: x NHWC, w KRSC and y NPQK
  // (device buffers of p's sizes in that layout; y's contents are overwritten), within the
  // constructor's workspace limit. Returns false (nothing added) without cuDNN, or when the search
  // returns no algorithm that runs. Layout::Nhwc only.
  bool add_layout(Layout layout, const float* x, const float* w, float* y, cudaStream_t stream);

  // The library's convolution with chapter 21's epilogue, y = max(conv + bias[k] (+ residual), 0):
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
