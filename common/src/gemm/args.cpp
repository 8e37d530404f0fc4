#include "tut/gemm/args.hpp"

#include <sstream>

namespace tut {

GemmOptions parse_gemm_args(int argc, const char* const* argv) {
  GemmOptions o;
  const FlagHandler gemm_flags = [&o](const Flag& f) {
    if (f.name == "--m") {
      o.m = parse_int(f.name, f.value(), 1, kMaxDim);
    } else if (f.name == "--n") {
      o.n = parse_int(f.name, f.value(), 1, kMaxDim);
    } else if (f.name == "--k") {
      o.k = parse_int(f.name, f.value(), 1, kMaxDim);
    } else if (f.name == "--alpha") {
      o.alpha = parse_finite_float(f.name, f.value());
    } else if (f.name == "--beta") {
      o.beta = parse_finite_float(f.name, f.value());
    } else if (f.name == "--tile") {
      const std::string v = f.value();
      if (v.empty()) throw ArgError("--tile: empty (valid: auto, or one of the step's tile shapes, e.g. 128x64)");
      o.tile = (v == "auto") ? std::string() : v;
    } else if (f.name == "--split") {
      const std::string v = f.value();
      if (v == "auto") {
        o.splits = 0;
      } else {
        try {
          o.splits = parse_int(f.name, v, 1, kMaxSplitsFlag);
        } catch (const ArgError&) {
          throw ArgError("--split: '" + v + "' is not a split count (valid: auto, or an integer in [1, " +
                         std::to_string(kMaxSplitsFlag) + "], at most the problem's K steps)");
        }
      }
    } else if (f.name == "--explain") {
      f.no_value();
      o.explain = true;
    } else {
      return false;
    }
    return true;
  };
  static_cast<CommonOptions&>(o) = parse_flags(argc, argv, gemm_flags);
  const struct { const char* name; std::int64_t rows, cols; } mats[] = {
      {"A (--m x --k)", o.m, o.k}, {"B (--k x --n)", o.k, o.n}, {"C (--m x --n)", o.m, o.n}};
  for (const auto& mat : mats) {
    if (mat.rows * mat.cols > kMaxElems) {
      throw ArgError(std::string("--m/--n/--k: ") + mat.name + " would have " +
                     std::to_string(mat.rows * mat.cols) +
                     " elements (valid: at most 2147483647 per matrix, the limit of 32-bit indexing)");
    }
  }
  return o;
}

std::string gemm_usage(const std::string& program) {
  const GemmOptions d;
  std::ostringstream s;
  s << "usage: " << program << " [flags]\n"
    << "Computes C = alpha*A*B + beta*C (row-major FP32) with this step's kernel, checks it against\n"
    << "cuBLAS FP32 (no TF32) and times both in the same process.\n\n"
    << "  --m M, --n N, --k K   problem size, each >= 1 (default " << d.m << " " << d.n << " " << d.k << ")\n"
    << "  --alpha A, --beta B   scalars, finite (default " << d.alpha << " " << d.beta << ")\n"
    << "  --tile SHAPE          a step that plans each problem (chapter 10): run this tile shape (auto: the\n"
    << "                        step's rule; --help of such a step lists the shapes)\n"
    << "  --split S             ...and split the reduction over K into S parts (auto: the rule; 1 .. the\n"
    << "                        problem's K steps, at most the step's cap)\n"
    << "  --explain             ...and time every candidate plan next to the rule's model, before the run\n"
    << common_usage("A, B, C_in, C_out") << exit_codes_usage("CUDA/cuBLAS");
  return s.str();
}

}  // namespace tut
