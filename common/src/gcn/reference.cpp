#include "tut/gcn/reference.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace tut {

namespace {

void check_sizes(const char* what, long long a, long long b, long long c = 0) {
  if (a < 0 || b < 0 || c < 0) throw std::invalid_argument(std::string(what) + ": negative size");
}

void check_csr(const char* what, const Csr& a) {
  check_sizes(what, a.rows, a.cols);
  if (a.indptr.size() != std::size_t(a.rows) + 1 || a.indices.size() != a.values.size()) {
    throw std::invalid_argument(std::string(what) + ": indptr must hold rows + 1 entries, indices and values nnz");
  }
}

// ||row r||_2 of a rows x cols row-major matrix, for every r.
std::vector<double> row_norms(const double* m, int rows, int cols) {
  std::vector<double> n(static_cast<std::size_t>(rows));
  for (int r = 0; r < rows; ++r) {
    double s = 0;
    for (int c = 0; c < cols; ++c) s += m[std::size_t(r) * cols + c] * m[std::size_t(r) * cols + c];
    n[std::size_t(r)] = std::sqrt(s);
  }
  return n;
}

// ||column c||_2 of a rows x cols row-major matrix, for every c.
std::vector<double> col_norms(const double* m, int rows, int cols) {
  std::vector<double> n(static_cast<std::size_t>(cols), 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) n[std::size_t(c)] += m[std::size_t(r) * cols + c] * m[std::size_t(r) * cols + c];
  for (auto& x : n) x = std::sqrt(x);
  return n;
}

// Names element i of a matrix with f columns: "node r, feature c" or "r, c".
Locate node_feature(int f) {
  return [f](std::size_t i, bool named) {
    const std::size_t cols = f > 0 ? std::size_t(f) : 1;
    const std::string r = std::to_string(i / cols), c = std::to_string(i % cols);
    return named ? "node " + r + ", feature " + c : r + ", " + c;
  };
}

double fp64_tolerance(long long terms) { return reduction_tolerance(terms, kUnitRoundoffFp64); }

// The longest row of a CSR matrix (0 for none).
long long max_row_length(const Csr& a) {
  long long longest = 0;
  for (int r = 0; r < a.rows; ++r) longest = std::max<long long>(longest, a.indptr[r + 1] - a.indptr[r]);
  return longest;
}

}  // namespace

void xw_cpu_f64(int v, int f_in, int f_out, const double* x, const double* w, double* h) {
  check_sizes("xw_cpu_f64", v, f_in, f_out);
  for (int r = 0; r < v; ++r) {
    const double* xr = x + std::size_t(r) * f_in;
    for (int c = 0; c < f_out; ++c) {
      double acc = 0;
      for (int k = 0; k < f_in; ++k) acc += xr[k] * w[std::size_t(k) * f_out + c];
      h[std::size_t(r) * f_out + c] = acc;
    }
  }
}

void spmm_cpu_f64(const Csr& a, int f, const double* z, double* y) {
  check_csr("spmm_cpu_f64", a);
  check_sizes("spmm_cpu_f64", f, 0);
  for (int r = 0; r < a.rows; ++r) {
    double* yr = y + std::size_t(r) * f;
    std::fill(yr, yr + f, 0.0);
    for (int p = a.indptr[r]; p < a.indptr[r + 1]; ++p) {
      const double arj = a.values[std::size_t(p)];
      const double* zj = z + std::size_t(a.indices[std::size_t(p)]) * f;
      for (int c = 0; c < f; ++c) yr[c] += arj * zj[c];
    }
  }
}

void bias_log_softmax_cpu_f64(int v, int f, const double* bias, double* z) {
  check_sizes("bias_log_softmax_cpu_f64", v, f);
  if (f == 0) return;
  for (int r = 0; r < v; ++r) {
    double* t = z + std::size_t(r) * f;
    if (bias) {
      for (int c = 0; c < f; ++c) t[c] += bias[c];
    }
    const double m = *std::max_element(t, t + f);
    double sum = 0;  // in [1, f]: the max's term is exp(0) = 1, the others are in [0, 1]
    for (int c = 0; c < f; ++c) sum += std::exp(t[c] - m);
    const double log_sum = std::log(sum);
    // (t_c - m) - log(sum), not t_c - (m + log(sum)): the latter loses log(sum) against a large m.
    for (int c = 0; c < f; ++c) t[c] = (t[c] - m) - log_sum;
  }
}

void gcn_layer_cpu_f64(const Csr& a, int f_in, int f_out, const double* x, const double* w, const double* b,
                       double* out) {
  check_csr("gcn_layer_cpu_f64", a);
  if (a.rows != a.cols) throw std::invalid_argument("gcn_layer_cpu_f64: A_hat must be square (V x V)");
  std::vector<double> h(std::size_t(a.cols) * std::size_t(std::max(f_out, 0)));
  xw_cpu_f64(a.cols, f_in, f_out, x, w, h.data());
  spmm_cpu_f64(a, f_out, h.data(), out);
  bias_log_softmax_cpu_f64(a.rows, f_out, b, out);
}

VerifyResult verify_xw(int v, int f_in, int f_out, const double* x, const double* w, const double* out,
                       const double* ref, Match match, std::size_t max_report) {
  check_sizes("verify_xw", v, f_in, f_out);
  const std::vector<double> x_norm = row_norms(x, v, f_in), w_norm = col_norms(w, f_in, f_out);
  const std::size_t f = std::size_t(f_out);
  const auto element = [&](std::size_t i) {
    return Element{out[i], ref[i], x_norm[i / f] * w_norm[i % f]};
  };
  return verify_elements(std::size_t(v) * f, fp64_tolerance(f_in), match, element, node_feature(f_out), max_report);
}

VerifyResult verify_spmm(const Csr& a, int f, const double* z, const double* out, const double* ref, Match match,
                         std::size_t max_report) {
  check_csr("verify_spmm", a);
  check_sizes("verify_spmm", f, 0);
  const std::size_t fs = std::size_t(f);
  // S_rc = sum_j |a_rj| |z_jc|, pre-multiplied by row r's share of the tolerance, tau(nnz_r) / tau(max).
  const double tau_max = fp64_tolerance(max_row_length(a));
  std::vector<double> scale(std::size_t(a.rows) * fs, 0.0);
  for (int r = 0; r < a.rows; ++r) {
    double* s = &scale[std::size_t(r) * fs];
    for (int p = a.indptr[r]; p < a.indptr[r + 1]; ++p) {
      const double arj = std::fabs(a.values[std::size_t(p)]);
      const double* zj = z + std::size_t(a.indices[std::size_t(p)]) * fs;
      for (std::size_t c = 0; c < fs; ++c) s[c] += arj * std::fabs(zj[c]);
    }
    const double share = fp64_tolerance(a.indptr[r + 1] - a.indptr[r]) / tau_max;
    for (std::size_t c = 0; c < fs; ++c) s[c] *= share;
  }
  const auto element = [&](std::size_t i) { return Element{out[i], ref[i], scale[i]}; };
  return verify_elements(std::size_t(a.rows) * fs, tau_max, match, element, node_feature(f), max_report);
}

// Why S_rc = 3 (1 + M_r) + |ref_rc| with L = f, to first order in u = 2^-53 (Higham's model: each
// operation, exp and log within a relative 2u at worst, i.e. 1 ulp):
//   - conditioning: out = t - lse(t) has d out_c / d t_k = [c == k] - p_k (p = softmax(t)), so input
//     errors |e_k| <= e move out_c by at most e (|1 - p_c| + sum_{k != c} p_k) = 2 e (1 - p_c) <= 2 e;
//   - the bias add and the max subtract round t_k by u |t_k| + u |t_k - m| <= 3u M: input errors,
//     doubled: 6u M;
//   - the f terms exp(t_k - m) lie in [0, 1] with a sum s in [1, f]: the exps (2u each) and the sum
//     (gamma_{f-1}) give s a relative error <= (f + 1) u, which log turns into an absolute one, and
//     log's own 2u |log s| <= 2u (f - 1): (3f - 1) u in all;
//   - the last subtraction: u |out_c|.
// One evaluation is within u (6M + 3f + |out_c|); the kernel and the reference, twice that, which
// 2 (f + 2) u (3 + 3M + |out_c|) <= tau(f) S_rc covers term by term.
VerifyResult verify_bias_log_softmax(int v, int f, const double* z, const double* bias, const double* out,
                                     const double* ref, std::size_t max_report) {
  check_sizes("verify_bias_log_softmax", v, f);
  const std::size_t fs = std::size_t(f);
  std::vector<double> row_max(std::size_t(v), 0.0);  // M_r = max_c |z_rc + b_c|
  for (std::size_t r = 0; r < std::size_t(v); ++r)
    for (std::size_t c = 0; c < fs; ++c)
      row_max[r] = std::max(row_max[r], std::fabs(z[r * fs + c] + (bias ? bias[c] : 0.0)));
  const auto element = [&](std::size_t i) {
    return Element{out[i], ref[i], 3.0 * (1.0 + row_max[i / fs]) + std::fabs(ref[i])};
  };
  return verify_elements(std::size_t(v) * fs, fp64_tolerance(f), Match::Rounded, element, node_feature(f),
                         max_report);
}

// S_rc = 3 + 5 G_r + |ref_rc| with L_r = f_in + nnz_r + f_out covers, for tau_r = tau(L_r) >= 2 (L_r + 2) u:
//   - the propagated error, twice (kernel and reference) 2 * gamma_{f_in + nnz_r + 1} G_r: 2 G_r tau_r;
//   - log_softmax's own, twice 2u (6 M + 3 f_out + |out|) with M <= G_r: (3 + 3 G_r + |ref|) tau_r,
//     as in verify_bias_log_softmax (f_out <= L_r).
VerifyResult verify_gcn_layer(const Csr& a, int f_in, int f_out, const double* x, const double* w, const double* b,
                              const double* out, const double* ref, std::size_t max_report) {
  check_csr("verify_gcn_layer", a);
  check_sizes("verify_gcn_layer", f_in, f_out);
  if (a.rows != a.cols) throw std::invalid_argument("verify_gcn_layer: A_hat must be square (V x V)");
  const std::size_t fs = std::size_t(f_out);
  const std::vector<double> x_norm = row_norms(x, a.cols, f_in), w_norm = col_norms(w, f_in, f_out);
  const long long fixed = static_cast<long long>(f_in) + f_out;
  const double tau_max = fp64_tolerance(fixed + max_row_length(a));
  // Per row: the first part of S_rc (3 + 5 G_r), pre-multiplied by its share of the tolerance.
  std::vector<double> row_scale(std::size_t(a.rows)), row_share(std::size_t(a.rows));
  for (int r = 0; r < a.rows; ++r) {
    double ax = 0;  // sum_j |a_rj| ||x(j, :)||
    for (int p = a.indptr[r]; p < a.indptr[r + 1]; ++p) {
      ax += std::fabs(a.values[std::size_t(p)]) * x_norm[std::size_t(a.indices[std::size_t(p)])];
    }
    double g = 0;
    for (std::size_t c = 0; c < fs; ++c) g = std::max(g, ax * w_norm[c] + (b ? std::fabs(b[c]) : 0.0));
    row_share[std::size_t(r)] = fp64_tolerance(fixed + a.indptr[r + 1] - a.indptr[r]) / tau_max;
    row_scale[std::size_t(r)] = 3.0 + 5.0 * g;
  }
  const auto element = [&](std::size_t i) {
    const std::size_t r = i / fs;
    return Element{out[i], ref[i], (row_scale[r] + std::fabs(ref[i])) * row_share[r]};
  };
  return verify_elements(std::size_t(a.rows) * fs, tau_max, Match::Rounded, element, node_feature(f_out),
                         max_report);
}

}  // namespace tut
