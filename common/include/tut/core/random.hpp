// Seeded inputs, identical on every platform (the generator is written out here; the standard
// library's distributions differ between implementations).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tut {

// SplitMix64: small, fast, and good enough to fill test matrices.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

// A different stream for each matrix of a problem: derive(seed, 0) for A, 1 for B, 2 for C.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream);

// Uniform values in (-1, 1) on a grid of 2^-23, never exactly zero.
void fill_uniform(float* x, std::size_t n, std::uint64_t seed);
// The float64 version (Part III): a grid of 2^-52, so the values use a double's whole mantissa. The
// same draws as the float version: with the same seed each value lies within 2^-23 of the float one.
// (Named, not overloaded, so that the float versions' names still denote one function each.)
void fill_uniform_f64(double* x, std::size_t n, std::uint64_t seed);

// Integers from {-3, -2, -1, 1, 2, 3}. A dot product of K of them stays below 9*K in magnitude,
// so FP32 computes it exactly for K up to ~1.8 million in any order: any mismatch is a bug.
void fill_small_ints(float* x, std::size_t n, std::uint64_t seed);
// The float64 version: the same sequence for the same seed; exact in FP64 for K up to ~10^15.
void fill_small_ints_f64(double* x, std::size_t n, std::uint64_t seed);

// The two kinds of input every self-test uses: random reals (checked within a tolerance) and small
// integers (checked exactly).
enum class Inputs { Random, SmallInts };
void fill(Inputs kind, float* x, std::size_t n, std::uint64_t seed);
void fill(Inputs kind, double* x, std::size_t n, std::uint64_t seed);

}  // namespace tut
