// The output-size formula and the implicit GEMM's coordinate maps (problem.hpp), held against
// counts and an im2col written here with plain loops over n, c, r, s, p, q.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tut/conv/problem.hpp"

using tut::ConvProblem;
using tut::conv_out_size;

namespace {

// The number of filter positions along one axis, counted one by one: position o starts at
// o*stride in the padded input and its last tap sits dil*(filt-1) further on.
int count_positions(int in, int filt, int pad, int stride, int dil) {
  int count = 0;
  for (int o = 0; o * stride + dil * (filt - 1) <= in + 2 * pad - 1; ++o) ++count;
  return count;
}

// The awkward problems: asymmetric pad, stride and dilation, even filters, 1x1, a 1x1 image.
std::vector<ConvProblem> awkward_problems() {
  return {
      ConvProblem::make(2, 3, 7, 6, 4, 3, 2, 1, 0, 2, 1),           // pad 1:0, stride 2:1, even S
      ConvProblem::make(1, 2, 9, 11, 3, 3, 3, 2, 1, 1, 2, 2, 3),    // dilation 2:3
      ConvProblem::make(2, 5, 4, 3, 3, 1, 1),                       // 1x1
      ConvProblem::make(2, 4, 5, 5, 3, 1, 1, 0, 0, 2, 2),           // 1x1, stride 2
      ConvProblem::make(3, 2, 1, 1, 2, 3, 3, 1, 1),                 // H = W = 1, pad 1
      ConvProblem::make(2, 2, 10, 7, 3, 4, 2, 2, 0, 3, 1),          // even R and S, stride 3:1
      ConvProblem::make(3, 5, 17, 13, 7, 3, 2, 1, 0, 2, 1),         // the --help example
      ConvProblem::make(1, 3, 8, 9, 2, 3, 3, 3, 2, 2, 3, 2, 1),     // everything at once
  };
}

std::string describe(const ConvProblem& p) { return p.label() + " -> P " + std::to_string(p.p) + ", Q " + std::to_string(p.q); }

}  // namespace

TEST_CASE("conv_out_size: hand-computed extents") {
  // (in, filt, pad, stride, dil) -> out
  CHECK(conv_out_size(56, 3, 1, 1, 1) == 56);   // 'same' 3x3
  CHECK(conv_out_size(56, 3, 0, 1, 1) == 54);   // 'valid' 3x3
  CHECK(conv_out_size(224, 7, 3, 2, 1) == 112); // r50_conv1
  CHECK(conv_out_size(56, 3, 1, 2, 1) == 28);   // r50_c3_3x3_s2
  CHECK(conv_out_size(7, 3, 1, 1, 1) == 7);     // r50_c5_3x3
  CHECK(conv_out_size(56, 1, 0, 1, 1) == 56);   // 1x1
  CHECK(conv_out_size(56, 1, 0, 2, 1) == 28);   // 1x1, stride 2
  CHECK(conv_out_size(57, 1, 0, 2, 1) == 29);   // odd input, stride 2: the last pixel still has an output
  CHECK(conv_out_size(8, 4, 0, 1, 1) == 5);     // even filter
  CHECK(conv_out_size(8, 2, 1, 2, 1) == 5);     // even filter, pad 1, stride 2: padded 10, starts 0,2,4,6,8
  CHECK(conv_out_size(8, 2, 0, 3, 1) == 3);     // starts 0, 3, 6 (6+1 = 7 < 8)
  CHECK(conv_out_size(10, 3, 0, 1, 2) == 6);    // dilation 2: span 5
  CHECK(conv_out_size(11, 3, 1, 2, 3) == 4);    // dilation 3: span 7 in a padded 13, stride 2
  CHECK(conv_out_size(1, 3, 1, 1, 1) == 1);     // a 1-pixel image, pad 1
  CHECK(conv_out_size(1, 3, 1, 2, 1) == 1);
  CHECK(conv_out_size(5, 5, 0, 1, 1) == 1);     // the filter exactly covers the input
  CHECK(conv_out_size(5, 3, 0, 7, 1) == 1);     // a stride larger than the input
  CHECK(conv_out_size(7, 3, 1, 1, 3) == 3);     // span 7 in a padded 9
}

TEST_CASE("conv_out_size: <= 0 when the filter does not fit in the padded input") {
  CHECK(conv_out_size(2, 3, 0, 1, 1) <= 0);
  CHECK(conv_out_size(1, 3, 0, 1, 1) <= 0);
  CHECK(conv_out_size(1, 3, 0, 2, 1) <= 0);
  CHECK(conv_out_size(1, 7, 0, 1, 1) <= 0);
  CHECK(conv_out_size(1, 7, 0, 2, 1) <= 0);
  CHECK(conv_out_size(1, 7, 2, 3, 1) <= 0);     // span 7 > padded 5
  CHECK(conv_out_size(5, 3, 0, 1, 3) <= 0);     // dilation 3: span 7 > 5
  CHECK(conv_out_size(5, 3, 0, 4, 3) <= 0);
  CHECK(conv_out_size(5, 3, 1, 1, 3) == 1);     // ... and pad 1 makes it fit
}

TEST_CASE("conv_out_size == the positions counted one by one, over a sweep") {
  for (int in = 1; in <= 12; ++in)
    for (int filt = 1; filt <= 6; ++filt)
      for (int pad = 0; pad <= 3; ++pad)
        for (int stride = 1; stride <= 4; ++stride)
          for (int dil = 1; dil <= 3; ++dil) {
            const int want = count_positions(in, filt, pad, stride, dil);
            const int got = conv_out_size(in, filt, pad, stride, dil);
            if (want > 0) {
              CHECK_MESSAGE(got == want, "in ", in, " filt ", filt, " pad ", pad, " stride ", stride, " dil ", dil);
            } else {
              CHECK_MESSAGE(got <= 0, "in ", in, " filt ", filt, " pad ", pad, " stride ", stride, " dil ", dil);
            }
          }
}

TEST_CASE("ConvProblem::make fills P and Q: sizes, FLOPs and bytes") {
  const ConvProblem p = ConvProblem::make(2, 3, 7, 6, 4, 3, 2, 1, 0, 2, 1);
  CHECK(p.p == 4);  // (7 + 2 - 3) / 2 + 1
  CHECK(p.q == 5);  // 6 - 2 + 1
  CHECK(p.gemm_m() == 4);
  CHECK(p.gemm_n() == 2 * 4 * 5);
  CHECK(p.gemm_k() == 3 * 3 * 2);
  CHECK(p.x_elems() == 2 * 3 * 7 * 6);
  CHECK(p.w_elems() == 4 * 3 * 3 * 2);
  CHECK(p.y_elems() == 2 * 4 * 4 * 5);
  CHECK(p.flops() == 2.0 * 2 * 4 * 4 * 5 * 3 * 3 * 2);
  CHECK(p.min_bytes() == 4.0 * (2 * 3 * 7 * 6 + 4 * 3 * 3 * 2 + 2 * 4 * 4 * 5));
  CHECK_FALSE(p.dilated());
  CHECK(ConvProblem::make(1, 1, 9, 9, 1, 3, 3, 0, 0, 1, 1, 1, 2).dilated());
  CHECK(p.label() == "2,3,7,6,4,3,2,1:0,2:1,1");
  CHECK(ConvProblem::make(1, 2, 9, 11, 3, 3, 3, 2, 2, 1, 1, 2, 3).label() == "1,2,9,11,3,3,3,2,1,2:3");
  // The 64-bit counts do not overflow on the largest headline-like tensors.
  const ConvProblem big = ConvProblem::make(1024, 1024, 64, 64, 1, 1, 1);
  CHECK(big.x_elems() == std::int64_t(1) << 32);
}

TEST_CASE("the coordinate maps == an im2col written with plain loops") {
  for (const ConvProblem& cp : awkward_problems()) {
    CAPTURE(describe(cp));
    // P and Q by counting, independent of the formula.
    const int P = count_positions(cp.h, cp.r, cp.pad_h, cp.stride_h, cp.dil_h);
    const int Q = count_positions(cp.w, cp.s, cp.pad_w, cp.stride_w, cp.dil_w);
    REQUIRE(cp.p == P);
    REQUIRE(cp.q == Q);
    const int rows = cp.c * cp.r * cp.s, cols = cp.n * P * Q;
    REQUIRE(cp.gemm_k() == rows);
    REQUIRE(cp.gemm_n() == cols);

    // The column matrix as offsets into x (-1: padding), built from the definition: tap (c, r, s)
    // of output pixel (n, p, q) reads x[n][c][p*stride_h - pad_h + r*dil_h][q*stride_w - pad_w + s*dil_w].
    std::vector<std::int64_t> want(std::size_t(rows) * cols, -2);
    std::vector<int> want_row(std::size_t(rows) * cols), want_col(std::size_t(rows) * cols);
    int kk = 0;
    for (int c = 0; c < cp.c; ++c)
      for (int r = 0; r < cp.r; ++r)
        for (int s = 0; s < cp.s; ++s, ++kk) {
          const tut::TapCoord t = tut::tap_coord(cp, kk);
          CHECK(t.c == c);
          CHECK(t.r == r);
          CHECK(t.s == s);
          int j = 0;
          for (int n = 0; n < cp.n; ++n)
            for (int p = 0; p < P; ++p)
              for (int q = 0; q < Q; ++q, ++j) {
                int ih = -cp.pad_h + r * cp.dil_h, iw = -cp.pad_w + s * cp.dil_w;
                for (int step = 0; step < p; ++step) ih += cp.stride_h;
                for (int step = 0; step < q; ++step) iw += cp.stride_w;
                const bool inside = ih >= 0 && ih < cp.h && iw >= 0 && iw < cp.w;
                const std::size_t e = std::size_t(kk) * cols + j;
                want[e] = inside ? ((std::int64_t(n) * cp.c + c) * cp.h + ih) * cp.w + iw : -1;
                want_row[e] = ih;
                want_col[e] = iw;
              }
          REQUIRE(j == cols);
        }
    REQUIRE(kk == rows);

    // Column j: out_coord, and the (n, p, q) order.
    int j = 0;
    for (int n = 0; n < cp.n; ++n)
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < Q; ++q, ++j) {
          const tut::OutCoord o = tut::out_coord(cp, j);
          CHECK(o.n == n);
          CHECK(o.p == p);
          CHECK(o.q == q);
        }

    int wrong_offsets = 0, wrong_rows = 0, wrong_cols = 0;
    for (int a = 0; a < rows; ++a)
      for (int b = 0; b < cols; ++b) {
        const std::size_t e = std::size_t(a) * cols + b;
        const tut::OutCoord o = tut::out_coord(cp, b);
        const tut::TapCoord t = tut::tap_coord(cp, a);
        if (tut::x_col_offset(cp, a, b) != want[e]) ++wrong_offsets;
        if (tut::in_row(cp, o.p, t.r) != want_row[e]) ++wrong_rows;
        if (tut::in_col(cp, o.q, t.s) != want_col[e]) ++wrong_cols;
      }
    CHECK(wrong_offsets == 0);
    CHECK(wrong_rows == 0);
    CHECK(wrong_cols == 0);

    // Every stored offset lies inside x, and the padding is really there when pad > 0.
    int padded = 0;
    for (std::int64_t off : want) {
      CHECK(off < cp.x_elems());
      if (off < 0) ++padded;
    }
    if (cp.pad_h > 0 || cp.pad_w > 0) CHECK(padded > 0);

    // Y(k, j) lives at y[n][k][p][q]: every offset once, in range.
    std::vector<int> hits(std::size_t(cp.y_elems()), 0);
    int wrong_y = 0;
    for (int k = 0; k < cp.k; ++k) {
      int jj = 0;
      for (int n = 0; n < cp.n; ++n)
        for (int p = 0; p < P; ++p)
          for (int q = 0; q < Q; ++q, ++jj) {
            const std::int64_t off = tut::y_offset(cp, k, jj);
            if (off != ((std::int64_t(n) * cp.k + k) * P + p) * Q + q) ++wrong_y;
            if (off >= 0 && off < cp.y_elems()) ++hits[std::size_t(off)];
          }
    }
    CHECK(wrong_y == 0);
    int not_once = 0;
    for (int h : hits) not_once += (h != 1);
    CHECK(not_once == 0);
  }
}

TEST_CASE("the coordinate maps on a 1x1 image with pad 1: only the centre tap reads x") {
  const ConvProblem cp = ConvProblem::make(2, 3, 1, 1, 4, 3, 3, 1, 1);
  REQUIRE(cp.p == 1);
  REQUIRE(cp.q == 1);
  for (int kk = 0; kk < cp.gemm_k(); ++kk)
    for (int j = 0; j < cp.gemm_n(); ++j) {
      const tut::TapCoord t = tut::tap_coord(cp, kk);
      const std::int64_t off = tut::x_col_offset(cp, kk, j);
      if (t.r == 1 && t.s == 1) {
        CHECK(off == std::int64_t(j) * cp.c + t.c);  // x[n][c][0][0], n == j
      } else {
        CHECK(off == -1);
      }
    }
}
