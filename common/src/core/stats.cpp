#include "tut/core/stats.hpp"

#include <algorithm>
#include <stdexcept>

namespace tut {

TimeStats summarize(std::vector<double> s) {
  if (s.empty()) throw std::invalid_argument("summarize: no samples");
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  TimeStats t;
  t.min = s.front();
  t.max = s.back();
  t.median = (n % 2) ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  return t;
}

}  // namespace tut
