// The Part II layer table (docs/conv-as-gemm.md gives their GEMM sizes): ResNet-50's convolutions at
// batch 32, plus a 128x64x56x56 -> 128 3x3 layer, the headline.
#pragma once

#include <string>
#include <vector>

#include "tut/conv/problem.hpp"

namespace tut {

struct ConvLayer {
  const char* name;
  int n, c, hw, k, rs, pad, stride;  // square images and filters, the same pad and stride on both axes
  ConvProblem problem() const { return ConvProblem::make(n, c, hw, hw, k, rs, rs, pad, pad, stride, stride); }
};

// In table order, the headline first.
const std::vector<ConvLayer>& conv_layers();
constexpr const char* kHeadlineLayer = "seed_3x3";
// The layer named `name`, or null.
const ConvLayer* find_conv_layer(const std::string& name);
// "layer N C H W K R S pad stride" and one line per layer (what --layer list prints).
std::string conv_layer_table();

}  // namespace tut
