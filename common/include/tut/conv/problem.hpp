// The convolution every Part II step solves: y = conv(x, w), FP32, cross-correlation as in every
// deep-learning library (the filter is not flipped).
//   x: input,  NCHW, N images of C channels of H x W pixels, packed
//   w: filter, KCRS, K output channels, each C x R x S, packed
//   y: output, NKPQ, N images of K channels of P x Q pixels, packed
//   y[n][k][p][q] = sum_{c,r,s} w[k][c][r][s] * x[n][c][p*stride_h - pad_h + r*dil_h][q*stride_w - pad_w + s*dil_w]
// where an x index outside [0, H) x [0, W) reads zero (the padding is never stored).
//
// The implicit-GEMM view (docs/conv-as-gemm.md): Y (GEMM_M x GEMM_N) = W (GEMM_M x GEMM_K) * X_col
// (GEMM_K x GEMM_N) with GEMM_M = K, GEMM_N = N*P*Q, GEMM_K = C*R*S. W is the filter as it lies in
// memory (row k is the C*R*S filter of output channel k); X_col is never stored: its element
// (kk, j) is the input pixel that the coordinate maps below name, or zero in the padding.
//
// The harness guarantees every tensor, and GEMM_N and GEMM_K, have fewer than 2^31 elements, so a
// kernel may index with int.
#pragma once

#include <cstdint>
#include <string>

#ifdef __CUDACC__
#define TUT_HD __host__ __device__
#else
#define TUT_HD
#endif

namespace tut {

// Output extent along one axis: the number of filter positions, stride apart, that fit in the
// padded input. <= 0 when not even one fits (the harness rejects such a problem).
//   in + 2*pad  >=  dil*(filt - 1) + 1  is the condition for at least one output.
TUT_HD constexpr int conv_out_size(int in, int filt, int pad, int stride, int dil) {
  return (in + 2 * pad - dil * (filt - 1) - 1 + stride) / stride;  // == floor(...)/stride + 1 when >= 0
}

// Where a tensor's channels lie. Nchw: the layout of every step so far (x NCHW, w KCRS, y NKPQ).
// Nhwc, channels last (x NHWC, w KRSC, y NPQK): the layout cuDNN's tensor-core kernels prefer, used
// for its TF32 baselines (conv/library.cuh).
enum class Layout { Nchw, Nhwc };
inline const char* layout_name(Layout l) { return l == Layout::Nhwc ? "NHWC" : "NCHW"; }

struct ConvProblem {
  int n = 1, c = 1, h = 1, w = 1;  // input
  int k = 1, r = 1, s = 1;         // filter: K output channels, R x S taps
  int pad_h = 0, pad_w = 0;
  int stride_h = 1, stride_w = 1;
  int dil_h = 1, dil_w = 1;
  int p = 1, q = 1;                // output height and width (conv_out_size); set by make()

  // Fills p and q from the other fields.
  static ConvProblem make(int n, int c, int h, int w, int k, int r, int s, int pad_h = 0, int pad_w = 0,
                          int stride_h = 1, int stride_w = 1, int dil_h = 1, int dil_w = 1) {
    ConvProblem cp{n, c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, 0, 0};
    cp.p = conv_out_size(h, r, pad_h, stride_h, dil_h);
    cp.q = conv_out_size(w, s, pad_w, stride_w, dil_w);
    return cp;
  }

  // The implicit GEMM's sizes.
  TUT_HD int gemm_m() const { return k; }
  TUT_HD int gemm_n() const { return n * p * q; }
  TUT_HD int gemm_k() const { return c * r * s; }

  std::int64_t x_elems() const { return std::int64_t(n) * c * h * w; }
  std::int64_t w_elems() const { return std::int64_t(k) * c * r * s; }
  std::int64_t y_elems() const { return std::int64_t(n) * k * p * q; }
  // Direct-convolution FLOPs: one multiply and one add per filter tap of every output element.
  double flops() const { return 2.0 * double(n) * k * p * q * double(c) * r * s; }
  // The fewest bytes: x and w read once, y written once.
  double min_bytes() const { return 4.0 * (double(x_elems()) + double(w_elems()) + double(y_elems())); }
  bool dilated() const { return dil_h != 1 || dil_w != 1; }
  // "N,C,H,W,K,R,S,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w" (the --shape form, fully spelled out).
  std::string label() const;
};

// ---- The coordinate maps (host and device) -------------------------------------------------------
// Column j of the implicit GEMM is one output pixel: image n, row p, column q (j = (n*P + p)*Q + q).
struct OutCoord {
  int n, p, q;
};
TUT_HD inline OutCoord out_coord(const ConvProblem& cp, int j) {
  const int pq = cp.p * cp.q;
  const int n = j / pq;
  const int rem = j - n * pq;
  const int p = rem / cp.q;
  return OutCoord{n, p, rem - p * cp.q};
}

// Row kk of the reduction is one filter tap: channel c, row r, column s (kk = (c*R + r)*S + s),
// which is also the offset of w[k][c][r][s] within filter k.
struct TapCoord {
  int c, r, s;
};
TUT_HD inline TapCoord tap_coord(const ConvProblem& cp, int kk) {
  const int rs = cp.r * cp.s;
  const int c = kk / rs;
  const int rem = kk - c * rs;
  const int r = rem / cp.s;
  return TapCoord{c, r, rem - r * cp.s};
}

// The input pixel that tap (c, r, s) of output pixel (n, p, q) reads: its row and column (either
// may be outside the image, in the padding).
TUT_HD inline int in_row(const ConvProblem& cp, int p, int r) { return p * cp.stride_h - cp.pad_h + r * cp.dil_h; }
TUT_HD inline int in_col(const ConvProblem& cp, int q, int s) { return q * cp.stride_w - cp.pad_w + s * cp.dil_w; }

// X_col(kk, j): the offset of the input element in x, or -1 when it lies in the padding (reads 0).
TUT_HD inline std::int64_t x_col_offset(const ConvProblem& cp, int kk, int j) {
  const OutCoord o = out_coord(cp, j);
  const TapCoord t = tap_coord(cp, kk);
  const int ih = in_row(cp, o.p, t.r), iw = in_col(cp, o.q, t.s);
  if (ih < 0 || ih >= cp.h || iw < 0 || iw >= cp.w) return -1;
  return ((std::int64_t(o.n) * cp.c + t.c) * cp.h + ih) * cp.w + iw;
}

// Y(row k, column j) lives at y[n][k][p][q].
TUT_HD inline std::int64_t y_offset(const ConvProblem& cp, int k, int j) {
  const int pq = cp.p * cp.q;
  const int n = j / pq;
  return (std::int64_t(n) * cp.k + k) * pq + (j - n * pq);
}

}  // namespace tut
