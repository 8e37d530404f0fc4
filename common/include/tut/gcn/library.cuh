// Part III's library baselines (and the reference of the benchmark), FP64:
//   X W          cuBLAS DGEMM (row-major X, W, H through the column-major transpose identity)
//   A_hat Z      cuSPARSE SpMM, CSR, row-major dense matrices: every CSR algorithm this cuSPARSE
//                runs on the problem (ALG_DEFAULT, CSR_ALG1, CSR_ALG2, CSR_ALG3), each with its
//                own buffer; cusparseSpMM_preprocess (used by ALG1 and ALG3) runs once, when the
//                algorithm is set up, outside any timed run
//   log_softmax  cuDNN's softmax in log mode (CUDNN_SOFTMAX_LOG, per instance = per row) where the
//                build has cuDNN and it accepts doubles; otherwise a plain kernel, one thread per
//                row (the output says which)
//   the layer    the library pipeline a user would write: DGEMM, SpMM (the fastest algorithm, as
//                timed), the bias (cudnnAddTensor, or the plain kernel), log_softmax
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "tut/gcn/harness.cuh"

namespace tut {

class GcnLibrary {
 public:
  // `a` must stay valid while the object lives; a.indptr null: no graph (no SpMM, no layer). Allocates the SpMM buffers and (for the layer) two
  // V x F_out temporaries; preprocesses with the given z/out pointers (the dense matrices only
  // describe shapes there; any pointers of the same shape may be passed later).
  GcnLibrary(const GcnProblem& p, const DeviceCsr& a, const double* z, double* out, bool layer, cudaStream_t s);
  ~GcnLibrary();
  GcnLibrary(const GcnLibrary&) = delete;
  GcnLibrary& operator=(const GcnLibrary&) = delete;

  static std::string version();  // "cuBLAS 13.0.2, cuSPARSE 12.6.3, cuDNN 9.14.0"

  // h = x w (V x F_in times F_in x F_out).
  void xw(const double* x, const double* w, double* h, cudaStream_t s);
  static std::string xw_name() { return "cuBLAS DGEMM"; }

  // y = A_hat z with algorithm i (0 <= i < spmm_algorithms()).
  int spmm_algorithms() const;
  std::string spmm_algorithm_name(int i) const;  // "CSR_ALG3"
  std::size_t spmm_buffer_bytes(int i) const;
  int spmm_default() const;                      // the index of ALG_DEFAULT
  void spmm(int i, const double* z, double* y, cudaStream_t s);

  // out = log_softmax(z) per row of F_out (no bias). plain: the one-thread-per-row kernel even where
  // cuDNN is present (a second baseline: cuDNN's FP64 softmax is not the fastest way to do this).
  void log_softmax(const double* z, double* out, cudaStream_t s, bool plain = false);
  std::string log_softmax_name(bool plain = false) const;  // "cuDNN softmax (log)", "log_softmax kernel (one thread per row)"
  bool have_cudnn_softmax() const;

  // The whole layer: out = log_softmax(A_hat (x w) + b), SpMM algorithm i; plain: the bias and
  // log_softmax by the plain kernel instead of cuDNN. Needs layer = true.
  void layer(int i, const double* x, const double* w, const double* b, double* out, cudaStream_t s, bool plain = false);
  std::string layer_name(int i, bool plain = false) const;  // "library pipeline (cuBLAS + cuSPARSE CSR_ALG3 + cuDNN)"

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tut
