#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "tut/core/random.hpp"

TEST_CASE("uniform inputs: deterministic, in (-1, 1), never zero, not all equal") {
  std::vector<float> a(100000), b(100000), c(100000);
  tut::fill_uniform(a.data(), a.size(), 42);
  tut::fill_uniform(b.data(), b.size(), 42);
  tut::fill_uniform(c.data(), c.size(), 43);
  CHECK(a == b);
  CHECK(a != c);
  double sum = 0;
  float lo = 1, hi = -1;
  for (float x : a) {
    CHECK_MESSAGE((x > -1.0f && x < 1.0f && x != 0.0f), x);
    sum += x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  CHECK(sum / double(a.size()) == doctest::Approx(0.0).epsilon(0.01).scale(1.0));
  CHECK(lo < -0.99f);
  CHECK(hi > 0.99f);
}

TEST_CASE("integer inputs come from {-3..3} without 0, all six values used") {
  std::vector<float> a(10000);
  tut::fill_small_ints(a.data(), a.size(), 7);
  std::set<float> seen(a.begin(), a.end());
  CHECK(seen == std::set<float>{-3, -2, -1, 1, 2, 3});
}

TEST_CASE("derived seeds differ per stream") {
  CHECK(tut::derive_seed(1, 0) != tut::derive_seed(1, 1));
  CHECK(tut::derive_seed(1, 0) != tut::derive_seed(2, 0));
  CHECK(tut::derive_seed(5, 2) == tut::derive_seed(5, 2));
}

TEST_CASE("float fills: pinned values (the same on every platform, and through the float64 generalization)") {
  float u[6];
  tut::fill_uniform(u, 6, 42);
  const float want_u[6] = {0x1.eeb998p-2f, -0x1.5c4074p-1f, -0x1.c56cc8p-2f,
                           -0x1.3f18f8p-2f, -0x1.d90e9cp-1f, 0x1.7910c4p-1f};
  for (int i = 0; i < 6; ++i) CHECK(u[i] == want_u[i]);
  float s[6];
  tut::fill_small_ints(s, 6, 7);
  const float want_s[6] = {-1, -2, 2, -1, 2, -1};
  for (int i = 0; i < 6; ++i) CHECK(s[i] == want_s[i]);
}

TEST_CASE("float64 uniform inputs: deterministic, in (-1, 1), never zero, on a 2^-52 grid, the float draws refined") {
  std::vector<double> a(100000), b(100000), c(100000);
  tut::fill_uniform_f64(a.data(), a.size(), 42);
  tut::fill_uniform_f64(b.data(), b.size(), 42);
  tut::fill_uniform_f64(c.data(), c.size(), 43);
  CHECK(a == b);
  CHECK(a != c);
  double sum = 0, lo = 1, hi = -1;
  std::size_t beyond_float = 0;
  for (double x : a) {
    CHECK_MESSAGE((x > -1.0 && x < 1.0 && x != 0.0), x);
    // (x + 1) * 2^52 is an odd integer: the grid point 2j + 1 over 2^52.
    const double scaled = std::ldexp(x + 1.0, 52);
    CHECK(scaled == std::floor(scaled));
    CHECK(std::fmod(scaled, 2.0) == 1.0);
    if (double(float(x)) != x) ++beyond_float;
    sum += x;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  CHECK(sum / double(a.size()) == doctest::Approx(0.0).epsilon(0.01).scale(1.0));
  CHECK(lo < -0.99);
  CHECK(hi > 0.99);
  CHECK(beyond_float > a.size() / 2);  // a double's mantissa, not a float's

  // The same draws as the float fill: each value lies within 2^-23 of the float one.
  std::vector<float> f(a.size());
  tut::fill_uniform(f.data(), f.size(), 42);
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(f[i]) - a[i]));
  CHECK(worst <= std::ldexp(1.0, -23));
}

TEST_CASE("float64 integer inputs: the float sequence, widened; fill(Inputs, double*) picks the kind") {
  std::vector<double> d(10000);
  std::vector<float> f(10000);
  tut::fill_small_ints_f64(d.data(), d.size(), 7);
  tut::fill_small_ints(f.data(), f.size(), 7);
  for (std::size_t i = 0; i < d.size(); ++i) REQUIRE(d[i] == double(f[i]));
  CHECK(std::set<double>(d.begin(), d.end()) == std::set<double>{-3, -2, -1, 1, 2, 3});

  std::vector<double> via_fill(1000), direct(1000);
  tut::fill(tut::Inputs::SmallInts, via_fill.data(), via_fill.size(), 9);
  tut::fill_small_ints_f64(direct.data(), direct.size(), 9);
  CHECK(via_fill == direct);
  tut::fill(tut::Inputs::Random, via_fill.data(), via_fill.size(), 9);
  tut::fill_uniform_f64(direct.data(), direct.size(), 9);
  CHECK(via_fill == direct);
}
