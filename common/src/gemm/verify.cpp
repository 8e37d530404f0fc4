#include "tut/gemm/verify.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace tut {

template <class Ref>
VerifyResult verify_gemm(const GemmProblem& p, const float* A, const float* B, const float* C_in,
                         const float* out, const Ref* ref, Match match, Math math, std::size_t max_report) {
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
  const std::size_t n = std::size_t(p.n);
  const auto element = [&](std::size_t e) {
    const std::size_t i = e / n, j = e % n;
    const std::size_t idx = i * p.ldc + j;
    double scale = abs_alpha * a_norm[i] * b_norm[j];
    if (p.beta != 0.0f) scale += abs_beta * std::fabs(double(C_in[idx]));
    return Element{double(out[idx]), double(ref[idx]), scale};
  };
  const auto locate = [n](std::size_t e, bool named) {
    const std::string i = std::to_string(e / n), j = std::to_string(e % n);
    return named ? "row " + i + ", col " + j : i + ", " + j;
  };
  return verify_elements(std::size_t(p.m) * n, math_tolerance(math, p.k), match, element, locate, max_report);
}

template VerifyResult verify_gemm<float>(const GemmProblem&, const float*, const float*, const float*,
                                         const float*, const float*, Match, Math, std::size_t);
template VerifyResult verify_gemm<double>(const GemmProblem&, const float*, const float*, const float*,
                                          const float*, const double*, Match, Math, std::size_t);

}  // namespace tut
