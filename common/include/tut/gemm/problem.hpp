// The GEMM problem every Part I step solves: C = alpha * A * B + beta * C, row-major FP32.
//   A is (m, k) with leading dimension lda >= k, B is (k, n) with ldb >= n, C is (m, n) with ldc >= n.
// The harness guarantees every matrix has fewer than 2^31 elements, so kernels may index with int.
#pragma once

#include <cstdint>
#include <string>

namespace tut {

struct GemmProblem {
  int m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 0.0f;
  int lda = 0, ldb = 0, ldc = 0;

  // A problem with packed rows (lda = k, ldb = n, ldc = n).
  static GemmProblem packed(int m, int n, int k, float alpha, float beta) {
    return GemmProblem{m, n, k, alpha, beta, k, n, n};
  }
  std::int64_t a_elems() const { return std::int64_t(m) * lda; }
  std::int64_t b_elems() const { return std::int64_t(k) * ldb; }
  std::int64_t c_elems() const { return std::int64_t(m) * ldc; }
  // 2*M*N*K: one multiply and one add per term of every dot product.
  double flops() const { return 2.0 * m * n * k; }
  // The fewest bytes a GEMM must move through device memory: A and B read once, C written
  // once, and C also read once when beta != 0.
  double min_bytes() const {
    double elems = double(m) * k + double(k) * n + double(m) * n * (beta != 0.0f ? 2.0 : 1.0);
    return 4.0 * elems;
  }
  std::string label() const {  // "MxNxK"
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  }
};

}  // namespace tut
