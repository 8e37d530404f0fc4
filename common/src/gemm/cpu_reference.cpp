#include "tut/gemm/cpu_reference.hpp"

#include <vector>

namespace tut {

void gemm_cpu_f64(const GemmProblem& p, const float* A, const float* B, const float* C_in, double* out) {
  std::vector<double> row(static_cast<std::size_t>(p.n));
  for (int i = 0; i < p.m; ++i) {
    for (int j = 0; j < p.n; ++j) row[j] = 0.0;
    // i-k-j order: the inner loop walks rows of B and the accumulator row contiguously.
    for (int kk = 0; kk < p.k; ++kk) {
      const double a = A[std::size_t(i) * p.lda + kk];
      const float* b = B + std::size_t(kk) * p.ldb;
      for (int j = 0; j < p.n; ++j) row[j] += a * double(b[j]);
    }
    for (int j = 0; j < p.n; ++j) {
      const std::size_t idx = std::size_t(i) * p.ldc + j;
      double v = double(p.alpha) * row[j];
      if (p.beta != 0.0f) v += double(p.beta) * double(C_in[idx]);
      out[idx] = v;
    }
  }
}

}  // namespace tut
