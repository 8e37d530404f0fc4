// The vendor reference and baselines of Part II (conv/library.cuh).
#include "tut/conv/library.cuh"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tut/core/cublas.cuh"
#include "tut/core/device_buffer.cuh"

#if TUT_HAVE_CUDNN
#include "tut/core/cudnn.cuh"
#endif

namespace tut {

// ---- im2col + cuBLAS: the reference and baseline of a build without cuDNN -------------------------

namespace {

// X_col[kk][j] = x at x_col_offset(kk, j), or 0 in the padding; (C*R*S) x (N*P*Q), row-major.
// One thread per element, j fastest: a warp writes consecutive columns (coalesced).
__global__ void im2col_kernel(ConvProblem p, const float* __restrict__ x, float* __restrict__ col) {
  const std::int64_t cols = p.gemm_n(), total = std::int64_t(p.gemm_k()) * cols;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t off = x_col_offset(p, int(i / cols), int(i % cols));
    col[i] = off < 0 ? 0.0f : x[off];
  }
}

// y[n][k][p][q] = Y[k][(n*P + p)*Q + q]: one thread per element of y, in y's order (coalesced stores).
__global__ void gemm_to_nkpq_kernel(ConvProblem p, const float* __restrict__ y_gemm, float* __restrict__ y) {
  const std::int64_t pq = std::int64_t(p.p) * p.q, cols = p.gemm_n(), total = std::int64_t(p.n) * p.k * pq;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t n = i / (p.k * pq), k = (i / pq) % p.k, pix = i % pq;
    y[i] = y_gemm[k * cols + n * pq + pix];
  }
}

// y = max(y + bias[k] (+ residual), 0), in place, one thread per element of y.
__global__ void bias_relu_kernel(ConvProblem p, const float* __restrict__ bias, const float* __restrict__ residual,
                                 float* __restrict__ y) {
  const std::int64_t pq = std::int64_t(p.p) * p.q, total = std::int64_t(p.n) * p.k * pq;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    float v = y[i] + bias[(i / pq) % p.k];
    if (residual) v += residual[i];
    y[i] = fmaxf(v, 0.0f);
  }
}

// dst[o][i][m] = src[o][m][i] (last = false: dst[o][m][i] = src[o][i][m]); one thread per element of
// dst, in dst's order (coalesced stores; the layout copies are outside every timed run).
__global__ void move_axis_kernel(const float* __restrict__ src, float* __restrict__ dst, std::int64_t outer,
                                 std::int64_t mid, std::int64_t inner, bool last) {
  const std::int64_t total = outer * mid * inner;
  for (std::int64_t e = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; e < total;
       e += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t o = e / (mid * inner), rest = e % (mid * inner);
    if (last) {  // e = (o, i, m)
      const std::int64_t i = rest / mid, m = rest % mid;
      dst[e] = src[(o * mid + m) * inner + i];
    } else {     // e = (o, m, i)
      const std::int64_t m = rest / inner, i = rest % inner;
      dst[e] = src[(o * inner + i) * mid + m];
    }
  }
}

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 65536;

int blocks_for(std::int64_t elems) { return int(std::min<std::int64_t>(kMaxBlocks, (elems + kThreads - 1) / kThreads)); }

}  // namespace

void to_channels_last(const float* src, float* dst, std::int64_t outer, std::int64_t mid, std::int64_t inner,
                      cudaStream_t s) {
  move_axis_kernel<<<blocks_for(outer * mid * inner), kThreads, 0, s>>>(src, dst, outer, mid, inner, true);
  TUT_CHECK_LAUNCH();
}

void to_channels_first(const float* src, float* dst, std::int64_t outer, std::int64_t mid, std::int64_t inner,
                       cudaStream_t s) {
  move_axis_kernel<<<blocks_for(outer * mid * inner), kThreads, 0, s>>>(src, dst, outer, mid, inner, false);
  TUT_CHECK_LAUNCH();
}

Im2colCublasConv::Im2colCublasConv(const ConvProblem& prob)
    : p_(prob), col_(std::size_t(prob.gemm_k()) * std::size_t(prob.gemm_n())),
      y_gemm_(std::size_t(prob.gemm_m()) * std::size_t(prob.gemm_n())) {}

void Im2colCublasConv::run(const float* x, const float* w, float* y, cudaStream_t s, Math math) {
  im2col_kernel<<<blocks_for(std::int64_t(col_.size())), kThreads, 0, s>>>(p_, x, col_.data());
  TUT_CHECK_LAUNCH();
  // Y (K x N*P*Q) = W (K x C*R*S) * X_col (C*R*S x N*P*Q), every matrix packed.
  const int m = p_.gemm_m(), n = p_.gemm_n(), k = p_.gemm_k();
  cublas_gemm_f32(m, n, k, 1.0f, w, k, col_.data(), n, 0.0f, y_gemm_.data(), n, math, s);
  gemm_to_nkpq_kernel<<<blocks_for(std::int64_t(y_gemm_.size())), kThreads, 0, s>>>(p_, y_gemm_.data(), y);
  TUT_CHECK_LAUNCH();
}

void Im2colCublasConv::run_fused(const float* x, const float* w, const float* bias, const float* residual, float* y,
                                 cudaStream_t s) {
  run(x, w, y, s);
  bias_relu_kernel<<<blocks_for(p_.y_elems()), kThreads, 0, s>>>(p_, bias, residual, y);
  TUT_CHECK_LAUNCH();
}

// ---- cuDNN ----------------------------------------------------------------------------------------

#if TUT_HAVE_CUDNN

namespace {

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "UNKNOWN";
  }
}

const char* math_type_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH: return "default math";
    case CUDNN_TENSOR_OP_MATH: return "tensor cores";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor cores, converted";
    case CUDNN_FMA_MATH: return "FMA";
    default: return "unknown math";
  }
}

// One algorithm, with the math type it runs in (what the search reported for it).
struct Algo {
  cudnnConvolutionFwdAlgo_t algo;
  std::size_t workspace;
  std::string name;
  cudnnMathType_t math;
};

}  // namespace

struct ConvLibrary::Impl {
  ConvProblem p;
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x_desc = nullptr, y_desc = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnTensorDescriptor_t x_nhwc = nullptr, y_nhwc = nullptr;  // add_layout(Nhwc): channels last
  cudnnFilterDescriptor_t w_nhwc = nullptr;
  cudnnConvolutionDescriptor_t conv_desc = nullptr;  // FMA math: the reference (and the FP32 baselines)
  cudnnConvolutionDescriptor_t base_desc = nullptr;  // Math::Tf32 only: the baselines, default math
  Math math = Math::Fp32;
  cudnnTensorDescriptor_t bias_desc = nullptr;
  cudnnActivationDescriptor_t relu_desc = nullptr;
  Algo reference{};
  std::vector<Algo> algos;  // the candidates to time, the reference's among them
  std::vector<Algo> algos_nhwc;  // add_layout(Nhwc)'s candidates
  int reference_index = 0;
  std::size_t workspace_limit = 0;
  DeviceBuffer<char> workspace;

  ~Impl() {
    if (w_nhwc) cudnnDestroyFilterDescriptor(w_nhwc);
    if (y_nhwc) cudnnDestroyTensorDescriptor(y_nhwc);
    if (x_nhwc) cudnnDestroyTensorDescriptor(x_nhwc);
    if (relu_desc) cudnnDestroyActivationDescriptor(relu_desc);
    if (bias_desc) cudnnDestroyTensorDescriptor(bias_desc);
    if (base_desc) cudnnDestroyConvolutionDescriptor(base_desc);
    if (conv_desc) cudnnDestroyConvolutionDescriptor(conv_desc);
    if (w_desc) cudnnDestroyFilterDescriptor(w_desc);
    if (y_desc) cudnnDestroyTensorDescriptor(y_desc);
    if (x_desc) cudnnDestroyTensorDescriptor(x_desc);
  }

  // The workspace `a` needs for this problem under `desc`'s math, or false when cuDNN does not
  // support it here.
  bool workspace_of(cudnnConvolutionDescriptor_t desc, cudnnConvolutionFwdAlgo_t a, std::size_t* bytes,
                    Layout l = Layout::Nchw) {
    return cudnnGetConvolutionForwardWorkspaceSize(handle, xd(l), wd(l), desc, yd(l), a, bytes) == CUDNN_STATUS_SUCCESS;
  }
  cudnnTensorDescriptor_t xd(Layout l) const { return l == Layout::Nhwc ? x_nhwc : x_desc; }
  cudnnFilterDescriptor_t wd(Layout l) const { return l == Layout::Nhwc ? w_nhwc : w_desc; }
  cudnnTensorDescriptor_t yd(Layout l) const { return l == Layout::Nhwc ? y_nhwc : y_desc; }
  const std::vector<Algo>& list(Layout l) const { return l == Layout::Nhwc ? algos_nhwc : algos; }

  // The descriptor an algorithm runs with: the FMA one, or (baselines of a TF32 step) the default-math
  // one set to the math type the search reported for `a`.
  cudnnConvolutionDescriptor_t desc_for(const Algo& a) {
    if (a.math == CUDNN_FMA_MATH || !base_desc) return conv_desc;
    TUT_CUDNN_CHECK(cudnnSetConvolutionMathType(base_desc, a.math));
    return base_desc;
  }

  // cuDNN's search on this problem in layout l: every algorithm it has, each with the workspace it
  // asks for up to the limit (one that needs more is left out), in the search's order, fastest
  // first. FP32 baselines keep FMA math only; TF32 baselines whatever the default math ran, each
  // algorithm in the math type the search reports for it (tensor cores or not).
  std::vector<Algo> search(Layout l, const float* x, const float* w, float* y, cudaStream_t stream) {
    cudnnConvolutionDescriptor_t desc = base_desc ? base_desc : conv_desc;
    if (base_desc) TUT_CUDNN_CHECK(cudnnSetConvolutionMathType(base_desc, CUDNN_DEFAULT_MATH));
    std::size_t search_ws = 0;
    for (int a = 0; a < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++a) {
      std::size_t b = 0;
      if (workspace_of(desc, cudnnConvolutionFwdAlgo_t(a), &b, l) && b <= workspace_limit) {
        search_ws = std::max(search_ws, b);
      }
    }
    DeviceBuffer<char> scratch(search_ws);
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    TUT_CUDNN_CHECK(cudnnSetStream(handle, stream));
    TUT_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(handle, xd(l), x, wd(l), w, desc, yd(l), y,
                                                           CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf,
                                                           scratch.data(), search_ws));
    std::vector<Algo> found;
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      if (!base_desc && perf[i].mathType != CUDNN_FMA_MATH) continue;
      found.push_back({perf[i].algo, perf[i].memory, algo_name(perf[i].algo), perf[i].mathType});
    }
    return found;
  }

  void run(const Algo& a, const float* x, const float* w, float* y, cudaStream_t stream, Layout l = Layout::Nchw) {
    const float one = 1.0f, zero = 0.0f;
    cudnnConvolutionDescriptor_t desc = desc_for(a);
    TUT_CUDNN_CHECK(cudnnSetStream(handle, stream));
    TUT_CUDNN_CHECK(cudnnConvolutionForward(handle, &one, xd(l), x, wd(l), w, desc, a.algo,
                                            a.workspace ? workspace.data() : nullptr, a.workspace, &zero, yd(l), y));
  }
};

ConvLibrary::ConvLibrary(const ConvProblem& p, bool rank, const float* x, const float* w, float* y,
                         std::size_t workspace_limit, cudaStream_t stream, Math math)
    : impl_(new Impl) {
  Impl& m = *impl_;
  m.p = p;
  m.math = math;
  m.workspace_limit = workspace_limit;
  m.handle = cudnn_handle();
  TUT_CUDNN_CHECK(cudnnSetStream(m.handle, stream));
  TUT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m.x_desc));
  TUT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m.y_desc));
  TUT_CUDNN_CHECK(cudnnCreateFilterDescriptor(&m.w_desc));
  TUT_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&m.conv_desc));
  TUT_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m.x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, p.n, p.c, p.h, p.w));
  TUT_CUDNN_CHECK(cudnnSetFilter4dDescriptor(m.w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, p.k, p.c, p.r, p.s));
  TUT_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(m.conv_desc, p.pad_h, p.pad_w, p.stride_h, p.stride_w, p.dil_h,
                                                  p.dil_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  // FMA math: FP32 multiply-adds only, no TF32 tensor cores (the reference, and the baselines of the
  // chapters that run on the FMA units).
  TUT_CUDNN_CHECK(cudnnSetConvolutionMathType(m.conv_desc, CUDNN_FMA_MATH));
  if (math == Math::Tf32) {
    // The baselines of a TF32 step: the same convolution in cuDNN's default math, which lets it use
    // the tensor cores with FP32 data rounded to TF32.
    TUT_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&m.base_desc));
    TUT_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(m.base_desc, p.pad_h, p.pad_w, p.stride_h, p.stride_w, p.dil_h,
                                                    p.dil_w, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    TUT_CUDNN_CHECK(cudnnSetConvolutionMathType(m.base_desc, CUDNN_DEFAULT_MATH));
  }
  const cudnnMathType_t base_math = m.base_desc ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  int on = 0, ok = 0, op = 0, oq = 0;
  TUT_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(m.conv_desc, m.x_desc, m.w_desc, &on, &ok, &op, &oq));
  if (on != p.n || ok != p.k || op != p.p || oq != p.q) {
    throw CudaError("cuDNN's output size " + std::to_string(on) + "x" + std::to_string(ok) + "x" + std::to_string(op) +
                    "x" + std::to_string(oq) + " differs from conv_out_size's for " + p.label());
  }
  TUT_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m.y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, p.n, p.k, p.p, p.q));

  // The reference: IMPLICIT_PRECOMP_GEMM (IMPLICIT_GEMM where cuDNN does not offer it for this problem).
  std::size_t ws = 0;
  m.reference = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, 0, "", CUDNN_FMA_MATH};
  if (!m.workspace_of(m.conv_desc, m.reference.algo, &ws) || ws > workspace_limit) {
    m.reference.algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    if (!m.workspace_of(m.conv_desc, m.reference.algo, &ws)) {
      throw CudaError("cuDNN offers no implicit-GEMM algorithm for " + p.label());
    }
  }
  m.reference.workspace = ws;
  m.reference.name = std::string("cuDNN ") + algo_name(m.reference.algo) + " (FMA)";
  std::size_t need = ws;
  m.reference_index = -1;

  if (rank) {
    m.algos = m.search(Layout::Nchw, x, w, y, stream);
    for (std::size_t i = 0; i < m.algos.size(); ++i) {
      if (m.algos[i].algo == m.reference.algo && m.reference_index < 0) m.reference_index = int(i);
      need = std::max(need, m.algos[i].workspace);
    }
  }
  if (m.reference_index < 0) {  // not ranked, or the search left it out: time it all the same
    std::size_t b = m.reference.workspace;
    if (m.base_desc && !m.workspace_of(m.base_desc, m.reference.algo, &b)) {
      throw CudaError(std::string("cuDNN offers no ") + algo_name(m.reference.algo) + " in default math for " + p.label());
    }
    m.reference_index = int(m.algos.size());
    m.algos.push_back({m.reference.algo, b, algo_name(m.reference.algo), base_math});
    need = std::max(need, b);
  }
  m.workspace = DeviceBuffer<char>(need);
}

ConvLibrary::~ConvLibrary() = default;

bool ConvLibrary::have_cudnn() { return true; }
Math ConvLibrary::math() const { return impl_->math; }
std::string ConvLibrary::math_label() const { return impl_->math == Math::Tf32 ? "TF32 allowed" : "FMA"; }
std::string ConvLibrary::algorithm_math(int i, Layout l) const {
  return math_type_name(impl_->list(l).at(std::size_t(i)).math);
}

bool ConvLibrary::add_layout(Layout layout, const float* x, const float* w, float* y, cudaStream_t stream) {
  if (layout != Layout::Nhwc) throw CudaError("ConvLibrary::add_layout: only Layout::Nhwc can be added");
  Impl& m = *impl_;
  const ConvProblem& p = m.p;
  if (!m.x_nhwc) {
    TUT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m.x_nhwc));
    TUT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m.y_nhwc));
    TUT_CUDNN_CHECK(cudnnCreateFilterDescriptor(&m.w_nhwc));
    TUT_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m.x_nhwc, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, p.n, p.c, p.h, p.w));
    TUT_CUDNN_CHECK(cudnnSetFilter4dDescriptor(m.w_nhwc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, p.k, p.c, p.r, p.s));
    TUT_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m.y_nhwc, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, p.n, p.k, p.p, p.q));
  }
  m.algos_nhwc = m.search(Layout::Nhwc, x, w, y, stream);
  std::size_t need = m.workspace.size();
  for (const Algo& a : m.algos_nhwc) need = std::max(need, a.workspace);
  if (need > m.workspace.size()) m.workspace = DeviceBuffer<char>(need);
  return !m.algos_nhwc.empty();
}

std::string ConvLibrary::version() {
  return cudnn_version_text();
}

std::string ConvLibrary::fused_name() const {
  return std::string("cuDNN fused conv+bias+ReLU (") + algo_name(impl_->reference.algo) + ", FMA)";
}

void ConvLibrary::run_fused(const float* x, const float* w, const float* bias, const float* residual, float* y,
                            cudaStream_t stream) {
  Impl& m = *impl_;
  if (!m.bias_desc) {
    TUT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m.bias_desc));
    TUT_CUDNN_CHECK(cudnnSetTensor4dDescriptor(m.bias_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, m.p.k, 1, 1));
    TUT_CUDNN_CHECK(cudnnCreateActivationDescriptor(&m.relu_desc));
    TUT_CUDNN_CHECK(cudnnSetActivationDescriptor(m.relu_desc, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0));
  }
  // y = relu(alpha1 * conv + alpha2 * z + bias). Without a residual alpha2 is 0 and z is y itself,
  // which must then hold finite values (0 * NaN is NaN): the caller zeroes it.
  const float one = 1.0f, alpha2 = residual ? 1.0f : 0.0f;
  TUT_CUDNN_CHECK(cudnnSetStream(m.handle, stream));
  TUT_CUDNN_CHECK(cudnnConvolutionBiasActivationForward(
      m.handle, &one, m.x_desc, x, m.w_desc, w, m.conv_desc, m.reference.algo,
      m.reference.workspace ? m.workspace.data() : nullptr, m.reference.workspace, &alpha2, m.y_desc,
      residual ? residual : y, m.bias_desc, bias, m.relu_desc, m.y_desc, y));
}

std::string ConvLibrary::reference_name() const { return impl_->reference.name; }
void ConvLibrary::run_reference(const float* x, const float* w, float* y, cudaStream_t stream) {
  impl_->run(impl_->reference, x, w, y, stream);
}
int ConvLibrary::algorithms(Layout l) const { return int(impl_->list(l).size()); }
std::string ConvLibrary::algorithm_name(int i, Layout l) const { return impl_->list(l).at(std::size_t(i)).name; }
std::size_t ConvLibrary::algorithm_workspace(int i, Layout l) const { return impl_->list(l).at(std::size_t(i)).workspace; }
int ConvLibrary::reference_algorithm() const { return impl_->reference_index; }
void ConvLibrary::run_algorithm(int i, const float* x, const float* w, float* y, cudaStream_t stream, Layout l) {
  impl_->run(impl_->list(l).at(std::size_t(i)), x, w, y, stream, l);
}

#else  // no cuDNN in this build

struct ConvLibrary::Impl {
  Impl(const ConvProblem& p, Math m) : im2col(p), math(m) {}
  Im2colCublasConv im2col;
  Math math;
};

ConvLibrary::ConvLibrary(const ConvProblem& p, bool, const float*, const float*, float*, std::size_t, cudaStream_t,
                         Math math)
    : impl_(new Impl(p, math)) {}
ConvLibrary::~ConvLibrary() = default;
bool ConvLibrary::have_cudnn() { return false; }
Math ConvLibrary::math() const { return impl_->math; }
std::string ConvLibrary::math_label() const { return math_name(impl_->math); }
std::string ConvLibrary::algorithm_math(int, Layout) const {
  return impl_->math == Math::Tf32 ? "CUBLAS_COMPUTE_32F_FAST_TF32" : "CUBLAS_COMPUTE_32F";
}
bool ConvLibrary::add_layout(Layout, const float*, const float*, float*, cudaStream_t) { return false; }
std::string ConvLibrary::version() { return "no cuDNN in this build"; }
std::string ConvLibrary::reference_name() const { return "im2col + cuBLAS FP32 (no cuDNN in this build)"; }
std::string ConvLibrary::fused_name() const { return "im2col + cuBLAS FP32 + bias/ReLU kernel (no cuDNN in this build)"; }
void ConvLibrary::run_fused(const float* x, const float* w, const float* bias, const float* residual, float* y,
                            cudaStream_t stream) {
  impl_->im2col.run_fused(x, w, bias, residual, y, stream);
}
void ConvLibrary::run_reference(const float* x, const float* w, float* y, cudaStream_t stream) {
  impl_->im2col.run(x, w, y, stream);
}
int ConvLibrary::algorithms(Layout l) const { return l == Layout::Nchw ? 1 : 0; }
std::string ConvLibrary::algorithm_name(int, Layout) const { return "im2col + cuBLAS"; }
std::size_t ConvLibrary::algorithm_workspace(int, Layout) const { return impl_->im2col.workspace(); }
int ConvLibrary::reference_algorithm() const { return 0; }
void ConvLibrary::run_algorithm(int, const float* x, const float* w, float* y, cudaStream_t stream, Layout) {
  impl_->im2col.run(x, w, y, stream, impl_->math);
}

#endif

}  // namespace tut
