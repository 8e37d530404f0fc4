// The CPU references (reference.hpp): the direct convolution against hand-computed results, and the
// direct convolution against im2col + GEMM, the two computed independently of each other.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "tut/conv/problem.hpp"
#include "tut/conv/reference.hpp"
#include "tut/core/random.hpp"

using tut::ConvProblem;

namespace {

std::vector<double> direct(const ConvProblem& p, const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<double> y(std::size_t(p.y_elems()), std::nan(""));
  tut::conv_direct_cpu_f64(p, x.data(), w.data(), y.data());
  return y;
}

std::vector<double> via_im2col(const ConvProblem& p, const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<double> y(std::size_t(p.y_elems()), std::nan(""));
  tut::conv_im2col_cpu_f64(p, x.data(), w.data(), y.data());
  return y;
}

std::vector<float> iota(std::size_t n, float first = 1.0f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = first + float(i);
  return v;
}

std::vector<ConvProblem> problems() {
  return {
      ConvProblem::make(2, 3, 7, 6, 4, 3, 2, 1, 0, 2, 1),         // pad 1:0, stride 2:1
      ConvProblem::make(1, 2, 9, 11, 3, 3, 3, 2, 1, 1, 2, 2, 3),  // dilation 2:3
      ConvProblem::make(2, 5, 4, 3, 3, 1, 1),                     // 1x1
      ConvProblem::make(2, 4, 5, 5, 3, 1, 1, 0, 0, 2, 2),         // 1x1, stride 2
      ConvProblem::make(3, 2, 1, 1, 2, 3, 3, 1, 1),               // H = W = 1, pad 1
      ConvProblem::make(2, 2, 10, 7, 3, 4, 2, 2, 0, 3, 1),        // even filter
      ConvProblem::make(3, 5, 17, 13, 7, 3, 2, 1, 0, 2, 1),       // the --help example
      ConvProblem::make(2, 16, 12, 12, 8, 3, 3, 1, 1),            // a small 'same' 3x3 layer
      ConvProblem::make(1, 3, 30, 30, 4, 7, 7, 3, 3, 2, 2),       // a small conv1
  };
}

}  // namespace

TEST_CASE("direct conv: a 2x2 filter on a 3x3 image, no padding") {
  const ConvProblem p = ConvProblem::make(1, 1, 3, 3, 1, 2, 2);
  const std::vector<float> x = iota(9);            // 1 2 3 / 4 5 6 / 7 8 9
  const std::vector<float> w{1, 2, 3, 4};          // 1 2 / 3 4 (not flipped: cross-correlation)
  CHECK(direct(p, x, w) == std::vector<double>{37, 47, 67, 77});
  // 37 = 1*1 + 2*2 + 3*4 + 4*5, and so on.
}

TEST_CASE("direct conv: 3x3 box filter, pad 1, strides 1 and 2") {
  const std::vector<float> x = iota(9);
  const std::vector<float> w(9, 1.0f);
  // Each output is the sum of the 3x3 window around its pixel, the padding adding nothing.
  CHECK(direct(ConvProblem::make(1, 1, 3, 3, 1, 3, 3, 1, 1), x, w) ==
        std::vector<double>{12, 21, 16, 27, 45, 33, 24, 39, 28});
  // Stride 2: the windows around (0,0), (0,2), (2,0), (2,2).
  CHECK(direct(ConvProblem::make(1, 1, 3, 3, 1, 3, 3, 1, 1, 2, 2), x, w) == std::vector<double>{12, 16, 24, 28});
  // Pad 1 on rows only, stride 1:2, a 3x1 filter: column sums over the row window at columns 0 and 2.
  CHECK(direct(ConvProblem::make(1, 1, 3, 3, 1, 3, 1, 1, 0, 1, 2), x, std::vector<float>(3, 1.0f)) ==
        std::vector<double>{5, 9, 12, 18, 11, 15});
}

TEST_CASE("direct conv: dilation 2, a 2x2 filter spread over 3x3") {
  const ConvProblem p = ConvProblem::make(1, 1, 5, 5, 1, 2, 2, 0, 0, 1, 1, 2, 2);
  REQUIRE(p.p == 3);
  REQUIRE(p.q == 3);
  std::vector<float> x(25);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 5; ++j) x[std::size_t(i) * 5 + j] = float(10 * i + j);
  const std::vector<float> w{1, 10, 100, 1000};
  // y[p][q] = x[p][q] + 10 x[p][q+2] + 100 x[p+2][q] + 1000 x[p+2][q+2]
  const std::vector<double> y = direct(p, x, w);
  CHECK(y[0] == 0 + 10 * 2 + 100 * 20 + 1000 * 22);    // 24020
  CHECK(y[2 * 3 + 1] == 21 + 10 * 23 + 100 * 41 + 1000 * 43);  // 47351
  CHECK(y[8] == 22 + 10 * 24 + 100 * 42 + 1000 * 44);
}

TEST_CASE("direct conv: channels, filters and images land in NKPQ order") {
  // 1x1 filters over 2 channels: y[n][k] = w[k][0] x[n][0] + w[k][1] x[n][1], pixel by pixel.
  const ConvProblem p = ConvProblem::make(2, 2, 1, 2, 3, 1, 1);
  // x[n][c][0][col]: n0: c0 {1, 2}, c1 {3, 4}; n1: c0 {5, 6}, c1 {7, 8}
  const std::vector<float> x = iota(8);
  // w[k][c]: k0 {1, 0}, k1 {0, 1}, k2 {1, -1}
  const std::vector<float> w{1, 0, 0, 1, 1, -1};
  CHECK(direct(p, x, w) == std::vector<double>{1, 2, 3, 4, -2, -2, 5, 6, 7, 8, -2, -2});
}

TEST_CASE("direct conv: a 1x1 image with pad 1 reads only the centre tap") {
  const ConvProblem p = ConvProblem::make(1, 2, 1, 1, 1, 3, 3, 1, 1);
  const std::vector<float> x{3, 5};
  std::vector<float> w = iota(18);  // w[0][c][1][1] = 5 (c = 0) and 14 (c = 1)
  CHECK(direct(p, x, w) == std::vector<double>{3 * 5 + 5 * 14});
}

TEST_CASE("im2col_cpu: the column matrix of a small padded problem") {
  const ConvProblem p = ConvProblem::make(1, 1, 2, 2, 1, 2, 2, 1, 1, 2, 2);  // P = Q = 2
  REQUIRE(p.p == 2);
  const std::vector<float> x{1, 2, 3, 4};
  // Output pixel (p, q) covers rows 2p-1, 2p and columns 2q-1, 2q: each reads one pixel of x, on
  // tap (r, s) = (1 - p, 1 - q).
  const std::vector<float> want{0, 0, 0, 4,   // tap (0, 0)
                                0, 0, 3, 0,   // tap (0, 1)
                                0, 2, 0, 0,   // tap (1, 0)
                                1, 0, 0, 0};  // tap (1, 1)
  CHECK(tut::im2col_cpu(p, x.data()) == want);
}

TEST_CASE("direct conv == im2col + GEMM: integer inputs exactly") {
  for (const ConvProblem& p : problems()) {
    CAPTURE(p.label());
    std::vector<float> x(std::size_t(p.x_elems())), w(std::size_t(p.w_elems()));
    tut::fill_small_ints(x.data(), x.size(), 11);
    tut::fill_small_ints(w.data(), w.size(), 12);
    const std::vector<double> a = direct(p, x, w), b = via_im2col(p, x, w);
    int differ = 0, nonzero = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      differ += (a[i] != b[i]);
      nonzero += (a[i] != 0);
    }
    CHECK(differ == 0);
    CHECK(nonzero > 0);
  }
}

TEST_CASE("direct conv == im2col + GEMM: random inputs within 1e-12 relative") {
  for (const ConvProblem& p : problems()) {
    CAPTURE(p.label());
    std::vector<float> x(std::size_t(p.x_elems())), w(std::size_t(p.w_elems()));
    tut::fill_uniform(x.data(), x.size(), 21);
    tut::fill_uniform(w.data(), w.size(), 22);
    const std::vector<double> a = direct(p, x, w), b = via_im2col(p, x, w);
    // Relative to the sum of the terms' magnitudes (the direct conv of |x| and |w|): an element
    // that cancels to nearly zero is still held to float64 rounding.
    std::vector<float> ax(x), aw(w);
    for (float& v : ax) v = std::fabs(v);
    for (float& v : aw) v = std::fabs(v);
    const std::vector<double> mag = direct(p, ax, aw);
    int over = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!(std::fabs(a[i] - b[i]) <= 1e-12 * mag[i])) ++over;
    }
    CHECK(over == 0);
  }
}
