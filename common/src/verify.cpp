#include "tut/verify.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace tut {

double gemm_tolerance(int k, double unit_roundoff) {
  const double nu = double(k + 2) * unit_roundoff;
  if (nu >= 1.0) return INFINITY;  // no bound: this precision cannot sum that many terms
  return 2.0 * nu / (1.0 - nu);
}

template <class Ref>
VerifyResult verify_gemm(const GemmProblem& p, const float* A, const float* B, const float* C_in,
                         const float* out, const Ref* ref, Match match, std::size_t max_report) {
  VerifyResult r;
  r.match = match;
  r.tolerance = gemm_tolerance(p.k);
  r.checked = std::size_t(p.m) * std::size_t(p.n);

  // Row norms of A and column norms of B, for the per-element bound S_ij.
  std::vector<double> a_norm(p.m, 0.0), b_norm(p.n, 0.0);
  for (int i = 0; i < p.m; ++i) {
    double s = 0;
    for (int kk = 0; kk < p.k; ++kk) {
      const double a = A[std::size_t(i) * p.lda + kk];
      s += a * a;
    }
    a_norm[i] = std::sqrt(s);
  }
  for (int kk = 0; kk < p.k; ++kk) {
    const float* b = B + std::size_t(kk) * p.ldb;
    for (int j = 0; j < p.n; ++j) b_norm[j] += double(b[j]) * double(b[j]);
  }
  for (auto& v : b_norm) v = std::sqrt(v);

  const double abs_alpha = std::fabs(double(p.alpha)), abs_beta = std::fabs(double(p.beta));
  double diff2 = 0, ref2 = 0;
  for (int i = 0; i < p.m; ++i) {
    for (int j = 0; j < p.n; ++j) {
      const std::size_t idx = std::size_t(i) * p.ldc + j;
      const double got = out[idx];
      const double want = double(ref[idx]);
      double bound = abs_alpha * a_norm[i] * b_norm[j];
      if (p.beta != 0.0f) bound += abs_beta * std::fabs(double(C_in[idx]));
      bound *= r.tolerance;

      bool bad;
      double err;
      if (!std::isfinite(got)) {
        ++r.nonfinite;
        bad = !(got == want);  // only an identical infinity matches; NaN never does
        err = INFINITY;
      } else {
        err = std::fabs(got - want);
        bad = (match == Match::Exact) ? (got != want) : !(err <= bound);
        diff2 += err * err;
      }
      if (std::isfinite(want)) ref2 += want * want;
      if (err > r.max_abs_err) {
        r.max_abs_err = err;
        r.max_row = i;
        r.max_col = j;
      }
      if (bad) {
        ++r.mismatches;
        if (r.first.size() < max_report) r.first.push_back(Mismatch{i, j, got, want, bound});
      }
    }
  }
  if (r.nonfinite > 0) {
    r.rel_err = INFINITY;
  } else {
    r.rel_err = (ref2 > 0) ? std::sqrt(diff2 / ref2) : (diff2 > 0 ? INFINITY : 0.0);
  }
  const bool norm_ok = (match == Match::Exact) || r.rel_err <= r.tolerance;
  r.passed = (r.mismatches == 0) && norm_ok;
  return r;
}

template VerifyResult verify_gemm<float>(const GemmProblem&, const float*, const float*, const float*,
                                         const float*, const float*, Match, std::size_t);
template VerifyResult verify_gemm<double>(const GemmProblem&, const float*, const float*, const float*,
                                          const float*, const double*, Match, std::size_t);

std::string VerifyResult::summary() const {
  char buf[320];
  if (match == Match::Exact) {
    std::snprintf(buf, sizeof buf, "%s: exact match required; %zu of %zu elements differ (%zu not finite), "
                  "max |err| %.3g at (%d, %d)",
                  passed ? "verified" : "FAILED", mismatches, checked, nonfinite, max_abs_err, max_row, max_col);
  } else {
    std::snprintf(buf, sizeof buf, "%s: rel_err %.3g (tol %.3g), max |err| %.3g at (%d, %d); %zu of %zu "
                  "elements over their bound (%zu not finite)",
                  passed ? "verified" : "FAILED", rel_err, tolerance, max_abs_err, max_row, max_col,
                  mismatches, checked, nonfinite);
  }
  return buf;
}

std::string VerifyResult::details() const {
  std::ostringstream s;
  for (const auto& m : first) {
    char buf[200];
    if (match == Match::Exact) {
      std::snprintf(buf, sizeof buf, "  mismatch at (row %d, col %d): got %.9g, want %.9g\n", m.row, m.col, m.got,
                    m.want);
    } else {
      std::snprintf(buf, sizeof buf, "  mismatch at (row %d, col %d): got %.9g, want %.9g, |err| %.3g > bound %.3g\n",
                    m.row, m.col, m.got, m.want, std::fabs(m.got - m.want), m.bound);
    }
    s << buf;
  }
  if (mismatches > first.size()) s << "  ... and " << (mismatches - first.size()) << " more\n";
  return s.str();
}

}  // namespace tut
