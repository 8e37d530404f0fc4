// Verification of a result against a reference, for every family. The rule (docs/measuring.md) is
// the same for every step; nothing here is tuned per kernel.
//
//   tau = 2 * gamma_{L+2},  gamma_n = n*u / (1 - n*u),  u = unit roundoff (2^-24 for FP32)
//
// for results that are L-term dot products followed by at most one more multiply-add. An element
// fails when it is not finite, or when |out - ref| > tau * S, where S bounds the sum of the absolute
// values of the terms (the family computes it: for GEMM |alpha| ||A(i,:)|| ||B(:,j)|| + |beta C_ij|,
// for convolution ||w[k]|| ||x_col(:, j)||, by Cauchy-Schwarz). That is the worst-case rounding
// error of any summation order, doubled because the reference is rounded too: a correct kernel
// cannot exceed it. The result also fails when the norm-wise relative error
//   ||out - ref||_2 / ||ref||_2
// exceeds tau: the typical error is ~u*sqrt(L), so this catches small systematic errors (a missed
// tail of the reduction) that the worst-case bound lets through. Match::Exact demands equality
// instead (integer inputs, where FP32 is exact in any order).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tut {

enum class Match { Exact, Rounded };

constexpr double kUnitRoundoffFp32 = 5.9604644775390625e-08;  // 2^-24

constexpr double kUnitRoundoffTf32 = 0x1p-11;                 // 4.9e-4: 10 stored fraction bits

// tau for an L-term dot product followed by one more multiply-add, at unit roundoff u.
double reduction_tolerance(long long terms, double unit_roundoff = kUnitRoundoffFp32);

// The math a step computes in. Fp32: FP32 multiply-adds (the CUDA cores). Tf32: tensor cores, each
// factor rounded to TF32 (8-bit exponent, 10-bit fraction) and the products summed in FP32. Fp64:
// FP64 multiply-adds (Part III).
enum class Math { Fp32, Tf32, Fp64 };
const char* math_name(Math m);  // "FP32", "TF32", "FP64"

// tau for an L-term dot product computed in TF32 (docs/measuring.md derives it): each factor
// carries a relative rounding error of at most u_tf32 = 2^-11, the products are exact, and the
// tensor core sums them in FP32 with an adder that may truncate (unit roundoff 2^-23, twice FP32's
// round-to-nearest 2^-24). Per term |fl - exact| <= ((1 + u_tf32)^2 (1 + gamma_{L+2}) - 1) |a b|;
// doubled, as for FP32, because the reference is rounded too:
//   tau_tf32(L) = 2 ((1 + 2^-11)^2 (1 + gamma_{L+2}(2^-23)) - 1)        (L = 4096: 2.9e-3)
double tf32_reduction_tolerance(long long terms);
// The tolerance of `m` for an L-term reduction: reduction_tolerance(L), tf32_reduction_tolerance(L), or
// reduction_tolerance(L, 2^-53) for FP64.
double math_tolerance(Math m, long long terms);

// TF32 (tensor cores) rounds each factor to 10 fraction bits, round to nearest with ties away from
// zero, as cvt.rna.tf32.f32 does; the result is a float whose low 13 bits are zero. Host-side, for
// the tests: the self-test's integer inputs stay exact (to_tf32(v) == v), random ones do not.
float to_tf32(float v);
// True when every value survives the rounding to TF32 (at most 11 significant bits each).
bool exact_in_tf32(const float* v, std::size_t n);

struct Mismatch {
  std::size_t index = 0;  // the element's position in the order the check visits them
  std::string where;      // its coordinates, named: "row 3, col 5"
  double got = 0, want = 0, bound = 0;
};

struct VerifyResult {
  bool passed = false;
  Match match = Match::Rounded;
  double rel_err = 0;       // ||out - ref||_2 / ||ref||_2
  double max_abs_err = 0;   // max |out - ref|
  std::size_t max_index = 0;
  std::string max_where;    // coordinates of the largest error, unnamed: "3, 5"
  double tolerance = 0;     // tau
  double norm_tolerance = 0;  // the norm-wise check's threshold: tau, unless the caller gave another
  std::size_t checked = 0;  // elements compared
  std::size_t nonfinite = 0;
  std::size_t mismatches = 0;  // elements over their bound (or unequal, when exact)
  std::vector<Mismatch> first;  // the first few, in visiting order
  std::string summary() const;  // one line
  std::string details() const;  // the first mismatches, one per line (empty when none)
};

// What the check needs of element i: the result, the reference and the bound's scale S.
struct Element {
  double got, want, scale;
};
// Coordinates of element i: named ("row 3, col 5") or plain ("3, 5").
using Locate = std::function<std::string(std::size_t i, bool named)>;

// Compares `count` elements; element(i) gives each. tolerance: tau. norm_tolerance > 0: the norm-wise
// check's threshold instead of tau (a step whose worst-case bound is far above its typical error,
// Winograd, states a tighter model for the norm; docs/measuring.md).
VerifyResult verify_elements(std::size_t count, double tolerance, Match match,
                             const std::function<Element(std::size_t)>& element, const Locate& locate,
                             std::size_t max_report = 5, double norm_tolerance = 0);

}  // namespace tut
