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
    << common_usage("A, B, C_in, C_out") << exit_codes_usage("CUDA/cuBLAS");
  return s.str();
}

}  // namespace tut
