// Verification of a GEMM result (core/verify.hpp's rule): L = K terms, and the per-element scale
//   S_ij = |alpha| * ||A(i,:)||_2 * ||B(:,j)||_2 + |beta| * |C_in(i,j)|
// bounds |alpha| * (|A||B|)_ij + |beta||C_ij| (Cauchy-Schwarz).
#pragma once

#include <cstddef>

#include "tut/core/verify.hpp"
#include "tut/gemm/problem.hpp"

namespace tut {

// tau for a K-term dot product followed by the alpha/beta update, at unit roundoff u.
inline double gemm_tolerance(int k, double unit_roundoff = kUnitRoundoffFp32) {
  return reduction_tolerance(k, unit_roundoff);
}

// Compares out against ref over the m x n elements of C (leading dimension p.ldc), row by row. A, B
// and C_in are the inputs (C_in may be null when beta == 0). Ref is float (cuBLAS) or double (CPU).
// The tolerance is that of `math` for K terms (math_tolerance). Mismatch::index is i * n + j.
template <class Ref>
VerifyResult verify_gemm(const GemmProblem& p, const float* A, const float* B, const float* C_in,
                         const float* out, const Ref* ref, Match match, Math math = Math::Fp32,
                         std::size_t max_report = 5);

}  // namespace tut
