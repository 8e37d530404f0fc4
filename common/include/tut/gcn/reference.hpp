// Part III's CPU references in float64, their work counts and the verification of FP64 results
// (host only, unit-tested without a GPU). One GCN layer (docs/gcn-layer.md):
//
//   out = log_softmax(A_hat (X W) + b)     X: V x F_in, W: F_in x F_out, b: F_out, out: V x F_out
//
// computed in three steps, each a chapter group: the skinny GEMM H = X W, the SpMM Y = A_hat H
// (A_hat in CSR, graph.hpp), and the bias + log_softmax of each row of Y. Every matrix is row-major
// and packed (row r of a V x F matrix starts at r * F). The references are the plain loops in a
// fixed order: slow, simple and obviously right.
#pragma once

#include <cstddef>

#include "tut/core/verify.hpp"
#include "tut/gcn/graph.hpp"

namespace tut {

constexpr double kUnitRoundoffFp64 = 0x1p-53;  // 1.1e-16

// ----------------------------------------------------------------------------------------------
// Work counts: the FLOPs a step performs and the fewest bytes it must move through device memory
// (each input read once, each output written once; what a step may keep on chip between its
// loads does not count twice). Doubles, like GemmProblem's: a count for the roofline, not an index.

struct StepCost {
  double flops = 0;
  double bytes = 0;
};

// H = X W: 2 * V * F_in * F_out FLOPs (a multiply and an add per term); X and W read, H written.
constexpr StepCost xw_cost(long long v, int f_in, int f_out) {
  return {2.0 * double(v) * f_in * f_out, 8.0 * (double(v) * f_in + double(f_in) * f_out + double(v) * f_out)};
}

// Y = A_hat Z for a V x V CSR matrix with nnz entries and F features: 2 * nnz * F FLOPs; bytes:
// indptr (4 (V + 1)), indices (4 nnz), values (8 nnz), Z read once (8 V F), Y written (8 V F).
// Z's rows are gathered, once per entry in their column; reading each once is the floor, met only
// when they stay in cache between their uses.
constexpr StepCost spmm_cost(long long v, long long nnz, int f) {
  return {2.0 * double(nnz) * f, 4.0 * double(v + 1) + 12.0 * double(nnz) + 16.0 * double(v) * f};
}

// Bias + log_softmax of V rows of F, in place. FLOPs, counting exp and log as one each (each is a
// few dozen instructions in FP64): per element the bias add, the max compare, the max subtract,
// the exp, the add into the sum and the final subtract of log(sum) (6; 5 without a bias), plus one
// log per row: V * (F * (5 + bias) + 1). Bytes: the rows read and written (8 * 2 * V * F) and the
// bias read (8 F).
constexpr StepCost bias_log_softmax_cost(long long v, int f, bool bias = true) {
  return {double(v) * (double(f) * (bias ? 6 : 5) + 1), 16.0 * double(v) * f + (bias ? 8.0 * f : 0.0)};
}

// The whole layer: the FLOPs of the three steps; the bytes of X, W, b and A_hat read once and the
// output written once (a fused layer never stores H or Y).
constexpr StepCost gcn_layer_cost(long long v, long long nnz, int f_in, int f_out) {
  return {xw_cost(v, f_in, f_out).flops + spmm_cost(v, nnz, f_out).flops + bias_log_softmax_cost(v, f_out).flops,
          8.0 * (double(v) * f_in + double(f_in) * f_out + f_out) + 4.0 * double(v + 1) + 12.0 * double(nnz) +
              8.0 * double(v) * f_out};
}

// ----------------------------------------------------------------------------------------------
// References. Each throws std::invalid_argument on a negative size or a CSR whose indptr does not
// hold rows + 1 entries.

// h = x * w: x is v x f_in, w is f_in x f_out, h is v x f_out; each dot product in ascending k.
void xw_cpu_f64(int v, int f_in, int f_out, const double* x, const double* w, double* h);

// y = a * z: z is a.cols x f, y is a.rows x f; row r sums its entries in stored (ascending column)
// order. An empty row gives zeros.
void spmm_cpu_f64(const Csr& a, int f, const double* z, double* y);

// In place, for each of the v rows of f values: t = z + bias (bias: f values, or null for none), then
//   z_c = log_softmax(t)_c = (t_c - m) - log(sum_k exp(t_k - m)),   m = max_k t_k.
// Subtracting the row max keeps every exp argument <= 0, so nothing overflows for any finite input
// (1e300 included); the largest term is exp(0) = 1, so the sum lies in [1, f] and its log is finite.
// The result does not change when a constant is added to a row (up to the rounding of t).
void bias_log_softmax_cpu_f64(int v, int f, const double* bias, double* z);

// The layer, the three above in order: out = log_softmax(a * (x * w) + b). a is V x V (a.rows ==
// a.cols == V), x is V x f_in, w is f_in x f_out, b has f_out values (null for none), out is
// V x f_out. H = x * w is a temporary of V x f_out doubles.
void gcn_layer_cpu_f64(const Csr& a, int f_in, int f_out, const double* x, const double* w, const double* b,
                       double* out);

// ----------------------------------------------------------------------------------------------
// Verification of FP64 results, core/verify.hpp's rule at u = 2^-53: element (r, c) fails when it
// is not finite or |out - ref| > tau(L) * S_rc, tau(L) = 2 gamma_{L+2}, with L the reduction length
// of its step and S_rc a bound on the step's absolute error scale, below. Elements are visited row
// by row (Mismatch::index = r * F + c) and named "node r, feature c". ref is the reference result
// (the CPU references above, or a library's); out the step's.
//
// Where L varies by row (SpMM, the layer), each element is held to its own row's tau(L_r): the
// scale passed to verify_elements is S_rc * tau(L_r) / tau(L_max), and VerifyResult::tolerance is
// tau(L_max), the longest row's, which the norm-wise check uses.

// H = X W: L = f_in, S_rc = ||x(r, :)||_2 ||w(:, c)||_2 (Cauchy-Schwarz bounds sum_k |x_rk| |w_kc|,
// as for GEMM). Match::Exact for small-integer inputs (exact in FP64 in any order).
VerifyResult verify_xw(int v, int f_in, int f_out, const double* x, const double* w, const double* out,
                       const double* ref, Match match = Match::Rounded, std::size_t max_report = 5);

// Y = A_hat Z: L_r = nnz of row r, S_rc = sum_j |a_rj| |z_jc|, the exact absolute sum (it costs what
// the SpMM costs; Cauchy-Schwarz would need the norms of the gathered rows of Z anyway). z is the
// input the step was given. Match::Exact only for a matrix and inputs with exact products and sums.
VerifyResult verify_spmm(const Csr& a, int f, const double* z, const double* out, const double* ref,
                         Match match = Match::Rounded, std::size_t max_report = 5);

// Bias + log_softmax: L = f (the exp sum), S_rc = 3 (1 + M_r) + |ref_rc|, M_r = max_c |z_rc + b_c|.
// z is the step's input (before the bias; bias null for none). Why this bound (reference.cpp
// derives it): log_softmax's Jacobian I - 1 p^T has row sums of absolute values 2 (1 - p_c) <= 2, so
// errors in the inputs at most double; the roundings of a stable evaluation are such input errors
// (<= 3u M_r per element) plus the sum's and the log's (<= 3f u absolute, since the sum lies in
// [1, f]) and the last subtraction's (u |out|). Finite inputs below ~1e307 (S_rc must be finite).
VerifyResult verify_bias_log_softmax(int v, int f, const double* z, const double* bias, const double* out,
                                     const double* ref, std::size_t max_report = 5);

// The layer: L_r = f_in + nnz_r + f_out, S_rc = 3 + 5 G_r + |ref_rc|, where
//   G_r = max_c G_rc,  G_rc = ||w(:, c)||_2 sum_j |a_rj| ||x(j, :)||_2 + |b_c|
// bounds sum_j |a_rj| sum_k |x_jk| |w_kc| + |b_c|, the absolute terms of the pre-activation t_rc.
// The rounding errors of X W and A_hat H add up to at most gamma_{f_in + nnz_r + 1} G_rc in t_rc
// (the +1: the bias add, wherever a fused kernel performs it), which log_softmax at most doubles;
// its own roundings are those of verify_bias_log_softmax with M_r <= G_r.
VerifyResult verify_gcn_layer(const Csr& a, int f_in, int f_out, const double* x, const double* w, const double* b,
                              const double* out, const double* ref, std::size_t max_report = 5);

}  // namespace tut
