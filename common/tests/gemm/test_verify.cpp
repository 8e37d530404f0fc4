#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <limits>
#include <vector>

#include "tut/core/random.hpp"
#include "tut/gemm/cpu_reference.hpp"
#include "tut/gemm/verify.hpp"

using tut::GemmProblem;
using tut::Match;

namespace {

struct Case {
  GemmProblem p;
  std::vector<float> A, B, C;
  std::vector<double> ref;
  std::vector<float> out;  // the reference rounded to FP32: what a correct kernel could return
};

Case make_case(int m, int n, int k, float alpha, float beta, bool ints) {
  Case c{GemmProblem::packed(m, n, k, alpha, beta), {}, {}, {}, {}, {}};
  c.A.resize(std::size_t(m) * k);
  c.B.resize(std::size_t(k) * n);
  c.C.resize(std::size_t(m) * n);
  auto fill = ints ? tut::fill_small_ints : tut::fill_uniform;
  fill(c.A.data(), c.A.size(), 1);
  fill(c.B.data(), c.B.size(), 2);
  fill(c.C.data(), c.C.size(), 3);
  c.ref.resize(c.C.size());
  tut::gemm_cpu_f64(c.p, c.A.data(), c.B.data(), c.C.data(), c.ref.data());
  c.out.assign(c.ref.begin(), c.ref.end());
  return c;
}

tut::VerifyResult check(const Case& c, Match match) {
  return tut::verify_gemm(c.p, c.A.data(), c.B.data(), c.C.data(), c.out.data(), c.ref.data(), match);
}

// A rough FP32 GEMM (float accumulation, k in order): a correct but differently rounded result.
std::vector<float> fp32_gemm(const Case& c) {
  std::vector<float> out(c.C.size());
  for (int i = 0; i < c.p.m; ++i)
    for (int j = 0; j < c.p.n; ++j) {
      float acc = 0.f;
      for (int kk = 0; kk < c.p.k; ++kk) acc += c.A[std::size_t(i) * c.p.k + kk] * c.B[std::size_t(kk) * c.p.n + j];
      out[std::size_t(i) * c.p.n + j] = c.p.alpha * acc + c.p.beta * c.C[std::size_t(i) * c.p.n + j];
    }
  return out;
}

}  // namespace

TEST_CASE("tolerance: 2 * gamma_{K+2} with the FP32 unit roundoff") {
  const double u = std::ldexp(1.0, -24);
  CHECK(tut::gemm_tolerance(1) == doctest::Approx(2 * 3 * u / (1 - 3 * u)));
  CHECK(tut::gemm_tolerance(4096) == doctest::Approx(2 * 4098 * u / (1 - 4098 * u)));
  CHECK(tut::gemm_tolerance(4096) < 5e-4);
  CHECK(tut::gemm_tolerance(100, 0.25) == INFINITY);  // more terms than the precision can bound
}

TEST_CASE("TF32 tolerance: both factors rounded to 2^-11, summed with a truncating FP32 adder, doubled") {
  const double ut = std::ldexp(1.0, -11);
  const double ua = std::ldexp(1.0, -23);
  for (long long k : {1LL, 8LL, 4096LL, 8192LL}) {
    const double n = double(k + 2);
    const double gamma = n * ua / (1 - n * ua);
    CHECK(tut::tf32_reduction_tolerance(k) == doctest::Approx(2 * ((1 + ut) * (1 + ut) * (1 + gamma) - 1)));
    CHECK(tut::math_tolerance(tut::Math::Tf32, k) == tut::tf32_reduction_tolerance(k));
    CHECK(tut::math_tolerance(tut::Math::Fp32, k) == tut::gemm_tolerance(int(k)));
    CHECK(tut::tf32_reduction_tolerance(k) > tut::gemm_tolerance(int(k)));  // never tighter than FP32
  }
  CHECK(tut::tf32_reduction_tolerance(4096) == doctest::Approx(2.93e-3).epsilon(0.01));
  CHECK(tut::tf32_reduction_tolerance(1LL << 24) == INFINITY);  // the FP32 sum can no longer be bounded
  CHECK(std::string(tut::math_name(tut::Math::Tf32)) == "TF32");
  CHECK(std::string(tut::math_name(tut::Math::Fp32)) == "FP32");
}

TEST_CASE("an exact result passes both modes") {
  Case c = make_case(17, 9, 33, 2.0f, -1.0f, true);
  const auto r = check(c, Match::Exact);
  CHECK(r.passed);
  CHECK(r.mismatches == 0);
  CHECK(r.rel_err == 0.0);
  CHECK(r.checked == 17 * 9);
  CHECK(check(c, Match::Rounded).passed);
}

TEST_CASE("a correctly rounded FP32 result passes the tolerance, not the exact check") {
  Case c = make_case(64, 48, 300, 0.75f, -1.25f, false);
  c.out = fp32_gemm(c);
  const auto r = check(c, Match::Rounded);
  CHECK(r.passed);
  CHECK(r.rel_err > 0.0);
  CHECK(r.rel_err < r.tolerance);
  CHECK_FALSE(check(c, Match::Exact).passed);
}

TEST_CASE("one wrong element is caught, with its position") {
  Case c = make_case(40, 50, 60, 1.0f, 0.0f, true);
  c.out[std::size_t(13) * 50 + 27] += 1.0f;
  const auto r = check(c, Match::Exact);
  CHECK_FALSE(r.passed);
  CHECK(r.mismatches == 1);
  REQUIRE(r.first.size() == 1);
  CHECK(r.first[0].where == "row 13, col 27");
  CHECK(r.first[0].index == std::size_t(13) * 50 + 27);
  CHECK(r.max_where == "13, 27");
  CHECK(r.details().find("(row 13, col 27)") != std::string::npos);

  // With random data: an error of 0.02 on one element of a 256x256 result is under the norm-wise
  // tolerance (||ref||_F is ~1400) but over that element's bound (~0.003).
  Case d = make_case(256, 256, 256, 1.0f, 0.0f, false);
  d.out = fp32_gemm(d);
  d.out[std::size_t(200) * 256 + 3] += 0.02f;
  const auto rd = check(d, Match::Rounded);
  CHECK(rd.rel_err < rd.tolerance);
  CHECK_FALSE(rd.passed);
  CHECK(rd.mismatches == 1);
  CHECK(rd.first[0].where == "row 200, col 3");
}

TEST_CASE("a NaN fails, in both modes") {
  Case c = make_case(8, 8, 8, 1.0f, 0.0f, true);
  c.out[5] = std::numeric_limits<float>::quiet_NaN();
  for (Match m : {Match::Exact, Match::Rounded}) {
    const auto r = check(c, m);
    CHECK_FALSE(r.passed);
    CHECK(r.nonfinite == 1);
    CHECK(r.mismatches == 1);
    CHECK(std::isinf(r.rel_err));
  }
}

TEST_CASE("an unwritten output element fails") {
  // beta == 0: the harness poisons C with NaN, so an element the kernel skips stays NaN.
  Case c = make_case(33, 65, 17, 2.0f, 0.0f, true);
  c.out[std::size_t(32) * 65 + 64] = std::numeric_limits<float>::quiet_NaN();
  CHECK_FALSE(check(c, Match::Exact).passed);
  // beta != 0: a skipped element keeps its input value of C.
  Case d = make_case(64, 64, 512, 0.75f, -1.25f, false);
  d.out = fp32_gemm(d);
  d.out[std::size_t(63) * 64 + 63] = d.C[std::size_t(63) * 64 + 63];
  const auto r = check(d, Match::Rounded);
  CHECK_FALSE(r.passed);
  CHECK(r.first.at(0).where.rfind("row 63, ", 0) == 0);
}

TEST_CASE("a systematic small error (a missed k-term everywhere) fails the norm-wise check") {
  Case c = make_case(64, 64, 4000, 1.0f, 0.0f, false);
  c.out = fp32_gemm(c);
  // Drop the last k-term from every element: most of these errors are within their element's
  // worst-case bound, but together they are far above the norm-wise tolerance.
  for (int i = 0; i < 64; ++i)
    for (int j = 0; j < 64; ++j) c.out[std::size_t(i) * 64 + j] -= c.A[std::size_t(i) * 4000 + 3999] * c.B[std::size_t(3999) * 64 + j];
  const auto r = check(c, Match::Rounded);
  CHECK_FALSE(r.passed);
  CHECK(r.rel_err > r.tolerance);
}

TEST_CASE("float references (cuBLAS) are accepted too") {
  Case c = make_case(10, 12, 14, 1.0f, 1.0f, true);
  const std::vector<float> ref_f(c.ref.begin(), c.ref.end());
  const auto r = tut::verify_gemm(c.p, c.A.data(), c.B.data(), c.C.data(), c.out.data(), ref_f.data(), Match::Exact);
  CHECK(r.passed);
}

TEST_CASE("summary is one line and says the verdict") {
  Case c = make_case(4, 4, 4, 1.0f, 0.0f, true);
  CHECK(check(c, Match::Exact).summary().rfind("verified", 0) == 0);
  c.out[0] += 1;
  const auto s = check(c, Match::Exact).summary();
  CHECK(s.rfind("FAILED", 0) == 0);
  CHECK(s.find('\n') == std::string::npos);
}
