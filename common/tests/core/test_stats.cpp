#include <doctest/doctest.h>

#include <stdexcept>

#include "tut/core/stats.hpp"

TEST_CASE("median, min, max") {
  auto t = tut::summarize({3.0, 1.0, 2.0});
  CHECK(t.median == 2.0);
  CHECK(t.min == 1.0);
  CHECK(t.max == 3.0);
  t = tut::summarize({4.0, 1.0, 3.0, 2.0});
  CHECK(t.median == 2.5);
  t = tut::summarize({7.0});
  CHECK(t.median == 7.0);
  CHECK(t.min == 7.0);
  // One slow outlier moves the mean, not the median.
  t = tut::summarize({1.0, 1.0, 1.0, 1.0, 100.0});
  CHECK(t.median == 1.0);
  CHECK(t.max == 100.0);
  CHECK_THROWS_AS(tut::summarize({}), std::invalid_argument);
}
