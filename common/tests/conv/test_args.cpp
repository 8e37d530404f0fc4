// The convolution binaries' flags (conv/args.hpp): --layer, --shape, and the shared ones on top.
#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "tut/conv/args.hpp"
#include "tut/conv/layers.hpp"

#include "../args_helpers.hpp"

using tut::ArgError;
using tut::ConvOptions;
using tut::ConvProblem;

namespace {

ConvOptions parse(std::initializer_list<const char*> args) { return test::parse_list(tut::parse_conv_args, args); }

// The message of the ArgError that parsing `args` raises ("" when none is raised).
std::string error_of(std::initializer_list<const char*> args) { return test::error_of(tut::parse_conv_args, args); }

std::string shape_error(const std::string& shape) { return error_of({"--shape", shape.c_str()}); }

using test::contains;

std::string str(long long v) { return std::to_string(v); }

// The valid ranges, as the messages spell them.
const std::string kExtentRange = "[1, " + str(tut::kMaxConvExtent) + "]";
const std::string kPadRange = "[0, " + str(tut::kMaxConvPad) + "]";
const std::string kStrideRange = "[1, " + str(tut::kMaxConvStride) + "]";

// A rejected value: a one-line message naming the flag and the valid range.
void check_rejected(const std::string& msg, const std::string& flag, const std::string& range) {
  CAPTURE(msg);
  CHECK_FALSE(msg.empty());  // accepted: nothing more to check
  if (msg.empty()) return;
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(contains(msg, flag));
  CHECK(contains(msg, "valid"));
  CHECK(contains(msg, range));
}

bool same_problem(const ConvProblem& a, const ConvProblem& b) {
  return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w && a.k == b.k && a.r == b.r && a.s == b.s &&
         a.pad_h == b.pad_h && a.pad_w == b.pad_w && a.stride_h == b.stride_h && a.stride_w == b.stride_w &&
         a.dil_h == b.dil_h && a.dil_w == b.dil_w && a.p == b.p && a.q == b.q;
}

}  // namespace

TEST_CASE("conv flags: the defaults are the headline layer, seed_3x3") {
  const ConvOptions o = parse({});
  CHECK(o.layer == "seed_3x3");
  CHECK(o.label == "seed_3x3");
  CHECK_FALSE(o.from_shape);
  CHECK_FALSE(o.list_layers);
  const ConvProblem& p = o.problem;
  CHECK(p.n == 128);
  CHECK(p.c == 64);
  CHECK(p.h == 56);
  CHECK(p.w == 56);
  CHECK(p.k == 128);
  CHECK(p.r == 3);
  CHECK(p.s == 3);
  CHECK(p.pad_h == 1);
  CHECK(p.pad_w == 1);
  CHECK(p.stride_h == 1);
  CHECK(p.stride_w == 1);
  CHECK(p.dil_h == 1);
  CHECK(p.dil_w == 1);
  CHECK(p.p == 56);
  CHECK(p.q == 56);
  // The shared defaults are untouched.
  CHECK(o.iters == 20);
  CHECK(o.verify);
  CHECK_FALSE(o.self_test);
  CHECK(o.csv.empty());
}

TEST_CASE("conv flags: --layer NAME for every layer of the table") {
  for (const tut::ConvLayer& l : tut::conv_layers()) {
    CAPTURE(std::string(l.name));
    const ConvOptions o = parse({"--layer", l.name});
    CHECK(o.layer == l.name);
    CHECK(o.label == l.name);
    CHECK_FALSE(o.from_shape);
    CHECK_FALSE(o.list_layers);
    CHECK(same_problem(o.problem, l.problem()));
    const std::string inline_form = std::string("--layer=") + l.name;
    CHECK(same_problem(parse({inline_form.c_str()}).problem, l.problem()));
  }
  const ConvOptions o = parse({"--layer", "r50_conv1"});
  CHECK(o.problem.p == 112);
  CHECK(o.problem.q == 112);
  CHECK(o.problem.stride_h == 2);
  CHECK(o.problem.pad_w == 3);
}

TEST_CASE("conv flags: --layer list") {
  const ConvOptions o = parse({"--layer", "list"});
  CHECK(o.list_layers);
  CHECK_FALSE(o.from_shape);
  CHECK(parse({"--layer=list"}).list_layers);
}

TEST_CASE("conv flags: --shape with 7, 8, 9 and 10 fields") {
  {
    const ConvOptions o = parse({"--shape", "2,3,5,6,4,3,3"});
    CHECK(o.from_shape);
    CHECK_FALSE(o.list_layers);
    CHECK(o.label == "2,3,5,6,4,3,3");
    CHECK(same_problem(o.problem, ConvProblem::make(2, 3, 5, 6, 4, 3, 3)));
    CHECK(o.problem.p == 3);
    CHECK(o.problem.q == 4);
  }
  {
    const ConvOptions o = parse({"--shape", "2,3,5,6,4,3,3,1"});
    CHECK(o.label == "2,3,5,6,4,3,3,1");
    CHECK(same_problem(o.problem, ConvProblem::make(2, 3, 5, 6, 4, 3, 3, 1, 1)));
    CHECK(o.problem.p == 5);
    CHECK(o.problem.q == 6);
  }
  {
    const ConvOptions o = parse({"--shape", "2,3,5,6,4,3,3,1,2"});
    CHECK(same_problem(o.problem, ConvProblem::make(2, 3, 5, 6, 4, 3, 3, 1, 1, 2, 2)));
    CHECK(o.problem.p == 3);
    CHECK(o.problem.q == 3);
  }
  {
    const ConvOptions o = parse({"--shape", "2,3,9,11,4,3,3,2,1,2"});
    CHECK(same_problem(o.problem, ConvProblem::make(2, 3, 9, 11, 4, 3, 3, 2, 2, 1, 1, 2, 2)));
  }
  {
    // The --help example: "1:0" and "2:1" pairs are height:width.
    const ConvOptions o = parse({"--shape=3,5,17,13,7,3,2,1:0,2:1"});
    CHECK(o.label == "3,5,17,13,7,3,2,1:0,2:1");
    CHECK(same_problem(o.problem, ConvProblem::make(3, 5, 17, 13, 7, 3, 2, 1, 0, 2, 1)));
    CHECK(o.problem.p == 9);
    CHECK(o.problem.q == 12);
  }
  {
    const ConvOptions o = parse({"--shape", "1,2,9,11,3,3,3,2:1,1:2,2:3"});
    CHECK(o.label == "1,2,9,11,3,3,3,2:1,1:2,2:3");
    CHECK(same_problem(o.problem, ConvProblem::make(1, 2, 9, 11, 3, 3, 3, 2, 1, 1, 2, 2, 3)));
    CHECK(o.problem.p == 9);   // 9 + 4 - 5 + 1
    CHECK(o.problem.q == 4);   // (11 + 2 - 7) / 2 + 1
  }
  // The label is the text as given, even where the problem could be spelled another way.
  CHECK(parse({"--shape", "1,1,4,4,1,1,1,0:0,1:1,1"}).label == "1,1,4,4,1,1,1,0:0,1:1,1");
  // Parsed straight, too.
  CHECK(same_problem(tut::parse_conv_shape("3,5,17,13,7,3,2,1:0,2:1"), ConvProblem::make(3, 5, 17, 13, 7, 3, 2, 1, 0, 2, 1)));
  // The largest values of each range are accepted where the problem fits.
  const std::string max_h = "1,1," + str(tut::kMaxConvExtent) + ",1,1,1,1";
  CHECK(parse({"--shape", max_h.c_str()}).problem.h == tut::kMaxConvExtent);
  const std::string max_k = "1,1,1,1," + str(tut::kMaxConvExtent) + ",1,1";
  CHECK(parse({"--shape", max_k.c_str()}).problem.k == tut::kMaxConvExtent);
  const std::string max_pad = "1,1,1,1,1,1,1," + str(tut::kMaxConvPad) + ":0";
  CHECK(parse({"--shape", max_pad.c_str()}).problem.p == 2 * tut::kMaxConvPad + 1);
  const std::string max_stride = "1,1,1,1,1,1,1,0," + str(tut::kMaxConvStride) + "," + str(tut::kMaxConvStride);
  CHECK(parse({"--shape", max_stride.c_str()}).problem.stride_h == tut::kMaxConvStride);
  CHECK(parse({"--shape", max_stride.c_str()}).problem.dil_w == tut::kMaxConvStride);
}

TEST_CASE("conv flags: a filter that just fits is accepted, one pixel larger is rejected") {
  CHECK(parse({"--shape", "1,1,5,5,1,5,5"}).problem.p == 1);
  CHECK(parse({"--shape", "1,1,5,5,1,3,3,1,1,3"}).problem.p == 1);  // dilation 3: span 7 in a padded 7
  CHECK(parse({"--shape", "1,1,1,1,1,3,3,1"}).problem.p == 1);      // a 1x1 image with pad 1
  const char* too_large[] = {"1,1,5,5,1,6,5",           // R > H
                             "1,1,5,5,1,5,6",           // S > W
                             "2,3,5,5,4,7,3",
                             "1,1,5,5,1,3,3,0,1,3",     // dilation 3: span 7 > 5
                             "1,1,5,5,1,3,3,1:0,1,3",   // pad 1 on rows only: the width does not fit
                             "1,1,1,1,1,3,3",           // a 1x1 image, no padding
                             "1,1,4,4,1,1,9,0:2"};      // 9 > 4 + 2*2
  for (const char* shape : too_large) {
    CAPTURE(std::string(shape));
    check_rejected(shape_error(shape), "--shape", "dil*(R-1)+1 <= H+2*pad_h");
  }
}

TEST_CASE("conv flags: a zero, negative, non-numeric or too large extent is rejected, naming the field") {
  const char* names[] = {"N", "C", "H", "W", "K", "R", "S"};
  for (int field = 0; field < 7; ++field) {
    const std::string too_large = str(tut::kMaxConvExtent + 1LL);
    for (const std::string& bad :
         {std::string("0"), std::string("-1"), std::string("-64"), std::string("x"), std::string("3x"),
          std::string("1.5"), std::string(" 3"), std::string("+3"), too_large, std::string("99999999999999999999")}) {
      std::vector<std::string> f{"1", "1", "8", "8", "1", "1", "1"};
      f[std::size_t(field)] = bad;
      std::string shape;
      for (std::size_t i = 0; i < f.size(); ++i) shape += (i ? "," : "") + f[i];
      CAPTURE(std::string(shape));
      check_rejected(shape_error(shape), std::string("--shape (") + names[field] + ")",
                     "valid: an integer in " + kExtentRange);
    }
  }
}

TEST_CASE("conv flags: pad, stride and dilation ranges") {
  check_rejected(shape_error("1,1,8,8,1,3,3,-1"), "--shape (pad)", kPadRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,0:-1"), "--shape (pad)", kPadRange);
  check_rejected(shape_error("1,1,8,8,1,3,3," + str(tut::kMaxConvPad + 1LL)), "--shape (pad)", kPadRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,1,0"), "--shape (stride)", kStrideRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,1,1:0"), "--shape (stride)", kStrideRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,1,-2"), "--shape (stride)", kStrideRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,1," + str(tut::kMaxConvStride + 1LL)), "--shape (stride)", kStrideRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,1,1," + str(tut::kMaxConvStride + 1LL)), "--shape (dilation)", kStrideRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,1,1,0"), "--shape (dilation)", kStrideRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,1,1,0:1"), "--shape (dilation)", kStrideRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,1,1,x"), "--shape (dilation)", kStrideRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,1.0"), "--shape (pad)", kPadRange);
}

TEST_CASE("conv flags: malformed shapes (field count, pairs, empty fields)") {
  for (const char* shape : {"", "1", "1,1,8,8,1,3", "1,1,8,8,1,3,3,1,1,1,1", "1,1,8,8,1,3,3,1,1,1,1,1,1"}) {
    CAPTURE(std::string(shape));
    check_rejected(shape_error(shape), "--shape", "N,C,H,W,K,R,S[,pad[,stride[,dilation]]]");
    CHECK(contains(shape_error(shape), "fields"));
  }
  // Three values in a pair.
  check_rejected(shape_error("1,1,8,8,1,3,3,1:1:1"), "--shape: pad", "v or vh:vw");
  check_rejected(shape_error("1,1,8,8,1,3,3,1,1:1:1"), "--shape: stride", "v or vh:vw");
  check_rejected(shape_error("1,1,8,8,1,3,3,1,1,2:2:2"), "--shape: dilation", "v or vh:vw");
  // Empty fields and empty halves of a pair.
  check_rejected(shape_error("1,1,,8,1,3,3"), "--shape (H)", kExtentRange);
  check_rejected(shape_error(",1,8,8,1,3,3"), "--shape (N)", kExtentRange);
  check_rejected(shape_error("1,1,8,8,1,3,"), "--shape (S)", kExtentRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,"), "--shape (pad)", kPadRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,1,"), "--shape (stride)", kStrideRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,1:"), "--shape (pad)", kPadRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,:1"), "--shape (pad)", kPadRange);
  check_rejected(shape_error("1,1,8,8,1,3,3,1,:"), "--shape (stride)", kStrideRange);
  // A pair where a single value belongs.
  check_rejected(shape_error("1,1,8:8,8,1,3,3"), "--shape (H)", kExtentRange);
  // Other separators.
  check_rejected(shape_error("1;1;8;8;1;3;3"), "--shape", "N,C,H,W,K,R,S");
  check_rejected(shape_error("1 1 8 8 1 3 3"), "--shape", "N,C,H,W,K,R,S");
  // A missing value.
  CHECK(contains(error_of({"--shape"}), "--shape: missing value"));
  CHECK(contains(error_of({"--layer"}), "--layer: missing value"));
}

TEST_CASE("conv flags: an unknown layer, and --layer with --shape") {
  const std::string msg = error_of({"--layer", "r50_foo"});
  check_rejected(msg, "--layer", "or list");
  CHECK(contains(msg, "'r50_foo'"));
  for (const tut::ConvLayer& l : tut::conv_layers()) CHECK(contains(msg, l.name));
  check_rejected(error_of({"--layer", ""}), "--layer", "seed_3x3");
  check_rejected(error_of({"--layer", "SEED_3X3"}), "--layer", "seed_3x3");

  for (auto both : {error_of({"--layer", "r50_conv1", "--shape", "1,1,8,8,1,3,3"}),
                    error_of({"--shape", "1,1,8,8,1,3,3", "--layer", "r50_conv1"}),
                    error_of({"--layer", "list", "--shape", "1,1,8,8,1,3,3"}),
                    error_of({"--layer", "seed_3x3", "--shape", "1,1,8,8,1,3,3"})}) {
    CAPTURE(both);
    CHECK(contains(both, "--layer/--shape"));
    CHECK(both.find('\n') == std::string::npos);
  }
}

TEST_CASE("conv flags: tensors of 2^31 or more elements are rejected") {
  // x = N*C*H*W = 2^31
  std::string msg = shape_error("1024,1024,2048,1,1,1,1");
  check_rejected(msg, "--shape", "2147483647");
  CHECK(contains(msg, "x (N*C*H*W)"));
  CHECK(contains(msg, "2147483648"));
  // w = K*C*R*S = 2^31
  msg = shape_error("1,32768,1,1,65536,1,1");
  check_rejected(msg, "--shape", "2147483647");
  CHECK(contains(msg, "w (K*C*R*S)"));
  // y = N*K*P*Q = 2^31, x and w small
  msg = shape_error("1,1,2048,1024,1024,1,1");
  check_rejected(msg, "--shape", "2147483647");
  CHECK(contains(msg, "y (N*K*P*Q)"));
  // y through the padding alone: a 1x1 image padded to 131073 x 131073 pixels.
  msg = shape_error("1,1,1,1,1,1,1,65536");
  check_rejected(msg, "--shape", "2147483647");
  CHECK(contains(msg, "y (N*K*P*Q)"));
  // One element fewer is accepted.
  CHECK(parse({"--shape", "1023,1024,2048,1,1,1,1"}).problem.n == 1023);
  CHECK(parse({"--shape", "1,32767,1,1,65536,1,1"}).problem.k == 65536);
  CHECK(parse({"--shape", "1,1,2047,1024,1024,1,1"}).problem.k == 1024);
}

TEST_CASE("conv flags: an input whose element count overflows 64 bits is rejected too") {
  // Large strides keep the output (and so y and the GEMM's N) small while x is enormous: only the
  // check on x itself can reject these. N*C*H*W is 2^76, 2^64 and 2^63 elements (N = C = H = 2^19).
  for (const char* shape : {"524288,524288,524288,524288,1,1,1,0,65536",
                            "524288,524288,524288,128,1,1,1,0,65536",
                            "524288,524288,524288,64,1,1,1,0,65536"}) {
    CAPTURE(std::string(shape));
    const std::string msg = shape_error(shape);
    check_rejected(msg, "--shape", "2147483647");
    CHECK(contains(msg, "x (N*C*H*W)"));
  }
}

TEST_CASE("conv flags: the shared flags still work") {
  const ConvOptions o = parse({"--layer", "r50_c4_3x3", "--iters", "7", "--warmup=2", "--seed", "9", "--csv", "out.csv",
                               "--dump", "dir", "--no-verify", "--device", "1", "--self-test", "--quick"});
  CHECK(o.label == "r50_c4_3x3");
  CHECK(o.iters == 7);
  CHECK(o.warmup == 2);
  CHECK(o.seed == 9);
  CHECK(o.csv == "out.csv");
  CHECK(o.dump == "dir");
  CHECK_FALSE(o.verify);
  CHECK(o.device == 1);
  CHECK(o.self_test);
  CHECK(o.quick);
  const ConvOptions s = parse({"--self-test", "--quick", "--shape", "1,2,3,4,5,1,1"});
  CHECK(s.self_test);
  CHECK(s.quick);
  CHECK(s.from_shape);
  CHECK(parse({"--device-info"}).device_info);
  CHECK(parse({"--help"}).help);
  CHECK(parse({"-h"}).help);
  CHECK(contains(error_of({"--quick"}), "--quick: only valid together with --self-test"));
  CHECK(contains(error_of({"--iters", "0"}), "--iters: 0 is out of range (valid: an integer in [1, 100000])"));
  CHECK(contains(error_of({"--csv="}), "--csv: empty"));
  // GEMM flags are not conv flags.
  CHECK(contains(error_of({"--m", "64"}), "'--m': unknown flag"));
  CHECK(contains(error_of({"--layers", "seed_3x3"}), "unknown flag"));
  CHECK(contains(error_of({"seed_3x3"}), "'seed_3x3': unknown flag"));
}

TEST_CASE("conv flags: usage lists every flag and the exit codes") {
  const std::string u = tut::conv_usage("13_direct_conv");
  CHECK(contains(u, "13_direct_conv"));
  for (const char* flag : {"--layer", "--shape", "--iters", "--warmup", "--seed", "--no-verify", "--csv", "--dump",
                           "--self-test", "--quick", "--device", "--device-info", "--help"}) {
    CAPTURE(std::string(flag));
    CHECK(contains(u, flag));
  }
  CHECK(contains(u, "--layer list"));
  CHECK(contains(u, "seed_3x3"));
  CHECK(contains(u, "N,C,H,W,K,R,S[,pad[,stride[,dilation]]]"));
  CHECK(contains(u, "exit codes"));
  CHECK(contains(u, "77"));
  // The example the usage gives parses.
  CHECK(parse({"--shape", "3,5,17,13,7,3,2,1:0,2:1"}).from_shape);
  CHECK(contains(u, "FMA math, no TF32"));
  // A TF32 step's text names its math, its check and its baselines; the flags are the same.
  const std::string t = tut::conv_usage("23_implicit_gemm_tf32", tut::Math::Tf32);
  CHECK(contains(t, "TF32 tensor-core math"));
  CHECK(contains(t, "TF32's tolerance"));
  CHECK(contains(t, "default math (TF32 allowed)"));
  for (const char* flag : {"--layer", "--shape", "--self-test", "--quick", "--csv"}) CHECK(contains(t, flag));
  CHECK(contains(t, "x NCHW, w KCRS, y NKPQ"));
  // A channels-last step (LAYOUT nhwc) names its tensors and says where the copies' time goes.
  const std::string c = tut::conv_usage("24_x", tut::Math::Tf32, tut::Layout::Nhwc);
  CHECK(contains(c, "x NHWC, w KRSC, y NPQK"));
  CHECK(contains(c, "copies' time is reported"));
  CHECK_FALSE(contains(c, "NCHW, w KCRS"));
}
