// Part III's float64 references (gcn/reference.hpp): the three steps and the layer against
// hand-computed results on a 3-node graph, log_softmax's properties (rows are distributions,
// shift invariance, no overflow at 1e300), the work counts, and the verification: results computed
// in another order pass, one wrong element or a NaN fails.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tut/core/random.hpp"
#include "tut/gcn/graph.hpp"
#include "tut/gcn/reference.hpp"

using tut::Csr;

namespace {

Csr make_csr(int rows, int cols, std::vector<int> indptr, std::vector<int> indices, std::vector<double> values) {
  Csr a;
  a.rows = rows;
  a.cols = cols;
  a.indptr = std::move(indptr);
  a.indices = std::move(indices);
  a.values = std::move(values);
  return a;
}

// The 3-node graph 0 -> 1, 0 -> 2, 1 -> 2 and its A_hat (rows = targets, d = in-degree + 1 = 1, 2, 3):
//   row 0: (0, 1)
//   row 1: (0, 1/sqrt(2)), (1, 1/2)
//   row 2: (0, 1/sqrt(3)), (1, 1/sqrt(6)), (2, 1/3)
Csr three_node_a_hat() {
  tut::EdgeList g;
  g.name = "three";
  g.nodes = 3;
  g.edges = {{0, 1}, {0, 2}, {1, 2}};
  return tut::normalized_adjacency(g);
}

// X (3 x 3) and W (3 x 2) with a hand-computed X W = [[5, -1], [-2, 9], [4, 1]].
const std::vector<double> kX{1, 2, 0, 0, -1, 3, 2, 1, 1};
const std::vector<double> kW{1, -1, 2, 0, 0, 3};
const std::vector<double> kXW{5, -1, -2, 9, 4, 1};

std::vector<double> random_vec(std::size_t n, std::uint64_t seed, double scale = 1.0) {
  std::vector<double> v(n);
  tut::fill(tut::Inputs::Random, v.data(), n, seed);
  for (auto& x : v) x *= scale;
  return v;
}

std::vector<double> log_softmax(std::vector<double> z, int v, int f, const double* bias = nullptr) {
  tut::bias_log_softmax_cpu_f64(v, f, bias, z.data());
  return z;
}

// A small power-law graph and random inputs for the verification tests.
struct Layer {
  static constexpr int kFin = 32, kFout = 16;
  Csr a = tut::normalized_adjacency(tut::rmat_graph(200, 1500, 3));
  int v = a.rows;
  std::vector<double> x = random_vec(std::size_t(v) * kFin, 1);
  std::vector<double> w = random_vec(std::size_t(kFin) * kFout, 2);
  std::vector<double> b = random_vec(kFout, 3);
};

// The same steps computed in other orders, as a kernel might: the dot products in descending k,
// each row's entries of the SpMM last to first, log_softmax as t - (m + log(sum)).
std::vector<double> xw_reversed(const Layer& l) {
  std::vector<double> h(std::size_t(l.v) * l.kFout);
  for (int r = 0; r < l.v; ++r)
    for (int c = 0; c < l.kFout; ++c) {
      double acc = 0;
      for (int k = l.kFin - 1; k >= 0; --k) acc += l.x[std::size_t(r) * l.kFin + k] * l.w[std::size_t(k) * l.kFout + c];
      h[std::size_t(r) * l.kFout + c] = acc;
    }
  return h;
}

std::vector<double> spmm_reversed(const Csr& a, int f, const std::vector<double>& z) {
  std::vector<double> y(std::size_t(a.rows) * f, 0.0);
  for (int r = 0; r < a.rows; ++r)
    for (int p = a.indptr[r + 1] - 1; p >= a.indptr[r]; --p)
      for (int c = 0; c < f; ++c) y[std::size_t(r) * f + c] += a.values[p] * z[std::size_t(a.indices[p]) * f + c];
  return y;
}

std::vector<double> log_softmax_other(std::vector<double> z, int v, int f, const double* bias) {
  for (int r = 0; r < v; ++r) {
    double* t = &z[std::size_t(r) * f];
    for (int c = 0; c < f; ++c) t[c] = bias[c] + t[c];
    const double m = *std::max_element(t, t + f);
    double sum = 0;
    for (int c = f - 1; c >= 0; --c) sum += std::exp(t[c] - m);
    const double lse = m + std::log(sum);
    for (int c = 0; c < f; ++c) t[c] -= lse;
  }
  return z;
}

// One element off by a relative 1e-9 (far above any FP64 bound here), or NaN, must fail, once.
template <class Verify>
void check_catches_one_bad_element(const std::vector<double>& good, std::size_t at, int f, Verify verify) {
  std::vector<double> out = good;
  out[at] += 1e-9 * (1.0 + std::fabs(out[at]));
  tut::VerifyResult r = verify(out);
  CHECK_FALSE(r.passed);
  CHECK(r.mismatches == 1);
  CHECK(r.nonfinite == 0);
  REQUIRE(r.first.size() == 1);
  CHECK(r.first[0].index == at);
  const std::string where = "node " + std::to_string(at / std::size_t(f)) + ", feature " + std::to_string(at % std::size_t(f));
  CHECK(r.first[0].where == where);

  out = good;
  out[at] = std::nan("");
  r = verify(out);
  CHECK_FALSE(r.passed);
  CHECK(r.nonfinite == 1);
  CHECK(r.mismatches == 1);
}

}  // namespace

TEST_CASE("GCN work counts: FLOPs and minimum bytes of each step and of the layer") {
  // constexpr: usable in a static_assert, e.g. by a chapter's tunables.
  static_assert(tut::xw_cost(10, 4, 2).flops == 160.0, "2 V F_in F_out");
  // X W: 2 V F_in F_out; 8 (V F_in + F_in F_out + V F_out).
  CHECK(tut::xw_cost(3, 4, 2).flops == 48);
  CHECK(tut::xw_cost(3, 4, 2).bytes == 8 * (12 + 8 + 6));
  // A_hat Z, V = 3, nnz = 6, F = 2: 2 nnz F; indptr 4 (V + 1), indices 4 nnz, values 8 nnz, Z and Y 8 V F each.
  CHECK(tut::spmm_cost(3, 6, 2).flops == 24);
  CHECK(tut::spmm_cost(3, 6, 2).bytes == 16 + 24 + 48 + 48 + 48);
  // Bias + log_softmax: V (6 F + 1) FLOPs (5 F + 1 without the bias); 16 V F bytes + 8 F for the bias.
  CHECK(tut::bias_log_softmax_cost(3, 2).flops == 39);
  CHECK(tut::bias_log_softmax_cost(3, 2).bytes == 96 + 16);
  CHECK(tut::bias_log_softmax_cost(3, 2, false).flops == 33);
  CHECK(tut::bias_log_softmax_cost(3, 2, false).bytes == 96);
  // The layer: the FLOPs add up; X, W, b, A_hat read once and the output written once.
  CHECK(tut::gcn_layer_cost(3, 6, 4, 2).flops == 48 + 24 + 39);
  CHECK(tut::gcn_layer_cost(3, 6, 4, 2).bytes == 8 * (12 + 8 + 2) + 16 + 24 + 48 + 8 * 6);

  // The default graph's size (nnz = edges + one self-loop per node) does not overflow anything.
  const long long v = tut::kWebStanfordNodes, nnz = tut::kWebStanfordEdges + tut::kWebStanfordNodes;
  CHECK(tut::xw_cost(v, 128, 16).flops == 2.0 * 281903 * 128 * 16);
  CHECK(tut::spmm_cost(v, nnz, 16).flops == 2.0 * 2594400 * 16);
  // Fusing saves the stores and reloads of H and Y.
  const double unfused = tut::xw_cost(v, 128, 16).bytes + tut::spmm_cost(v, nnz, 16).bytes +
                         tut::bias_log_softmax_cost(v, 16).bytes;
  CHECK(unfused - tut::gcn_layer_cost(v, nnz, 128, 16).bytes == 8.0 * 4 * v * 16);
}

TEST_CASE("X W reference: hand-computed 3 x 3 times 3 x 2") {
  std::vector<double> h(6, std::nan(""));
  tut::xw_cpu_f64(3, 3, 2, kX.data(), kW.data(), h.data());
  CHECK(h == kXW);
  CHECK_THROWS_AS(tut::xw_cpu_f64(-1, 3, 2, kX.data(), kW.data(), h.data()), std::invalid_argument);
}

TEST_CASE("SpMM reference: hand-computed 3-node CSR with exact values, F = 2; an empty row gives zeros") {
  // [[0.5, 0, 0.25], [0, 1, 0], [0.5, -0.5, 2]] times Z = [[1, 2], [3, -4], [8, 1]].
  const Csr a = make_csr(3, 3, {0, 2, 3, 6}, {0, 2, 1, 0, 1, 2}, {0.5, 0.25, 1.0, 0.5, -0.5, 2.0});
  const std::vector<double> z{1, 2, 3, -4, 8, 1};
  std::vector<double> y(6, std::nan(""));
  tut::spmm_cpu_f64(a, 2, z.data(), y.data());
  CHECK(y == std::vector<double>{2.5, 1.25, 3, -4, 15, 5});

  const Csr gap = make_csr(3, 3, {0, 1, 1, 2}, {2, 0}, {2.0, -1.0});  // row 1 is empty
  tut::spmm_cpu_f64(gap, 2, z.data(), y.data());
  CHECK(y == std::vector<double>{16, 2, 0, 0, -1, -2});

  const Csr broken = make_csr(3, 3, {0, 1}, {0}, {1.0});  // indptr too short
  CHECK_THROWS_AS(tut::spmm_cpu_f64(broken, 2, z.data(), y.data()), std::invalid_argument);
}

TEST_CASE("GCN layer reference: the 3-node graph end to end against the formula") {
  const Csr a = three_node_a_hat();
  // The graph layer's A_hat, as this test computes by hand: rows = targets.
  REQUIRE(a.indptr == std::vector<int>{0, 1, 3, 6});
  REQUIRE(a.indices == std::vector<int>{0, 0, 1, 0, 1, 2});
  const double s2 = std::sqrt(2.0), s3 = std::sqrt(3.0), s6 = std::sqrt(6.0);
  const std::vector<double> want_a{1, 1 / s2, 0.5, 1 / s3, 1 / s6, 1.0 / 3};
  for (std::size_t i = 0; i < want_a.size(); ++i) CHECK(a.values[i] == doctest::Approx(want_a[i]).epsilon(1e-15));

  const std::vector<double> b{0.5, -0.25};
  // t = A_hat (X W) + b with X W = [[5, -1], [-2, 9], [4, 1]].
  const double t[3][2] = {{5 + 0.5, -1 - 0.25},
                          {5 / s2 - 2 * 0.5 + 0.5, -1 / s2 + 9 * 0.5 - 0.25},
                          {5 / s3 - 2 / s6 + 4.0 / 3 + 0.5, -1 / s3 + 9 / s6 + 1.0 / 3 - 0.25}};
  std::vector<double> out(6, std::nan(""));
  tut::gcn_layer_cpu_f64(a, 3, 2, kX.data(), kW.data(), b.data(), out.data());
  for (int r = 0; r < 3; ++r) {
    const double lse = std::log(std::exp(t[r][0]) + std::exp(t[r][1]));
    for (int c = 0; c < 2; ++c) {
      CHECK_MESSAGE(std::fabs(out[std::size_t(r * 2 + c)] - (t[r][c] - lse)) <= 1e-14, "node ", r, ", feature ", c);
    }
  }

  // The three steps in order give the same bits.
  std::vector<double> h(6), y(6);
  tut::xw_cpu_f64(3, 3, 2, kX.data(), kW.data(), h.data());
  tut::spmm_cpu_f64(a, 2, h.data(), y.data());
  CHECK(log_softmax(y, 3, 2, b.data()) == out);

  const Csr rect = make_csr(2, 3, {0, 0, 0}, {}, {});
  CHECK_THROWS_AS(tut::gcn_layer_cpu_f64(rect, 3, 2, kX.data(), kW.data(), b.data(), out.data()), std::invalid_argument);
}

TEST_CASE("log_softmax: each row's exps sum to 1, the max-subtract form, shift invariance") {
  const int v = 64, f = 16;
  const std::vector<double> z = random_vec(std::size_t(v) * f, 11, 20.0);  // values in (-20, 20)
  const std::vector<double> bias = random_vec(f, 12);
  const std::vector<double> out = log_softmax(z, v, f, bias.data());
  for (int r = 0; r < v; ++r) {
    double sum = 0, top = -INFINITY;
    for (int c = 0; c < f; ++c) {
      const double o = out[std::size_t(r) * f + c];
      CHECK(o <= 0.0);
      sum += std::exp(o);
      top = std::max(top, o);
    }
    CHECK_MESSAGE(std::fabs(sum - 1.0) <= 1e-14, "row ", r);
    CHECK(top >= -std::log(double(f)));  // the largest probability is at least 1/f
  }

  // Adding a constant to a row changes nothing: exactly, when the shifted values are exact
  // (multiples of 1/8 plus 1024), and up to the rounding of the shift otherwise.
  std::vector<double> ints(std::size_t(v) * f);
  tut::fill(tut::Inputs::SmallInts, ints.data(), ints.size(), 13);
  for (auto& x : ints) x /= 8;
  std::vector<double> shifted = ints;
  for (int c = 0; c < f; ++c) shifted[std::size_t(5) * f + c] += 1024;  // row 5
  CHECK(log_softmax(shifted, v, f) == log_softmax(ints, v, f));

  shifted = z;
  for (int r = 0; r < v; ++r)
    for (int c = 0; c < f; ++c) shifted[std::size_t(r) * f + c] += 37.75 * (r - 30);
  const std::vector<double> out_shifted = log_softmax(shifted, v, f, bias.data());
  double worst = 0;
  for (std::size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::fabs(out_shifted[i] - out[i]));
  CHECK(worst <= 1e-12);  // each shifted value is rounded by at most u * 1200 ~ 1.3e-13

  // One feature: log(1) = 0. Equal values: log(1/f).
  CHECK(log_softmax({3.5, -7.0}, 2, 1) == std::vector<double>{0.0, 0.0});
  const std::vector<double> flat = log_softmax(std::vector<double>(4, 2.5), 1, 4);
  for (double o : flat) CHECK(o == doctest::Approx(-std::log(4.0)).epsilon(1e-15));
}

TEST_CASE("log_softmax: values of 1e300 neither overflow nor turn into NaN") {
  const double big = 1e300;
  const std::vector<double> z{big, -big,             // a huge spread
                              big, big,              // huge and equal
                              -big, -big,            // hugely negative and equal
                              big, 1.0};             // the bias moves neither
  const std::vector<double> bias{1.0, 0.0};
  const std::vector<double> out = log_softmax(z, 4, 2, bias.data());
  for (double o : out) CHECK(std::isfinite(o));
  CHECK(out[0] == 0.0);
  CHECK(out[1] == -2 * big);
  CHECK(out[2] == doctest::Approx(-std::log(2.0)).epsilon(1e-15));
  CHECK(out[3] == doctest::Approx(-std::log(2.0)).epsilon(1e-15));
  CHECK(out[4] == doctest::Approx(-std::log(2.0)).epsilon(1e-15));
  CHECK(out[5] == doctest::Approx(-std::log(2.0)).epsilon(1e-15));
  CHECK(out[6] == 0.0);
  CHECK(out[7] == -big);
  // The bound stays finite too: the result verifies against itself.
  CHECK(tut::verify_bias_log_softmax(4, 2, z.data(), bias.data(), out.data(), out.data()).passed);
}

TEST_CASE("verify X W: another summation order passes; one wrong element, a NaN fail; exact for integers") {
  const Layer l;
  std::vector<double> ref(std::size_t(l.v) * l.kFout);
  tut::xw_cpu_f64(l.v, l.kFin, l.kFout, l.x.data(), l.w.data(), ref.data());
  const auto verify = [&](const std::vector<double>& out) {
    return tut::verify_xw(l.v, l.kFin, l.kFout, l.x.data(), l.w.data(), out.data(), ref.data());
  };
  const std::vector<double> other = xw_reversed(l);
  const tut::VerifyResult ok = verify(other);
  CHECK_MESSAGE(ok.passed, ok.summary());
  CHECK(ok.max_abs_err > 0);  // the orders do round differently
  CHECK(ok.tolerance == doctest::Approx(tut::reduction_tolerance(l.kFin, tut::kUnitRoundoffFp64)));
  CHECK(ok.tolerance < 1e-14);
  check_catches_one_bad_element(other, 7 * l.kFout + 3, l.kFout, verify);

  std::vector<double> xi(l.x.size()), wi(l.w.size());
  tut::fill(tut::Inputs::SmallInts, xi.data(), xi.size(), 4);
  tut::fill(tut::Inputs::SmallInts, wi.data(), wi.size(), 5);
  std::vector<double> hi(ref.size());
  tut::xw_cpu_f64(l.v, l.kFin, l.kFout, xi.data(), wi.data(), hi.data());
  CHECK(tut::verify_xw(l.v, l.kFin, l.kFout, xi.data(), wi.data(), hi.data(), hi.data(), tut::Match::Exact).passed);
  std::vector<double> off = hi;
  off[5] += 1;
  const tut::VerifyResult bad = tut::verify_xw(l.v, l.kFin, l.kFout, xi.data(), wi.data(), off.data(), hi.data(), tut::Match::Exact);
  CHECK_FALSE(bad.passed);
  CHECK(bad.mismatches == 1);
}

TEST_CASE("verify SpMM: another summation order passes; one wrong element, a NaN fail") {
  const Layer l;
  const std::vector<double> z = random_vec(std::size_t(l.v) * l.kFout, 21);
  std::vector<double> ref(z.size());
  tut::spmm_cpu_f64(l.a, l.kFout, z.data(), ref.data());
  const auto verify = [&](const std::vector<double>& out) {
    return tut::verify_spmm(l.a, l.kFout, z.data(), out.data(), ref.data());
  };
  const std::vector<double> other = spmm_reversed(l.a, l.kFout, z);
  const tut::VerifyResult ok = verify(other);
  CHECK_MESSAGE(ok.passed, ok.summary());
  CHECK(ok.max_abs_err > 0);
  check_catches_one_bad_element(other, 150 * l.kFout + 9, l.kFout, verify);
}

TEST_CASE("verify SpMM: each row is held to its own length's tolerance; an empty row must be exactly 0") {
  // Row 0: 1000 entries of 1/1000; row 1: one entry of 1; row 2: empty. Z = 1, so every S_rc = 1.
  const int n = 1000;
  Csr a = make_csr(3, n, {0, n, n + 1, n + 1}, {}, {});
  for (int j = 0; j < n; ++j) a.indices.push_back(j);
  a.indices.push_back(0);
  a.values.assign(std::size_t(n), 1.0 / n);
  a.values.push_back(1.0);
  const std::vector<double> z(std::size_t(n), 1.0);
  std::vector<double> ref(3);
  tut::spmm_cpu_f64(a, 1, z.data(), ref.data());
  const auto verify = [&](const std::vector<double>& out) { return tut::verify_spmm(a, 1, z.data(), out.data(), ref.data()); };

  const double tau_long = tut::reduction_tolerance(n, tut::kUnitRoundoffFp64);  // ~2.2e-13
  const double tau_short = tut::reduction_tolerance(1, tut::kUnitRoundoffFp64);  // ~6.7e-16
  const double err = 1e-14;
  REQUIRE(err < tau_long);
  REQUIRE(err > tau_short);
  std::vector<double> out = ref;
  out[0] += err;  // within row 0's bound
  tut::VerifyResult r = verify(out);
  CHECK_MESSAGE(r.passed, r.summary());
  CHECK(r.tolerance == doctest::Approx(tau_long));  // the longest row's, for the norm-wise check

  out = ref;
  out[1] += err;  // over row 1's bound
  r = verify(out);
  CHECK_FALSE(r.passed);
  REQUIRE(r.first.size() == 1);
  CHECK(r.first[0].where == "node 1, feature 0");
  CHECK(r.first[0].bound == doctest::Approx(tau_short));

  out = ref;
  CHECK(out[2] == 0.0);
  out[2] = 1e-300;  // an empty row has nothing to round
  CHECK_FALSE(verify(out).passed);
}

TEST_CASE("verify log_softmax: another formula passes; one wrong element, a NaN fail") {
  const int v = 300, f = 16;
  const std::vector<double> z = random_vec(std::size_t(v) * f, 31, 30.0);
  const std::vector<double> bias = random_vec(f, 32);
  const std::vector<double> ref = log_softmax(z, v, f, bias.data());
  const auto verify = [&](const std::vector<double>& out) {
    return tut::verify_bias_log_softmax(v, f, z.data(), bias.data(), out.data(), ref.data());
  };
  const std::vector<double> other = log_softmax_other(z, v, f, bias.data());
  const tut::VerifyResult ok = verify(other);
  CHECK_MESSAGE(ok.passed, ok.summary());
  CHECK(ok.max_abs_err > 0);
  check_catches_one_bad_element(other, 17 * f + 15, f, verify);
  // Without a bias.
  const std::vector<double> plain = log_softmax(z, v, f);
  CHECK(tut::verify_bias_log_softmax(v, f, z.data(), nullptr, plain.data(), plain.data()).passed);
}

TEST_CASE("verify the layer: the steps in other orders pass; one wrong element, a NaN fail") {
  const Layer l;
  std::vector<double> ref(std::size_t(l.v) * l.kFout);
  tut::gcn_layer_cpu_f64(l.a, l.kFin, l.kFout, l.x.data(), l.w.data(), l.b.data(), ref.data());
  const auto verify = [&](const std::vector<double>& out) {
    return tut::verify_gcn_layer(l.a, l.kFin, l.kFout, l.x.data(), l.w.data(), l.b.data(), out.data(), ref.data());
  };
  const std::vector<double> other =
      log_softmax_other(spmm_reversed(l.a, l.kFout, xw_reversed(l)), l.v, l.kFout, l.b.data());
  const tut::VerifyResult ok = verify(other);
  CHECK_MESSAGE(ok.passed, ok.summary());
  CHECK(ok.max_abs_err > 0);
  CHECK(ok.tolerance < 1e-12);
  check_catches_one_bad_element(other, 123 * l.kFout + 4, l.kFout, verify);
}
