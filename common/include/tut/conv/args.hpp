// The convolution binaries' flags: --layer NAME | --shape N,C,H,W,K,R,S[,pad[,stride[,dilation]]] on
// top of the shared ones (core/args.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "tut/conv/problem.hpp"
#include "tut/core/args.hpp"
#include "tut/core/verify.hpp"

namespace tut {

struct ConvOptions : CommonOptions {
  std::string layer = "seed_3x3";  // the headline layer
  bool list_layers = false;        // --layer list
  bool from_shape = false;         // --shape given
  ConvProblem problem;             // the problem to run (from the layer or the shape)
  std::string label;               // the layer's name, or the shape as given
  bool residual = false;           // --residual: an epilogue step also adds a residual tensor
};

// Limits of one size: every extent in [1, kMaxConvExtent], pad in [0, kMaxConvPad], stride and
// dilation in [1, kMaxConvStride]; every tensor, N*P*Q and C*R*S below 2^31 (32-bit indexing).
constexpr int kMaxConvExtent = 1000000;  // chapters 15-16 put ceil(K / 16) in grid.y (<= 65535)
constexpr int kMaxConvPad = 1 << 16;
constexpr int kMaxConvStride = 1 << 16;
constexpr std::int64_t kMaxConvElems = 2147483647;

// Parses "N,C,H,W,K,R,S[,pad[,stride[,dilation]]]"; pad, stride and dilation each "v" (both axes)
// or "vh:vw" (height, width). Throws ArgError naming --shape and the valid range.
ConvProblem parse_conv_shape(const std::string& text);
// A per-axis pair as --shape writes it: "v" when both axes agree, else "vh:vw".
std::string conv_pair_text(int h, int w);

// Throws ArgError (naming `flag`) unless p has an output and fits 32-bit indexing.
void check_conv_problem(const ConvProblem& p, const std::string& flag);

// Parses argv[1..argc). Throws ArgError on any unknown flag, an unknown layer, a malformed shape,
// both --layer and --shape, or a problem check_conv_problem rejects.
ConvOptions parse_conv_args(int argc, const char* const* argv);

// The --help text. `math`: the step's (a TF32 step is checked against FP32 with TF32's tolerance and
// timed against cuDNN's default math).
std::string conv_usage(const std::string& program, Math math = Math::Fp32, Layout layout = Layout::Nchw);

}  // namespace tut
