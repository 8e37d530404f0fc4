#include "tut/core/random.hpp"

namespace tut {

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  SplitMix64 g(seed ^ (0xD1B54A32D192ED03ull * (stream + 1)));
  return g.next();
}

void fill_uniform(float* x, std::size_t n, std::uint64_t seed) {
  SplitMix64 g(seed);
  for (std::size_t i = 0; i < n; ++i) {
    // (2j + 1) / 2^23 - 1 for j in [0, 2^23): odd numerators, so never 0, always in (-1, 1).
    const std::uint64_t j = g.next() >> 41;  // 23 random bits
    x[i] = static_cast<float>(double(2 * j + 1) / 8388608.0 - 1.0);
  }
}

void fill_small_ints(float* x, std::size_t n, std::uint64_t seed) {
  static const float values[6] = {-3.0f, -2.0f, -1.0f, 1.0f, 2.0f, 3.0f};
  SplitMix64 g(seed);
  for (std::size_t i = 0; i < n; ++i) x[i] = values[(g.next() >> 32) % 6];
}

void fill(Inputs kind, float* x, std::size_t n, std::uint64_t seed) {
  if (kind == Inputs::Random) {
    fill_uniform(x, n, seed);
  } else {
    fill_small_ints(x, n, seed);
  }
}

}  // namespace tut
