#include <doctest/doctest.h>

#include <limits>
#include <vector>

#include "tut/gemm/cpu_reference.hpp"

using tut::GemmProblem;

TEST_CASE("2x2x2 by hand") {
  // A = [1 2; 3 4], B = [5 6; 7 8], AB = [19 22; 43 50]
  const std::vector<float> A{1, 2, 3, 4}, B{5, 6, 7, 8}, C{1, -1, 2, -2};
  std::vector<double> out(4);
  tut::gemm_cpu_f64(GemmProblem::packed(2, 2, 2, 1.0f, 0.0f), A.data(), B.data(), C.data(), out.data());
  CHECK(out == std::vector<double>{19, 22, 43, 50});
  // alpha = 2, beta = -3: 2*AB - 3*C
  tut::gemm_cpu_f64(GemmProblem::packed(2, 2, 2, 2.0f, -3.0f), A.data(), B.data(), C.data(), out.data());
  CHECK(out == std::vector<double>{35, 47, 80, 106});
}

TEST_CASE("non-square: (2x3)(3x1)") {
  const std::vector<float> A{1, 0, -1, 2, 1, 0.5f}, B{4, 5, 6};
  std::vector<double> out(2);
  tut::gemm_cpu_f64(GemmProblem::packed(2, 1, 3, 1.0f, 0.0f), A.data(), B.data(), nullptr, out.data());
  CHECK(out[0] == -2.0);  // 4 - 6
  CHECK(out[1] == 16.0);  // 8 + 5 + 3
}

TEST_CASE("beta == 0 does not read C (a NaN there does not leak)") {
  const std::vector<float> A{2}, B{3}, C{std::numeric_limits<float>::quiet_NaN()};
  std::vector<double> out(1);
  tut::gemm_cpu_f64(GemmProblem::packed(1, 1, 1, 1.5f, 0.0f), A.data(), B.data(), C.data(), out.data());
  CHECK(out[0] == 9.0);
}

TEST_CASE("leading dimensions larger than the rows") {
  // A is 2x2 stored with lda = 3, B 2x2 with ldb = 4, C 2x2 with ldc = 3; padding holds junk.
  const std::vector<float> A{1, 2, 99, 3, 4, 99}, B{5, 6, 99, 99, 7, 8, 99, 99}, C{1, 1, 77, 1, 1, 77};
  GemmProblem p{2, 2, 2, 1.0f, 1.0f, 3, 4, 3};
  std::vector<double> out(6, -1.0);
  tut::gemm_cpu_f64(p, A.data(), B.data(), C.data(), out.data());
  CHECK(out[0] == 20);
  CHECK(out[1] == 23);
  CHECK(out[2] == -1.0);  // padding untouched
  CHECK(out[3] == 44);
  CHECK(out[4] == 51);
  CHECK(out[5] == -1.0);
}

TEST_CASE("float64 accumulation: no FP32 rounding in the reference") {
  // 1 + 2^-30 - 1 is lost in FP32 but kept in double.
  const std::vector<float> A{1.0f, 1.0f, 1.0f}, B{1.0f, 9.313225746154785e-10f, -1.0f};
  std::vector<double> out(1);
  tut::gemm_cpu_f64(GemmProblem::packed(1, 1, 3, 1.0f, 0.0f), A.data(), B.data(), nullptr, out.data());
  CHECK(out[0] == 9.313225746154785e-10);
}
