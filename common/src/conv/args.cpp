#include "tut/conv/args.hpp"

#include <initializer_list>
#include <sstream>
#include <vector>

#include "tut/conv/layers.hpp"

namespace tut {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (char ch : s) {
    if (ch == sep) {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  parts.push_back(cur);
  return parts;
}

// The product of the factors (each in [0, 2^31)), exactly, as decimal text: at most four factors
// fit in 128 bits, so no overflow however large the extents.
std::string product_text(const std::vector<std::int64_t>& factors) {
  unsigned __int128 prod = 1;
  for (std::int64_t f : factors) prod *= static_cast<unsigned __int128>(f);
  std::string digits;
  do {
    digits.insert(digits.begin(), char('0' + int(prod % 10)));
    prod /= 10;
  } while (prod > 0);
  return digits;
}

// Whether the product of the factors exceeds kMaxConvElems, without overflow.
bool product_exceeds(const std::vector<std::int64_t>& factors) {
  std::int64_t prod = 1;
  for (std::int64_t f : factors) {
    if (f == 0) return false;
    if (prod > kMaxConvElems / f) return true;
    prod *= f;
  }
  return false;
}


const char* kShapeForm = "N,C,H,W,K,R,S[,pad[,stride[,dilation]]], each of the last three v or vh:vw";

// "v" or "vh:vw" for --shape's field `name`, each in [lo, hi].
void parse_pair(const std::string& text, const char* name, int lo, int hi, int& h, int& w) {
  const std::vector<std::string> hw = split(text, ':');
  if (hw.size() > 2) {
    throw ArgError(std::string("--shape: ") + name + " '" + text + "' has more than two values (valid: " + name +
                   " as v or vh:vw, each in [" + std::to_string(lo) + ", " + std::to_string(hi) + "])");
  }
  const std::string flag = std::string("--shape (") + name + ")";
  h = parse_int(flag, hw[0], lo, hi);
  w = hw.size() == 2 ? parse_int(flag, hw[1], lo, hi) : h;
}

}  // namespace

std::string conv_pair_text(int h, int w) { return h == w ? std::to_string(h) : std::to_string(h) + ":" + std::to_string(w); }

std::string ConvProblem::label() const {
  return std::to_string(n) + "," + std::to_string(c) + "," + std::to_string(h) + "," + std::to_string(w) + "," +
         std::to_string(k) + "," + std::to_string(r) + "," + std::to_string(s) + "," + conv_pair_text(pad_h, pad_w) + "," +
         conv_pair_text(stride_h, stride_w) + "," + conv_pair_text(dil_h, dil_w);
}

void check_conv_problem(const ConvProblem& p, const std::string& flag) {
  // The filter's extent, dilation included, against the padded input (64-bit: no overflow).
  const std::int64_t span_h = std::int64_t(p.dil_h) * (p.r - 1) + 1, span_w = std::int64_t(p.dil_w) * (p.s - 1) + 1;
  const std::int64_t in_h = std::int64_t(p.h) + 2 * std::int64_t(p.pad_h), in_w = std::int64_t(p.w) + 2 * std::int64_t(p.pad_w);
  if (span_h > in_h || span_w > in_w) {
    throw ArgError(flag + ": the filter spans " + std::to_string(span_h) + "x" + std::to_string(span_w) +
                   " pixels (dilation included) but the padded input is " + std::to_string(in_h) + "x" +
                   std::to_string(in_w) + ": the output would be empty (valid: dil*(R-1)+1 <= H+2*pad_h and "
                   "dil*(S-1)+1 <= W+2*pad_w)");
  }
  const std::int64_t P = (in_h - span_h) / p.stride_h + 1, Q = (in_w - span_w) / p.stride_w + 1;
  const struct { const char* what; std::vector<std::int64_t> factors; } sizes[] = {
      {"x (N*C*H*W)", {p.n, p.c, p.h, p.w}},
      {"w (K*C*R*S)", {p.k, p.c, p.r, p.s}},
      {"y (N*K*P*Q)", {p.n, p.k, P, Q}},
      {"the GEMM's N (N*P*Q)", {p.n, P, Q}},
      {"the GEMM's K (C*R*S)", {p.c, p.r, p.s}},
  };
  for (const auto& sz : sizes) {
    if (product_exceeds(sz.factors)) {
      throw ArgError(flag + ": " + sz.what + " would have " + product_text(sz.factors) +
                     " elements (valid: at most 2147483647, the limit of 32-bit indexing)");
    }
  }
}

ConvProblem parse_conv_shape(const std::string& text) {
  const std::vector<std::string> f = split(text, ',');
  if (f.size() < 7 || f.size() > 10) {
    throw ArgError("--shape: '" + text + "' has " + std::to_string(f.size()) + " fields (valid: " + kShapeForm + ")");
  }
  const char* names[7] = {"N", "C", "H", "W", "K", "R", "S"};
  int v[7];
  for (int i = 0; i < 7; ++i) v[i] = parse_int(std::string("--shape (") + names[i] + ")", f[i], 1, kMaxConvExtent);
  int ph = 0, pw = 0, sh = 1, sw = 1, dh = 1, dw = 1;
  if (f.size() > 7) parse_pair(f[7], "pad", 0, kMaxConvPad, ph, pw);
  if (f.size() > 8) parse_pair(f[8], "stride", 1, kMaxConvStride, sh, sw);
  if (f.size() > 9) parse_pair(f[9], "dilation", 1, kMaxConvStride, dh, dw);
  ConvProblem p{v[0], v[1], v[2], v[3], v[4], v[5], v[6], ph, pw, sh, sw, dh, dw, 0, 0};
  check_conv_problem(p, "--shape");
  return ConvProblem::make(p.n, p.c, p.h, p.w, p.k, p.r, p.s, ph, pw, sh, sw, dh, dw);
}

ConvOptions parse_conv_args(int argc, const char* const* argv) {
  ConvOptions o;
  bool layer_given = false;
  std::string shape_text;
  const FlagHandler conv_flags = [&](const Flag& f) {
    if (f.name == "--layer") {
      o.layer = f.value();
      layer_given = true;
    } else if (f.name == "--shape") {
      shape_text = f.value();
      o.from_shape = true;
    } else if (f.name == "--residual") {
      f.no_value();
      o.residual = true;
    } else {
      return false;
    }
    return true;
  };
  static_cast<CommonOptions&>(o) = parse_flags(argc, argv, conv_flags);
  if (layer_given && o.from_shape) throw ArgError("--layer/--shape: give one of them, not both");
  if (o.from_shape) {
    o.problem = parse_conv_shape(shape_text);
    o.label = shape_text;
    return o;
  }
  if (o.layer == "list") {
    o.list_layers = true;
    return o;
  }
  const ConvLayer* l = find_conv_layer(o.layer);
  if (!l) {
    std::string names;
    for (const ConvLayer& x : conv_layers()) names += std::string(names.empty() ? "" : ", ") + x.name;
    throw ArgError("--layer: '" + o.layer + "' is not in the layer table (valid: " + names + "; or list)");
  }
  o.problem = l->problem();
  o.label = l->name;
  return o;
}

std::string conv_usage(const std::string& program, Math math, Layout layout) {
  std::ostringstream s;
  s << "usage: " << program << " [flags]\n";
  const char* tensors = layout == Layout::Nhwc ? "x NHWC, w KRSC, y NPQK" : "x NCHW, w KCRS, y NKPQ";
  if (math == Math::Tf32) {
    s << "Computes y = conv(x, w) (FP32 in and out, TF32 tensor-core math; " << tensors << ") with\n"
      << "this step's kernel, checks it against cuDNN in FMA math (true FP32; im2col + cuBLAS where the\n"
      << "build has no cuDNN) with TF32's tolerance, and times it against cuDNN's IMPLICIT_PRECOMP_GEMM and\n"
      << "its fastest algorithm in its default math (TF32 allowed) in the same process.\n\n";
  } else {
    s << "Computes y = conv(x, w) (FP32; " << tensors << ") with this step's kernel, checks it\n"
      << "against cuDNN (FMA math, no TF32; im2col + cuBLAS where the build has no cuDNN) and times it\n"
      << "against cuDNN's IMPLICIT_PRECOMP_GEMM and its fastest FMA algorithm in the same process.\n\n";
  }
  if (layout == Layout::Nhwc) {
    s << "The step takes channels-last tensors: the inputs are made in NCHW, copied to NHWC and KRSC once\n"
      << "outside the timed runs, and y is turned back to NKPQ for the check; the copies' time is reported.\n\n";
  }
  s << "  --layer NAME          a layer of the table (default " << ConvOptions().layer << "); --layer list prints it\n"
    << "  --shape " << kShapeForm << "\n"
    << "                        any other problem, e.g. 3,5,17,13,7,3,2,1:0,2:1 (pad 1 and 0, stride 2 and 1);\n"
    << "                        pad >= 0 (default 0), stride and dilation >= 1 (default 1), extents >= 1\n"
    << "  --residual            (a step with a fused epilogue) also add a residual tensor of y's shape\n"
    << common_usage("x (NCHW), w (KCRS), y_out (NKPQ), y_ref (and bias, residual for an epilogue step)") << exit_codes_usage("CUDA/cuBLAS/cuDNN");
  return s.str();
}

}  // namespace tut
