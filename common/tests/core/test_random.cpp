#include <doctest/doctest.h>

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
