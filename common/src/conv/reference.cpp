#include "tut/conv/reference.hpp"

#include <cmath>
#include <string>

#include "tut/gemm/cpu_reference.hpp"

namespace tut {

void conv_direct_cpu_f64(const ConvProblem& p, const float* x, const float* w, double* y) {
  for (int n = 0; n < p.n; ++n)
    for (int k = 0; k < p.k; ++k)
      for (int op = 0; op < p.p; ++op)
        for (int oq = 0; oq < p.q; ++oq) {
          double acc = 0.0;
          for (int c = 0; c < p.c; ++c)
            for (int r = 0; r < p.r; ++r) {
              const int ih = in_row(p, op, r);
              if (ih < 0 || ih >= p.h) continue;  // padding: adds zero
              for (int s = 0; s < p.s; ++s) {
                const int iw = in_col(p, oq, s);
                if (iw < 0 || iw >= p.w) continue;
                acc += double(w[((std::size_t(k) * p.c + c) * p.r + r) * p.s + s]) *
                       double(x[((std::size_t(n) * p.c + c) * p.h + ih) * p.w + iw]);
              }
            }
          y[((std::size_t(n) * p.k + k) * p.p + op) * p.q + oq] = acc;
        }
}

std::vector<float> im2col_cpu(const ConvProblem& p, const float* x) {
  const std::size_t rows = std::size_t(p.gemm_k()), cols = std::size_t(p.gemm_n());
  std::vector<float> col(rows * cols);
  for (std::size_t kk = 0; kk < rows; ++kk)
    for (std::size_t j = 0; j < cols; ++j) {
      const std::int64_t off = x_col_offset(p, int(kk), int(j));
      col[kk * cols + j] = off < 0 ? 0.0f : x[off];
    }
  return col;
}

void conv_im2col_cpu_f64(const ConvProblem& p, const float* x, const float* w, double* y) {
  const std::vector<float> col = im2col_cpu(p, x);
  const int M = p.gemm_m(), N = p.gemm_n(), K = p.gemm_k();
  std::vector<double> y_gemm(std::size_t(M) * N);
  gemm_cpu_f64(GemmProblem::packed(M, N, K, 1.0f, 0.0f), w, col.data(), nullptr, y_gemm.data());
  for (int k = 0; k < M; ++k)
    for (int j = 0; j < N; ++j) y[y_offset(p, k, j)] = y_gemm[std::size_t(k) * N + j];
}

void conv_epilogue_cpu_f64(const ConvProblem& p, double* y, const float* bias, const float* residual, bool relu) {
  const std::size_t pq = std::size_t(p.p) * p.q, total = std::size_t(p.y_elems());
  for (std::size_t i = 0; i < total; ++i) {
    double v = y[i];
    if (bias) v += double(bias[(i / pq) % std::size_t(p.k)]);
    if (residual) v += double(residual[i]);
    y[i] = (relu && v < 0.0) ? 0.0 : v;
  }
}

template <class Ref>
VerifyResult verify_conv(const ConvProblem& p, const float* x, const float* w, const float* out, const Ref* ref,
                         Match match, std::size_t max_report, const float* bias, const float* residual, Math math,
                         double tolerance, double norm_tolerance) {
  const std::size_t crs = std::size_t(p.gemm_k());
  // ||w[k]||_2: each filter is one row of C*R*S floats.
  std::vector<double> w_norm(p.k);
  for (int k = 0; k < p.k; ++k) {
    double s = 0;
    for (std::size_t i = 0; i < crs; ++i) s += double(w[k * crs + i]) * double(w[k * crs + i]);
    w_norm[k] = std::sqrt(s);
  }
  // ||X_col(:, j)||_2^2 = sum over the taps of output pixel j of x^2, over every channel: first
  // x2[n][ih][iw] = sum_c x^2, then the R x S window of each output pixel (padding adds nothing).
  const std::size_t hw = std::size_t(p.h) * p.w;
  std::vector<double> x2(std::size_t(p.n) * hw, 0.0);
  for (int n = 0; n < p.n; ++n)
    for (int c = 0; c < p.c; ++c) {
      const float* plane = x + (std::size_t(n) * p.c + c) * hw;
      double* acc = &x2[std::size_t(n) * hw];
      for (std::size_t i = 0; i < hw; ++i) acc[i] += double(plane[i]) * double(plane[i]);
    }
  const std::size_t pq = std::size_t(p.p) * p.q;
  std::vector<double> col_norm(std::size_t(p.n) * pq);
  for (int n = 0; n < p.n; ++n)
    for (int op = 0; op < p.p; ++op)
      for (int oq = 0; oq < p.q; ++oq) {
        double s = 0;
        for (int r = 0; r < p.r; ++r) {
          const int ih = in_row(p, op, r);
          if (ih < 0 || ih >= p.h) continue;
          for (int t = 0; t < p.s; ++t) {
            const int iw = in_col(p, oq, t);
            if (iw >= 0 && iw < p.w) s += x2[std::size_t(n) * hw + std::size_t(ih) * p.w + iw];
          }
        }
        col_norm[std::size_t(n) * pq + std::size_t(op) * p.q + oq] = std::sqrt(s);
      }

  const std::size_t kpq = std::size_t(p.k) * pq;
  // Element i is y's i-th float in memory: (n, k, p, q) = NKPQ order.
  const auto element = [&](std::size_t i) {
    const std::size_t n = i / kpq, k = (i / pq) % p.k, pix = i % pq;
    double scale = w_norm[k] * col_norm[n * pq + pix];
    if (bias) scale += std::fabs(double(bias[k]));
    if (residual) scale += std::fabs(double(residual[i]));
    return Element{double(out[i]), double(ref[i]), scale};
  };
  const auto locate = [&](std::size_t i, bool named) {
    const std::size_t n = i / kpq, k = (i / pq) % p.k, op = (i % pq) / p.q, oq = i % p.q;
    const std::string a = std::to_string(n), b = std::to_string(k), c = std::to_string(op), d = std::to_string(oq);
    return named ? "n " + a + ", k " + b + ", p " + c + ", q " + d : a + ", " + b + ", " + c + ", " + d;
  };
  const long long terms = p.gemm_k() + (bias ? 1 : 0) + (residual ? 1 : 0);
  const double tau = tolerance > 0 ? tolerance : math_tolerance(math, terms);
  return verify_elements(std::size_t(p.n) * kpq, tau, match, element, locate, max_report, norm_tolerance);
}

template VerifyResult verify_conv<float>(const ConvProblem&, const float*, const float*, const float*, const float*,
                                         Match, std::size_t, const float*, const float*, Math, double, double);
template VerifyResult verify_conv<double>(const ConvProblem&, const float*, const float*, const float*,
                                          const double*, Match, std::size_t, const float*, const float*, Math,
                                          double, double);

}  // namespace tut
