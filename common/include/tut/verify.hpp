// Verification of a GEMM result against a reference. The rule (docs/measuring.md) is the same for
// every step; nothing here is tuned per kernel.
//
//   tau = 2 * gamma_{K+2},  gamma_n = n*u / (1 - n*u),  u = unit roundoff (2^-24 for FP32)
//
// An element fails when it is not finite, or when |out - ref| > tau * S_ij, where
//   S_ij = |alpha| * ||A(i,:)||_2 * ||B(:,j)||_2 + |beta| * |C_in(i,j)|
// bounds |alpha| * (|A||B|)_ij + |beta||C_ij| (Cauchy-Schwarz). That is the worst-case rounding
// error of any summation order, doubled because the reference is rounded too: a correct kernel
// cannot exceed it. The result also fails when the norm-wise relative error
//   ||out - ref||_F / ||ref||_F
// exceeds tau: the typical error is ~u*sqrt(K), so this catches small systematic errors (a missed
// k-tail) that the worst-case bound lets through. Match::Exact demands equality instead (integer
// inputs, where FP32 is exact in any order).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tut/gemm_problem.hpp"

namespace tut {

enum class Match { Exact, Rounded };

constexpr double kUnitRoundoffFp32 = 5.9604644775390625e-08;  // 2^-24

// tau for a K-term dot product followed by the alpha/beta update, at unit roundoff u.
double gemm_tolerance(int k, double unit_roundoff = kUnitRoundoffFp32);

struct Mismatch {
  int row = 0, col = 0;
  double got = 0, want = 0, bound = 0;
};

struct VerifyResult {
  bool passed = false;
  Match match = Match::Rounded;
  double rel_err = 0;       // ||out - ref||_F / ||ref||_F
  double max_abs_err = 0;   // max |out - ref|
  int max_row = 0, max_col = 0;
  double tolerance = 0;     // tau
  std::size_t checked = 0;  // elements compared (m * n)
  std::size_t nonfinite = 0;
  std::size_t mismatches = 0;  // elements over their bound (or unequal, when exact)
  std::vector<Mismatch> first;  // the first few, in row-major order
  std::string summary() const;  // one line
  std::string details() const;  // the first mismatches, one per line (empty when none)
};

// Compares out against ref over the m x n elements of C (leading dimension p.ldc). A, B and C_in
// are the inputs (C_in may be null when beta == 0). Ref is float (cuBLAS) or double (CPU).
template <class Ref>
VerifyResult verify_gemm(const GemmProblem& p, const float* A, const float* B, const float* C_in,
                         const float* out, const Ref* ref, Match match, std::size_t max_report = 5);

}  // namespace tut
