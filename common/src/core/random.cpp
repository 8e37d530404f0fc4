#include "tut/core/random.hpp"

#include <limits>

namespace tut {

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) {
  SplitMix64 g(seed ^ (0xD1B54A32D192ED03ull * (stream + 1)));
  return g.next();
}

namespace {

// (2j + 1) / 2^kBits - 1 for j = the top kBits of a draw: odd numerators, so never 0, always in
// (-1, 1), and every value is exact in T (an odd integer below 2^kBits over a power of two).
template <class T, int kBits>
void fill_uniform_grid(T* x, std::size_t n, std::uint64_t seed) {
  static_assert(kBits >= 1 && kBits < std::numeric_limits<T>::digits, "every grid point must be exact in T");
  const double step = 1.0 / double(std::uint64_t(1) << kBits);  // 2^-kBits, exact
  SplitMix64 g(seed);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t j = g.next() >> (64 - kBits);
    x[i] = static_cast<T>(double(2 * j + 1) * step - 1.0);
  }
}

template <class T>
void fill_small_ints_any(T* x, std::size_t n, std::uint64_t seed) {
  static const T values[6] = {-3, -2, -1, 1, 2, 3};
  SplitMix64 g(seed);
  for (std::size_t i = 0; i < n; ++i) x[i] = values[(g.next() >> 32) % 6];
}

template <class T, int kBits>
void fill_any(Inputs kind, T* x, std::size_t n, std::uint64_t seed) {
  if (kind == Inputs::Random) {
    fill_uniform_grid<T, kBits>(x, n, seed);
  } else {
    fill_small_ints_any(x, n, seed);
  }
}

constexpr int kFloatBits = 23;   // the float grid: 2^-23
constexpr int kDoubleBits = 52;  // the double grid: 2^-52

}  // namespace

void fill_uniform(float* x, std::size_t n, std::uint64_t seed) { fill_uniform_grid<float, kFloatBits>(x, n, seed); }
void fill_uniform_f64(double* x, std::size_t n, std::uint64_t seed) {
  fill_uniform_grid<double, kDoubleBits>(x, n, seed);
}

void fill_small_ints(float* x, std::size_t n, std::uint64_t seed) { fill_small_ints_any(x, n, seed); }
void fill_small_ints_f64(double* x, std::size_t n, std::uint64_t seed) { fill_small_ints_any(x, n, seed); }

void fill(Inputs kind, float* x, std::size_t n, std::uint64_t seed) { fill_any<float, kFloatBits>(kind, x, n, seed); }
void fill(Inputs kind, double* x, std::size_t n, std::uint64_t seed) {
  fill_any<double, kDoubleBits>(kind, x, n, seed);
}

}  // namespace tut
