#include "tut/conv/layers.hpp"

#include <cstdio>

namespace tut {

const std::vector<ConvLayer>& conv_layers() {
  static const std::vector<ConvLayer> layers = {
      // name              N     C   H=W    K  RxS pad stride
      {"seed_3x3",        128,   64,  56, 128, 3, 1, 1},
      {"r50_conv1",        32,    3, 224,  64, 7, 3, 2},
      {"r50_c2_3x3",       32,   64,  56,  64, 3, 1, 1},
      {"r50_c2_1x1_up",    32,   64,  56, 256, 1, 0, 1},
      {"r50_c3_3x3_s2",    32,  128,  56, 128, 3, 1, 2},
      {"r50_c3_3x3",       32,  128,  28, 128, 3, 1, 1},
      {"r50_c3_1x1",       32,  512,  28, 128, 1, 0, 1},
      {"r50_c4_3x3",       32,  256,  14, 256, 3, 1, 1},
      {"r50_c4_1x1_down",  32, 1024,  14, 256, 1, 0, 1},
      {"r50_c5_3x3",       32,  512,   7, 512, 3, 1, 1},
  };
  return layers;
}

const ConvLayer* find_conv_layer(const std::string& name) {
  for (const ConvLayer& l : conv_layers()) {
    if (name == l.name) return &l;
  }
  return nullptr;
}

std::string conv_layer_table() {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%-16s %5s %5s %5s %5s %5s %3s %3s %4s %6s\n", "layer", "N", "C", "H", "W", "K", "R",
                "S", "pad", "stride");
  out += line;
  for (const ConvLayer& l : conv_layers()) {
    std::snprintf(line, sizeof line, "%-16s %5d %5d %5d %5d %5d %3d %3d %4d %6d\n", l.name, l.n, l.c, l.hw, l.hw, l.k,
                  l.rs, l.rs, l.pad, l.stride);
    out += line;
  }
  return out;
}

}  // namespace tut
