// Summary of repeated timings.
#pragma once

#include <vector>

namespace tut {

struct TimeStats {
  double median = 0, min = 0, max = 0;
};

// Median (mean of the middle two for an even count), min and max. Throws on an empty list.
TimeStats summarize(std::vector<double> samples);

}  // namespace tut
