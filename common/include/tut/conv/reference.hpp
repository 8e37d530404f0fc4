// CPU references and the verification of a convolution (host only, unit-tested without a GPU).
#pragma once

#include <cstddef>
#include <vector>

#include "tut/conv/problem.hpp"
#include "tut/core/verify.hpp"

namespace tut {

// The direct convolution in float64: the seven loops of the definition (problem.hpp). y: NKPQ.
void conv_direct_cpu_f64(const ConvProblem& p, const float* x, const float* w, double* y);

// The column matrix X_col, (C*R*S) x (N*P*Q), row-major: X_col[kk][j] = x at x_col_offset(kk, j), or 0.
std::vector<float> im2col_cpu(const ConvProblem& p, const float* x);

// The same convolution as im2col + a float64 GEMM (W (K x CRS) times X_col), stored back to NKPQ.
// Equal to conv_direct_cpu_f64 up to float64 rounding: the unit tests hold the two against each other.
void conv_im2col_cpu_f64(const ConvProblem& p, const float* x, const float* w, double* y);

// The epilogue of chapter 21 on a float64 result y (NKPQ): y += bias[k] (bias may be null), y +=
// residual (may be null), then y = max(y, 0) when relu.
void conv_epilogue_cpu_f64(const ConvProblem& p, double* y, const float* bias, const float* residual, bool relu);

// Checks out (NKPQ) against ref with core/verify.hpp's rule: L = C*R*S terms, the element (n, k, p, q)
// with scale ||w[k]||_2 * ||X_col(:, j)||_2 (Cauchy-Schwarz). Ref is float (a library) or double (CPU).
// Mismatch::index is the NKPQ offset; the coordinates read "n 0, k 3, p 5, q 7".
// With an epilogue (bias and/or residual non-null), each element's scale adds |bias[k]| and
// |residual| and the reduction counts two more terms; ReLU does not enlarge an error.
// math: the arithmetic `out` was computed in; Math::Tf32 (tensor cores) takes TF32's tolerance for
// the same reduction length (core/verify.hpp), whatever `ref` was computed in. tolerance > 0: tau
// itself, for a step whose arithmetic has its own bound (Winograd, chapter 22), instead of the math's;
// norm_tolerance > 0: the norm-wise check's threshold (verify_elements).
template <class Ref>
VerifyResult verify_conv(const ConvProblem& p, const float* x, const float* w, const float* out, const Ref* ref,
                         Match match, std::size_t max_report = 5, const float* bias = nullptr,
                         const float* residual = nullptr, Math math = Math::Fp32, double tolerance = 0,
                         double norm_tolerance = 0);

}  // namespace tut
