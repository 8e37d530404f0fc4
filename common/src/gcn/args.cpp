#include "tut/gcn/args.hpp"

#include <sstream>

namespace tut {

GcnOptions parse_gcn_args(int argc, const char* const* argv) {
  GcnOptions o;
  bool rmat_given = false;
  const FlagHandler gcn_flags = [&](const Flag& f) {
    if (f.name == "--graph") {
      o.graph_file = f.value();
      if (o.graph_file.empty()) throw ArgError("--graph: empty file name (valid: a SNAP edge-list file)");
    } else if (f.name == "--nodes") {
      o.nodes = parse_int(f.name, f.value(), 1, 2147483647);
      rmat_given = true;
    } else if (f.name == "--edges") {
      const std::string text = f.value();
      const std::uint64_t e = parse_u64(f.name, text);
      if (e > std::uint64_t(kMaxGraphNonzeros)) {
        throw ArgError("--edges: " + text + " is out of range (valid: an integer in [0, " +
                       std::to_string(kMaxGraphNonzeros) + "], and at most nodes * (nodes - 1))");
      }
      o.edges = static_cast<long long>(e);
      rmat_given = true;
    } else if (f.name == "--rmat-seed") {
      o.rmat_seed = parse_u64(f.name, f.value());
      rmat_given = true;
    } else if (f.name == "--in") {
      o.f_in = parse_int(f.name, f.value(), 1, kMaxFeaturesIn);
    } else if (f.name == "--out") {
      o.f_out = parse_int(f.name, f.value(), 1, kMaxFeaturesOut);
    } else {
      return false;
    }
    return true;
  };
  static_cast<CommonOptions&>(o) = parse_flags(argc, argv, gcn_flags);
  if (!o.graph_file.empty() && rmat_given) {
    throw ArgError("--graph: a file's graph has its own size (valid: --graph FILE, or --nodes/--edges/--rmat-seed, not both)");
  }
  // The R-MAT size is checked by the generator (its message names --nodes or --edges); the matrix
  // sizes here, before anything is generated.
  if (o.graph_file.empty()) check_gcn_sizes(o.nodes, o.f_in, o.f_out, "--nodes");
  return o;
}

void check_gcn_sizes(long long nodes, int f_in, int f_out, const std::string& graph_flags) {
  const long long limit = 2147483647;
  const struct { const char* what; const char* flag; int f; } mats[] = {{"X (V x F_in)", "--in", f_in},
                                                                        {"the V x F_out outputs", "--out", f_out}};
  for (const auto& m : mats) {
    if (nodes * (long long)m.f > limit) {
      throw ArgError(graph_flags + "/" + m.flag + ": " + m.what + " would have " + std::to_string(nodes) + " x " +
                     std::to_string(m.f) + " = " + std::to_string(nodes * (long long)m.f) +
                     " elements (valid: at most 2147483647, the limit of 32-bit indexing)");
    }
  }
}

std::string gcn_usage(const std::string& program) {
  const GcnOptions d;
  std::ostringstream s;
  s << "usage: " << program << " [flags]\n"
    << "One GCN layer in FP64, out = log_softmax(A_hat (X W) + b), A_hat = D^-1/2 (A + I) D^-1/2; this\n"
    << "step computes one piece of it (or all), checks it against the libraries (cuBLAS, cuSPARSE,\n"
    << "cuDNN; a CPU float64 reference in the self-test) and times it against them in the same process,\n"
    << "in GB/s and % of the device-to-device copy bandwidth measured in the same run.\n\n"
    << "  --graph FILE          a SNAP edge list (\"source target\" per line, '#' comments), e.g. web-Stanford.txt\n"
    << "  --nodes N             R-MAT graph nodes (default " << d.nodes << ", web-Stanford's size), in [1, 2147483647]\n"
    << "  --edges E             R-MAT distinct directed edges, no self-loops (default " << d.edges << "),\n"
    << "                        in [0, min(N * (N - 1), 2147483647 - N)]\n"
    << "  --rmat-seed S         the generator's seed (default " << d.rmat_seed << ")\n"
    << "  --in F                input features, X is V x F (default " << d.f_in << "), in [1, " << kMaxFeaturesIn << "]\n"
    << "  --out F               output features, W is F_in x F (default " << d.f_out << "), in [1, " << kMaxFeaturesOut << "];\n"
    << "                        a step that supports fewer sizes says which and exits 2\n"
    << common_usage("x, w, b, the step's input z (SpMM, LogSoftmax), out, ref, and A_hat as indptr, indices, values")
    << exit_codes_usage("CUDA/cuBLAS/cuSPARSE/cuDNN");
  return s.str();
}

}  // namespace tut
