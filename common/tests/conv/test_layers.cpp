// The Part II layer table (conv/layers.hpp).
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tut/conv/args.hpp"
#include "tut/conv/layers.hpp"

namespace {

struct Expected {
  const char* name;
  int n, c, hw, k, rs, pad, stride, pq;  // pq: the output's height and width
};

// The documented table, in order, with each layer's output size worked out by hand.
const Expected kTable[] = {
    {"seed_3x3", 128, 64, 56, 128, 3, 1, 1, 56},
    {"r50_conv1", 32, 3, 224, 64, 7, 3, 2, 112},
    {"r50_c2_3x3", 32, 64, 56, 64, 3, 1, 1, 56},
    {"r50_c2_1x1_up", 32, 64, 56, 256, 1, 0, 1, 56},
    {"r50_c3_3x3_s2", 32, 128, 56, 128, 3, 1, 2, 28},
    {"r50_c3_3x3", 32, 128, 28, 128, 3, 1, 1, 28},
    {"r50_c3_1x1", 32, 512, 28, 128, 1, 0, 1, 28},
    {"r50_c4_3x3", 32, 256, 14, 256, 3, 1, 1, 14},
    {"r50_c4_1x1_down", 32, 1024, 14, 256, 1, 0, 1, 14},
    {"r50_c5_3x3", 32, 512, 7, 512, 3, 1, 1, 7},
};

}  // namespace

TEST_CASE("layer table: the ten documented layers, in order, the headline first") {
  const auto& layers = tut::conv_layers();
  REQUIRE(layers.size() == 10);
  CHECK(std::string(tut::kHeadlineLayer) == "seed_3x3");
  CHECK(std::string(layers[0].name) == tut::kHeadlineLayer);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Expected& e = kTable[i];
    const tut::ConvLayer& l = layers[i];
    CAPTURE(std::string(e.name));
    CHECK(std::string(l.name) == e.name);
    CHECK(l.n == e.n);
    CHECK(l.c == e.c);
    CHECK(l.hw == e.hw);
    CHECK(l.k == e.k);
    CHECK(l.rs == e.rs);
    CHECK(l.pad == e.pad);
    CHECK(l.stride == e.stride);
    const tut::ConvProblem p = l.problem();
    CHECK(p.n == e.n);
    CHECK(p.c == e.c);
    CHECK(p.h == e.hw);
    CHECK(p.w == e.hw);
    CHECK(p.k == e.k);
    CHECK(p.r == e.rs);
    CHECK(p.s == e.rs);
    CHECK(p.pad_h == e.pad);
    CHECK(p.pad_w == e.pad);
    CHECK(p.stride_h == e.stride);
    CHECK(p.stride_w == e.stride);
    CHECK(p.dil_h == 1);
    CHECK(p.dil_w == 1);
    CHECK(p.p == e.pq);
    CHECK(p.q == e.pq);
  }
}

TEST_CASE("layer table: find_conv_layer") {
  const auto& layers = tut::conv_layers();
  for (const tut::ConvLayer& l : layers) {
    CAPTURE(std::string(l.name));
    CHECK(tut::find_conv_layer(l.name) == &l);
  }
  CHECK(tut::find_conv_layer("") == nullptr);
  CHECK(tut::find_conv_layer("list") == nullptr);
  CHECK(tut::find_conv_layer("seed") == nullptr);
  CHECK(tut::find_conv_layer("seed_3x3 ") == nullptr);
  CHECK(tut::find_conv_layer("Seed_3x3") == nullptr);
  CHECK(tut::find_conv_layer("r50_c5_3x3_") == nullptr);
}

TEST_CASE("layer table: every layer is a valid problem with 32-bit-indexable tensors") {
  for (const tut::ConvLayer& l : tut::conv_layers()) {
    CAPTURE(std::string(l.name));
    const tut::ConvProblem p = l.problem();
    CHECK_NOTHROW(tut::check_conv_problem(p, "--layer"));
    CHECK(p.p >= 1);
    CHECK(p.q >= 1);
    CHECK(p.x_elems() <= tut::kMaxConvElems);
    CHECK(p.w_elems() <= tut::kMaxConvElems);
    CHECK(p.y_elems() <= tut::kMaxConvElems);
    // The GEMM view: M = K, N = N*P*Q, K = C*R*S.
    CHECK(p.gemm_m() == l.k);
    CHECK(p.gemm_n() == l.n * p.p * p.q);
    CHECK(p.gemm_k() == l.c * l.rs * l.rs);
  }
  // The headline's GEMM: 128 x 401408 x 576.
  const tut::ConvProblem h = tut::find_conv_layer(tut::kHeadlineLayer)->problem();
  CHECK(h.gemm_m() == 128);
  CHECK(h.gemm_n() == 128 * 56 * 56);
  CHECK(h.gemm_k() == 576);
}

TEST_CASE("layer table: the printed table has a header and one line per layer") {
  const std::string t = tut::conv_layer_table();
  std::vector<std::string> lines;
  std::istringstream in(t);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 11);
  CHECK(t.back() == '\n');
  std::istringstream head(lines[0]);
  std::vector<std::string> cols;
  for (std::string w; head >> w;) cols.push_back(w);
  CHECK(cols == std::vector<std::string>{"layer", "N", "C", "H", "W", "K", "R", "S", "pad", "stride"});
  for (std::size_t i = 0; i < 10; ++i) {
    const Expected& e = kTable[i];
    CAPTURE(std::string(e.name));
    std::istringstream row(lines[i + 1]);
    std::string name;
    int n, c, h, w, k, r, s, pad, stride;
    row >> name >> n >> c >> h >> w >> k >> r >> s >> pad >> stride;
    REQUIRE_FALSE(row.fail());
    std::string rest;
    CHECK_FALSE(bool(row >> rest));
    CHECK(name == e.name);
    CHECK(n == e.n);
    CHECK(c == e.c);
    CHECK(h == e.hw);
    CHECK(w == e.hw);
    CHECK(k == e.k);
    CHECK(r == e.rs);
    CHECK(s == e.rs);
    CHECK(pad == e.pad);
    CHECK(stride == e.stride);
  }
}
