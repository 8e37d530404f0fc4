// verify_conv (reference.hpp): what it passes, what it catches, and where it says the error is.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tut/conv/problem.hpp"
#include "tut/conv/reference.hpp"
#include "tut/core/random.hpp"

using tut::ConvProblem;
using tut::Match;
using tut::Math;

namespace {

struct Case {
  ConvProblem p;
  std::vector<float> x, w;
  std::vector<double> ref;
  std::vector<float> out;  // the reference rounded to FP32: what a correct kernel could return
};

Case make_case(const ConvProblem& p, bool ints) {
  Case c{p, std::vector<float>(std::size_t(p.x_elems())), std::vector<float>(std::size_t(p.w_elems())), {}, {}};
  auto fill = ints ? tut::fill_small_ints : tut::fill_uniform;
  fill(c.x.data(), c.x.size(), 31);
  fill(c.w.data(), c.w.size(), 32);
  c.ref.resize(std::size_t(p.y_elems()));
  tut::conv_direct_cpu_f64(p, c.x.data(), c.w.data(), c.ref.data());
  c.out.assign(c.ref.begin(), c.ref.end());
  return c;
}

tut::VerifyResult check(const Case& c, Match match) {
  return tut::verify_conv(c.p, c.x.data(), c.w.data(), c.out.data(), c.ref.data(), match);
}

std::size_t nkpq(const ConvProblem& p, int n, int k, int op, int oq) {
  return ((std::size_t(n) * p.k + k) * p.p + op) * p.q + oq;
}

// The direct convolution in FP32 (float accumulation, taps in c, r, s order): a correct but
// differently rounded result. `skip` drops the tap with that kk from every output element.
std::vector<float> fp32_conv(const Case& c, int skip = -1) {
  const ConvProblem& p = c.p;
  std::vector<float> y(std::size_t(p.y_elems()));
  for (int n = 0; n < p.n; ++n)
    for (int k = 0; k < p.k; ++k)
      for (int op = 0; op < p.p; ++op)
        for (int oq = 0; oq < p.q; ++oq) {
          float acc = 0.f;
          for (int cc = 0; cc < p.c; ++cc)
            for (int r = 0; r < p.r; ++r)
              for (int s = 0; s < p.s; ++s) {
                if ((cc * p.r + r) * p.s + s == skip) continue;
                const int ih = op * p.stride_h - p.pad_h + r * p.dil_h, iw = oq * p.stride_w - p.pad_w + s * p.dil_w;
                if (ih < 0 || ih >= p.h || iw < 0 || iw >= p.w) continue;
                acc += c.w[((std::size_t(k) * p.c + cc) * p.r + r) * p.s + s] *
                       c.x[((std::size_t(n) * p.c + cc) * p.h + ih) * p.w + iw];
              }
          y[nkpq(p, n, k, op, oq)] = acc;
        }
  return y;
}

}  // namespace

TEST_CASE("verify_conv: an exact result passes both modes") {
  const Case c = make_case(ConvProblem::make(2, 3, 9, 8, 5, 3, 2, 1, 0, 2, 1), true);
  const auto r = check(c, Match::Exact);
  CHECK(r.passed);
  CHECK(r.mismatches == 0);
  CHECK(r.nonfinite == 0);
  CHECK(r.rel_err == 0.0);
  CHECK(r.checked == std::size_t(c.p.y_elems()));
  CHECK(r.tolerance == tut::reduction_tolerance(c.p.gemm_k()));
  CHECK(r.details().empty());
  CHECK(check(c, Match::Rounded).passed);
}

TEST_CASE("verify_conv: one wrong element is caught, with its coordinates") {
  Case c = make_case(ConvProblem::make(2, 3, 10, 10, 5, 3, 3, 1, 1), true);
  REQUIRE(c.p.p == 10);
  REQUIRE(c.p.q == 10);
  const std::size_t i = nkpq(c.p, 0, 3, 5, 7);
  c.out[i] += 1.0f;
  for (Match m : {Match::Exact, Match::Rounded}) {
    const auto r = check(c, m);
    CHECK_FALSE(r.passed);
    CHECK(r.mismatches == 1);
    REQUIRE(r.first.size() == 1);
    CHECK(r.first[0].where == "n 0, k 3, p 5, q 7");
    CHECK(r.first[0].index == i);
    CHECK(r.first[0].got == c.ref[i] + 1.0);
    CHECK(r.first[0].want == c.ref[i]);
    CHECK(r.max_where == "0, 3, 5, 7");
    CHECK(r.max_index == i);
    CHECK(r.details().find("(n 0, k 3, p 5, q 7)") != std::string::npos);
  }

  // The last element of the last image: every coordinate at its maximum.
  Case d = make_case(ConvProblem::make(2, 3, 10, 10, 5, 3, 3, 1, 1), true);
  d.out.back() -= 2.0f;
  const auto rd = check(d, Match::Exact);
  CHECK_FALSE(rd.passed);
  REQUIRE(rd.first.size() == 1);
  CHECK(rd.first[0].where == "n 1, k 4, p 9, q 9");
  CHECK(rd.max_where == "1, 4, 9, 9");

  // Non-square output, asymmetric stride: P != Q, so p and q cannot be swapped unnoticed.
  Case e = make_case(ConvProblem::make(3, 2, 9, 7, 4, 3, 2, 1, 0, 2, 1), false);
  REQUIRE(e.p.p == 5);
  REQUIRE(e.p.q == 6);
  e.out[nkpq(e.p, 2, 1, 4, 0)] += 0.5f;
  const auto re = check(e, Match::Rounded);
  CHECK_FALSE(re.passed);
  CHECK(re.mismatches == 1);
  REQUIRE(re.first.size() == 1);
  CHECK(re.first[0].where == "n 2, k 1, p 4, q 0");
  CHECK(re.max_where == "2, 1, 4, 0");
}

TEST_CASE("verify_conv: a NaN fails, in both modes") {
  Case c = make_case(ConvProblem::make(2, 4, 6, 6, 3, 3, 3, 1, 1), true);
  c.out[nkpq(c.p, 1, 2, 0, 5)] = std::numeric_limits<float>::quiet_NaN();
  for (Match m : {Match::Exact, Match::Rounded}) {
    const auto r = check(c, m);
    CHECK_FALSE(r.passed);
    CHECK(r.nonfinite == 1);
    CHECK(r.mismatches == 1);
    CHECK(std::isinf(r.rel_err));
    REQUIRE(r.first.size() == 1);
    CHECK(r.first[0].where == "n 1, k 2, p 0, q 5");
  }
  // An infinity fails too.
  c.out[nkpq(c.p, 1, 2, 0, 5)] = std::numeric_limits<float>::infinity();
  CHECK_FALSE(check(c, Match::Rounded).passed);
}

TEST_CASE("verify_conv: an FP32-rounded result passes Rounded, not Exact") {
  Case c = make_case(ConvProblem::make(2, 16, 12, 11, 8, 3, 3, 1, 1, 1, 1, 1, 1), false);
  c.out = fp32_conv(c);
  const auto r = check(c, Match::Rounded);
  CHECK(r.passed);
  CHECK(r.mismatches == 0);
  CHECK(r.rel_err > 0.0);
  CHECK(r.rel_err < r.tolerance);
  CHECK_FALSE(check(c, Match::Exact).passed);

  // The same with dilation, stride and asymmetric padding.
  Case d = make_case(ConvProblem::make(2, 8, 13, 12, 6, 3, 2, 2, 1, 2, 1, 2, 3), false);
  d.out = fp32_conv(d);
  CHECK(check(d, Match::Rounded).passed);
  CHECK_FALSE(check(d, Match::Exact).passed);
}

TEST_CASE("verify_conv: a systematic small error (one tap dropped everywhere) fails the norm-wise check") {
  // C*R*S = 9216 terms: each element's worst-case bound (~tau * 3000) is larger than any single
  // product of two values in (-1, 1), so no element fails alone; the norm-wise check catches it.
  Case c = make_case(ConvProblem::make(2, 1024, 8, 8, 4, 3, 3, 1, 1), false);
  const int centre_of_last_channel = (c.p.c - 1) * 9 + 4;  // (c, r, s) = (C-1, 1, 1): never in the padding
  c.out = fp32_conv(c, centre_of_last_channel);
  const auto r = check(c, Match::Rounded);
  CHECK_FALSE(r.passed);
  CHECK(r.rel_err > r.tolerance);
  CHECK(r.mismatches == 0);
  CHECK(r.nonfinite == 0);

  // The control: all taps, the same rounding, passes.
  c.out = fp32_conv(c);
  CHECK(check(c, Match::Rounded).passed);

  // With integer inputs the exact check catches the dropped tap on every element it touches.
  Case d = make_case(ConvProblem::make(1, 4, 5, 5, 2, 3, 3, 1, 1), true);
  d.out = fp32_conv(d, 0);  // tap (0, 0, 0): in the padding on the top row and the left column
  const auto rd = check(d, Match::Exact);
  CHECK_FALSE(rd.passed);
  CHECK(rd.mismatches == std::size_t(2 * 4 * 4));  // K * the 4x4 outputs whose tap (0, 0) is inside
}

TEST_CASE("verify_conv: a float reference (a library's) is accepted too") {
  const Case c = make_case(ConvProblem::make(2, 3, 7, 7, 4, 3, 3, 1, 1, 2, 2), true);
  const std::vector<float> ref_f(c.ref.begin(), c.ref.end());
  const auto r = tut::verify_conv(c.p, c.x.data(), c.w.data(), c.out.data(), ref_f.data(), Match::Exact);
  CHECK(r.passed);
  std::vector<float> bad(c.out);
  bad[nkpq(c.p, 1, 3, 3, 2)] = 1e6f;
  const auto rb = tut::verify_conv(c.p, c.x.data(), c.w.data(), bad.data(), ref_f.data(), Match::Rounded);
  CHECK_FALSE(rb.passed);
  REQUIRE(rb.first.size() == 1);
  CHECK(rb.first[0].where == "n 1, k 3, p 3, q 2");
}

TEST_CASE("verify_conv: an element's bound is ||w[k]|| * ||X_col(:, j)|| * tau") {
  // A 1x1 image with pad 1: X_col(:, j) holds only the centre taps, x[n][:][0][0].
  const ConvProblem p = ConvProblem::make(1, 2, 1, 1, 1, 3, 3, 1, 1);
  const std::vector<float> x{3, 4};                      // ||X_col(:, 0)|| = 5
  std::vector<float> w(18, 0.0f);
  w[0] = 2;                                              // a corner tap: in the padding, still in ||w||
  w[4] = 1;
  w[13] = 2;                                             // ||w[0]|| = 3
  std::vector<double> ref(1);
  tut::conv_direct_cpu_f64(p, x.data(), w.data(), ref.data());
  REQUIRE(ref[0] == 3 * 1 + 4 * 2);
  const std::vector<float> out{float(ref[0]) + 0.5f};
  const auto r = tut::verify_conv(p, x.data(), w.data(), out.data(), ref.data(), Match::Rounded);
  CHECK_FALSE(r.passed);
  REQUIRE(r.first.size() == 1);
  CHECK(r.first[0].bound == doctest::Approx(3.0 * 5.0 * tut::reduction_tolerance(18)));
}

// ---- TF32 (reference.hpp): the host model of the tensor cores' rounding, the claim the self-test
// rests on (its integer inputs are exact in TF32), and verify_conv's TF32 tolerance against a
// true-FP32 reference.

namespace {

std::uint32_t bits_of(float v) {
  std::uint32_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// y = conv(x, w) in float64 from inputs first rounded to TF32: what a TF32 kernel computes, up to
// its FP32 summation.
std::vector<double> tf32_conv(const ConvProblem& p, const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<float> xt(x), wt(w);
  for (float& v : xt) v = tut::to_tf32(v);
  for (float& v : wt) v = tut::to_tf32(v);
  std::vector<double> y(std::size_t(p.y_elems()));
  tut::conv_direct_cpu_f64(p, xt.data(), wt.data(), y.data());
  return y;
}

}  // namespace

TEST_CASE("to_tf32: round to nearest, ties away from zero, 10 fraction bits kept") {
  CHECK(tut::to_tf32(1.0f) == 1.0f);
  const float ulp = std::ldexp(1.0f, -10);                  // TF32's spacing just above 1
  CHECK(tut::to_tf32(1.0f + ulp) == 1.0f + ulp);           // representable: unchanged
  CHECK(tut::to_tf32(1.0f + ulp / 4) == 1.0f);              // below half: down
  CHECK(tut::to_tf32(1.0f + 3 * ulp / 4) == 1.0f + ulp);   // above half: up
  CHECK(tut::to_tf32(1.0f + ulp / 2) == 1.0f + ulp);       // a tie: away from zero
  CHECK(tut::to_tf32(-(1.0f + ulp / 2)) == -(1.0f + ulp));
  CHECK(tut::to_tf32(2.0f - ulp / 4) == 2.0f);              // rounding up carries into the exponent
  CHECK(std::isinf(tut::to_tf32(std::numeric_limits<float>::infinity())));
  CHECK(std::isnan(tut::to_tf32(std::numeric_limits<float>::quiet_NaN())));
  // Every result has its 13 low bits clear, and is within half a TF32 unit (2^-11 relative) of the input.
  std::vector<float> v(4096);
  tut::fill_uniform(v.data(), v.size(), 7);
  for (float f : v) {
    const float t = tut::to_tf32(f);
    CHECK((bits_of(t) & 0x1FFFu) == 0u);
    CHECK(std::fabs(double(t) - double(f)) <= std::ldexp(std::fabs(double(f)), -11));
  }
}

TEST_CASE("TF32: the self-test's integer inputs are exact, random ones are not") {
  std::vector<float> ints(10000), reals(10000);
  tut::fill_small_ints(ints.data(), ints.size(), 3);
  tut::fill_uniform(reals.data(), reals.size(), 3);
  CHECK(tut::exact_in_tf32(ints.data(), ints.size()));
  CHECK_FALSE(tut::exact_in_tf32(reals.data(), reals.size()));
  // Integers need at most 11 significant bits: 2047 and 2048 are exact, 2049 is not.
  const float edge[] = {2047.0f, 2048.0f, -2047.0f};
  CHECK(tut::exact_in_tf32(edge, 3));
  const float past = 2049.0f;
  CHECK_FALSE(tut::exact_in_tf32(&past, 1));
}

TEST_CASE("verify_conv with Math::Tf32: a TF32 result passes TF32's tolerance, not FP32's") {
  // C*R*S = 576, a seed_3x3-like reduction; random inputs in [-1, 1].
  const ConvProblem p = ConvProblem::make(2, 64, 9, 9, 6, 3, 3, 1, 1);
  std::vector<float> x(std::size_t(p.x_elems())), w(std::size_t(p.w_elems()));
  tut::fill_uniform(x.data(), x.size(), 11);
  tut::fill_uniform(w.data(), w.size(), 12);
  std::vector<double> ref(std::size_t(p.y_elems()));
  tut::conv_direct_cpu_f64(p, x.data(), w.data(), ref.data());  // true FP32 (in float64)
  const std::vector<double> t = tf32_conv(p, x, w);
  const std::vector<float> out(t.begin(), t.end());

  const auto r32 = tut::verify_conv(p, x.data(), w.data(), out.data(), ref.data(), Match::Rounded);
  const auto rtf = tut::verify_conv(p, x.data(), w.data(), out.data(), ref.data(), Match::Rounded, 5, nullptr,
                                    nullptr, Math::Tf32);
  CHECK_FALSE(r32.passed);  // TF32's rounding is far above FP32's
  CHECK(rtf.passed);
  CHECK(rtf.tolerance == doctest::Approx(tut::tf32_reduction_tolerance(p.gemm_k())));
  CHECK(rtf.rel_err > r32.tolerance);
  CHECK(rtf.rel_err < rtf.tolerance);

  // And the TF32 tolerance still catches a wrong element and a systematic error.
  std::vector<float> bad(out);
  bad[17] += 0.5f;
  CHECK_FALSE(tut::verify_conv(p, x.data(), w.data(), bad.data(), ref.data(), Match::Rounded, 5, nullptr, nullptr,
                               Math::Tf32)
                  .passed);
  std::vector<float> scaled(out);
  for (float& v : scaled) v *= 1.01f;  // 1% everywhere: above the TF32 tolerance (~2e-3 here)
  CHECK_FALSE(tut::verify_conv(p, x.data(), w.data(), scaled.data(), ref.data(), Match::Rounded, 5, nullptr, nullptr,
                               Math::Tf32)
                  .passed);
}

TEST_CASE("verify_conv with Math::Tf32: integer inputs stay exact") {
  const ConvProblem p = ConvProblem::make(2, 5, 8, 7, 4, 3, 3, 1, 1, 2, 1);
  std::vector<float> x(std::size_t(p.x_elems())), w(std::size_t(p.w_elems()));
  tut::fill_small_ints(x.data(), x.size(), 21);
  tut::fill_small_ints(w.data(), w.size(), 22);
  std::vector<double> ref(std::size_t(p.y_elems()));
  tut::conv_direct_cpu_f64(p, x.data(), w.data(), ref.data());
  const std::vector<double> t = tf32_conv(p, x, w);
  CHECK(t == ref);  // rounding the inputs to TF32 changes nothing
  const std::vector<float> out(t.begin(), t.end());
  CHECK(tut::verify_conv(p, x.data(), w.data(), out.data(), ref.data(), Match::Exact, 5, nullptr, nullptr, Math::Tf32)
            .passed);
}
