#include "tut/gcn/graph.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "tut/core/args.hpp"
#include "tut/core/random.hpp"

namespace tut {

namespace {

constexpr int kMaxId = std::numeric_limits<int>::max();  // 2^31 - 1

constexpr double kRmatSum = kRmatParams.a + kRmatParams.b + kRmatParams.c + kRmatParams.d;
static_assert(kRmatSum > 1 - 1e-12 && kRmatSum < 1 + 1e-12, "R-MAT's four quarter probabilities sum to 1");
static_assert(kRmatParams.a >= kRmatParams.d, "a >= d: the hubs at the low ids, before the relabelling");

// A set of distinct directed edges: open addressing with linear probing over 64-bit keys
// (src << 32 | dst), at most half full. std::unordered_set would allocate once per edge and take
// several times longer on the 2.3 million edges of the default graph.
class EdgeSet {
 public:
  static std::uint64_t key(std::uint64_t src, std::uint64_t dst) { return (src << 32) | dst; }

  explicit EdgeSet(long long expected) {
    int bits = 4;
    while ((std::size_t{1} << bits) < 2 * static_cast<std::size_t>(expected)) ++bits;
    slots_.assign(std::size_t{1} << bits, kEmpty);
    mask_ = slots_.size() - 1;
    shift_ = 64 - bits;
  }
  // The table is larger than the caches: asking for a key's slot a few dozen keys ahead of
  // insert() hides most of the memory latency.
  void prefetch(std::uint64_t k) const {
#if defined(__GNUC__)
    __builtin_prefetch(&slots_[home(k)]);
#else
    (void)k;
#endif
  }
  // True when k was not in the set yet.
  bool insert(std::uint64_t k) {
    std::size_t i = home(k);
    while (slots_[i] != kEmpty) {
      if (slots_[i] == k) return false;
      i = (i + 1) & mask_;
    }
    slots_[i] = k;
    return true;
  }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};  // src = 2^32 - 1: never an id
  // Fibonacci hashing: the high bits of k * 2^64 / golden ratio pick the first slot.
  std::size_t home(std::uint64_t k) const { return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_); }
  std::vector<std::uint64_t> slots_;
  std::size_t mask_ = 0;
  int shift_ = 0;
};

// A uniform double in [0, 1) from the top 53 bits of one draw.
double uniform01(SplitMix64& g) { return static_cast<double>(g.next() >> 11) * 0x1.0p-53; }

std::string str(long long v) { return std::to_string(v); }

// The number of bits of d >= 0 (0 for 0): d's histogram bucket.
int bit_width(int d) {
  int k = 0;
  while (d >> k) ++k;
  return k;
}

}  // namespace

EdgeList rmat_graph(int nodes, long long edges, std::uint64_t seed) {
  if (nodes < 1) {
    throw ArgError("--nodes: " + str(nodes) + " is out of range (valid: an integer in [1, " + str(kMaxId) + "])");
  }
  const long long max_edges = std::min(static_cast<long long>(nodes) * (nodes - 1), kMaxGraphNonzeros - nodes);
  if (edges < 0 || edges > max_edges) {
    throw ArgError("--edges: " + str(edges) + " is out of range for --nodes " + str(nodes) +
                   " (valid: an integer in [0, " + str(max_edges) + "]; at most nodes * (nodes - 1) edges, " +
                   "and edges + nodes < 2^31)");
  }
  int scale = 0;  // the recursion covers ids [0, 2^scale), the next power of two >= nodes
  while ((std::int64_t{1} << scale) < nodes) ++scale;

  const RmatParams p = kRmatParams;
  const double a_b = p.a + p.b, a_b_c = p.a + p.b + p.c;
  const auto v = static_cast<std::uint64_t>(nodes);
  SplitMix64 g(derive_seed(seed, 0));
  EdgeSet seen(edges);
  EdgeList out;
  out.name = "rmat_" + str(nodes) + "_" + str(edges) + "_s" + std::to_string(seed);
  out.nodes = nodes;
  out.edges.reserve(static_cast<std::size_t>(edges));
  const long long budget = (1ll << 20) + 256ll * nodes;
  long long draws = 0;  // candidates drawn so far
  while (static_cast<long long>(out.edges.size()) < edges) {
    // A batch of candidates in draw order, their slots prefetched, then inserted in that order.
    constexpr int kBatch = 32;
    std::uint64_t batch[kBatch];
    int n = 0;
    for (; n < kBatch && draws < budget; ++draws) {
      // One candidate: at each level pick a quarter of the current square, the ids' top bits first.
      // Quarter q = 2 * src bit + dst bit: a = 0 (top-left), b = 1, c = 2, d = 3 (bottom-right).
      std::uint64_t src = 0, dst = 0;
      for (int level = 0; level < scale; ++level) {
        const double u = uniform01(g);
        const std::uint64_t q = (u >= p.a) + (u >= a_b) + (u >= a_b_c);  // no branch: u is random
        src = (src << 1) | (q >> 1);
        dst = (dst << 1) | (q & 1);
      }
      if (src >= v || dst >= v || src == dst) continue;
      batch[n] = EdgeSet::key(src, dst);
      seen.prefetch(batch[n++]);
    }
    for (int i = 0; i < n && static_cast<long long>(out.edges.size()) < edges; ++i) {
      if (seen.insert(batch[i])) {
        out.edges.push_back({static_cast<int>(batch[i] >> 32), static_cast<int>(batch[i] & kMaxId)});
      }
    }
    if (draws == budget && static_cast<long long>(out.edges.size()) < edges) {
      const auto reached = static_cast<long long>(out.edges.size());
      throw ArgError("--edges: R-MAT reached only " + str(reached) + " distinct edges over --nodes " + str(nodes) +
                     " in " + str(budget) + " candidates (valid for these --nodes and --rmat-seed: an integer in [0, " +
                     str(reached) + "]; a denser graph needs more --nodes)");
    }
  }

  // Relabel: node i becomes label[i], a Fisher-Yates shuffle of 0..nodes-1.
  std::vector<int> label(static_cast<std::size_t>(nodes));
  std::iota(label.begin(), label.end(), 0);
  SplitMix64 shuffle(derive_seed(seed, 1));
  for (std::size_t i = label.size() - 1; i > 0; --i) {
    std::swap(label[i], label[static_cast<std::size_t>(shuffle.next() % (i + 1))]);
  }
  for (Edge& e : out.edges) {
    e.src = label[static_cast<std::size_t>(e.src)];
    e.dst = label[static_cast<std::size_t>(e.dst)];
  }
  return out;
}

namespace {

// A token as an error message quotes it: at most 24 characters, anything unprintable as '?'.
std::string printable(std::string_view token) {
  constexpr std::size_t kMaxShown = 24;
  std::string s;
  for (char ch : token.substr(0, kMaxShown)) {
    const auto uc = static_cast<unsigned char>(ch);
    s += (uc >= 0x20 && uc < 0x7f) ? ch : '?';
  }
  if (token.size() > kMaxShown) s += "...";
  return "'" + s + "'";
}

bool is_blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f'; }

}  // namespace

EdgeList load_snap(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string flag = "--graph: ";
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (ec) throw ArgError(flag + path + ": cannot be read (" + ec.message() + ")");
  if (!exists) throw ArgError(flag + path + ": no such file");
  if (fs::is_directory(path, ec)) throw ArgError(flag + path + ": is a directory, not an edge-list file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ArgError(flag + path + ": cannot be opened for reading");

  // Pass 1: the edge lines as they are in the file (raw ids), checked line by line.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> raw;
  std::string line;
  long long line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const auto fail = [&](const std::string& what) {
      return ArgError(flag + path + ":" + str(line_no) + ": " + what);
    };
    std::uint32_t ids[2] = {0, 0};
    int fields = 0;
    std::size_t i = 0;
    while (true) {
      while (i < line.size() && is_blank(line[i])) ++i;
      if (i == line.size()) break;
      if (fields == 0 && line[i] == '#') break;  // a comment line
      const std::size_t start = i;
      while (i < line.size() && !is_blank(line[i])) ++i;
      const std::string_view token(line.data() + start, i - start);
      if (fields < 2) {
        std::uint64_t id = 0;
        const auto [ptr, err] = std::from_chars(token.data(), token.data() + token.size(), id);
        if (err == std::errc::invalid_argument || ptr != token.data() + token.size()) {
          throw fail(printable(token) + " is not a non-negative integer id");
        }
        if (err == std::errc::result_out_of_range || id > static_cast<std::uint64_t>(kMaxId)) {
          throw fail("id " + printable(token) + " is past 2^31 - 1 (valid ids: 0.." + str(kMaxId) + ")");
        }
        ids[fields] = static_cast<std::uint32_t>(id);
      }
      ++fields;
    }
    if (fields == 0) continue;  // blank or comment
    if (fields == 1) throw fail("one id on the line, expected two: 'source target'");
    if (fields > 2) throw fail(str(fields) + " fields on the line, expected two ids: 'source target'");
    raw.emplace_back(ids[0], ids[1]);
  }
  if (in.bad()) throw ArgError(flag + path + ":" + str(line_no + 1) + ": read error");
  if (line_no == 0) throw ArgError(flag + path + ":1: empty file, expected lines 'source target'");
  if (raw.empty()) {
    throw ArgError(flag + path + ":" + str(line_no) + ": end of file without an edge line (" + str(line_no) +
                   " lines, all comments or blank)");
  }

  // Nodes: every id that appears, in ascending order. index_of(id) = the node of file id `id`: a
  // table over 0..max id when that is at most a few times the size of the edge list (SNAP files
  // number their nodes densely), else a binary search in the sorted list of the ids.
  EdgeList out;
  out.name = fs::path(path).filename().string();
  std::uint32_t max_id = 0;
  for (const auto& [s, d] : raw) max_id = std::max({max_id, s, d});
  std::vector<int> table;
  if (max_id <= 8 * raw.size()) {
    table.assign(std::size_t{max_id} + 1, -1);
    for (const auto& [s, d] : raw) table[s] = table[d] = 0;
    for (std::size_t id = 0; id < table.size(); ++id) {
      if (table[id] < 0) continue;
      table[id] = static_cast<int>(out.file_ids.size());
      out.file_ids.push_back(static_cast<int>(id));
    }
  } else {
    out.file_ids.reserve(2 * raw.size());
    for (const auto& [s, d] : raw) {
      out.file_ids.push_back(static_cast<int>(s));
      out.file_ids.push_back(static_cast<int>(d));
    }
    std::sort(out.file_ids.begin(), out.file_ids.end());
    out.file_ids.erase(std::unique(out.file_ids.begin(), out.file_ids.end()), out.file_ids.end());
    out.file_ids.shrink_to_fit();
  }
  out.nodes = static_cast<int>(out.file_ids.size());
  const auto index_of = [&](std::uint32_t id) {
    if (!table.empty()) return table[id];
    const auto& ids = out.file_ids;
    return static_cast<int>(std::lower_bound(ids.begin(), ids.end(), static_cast<int>(id)) - ids.begin());
  };

  // Pass 2: drop self-loops and repeats (the first occurrence stays), remap the rest.
  EdgeSet seen(static_cast<long long>(raw.size()));
  out.edges.reserve(raw.size());
  for (const auto& [s, d] : raw) {
    if (s == d) {
      ++out.dropped_self_loops;
    } else if (!seen.insert(EdgeSet::key(s, d))) {
      ++out.dropped_duplicates;
    } else {
      out.edges.push_back({index_of(s), index_of(d)});
    }
  }
  const long long nnz = static_cast<long long>(out.edges.size()) + out.nodes;
  if (nnz > kMaxGraphNonzeros) {
    throw ArgError(flag + path + ": " + str(static_cast<long long>(out.edges.size())) + " edges + " +
                   str(out.nodes) + " nodes = " + str(nnz) + " nonzeros in A + I, past the " +
                   str(kMaxGraphNonzeros) + " of an int-indexed CSR");
  }
  return out;
}

std::string describe(const EdgeList& g) {
  std::string s = g.name + ": " + str(g.nodes) + " nodes, " + str(static_cast<long long>(g.edges.size())) + " edges";
  if (g.dropped_duplicates > 0 || g.dropped_self_loops > 0) {
    s += " (dropped " + str(g.dropped_duplicates) + " repeated edges and " + str(g.dropped_self_loops) +
         " self-loops)";
  }
  return s;
}

Csr normalized_adjacency(const EdgeList& g) {
  if (g.nodes < 0) throw std::invalid_argument("normalized_adjacency: negative node count " + str(g.nodes));
  const long long nnz = static_cast<long long>(g.edges.size()) + g.nodes;
  if (nnz > kMaxGraphNonzeros) {
    throw std::length_error("normalized_adjacency: " + str(nnz) + " nonzeros, past the " + str(kMaxGraphNonzeros) +
                            " of an int-indexed CSR");
  }
  const auto rows = static_cast<std::size_t>(g.nodes);
  Csr a;
  a.rows = a.cols = g.nodes;

  // Row lengths: in-degree + 1 (the self-loop of A + I), then their prefix sums.
  a.indptr.assign(rows + 1, 1);
  a.indptr[0] = 0;
  for (const Edge& e : g.edges) {
    if (e.src < 0 || e.src >= g.nodes || e.dst < 0 || e.dst >= g.nodes) {
      throw std::invalid_argument("normalized_adjacency: edge " + str(e.src) + " -> " + str(e.dst) +
                                  " has an id outside [0, " + str(g.nodes) + ")");
    }
    if (e.src == e.dst) throw std::invalid_argument("normalized_adjacency: self-loop at node " + str(e.src));
    ++a.indptr[static_cast<std::size_t>(e.dst) + 1];
  }
  std::partial_sum(a.indptr.begin(), a.indptr.end(), a.indptr.begin());

  // Columns: v itself and the source of every edge into v, then sorted within the row.
  a.indices.resize(static_cast<std::size_t>(nnz));
  std::vector<int> next(a.indptr.begin(), a.indptr.end() - 1);  // the next free slot of each row
  for (std::size_t v = 0; v < rows; ++v) a.indices[static_cast<std::size_t>(next[v]++)] = static_cast<int>(v);
  for (const Edge& e : g.edges) a.indices[static_cast<std::size_t>(next[static_cast<std::size_t>(e.dst)]++)] = e.src;
  for (std::size_t v = 0; v < rows; ++v) {
    const auto first = a.indices.begin() + a.indptr[v];
    const auto last = a.indices.begin() + a.indptr[v + 1];
    std::sort(first, last);
    const auto repeat = std::adjacent_find(first, last);
    if (repeat != last) {
      throw std::invalid_argument("normalized_adjacency: edge " + str(*repeat) + " -> " +
                                  str(static_cast<long long>(v)) + " appears twice");
    }
  }

  // Values: 1 / sqrt(d_v * d_u). The product of two ints is exact in double, so each value is
  // rounded twice (sqrt, divide) whatever the order of the row.
  a.values.resize(a.indices.size());
  for (std::size_t v = 0; v < rows; ++v) {
    const double d_v = a.indptr[v + 1] - a.indptr[v];
    for (int k = a.indptr[v]; k < a.indptr[v + 1]; ++k) {
      const auto u = static_cast<std::size_t>(a.indices[static_cast<std::size_t>(k)]);
      const double d_u = a.indptr[u + 1] - a.indptr[u];
      a.values[static_cast<std::size_t>(k)] = 1.0 / std::sqrt(d_v * d_u);
    }
  }
  return a;
}

DegreeStats degree_stats(const Csr& a_hat) {
  DegreeStats s;
  s.nodes = a_hat.rows;
  if (s.nodes <= 0) return s;
  std::vector<int> degree(static_cast<std::size_t>(s.nodes));
  for (int v = 0; v < s.nodes; ++v) {
    int d = 0;
    for (int k = a_hat.indptr[static_cast<std::size_t>(v)]; k < a_hat.indptr[static_cast<std::size_t>(v) + 1]; ++k) {
      d += a_hat.indices[static_cast<std::size_t>(k)] != v;  // not the self-loop of A + I
    }
    degree[static_cast<std::size_t>(v)] = d;
    s.edges += d;
  }
  const auto [lo, hi] = std::minmax_element(degree.begin(), degree.end());
  s.min = *lo;
  s.max = *hi;
  s.mean = static_cast<double>(s.edges) / s.nodes;
  // Bucket k >= 1 holds degrees [2^(k-1), 2^k): those of bit width k.
  s.histogram.assign(static_cast<std::size_t>(bit_width(s.max)) + 1, 0);
  for (int d : degree) ++s.histogram[static_cast<std::size_t>(bit_width(d))];
  const auto mid = degree.begin() + (degree.size() - 1) / 2;
  std::nth_element(degree.begin(), mid, degree.end());
  s.median = *mid;
  return s;
}

std::string describe(const DegreeStats& s) {
  char mean[32];
  std::snprintf(mean, sizeof mean, "%.2f", s.mean);
  std::string out = "in-degree over " + str(s.nodes) + " nodes: max " + str(s.max) + ", mean " + mean + ", median " +
                    str(s.median) + ", min " + str(s.min) + "\nnodes per in-degree:";
  for (std::size_t k = 0; k < s.histogram.size(); ++k) {
    const long long lo = k == 0 ? 0 : 1ll << (k - 1);
    const long long hi = k == 0 ? 0 : (1ll << k) - 1;
    out += (k == 0 ? " " : " | ") + (lo == hi ? str(lo) : str(lo) + "-" + str(hi)) + ": " + str(s.histogram[k]);
  }
  return out;
}

}  // namespace tut
