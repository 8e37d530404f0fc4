// Part III's library baselines (gcn/library.cuh).
#include "tut/gcn/library.cuh"

#include <cusparse.h>

#include <algorithm>
#include <vector>

#include "tut/core/cublas.cuh"
#include "tut/core/device_buffer.cuh"

#if TUT_HAVE_CUDNN
#include "tut/core/cudnn.cuh"
#endif

namespace tut {

namespace {

void cusparse_check(cusparseStatus_t st, const char* expr, const char* file, int line) {
  if (st != CUSPARSE_STATUS_SUCCESS) {
    throw CudaError(std::string("cuSPARSE error ") + cusparseGetErrorName(st) + " (" + cusparseGetErrorString(st) +
                    ") in " + expr + " at " + file + ":" + std::to_string(line));
  }
}
#define TUT_CUSPARSE_CHECK(expr) cusparse_check((expr), #expr, __FILE__, __LINE__)

// out = log_softmax(z + b) for each row of f values (b null: no bias). One thread per row, two
// passes over the row: plain and stable (the row max subtracted before exp). The baseline of a
// build without cuDNN, and its bias + log_softmax in the layer pipeline.
__global__ void bias_log_softmax_rows_kernel(long long v, int f, const double* __restrict__ z,
                                             const double* __restrict__ b, double* __restrict__ out) {
  for (long long r = blockIdx.x * (long long)blockDim.x + threadIdx.x; r < v; r += (long long)gridDim.x * blockDim.x) {
    const double* zr = z + r * f;
    double m = -INFINITY;
    for (int c = 0; c < f; ++c) m = fmax(m, zr[c] + (b ? b[c] : 0.0));
    double sum = 0.0;
    for (int c = 0; c < f; ++c) sum += exp(zr[c] + (b ? b[c] : 0.0) - m);
    const double lse = log(sum);
    for (int c = 0; c < f; ++c) out[r * f + c] = (zr[c] + (b ? b[c] : 0.0) - m) - lse;
  }
}

void bias_log_softmax_rows(const GcnProblem& p, const double* z, const double* b, double* out, cudaStream_t s) {
  constexpr int kThreads = 256;
  const int blocks = int(std::min<long long>(65536, (p.v + kThreads - 1) / kThreads));
  bias_log_softmax_rows_kernel<<<blocks, kThreads, 0, s>>>(p.v, p.f_out, z, b, out);
  TUT_CHECK_LAUNCH();
}

struct SpmmAlgorithm {
  cusparseSpMMAlg_t alg;
  const char* name;
};
const SpmmAlgorithm kSpmmAlgorithms[] = {{CUSPARSE_SPMM_ALG_DEFAULT, "ALG_DEFAULT"},
                                         {CUSPARSE_SPMM_CSR_ALG1, "CSR_ALG1"},
                                         {CUSPARSE_SPMM_CSR_ALG2, "CSR_ALG2"},
                                         {CUSPARSE_SPMM_CSR_ALG3, "CSR_ALG3"}};

}  // namespace

struct GcnLibrary::Impl {
  GcnProblem p;
  cusparseHandle_t sp = nullptr;
  cusparseSpMatDescr_t a_desc = nullptr;
  cusparseDnMatDescr_t z_desc = nullptr, y_desc = nullptr;
  struct Alg {
    SpmmAlgorithm alg;
    DeviceBuffer<char> buffer;
  };
  std::vector<Alg> algs;
  int default_alg = 0;
  DeviceBuffer<double> h, y;  // the pipeline's X W and A_hat (X W)
  bool cudnn_softmax = false;
#if TUT_HAVE_CUDNN
  cudnnTensorDescriptor_t rows_desc = nullptr, bias_desc = nullptr;
#endif

  ~Impl() {
    if (a_desc) cusparseDestroySpMat(a_desc);
    if (z_desc) cusparseDestroyDnMat(z_desc);
    if (y_desc) cusparseDestroyDnMat(y_desc);
    if (sp) cusparseDestroy(sp);
#if TUT_HAVE_CUDNN
    if (rows_desc) cudnnDestroyTensorDescriptor(rows_desc);
    if (bias_desc) cudnnDestroyTensorDescriptor(bias_desc);
#endif
  }

  void set_dense(const double* z, double* y) {
    TUT_CUSPARSE_CHECK(cusparseDnMatSetValues(z_desc, const_cast<double*>(z)));
    TUT_CUSPARSE_CHECK(cusparseDnMatSetValues(y_desc, y));
  }
};

GcnLibrary::GcnLibrary(const GcnProblem& p, const DeviceCsr& a, const double* z, double* out, bool layer,
                       cudaStream_t s)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.p = p;
  const double one = 1.0, zero = 0.0;
  // cuSPARSE only for the kinds with a graph (a null indptr: none).
  if (a.indptr) {
    TUT_CUSPARSE_CHECK(cusparseCreate(&m.sp));
    TUT_CUSPARSE_CHECK(cusparseSetStream(m.sp, s));
    TUT_CUSPARSE_CHECK(cusparseCreateCsr(&m.a_desc, a.rows, a.cols, a.nnz, const_cast<int*>(a.indptr),
                                         const_cast<int*>(a.indices), const_cast<double*>(a.values), CUSPARSE_INDEX_32I,
                                         CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    TUT_CUSPARSE_CHECK(cusparseCreateDnMat(&m.z_desc, a.cols, p.f_out, p.f_out, const_cast<double*>(z), CUDA_R_64F,
                                           CUSPARSE_ORDER_ROW));
    TUT_CUSPARSE_CHECK(cusparseCreateDnMat(&m.y_desc, a.rows, p.f_out, p.f_out, out, CUDA_R_64F, CUSPARSE_ORDER_ROW));
    // Every CSR algorithm that takes this problem (an algorithm that refuses row-major matrices or the
    // shape says so through its status and is left out), each with its buffer, preprocessed once here.
    for (const SpmmAlgorithm& alg : kSpmmAlgorithms) {
      std::size_t bytes = 0;
      if (cusparseSpMM_bufferSize(m.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                                  m.a_desc, m.z_desc, &zero, m.y_desc, CUDA_R_64F, alg.alg, &bytes) != CUSPARSE_STATUS_SUCCESS) {
        continue;
      }
      Impl::Alg entry{alg, DeviceBuffer<char>(std::max<std::size_t>(bytes, 1))};
      if (cusparseSpMM_preprocess(m.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                                  m.a_desc, m.z_desc, &zero, m.y_desc, CUDA_R_64F, alg.alg,
                                  entry.buffer.data()) != CUSPARSE_STATUS_SUCCESS) {
        continue;
      }
      if (alg.alg == CUSPARSE_SPMM_ALG_DEFAULT) m.default_alg = int(m.algs.size());
      m.algs.push_back(std::move(entry));
    }
    if (m.algs.empty()) throw CudaError("cuSPARSE: no CSR SpMM algorithm accepts this problem (row-major FP64)");
    TUT_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  if (layer) {
    m.h = DeviceBuffer<double>(std::size_t(p.v) * std::size_t(p.f_out));
    m.y = DeviceBuffer<double>(std::size_t(p.v) * std::size_t(p.f_out));
  }
#if TUT_HAVE_CUDNN
  // cuDNN's softmax and bias add over V "images" of F_out channels of 1x1. Probed on one row: a
  // cuDNN that does not take doubles here leaves the plain kernel in charge.
  {
    cudnnHandle_t h = cudnn_handle();
    TUT_CUDNN_CHECK(cudnnSetStream(h, s));
    TUT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m.rows_desc));
    TUT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m.bias_desc));
    TUT_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m.bias_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE, 1, p.f_out, 1, 1));
    DeviceBuffer<double> probe(std::size_t(p.f_out)), probe_out(std::size_t(p.f_out));
    probe.fill_bytes(0, s);
    const bool ok =
        cudnnSetTensor4dDescriptor(m.rows_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE, 1, p.f_out, 1, 1) ==
            CUDNN_STATUS_SUCCESS &&
        cudnnSoftmaxForward(h, CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_INSTANCE, &one, m.rows_desc, probe.data(), &zero,
                            m.rows_desc, probe_out.data()) == CUDNN_STATUS_SUCCESS &&
        cudnnAddTensor(h, &one, m.bias_desc, probe.data(), &one, m.rows_desc, probe_out.data()) == CUDNN_STATUS_SUCCESS &&
        cudnnSetTensor4dDescriptor(m.rows_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE, p.v, p.f_out, 1, 1) ==
            CUDNN_STATUS_SUCCESS;
    TUT_CUDA_CHECK(cudaStreamSynchronize(s));
    m.cudnn_softmax = ok;
  }
#endif
}

GcnLibrary::~GcnLibrary() = default;

std::string GcnLibrary::version() {
  int sv = 0;
  cusparseGetProperty(MAJOR_VERSION, &sv);
  int minor = 0, patch = 0;
  cusparseGetProperty(MINOR_VERSION, &minor);
  cusparseGetProperty(PATCH_LEVEL, &patch);
  std::string v = cublas_version_text() + ", cuSPARSE " + std::to_string(sv) + "." + std::to_string(minor) + "." +
                  std::to_string(patch);
#if TUT_HAVE_CUDNN
  v += ", " + cudnn_version_text();
#else
  v += ", no cuDNN in this build";
#endif
  return v;
}

void GcnLibrary::xw(const double* x, const double* w, double* h, cudaStream_t s) {
  const GcnProblem& p = impl_->p;
  // H (V x F_out) = X (V x F_in) W (F_in x F_out), every matrix packed.
  cublas_gemm_f64(p.v, p.f_out, p.f_in, 1.0, x, p.f_in, w, p.f_out, 0.0, h, p.f_out, s);
}

int GcnLibrary::spmm_algorithms() const { return int(impl_->algs.size()); }
std::string GcnLibrary::spmm_algorithm_name(int i) const { return impl_->algs.at(std::size_t(i)).alg.name; }
std::size_t GcnLibrary::spmm_buffer_bytes(int i) const { return impl_->algs.at(std::size_t(i)).buffer.bytes(); }
int GcnLibrary::spmm_default() const { return impl_->default_alg; }

void GcnLibrary::spmm(int i, const double* z, double* y, cudaStream_t s) {
  Impl& m = *impl_;
  Impl::Alg& a = m.algs.at(std::size_t(i));
  m.set_dense(z, y);
  TUT_CUSPARSE_CHECK(cusparseSetStream(m.sp, s));
  const double one = 1.0, zero = 0.0;
  TUT_CUSPARSE_CHECK(cusparseSpMM(m.sp, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
                                  m.a_desc, m.z_desc, &zero, m.y_desc, CUDA_R_64F, a.alg.alg, a.buffer.data()));
}

void GcnLibrary::log_softmax(const double* z, double* out, cudaStream_t s, bool plain) {
#if TUT_HAVE_CUDNN
  if (impl_->cudnn_softmax && !plain) {
    cudnnHandle_t h = cudnn_handle();
    TUT_CUDNN_CHECK(cudnnSetStream(h, s));
    const double one = 1.0, zero = 0.0;
    TUT_CUDNN_CHECK(cudnnSoftmaxForward(h, CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_INSTANCE, &one, impl_->rows_desc, z,
                                        &zero, impl_->rows_desc, out));
    return;
  }
#endif
  bias_log_softmax_rows(impl_->p, z, nullptr, out, s);
}

std::string GcnLibrary::log_softmax_name(bool plain) const {
  if (impl_->cudnn_softmax && !plain) return "cuDNN softmax (log)";
  return impl_->cudnn_softmax ? "log_softmax kernel (one thread per row)" : "log_softmax kernel (no cuDNN)";
}

bool GcnLibrary::have_cudnn_softmax() const { return impl_->cudnn_softmax; }

void GcnLibrary::layer(int i, const double* x, const double* w, const double* b, double* out, cudaStream_t s,
                       bool plain) {
  Impl& m = *impl_;
  if (!m.h.size()) throw CudaError("internal error: GcnLibrary built without the layer's buffers");
  xw(x, w, m.h.data(), s);
  spmm(i, m.h.data(), m.y.data(), s);
#if TUT_HAVE_CUDNN
  if (m.cudnn_softmax && !plain) {
    cudnnHandle_t h = cudnn_handle();
    TUT_CUDNN_CHECK(cudnnSetStream(h, s));
    const double one = 1.0, zero = 0.0;
    TUT_CUDNN_CHECK(cudnnAddTensor(h, &one, m.bias_desc, b, &one, m.rows_desc, m.y.data()));
    TUT_CUDNN_CHECK(cudnnSoftmaxForward(h, CUDNN_SOFTMAX_LOG, CUDNN_SOFTMAX_MODE_INSTANCE, &one, m.rows_desc,
                                        m.y.data(), &zero, m.rows_desc, out));
    return;
  }
#endif
  bias_log_softmax_rows(m.p, m.y.data(), b, out, s);
}

std::string GcnLibrary::layer_name(int i, bool plain) const {
  return "library pipeline (cuBLAS + cuSPARSE " + spmm_algorithm_name(i) +
         (impl_->cudnn_softmax && !plain ? " + cuDNN)" : " + bias/log_softmax kernel)");
}

}  // namespace tut
