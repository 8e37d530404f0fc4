// Part III's graph (gcn/graph.hpp): the R-MAT generator, the SNAP loader, A_hat in CSR, degree stats.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tut/core/args.hpp"
#include "tut/gcn/graph.hpp"

namespace {

using tut::Edge;
using tut::EdgeList;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The default graph, generated once for the tests that read it.
const EdgeList& default_graph() {
  static const EdgeList g = tut::rmat_graph(tut::kWebStanfordNodes, tut::kWebStanfordEdges, tut::kDefaultRmatSeed);
  return g;
}

// Every edge is src != dst, both ids in [0, nodes), and no edge appears twice.
void check_simple(const EdgeList& g) {
  std::vector<std::uint64_t> keys;
  keys.reserve(g.edges.size());
  long long bad = 0;
  for (const Edge& e : g.edges) {
    bad += e.src < 0 || e.src >= g.nodes || e.dst < 0 || e.dst >= g.nodes || e.src == e.dst;
    keys.push_back((std::uint64_t(std::uint32_t(e.src)) << 32) | std::uint32_t(e.dst));
  }
  CHECK(bad == 0);
  std::sort(keys.begin(), keys.end());
  CHECK(std::adjacent_find(keys.begin(), keys.end()) == keys.end());
}

// The message of the ArgError that `f` raises ("" when none is raised).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const tut::ArgError& e) {
    return e.what();
  }
  return "";
}

// A folder of this process alone, removed with everything in it at the end of the test.
struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("tut_test_graph_" + std::to_string(long(getpid())));
  TempDir() {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  // Writes `text` byte for byte into the file `name` and returns its path.
  std::string file(const std::string& name, const std::string& text) const {
    const std::string p = (path / name).string();
    std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
    return p;
  }
};

// The one-line ArgError that loading `text` raises.
std::string load_error(const TempDir& dir, const std::string& text) {
  const std::string path = dir.file("bad.txt", text);
  return error_of([&] { tut::load_snap(path); });
}

// A rejected file: one line naming the flag, the file and (where given) the line.
void check_rejected(const std::string& msg, const std::string& where, const std::string& what) {
  CAPTURE(msg);
  CHECK(msg.rfind("--graph: ", 0) == 0);
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(contains(msg, where));
  CHECK(contains(msg, what));
}

}  // namespace

TEST_SUITE("gcn graph") {

TEST_CASE("R-MAT graph, default size: exactly web-Stanford's nodes and edges, simple, pinned") {
  const EdgeList& g = default_graph();
  CHECK(g.nodes == 281903);
  CHECK(g.edges.size() == 2312497);
  CHECK(g.name == "rmat_281903_2312497_s1");
  CHECK(g.file_ids.empty());
  CHECK(g.dropped_duplicates == 0);
  CHECK(g.dropped_self_loops == 0);
  check_simple(g);
  // The same graph on every platform: its first edges, as this generator draws them.
  REQUIRE(g.edges.size() >= 3);
  CHECK(g.edges[0] == Edge{8456, 102116});
  CHECK(g.edges[1] == Edge{122957, 5637});
  CHECK(g.edges[2] == Edge{55077, 143251});
}

TEST_CASE("R-MAT graph, default size: the same seed gives the same graph, another seed another") {
  const EdgeList& g = default_graph();
  const EdgeList same = tut::rmat_graph(tut::kWebStanfordNodes, tut::kWebStanfordEdges, tut::kDefaultRmatSeed);
  CHECK(same.edges == g.edges);
  const EdgeList other = tut::rmat_graph(tut::kWebStanfordNodes, tut::kWebStanfordEdges, tut::kDefaultRmatSeed + 1);
  CHECK(other.nodes == g.nodes);
  CHECK(other.edges.size() == g.edges.size());
  CHECK(other.edges != g.edges);
  CHECK(other.name == "rmat_281903_2312497_s2");
}

TEST_CASE("R-MAT graph, small sizes: exact counts, simple, deterministic, ids below a non-power-of-two") {
  for (int nodes : {1, 2, 3, 5, 100, 1000}) {
    for (long long edges : {0ll, 1ll, 7ll, 250ll, 5000ll}) {
      if (edges > static_cast<long long>(nodes) * (nodes - 1)) continue;
      CAPTURE(nodes);
      CAPTURE(edges);
      const EdgeList g = tut::rmat_graph(nodes, edges, 7);
      CHECK(g.nodes == nodes);
      CHECK(static_cast<long long>(g.edges.size()) == edges);
      check_simple(g);
      CHECK(tut::rmat_graph(nodes, edges, 7).edges == g.edges);
      if (edges >= 7) CHECK(tut::rmat_graph(nodes, edges, 8).edges != g.edges);
    }
  }
  // Complete graphs: every one of the nodes * (nodes - 1) edges, each once.
  for (int nodes : {2, 3, 4}) {
    CAPTURE(nodes);
    const EdgeList g = tut::rmat_graph(nodes, static_cast<long long>(nodes) * (nodes - 1), 3);
    CHECK(static_cast<long long>(g.edges.size()) == static_cast<long long>(nodes) * (nodes - 1));
    check_simple(g);
  }
}

TEST_CASE("R-MAT graph: impossible sizes are rejected with the flag and the valid range") {
  std::string msg = error_of([] { tut::rmat_graph(0, 0, 1); });
  CHECK(msg.rfind("--nodes: ", 0) == 0);
  CHECK(contains(msg, "[1, 2147483647]"));
  CHECK(error_of([] { tut::rmat_graph(-5, 0, 1); }).rfind("--nodes: -5 ", 0) == 0);

  msg = error_of([] { tut::rmat_graph(4, 13, 1); });  // 4 * 3 = 12 edges at most
  CAPTURE(msg);
  CHECK(msg.rfind("--edges: 13 ", 0) == 0);
  CHECK(contains(msg, "--nodes 4"));
  CHECK(contains(msg, "[0, 12]"));
  CHECK(contains(error_of([] { tut::rmat_graph(4, -1, 1); }), "[0, 12]"));
  CHECK(contains(error_of([] { tut::rmat_graph(1, 1, 1); }), "[0, 0]"));
  // Past the int-indexed CSR: edges + nodes must stay below 2^31.
  CHECK(contains(error_of([] { tut::rmat_graph(2000000000, 200000000, 1); }), "[0, 147483647]"));
  CHECK(error_of([] { tut::rmat_graph(4, 12, 1); }).empty());
}

TEST_CASE("R-MAT graph: a request too dense to reach names the count that these nodes and seed reach") {
  // Nearly complete: R-MAT's bottom-right cells have probability ~0.05^7 per draw.
  const std::string msg = error_of([] { tut::rmat_graph(100, 9900, 5); });
  CAPTURE(msg);
  REQUIRE(msg.rfind("--edges: R-MAT reached only ", 0) == 0);
  CHECK(msg.find('\n') == std::string::npos);
  const long long reached = std::stoll(msg.substr(std::string("--edges: R-MAT reached only ").size()));
  CHECK(reached > 1000);
  CHECK(reached < 9900);
  CHECK(contains(msg, "[0, " + std::to_string(reached) + "]"));
  const EdgeList g = tut::rmat_graph(100, reached, 5);
  CHECK(static_cast<long long>(g.edges.size()) == reached);
  check_simple(g);
  CHECK(contains(error_of([&] { tut::rmat_graph(100, reached + 1, 5); }), "reached only " + std::to_string(reached)));
}

TEST_CASE("SNAP graph file: comments, blank lines, tabs, CRLF, ids remapped in ascending order, drops counted") {
  TempDir dir;
  const std::string path = dir.file("toy.txt",
                                    "# Directed graph (each unordered pair of nodes is saved once): toy.txt\n"
                                    "\n"
                                    "# FromNodeId\tToNodeId\n"
                                    "10 30\r\n"
                                    "30\t10\n"
                                    "  7   10  \n"
                                    "   \t\n"
                                    "  # an indented comment\n"
                                    "10 30\n"   // repeats line 4
                                    "5 5\n"     // a self-loop: 5 is still a node
                                    "030 7");  // no final newline; a leading zero
  const EdgeList g = tut::load_snap(path);
  CHECK(g.name == "toy.txt");
  CHECK(g.nodes == 4);
  CHECK(g.file_ids == std::vector<int>{5, 7, 10, 30});  // node i was file id file_ids[i]
  // 5 -> 0, 7 -> 1, 10 -> 2, 30 -> 3; the edges in file order, first occurrences.
  CHECK(g.edges == std::vector<Edge>{{2, 3}, {3, 2}, {1, 2}, {3, 1}});
  CHECK(g.dropped_duplicates == 1);
  CHECK(g.dropped_self_loops == 1);
  CHECK(tut::describe(g) == "toy.txt: 4 nodes, 4 edges (dropped 1 repeated edges and 1 self-loops)");
}

TEST_CASE("SNAP graph file: widely spread ids (the sorted-list path) and the largest id") {
  TempDir dir;
  const EdgeList g = tut::load_snap(dir.file("spread.txt", "2000000000 1\n1 2147483647\n2147483647 2000000000\n"));
  CHECK(g.nodes == 3);
  CHECK(g.file_ids == std::vector<int>{1, 2000000000, 2147483647});
  CHECK(g.edges == std::vector<Edge>{{1, 0}, {0, 2}, {2, 1}});
  CHECK(g.dropped_duplicates == 0);
  CHECK(g.dropped_self_loops == 0);
  CHECK(tut::describe(g) == "spread.txt: 3 nodes, 3 edges");
}

TEST_CASE("SNAP graph file: a written R-MAT graph loads back as the same edges") {
  TempDir dir;
  const EdgeList g = tut::rmat_graph(300, 2000, 11);
  std::string text = "# FromNodeId\tToNodeId\n";
  for (const Edge& e : g.edges) text += std::to_string(e.src + 1) + "\t" + std::to_string(e.dst + 1) + "\n";
  const EdgeList back = tut::load_snap(dir.file("rmat.txt", text));
  REQUIRE(back.edges.size() == g.edges.size());
  // Nodes without an edge cannot be written in an edge list: compare through the file's ids.
  CHECK(back.nodes <= g.nodes);
  bool same = true;
  for (std::size_t i = 0; i < g.edges.size(); ++i) {
    const Edge& e = back.edges[i];
    same = same && back.file_ids[std::size_t(e.src)] - 1 == g.edges[i].src &&
           back.file_ids[std::size_t(e.dst)] - 1 == g.edges[i].dst;
  }
  CHECK(same);
  CHECK(std::is_sorted(back.file_ids.begin(), back.file_ids.end()));
}

TEST_CASE("SNAP graph file: every malformed input is one line with the file, the line and what was wrong") {
  TempDir dir;
  const std::string f = (dir.path / "bad.txt").string();
  check_rejected(load_error(dir, "1 2\n1 x\n"), f + ":2:", "'x' is not a non-negative integer id");
  check_rejected(load_error(dir, "1.5 2\n"), f + ":1:", "'1.5' is not a non-negative integer id");
  check_rejected(load_error(dir, "-1 2\n"), f + ":1:", "'-1' is not a non-negative integer id");
  check_rejected(load_error(dir, "+1 2\n"), f + ":1:", "'+1' is not a non-negative integer id");
  check_rejected(load_error(dir, "12abc 3\n"), f + ":1:", "'12abc' is not a non-negative integer id");
  check_rejected(load_error(dir, "FromNodeId ToNodeId\n1 2\n"), f + ":1:", "'FromNodeId' is not");
  check_rejected(load_error(dir, "1 2 # trailing\n"), f + ":1:", "4 fields on the line, expected two ids");
  // Comments and blank lines count as lines.
  check_rejected(load_error(dir, "# c\n\n1 2\n7\n"), f + ":4:", "one id on the line, expected two");
  check_rejected(load_error(dir, "1 2 3\n"), f + ":1:", "3 fields on the line, expected two ids");
  check_rejected(load_error(dir, "1 2\n3 2147483648\n"), f + ":2:", "id '2147483648' is past 2^31 - 1");
  check_rejected(load_error(dir, "99999999999999999999999 1\n"), f + ":1:", "is past 2^31 - 1");
  check_rejected(load_error(dir, ""), f + ":1:", "empty file");
  check_rejected(load_error(dir, "# only\n\n# comments\n"), f + ":3:", "end of file without an edge line");
  // A binary file: the quoted token is cut short and stays printable, on one line.
  const std::string binary = load_error(dir, std::string("1 \x01\x02\x7f\xff") + std::string(100, 'z') + "\n");
  check_rejected(binary, f + ":1:", "'????zzzz");
  CHECK(contains(binary, "...' is not"));
  check_rejected(error_of([&] { tut::load_snap((dir.path / "missing.txt").string()); }), "missing.txt",
                 "no such file");
  check_rejected(error_of([&] { tut::load_snap(dir.path.string()); }), dir.path.string(), "is a directory");
}

TEST_CASE("normalized adjacency of a hand-computed 4-node graph: rows = targets, sorted columns, values") {
  // 0 -> 1, 0 -> 2, 1 -> 2, 3 -> 2, 2 -> 0, given out of order. A + I by rows (targets):
  //   row 0: {0, 2}        d_0 = 2
  //   row 1: {0, 1}        d_1 = 2
  //   row 2: {0, 1, 2, 3}  d_2 = 4
  //   row 3: {3}           d_3 = 1   (no in-edge: the self-loop alone)
  EdgeList g;
  g.nodes = 4;
  g.edges = {{3, 2}, {2, 0}, {1, 2}, {0, 2}, {0, 1}};
  const tut::Csr a = tut::normalized_adjacency(g);
  CHECK(a.rows == 4);
  CHECK(a.cols == 4);
  CHECK(a.nnz() == 9);
  CHECK(a.indptr == std::vector<int>{0, 2, 4, 8, 9});
  CHECK(a.indices == std::vector<int>{0, 2, 0, 1, 0, 1, 2, 3, 3});
  // 1 / sqrt(d_v * d_u): 1/sqrt(2*2) = 1/2, 1/sqrt(2*4) = sqrt(2)/4, 1/sqrt(4*4) = 1/4, 1/sqrt(4*1) = 1/2.
  const double r8 = 0.35355339059327373;  // sqrt(2) / 4
  const std::vector<double> expected{0.5, r8, 0.5, 0.5, r8, r8, 0.25, 0.5, 1.0};
  REQUIRE(a.values.size() == expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    CAPTURE(k);
    CHECK(a.values[k] == doctest::Approx(expected[k]).epsilon(1e-15));
  }
}

TEST_CASE("normalized adjacency equals D^-1/2 (A + I) D^-1/2 built densely, on an R-MAT graph") {
  const EdgeList g = tut::rmat_graph(37, 300, 4);
  const tut::Csr a = tut::normalized_adjacency(g);
  const auto n = static_cast<std::size_t>(g.nodes);
  std::vector<double> dense(n * n, 0.0);  // dense[v * n + u] = 1 for u -> v and u = v
  for (std::size_t v = 0; v < n; ++v) dense[v * n + v] = 1;
  for (const Edge& e : g.edges) dense[std::size_t(e.dst) * n + std::size_t(e.src)] = 1;
  std::vector<double> d(n, 0.0);  // row sums of A + I
  for (std::size_t v = 0; v < n; ++v) {
    for (std::size_t u = 0; u < n; ++u) d[v] += dense[v * n + u];
  }
  CHECK(a.nnz() == 300 + 37);
  REQUIRE(a.indptr.size() == n + 1);
  CHECK(a.indptr.front() == 0);
  CHECK(a.indptr.back() == a.nnz());
  std::vector<double> from_csr(n * n, 0.0);
  for (std::size_t v = 0; v < n; ++v) {
    CHECK(std::is_sorted(a.indices.begin() + a.indptr[v], a.indices.begin() + a.indptr[v + 1]));
    for (int k = a.indptr[v]; k < a.indptr[v + 1]; ++k) {
      from_csr[v * n + std::size_t(a.indices[std::size_t(k)])] = a.values[std::size_t(k)];
    }
  }
  double worst = 0;
  for (std::size_t v = 0; v < n; ++v) {
    for (std::size_t u = 0; u < n; ++u) {
      const double want = dense[v * n + u] / std::sqrt(d[v] * d[u]);
      worst = std::max(worst, std::fabs(from_csr[v * n + u] - want));
    }
  }
  CHECK(worst <= 1e-15);
}

TEST_CASE("normalized adjacency: no edges gives the identity, a bad edge list is refused") {
  EdgeList g;
  g.nodes = 3;
  tut::Csr a = tut::normalized_adjacency(g);
  CHECK(a.indptr == std::vector<int>{0, 1, 2, 3});
  CHECK(a.indices == std::vector<int>{0, 1, 2});
  CHECK(a.values == std::vector<double>{1.0, 1.0, 1.0});
  g.nodes = 0;
  a = tut::normalized_adjacency(g);
  CHECK(a.indptr == std::vector<int>{0});
  CHECK(a.nnz() == 0);

  g.nodes = 3;
  g.edges = {{0, 1}, {1, 1}};
  CHECK_THROWS_AS(tut::normalized_adjacency(g), std::invalid_argument);
  g.edges = {{0, 1}, {2, 1}, {0, 1}};
  CHECK_THROWS_AS(tut::normalized_adjacency(g), std::invalid_argument);
  g.edges = {{0, 3}};
  CHECK_THROWS_AS(tut::normalized_adjacency(g), std::invalid_argument);
  g.edges = {{-1, 2}};
  CHECK_THROWS_AS(tut::normalized_adjacency(g), std::invalid_argument);
}

TEST_CASE("degree stats of the hand-computed graph: in-degree without the self-loop, log2 histogram") {
  EdgeList g;
  g.nodes = 4;
  g.edges = {{3, 2}, {2, 0}, {1, 2}, {0, 2}, {0, 1}};  // in-degrees 1, 1, 3, 0
  const tut::DegreeStats s = tut::degree_stats(tut::normalized_adjacency(g));
  CHECK(s.nodes == 4);
  CHECK(s.edges == 5);
  CHECK(s.min == 0);
  CHECK(s.max == 3);
  CHECK(s.median == 1);
  CHECK(s.mean == 1.25);
  CHECK(s.histogram == std::vector<long long>{1, 2, 1});  // degree 0 | 1 | 2-3
  const std::string text = tut::describe(s);
  CHECK(text == "in-degree over 4 nodes: max 3, mean 1.25, median 1, min 0\nnodes per in-degree: 0: 1 | 1: 2 | 2-3: 1");
  // Bucket edges: 4 falls in 4-7, 8 in 8-15.
  g.nodes = 9;
  g.edges.clear();
  for (int u = 1; u <= 8; ++u) g.edges.push_back({u, 0});
  for (int u = 2; u <= 5; ++u) g.edges.push_back({u, 1});
  const tut::DegreeStats t = tut::degree_stats(tut::normalized_adjacency(g));
  CHECK(t.max == 8);
  CHECK(t.histogram == std::vector<long long>{7, 0, 0, 1, 1});
  CHECK(contains(tut::describe(t), "4-7: 1 | 8-15: 1"));
}

TEST_CASE("degree stats of the default graph: every node counted, mean = edges / nodes, a power-law tail") {
  const tut::Csr a = tut::normalized_adjacency(default_graph());
  CHECK(a.nnz() == 2312497 + 281903);
  const tut::DegreeStats s = tut::degree_stats(a);
  CHECK(s.nodes == 281903);
  CHECK(s.edges == 2312497);
  CHECK(s.mean == doctest::Approx(2312497.0 / 281903.0));
  long long total = 0;
  for (long long count : s.histogram) total += count;
  CHECK(total == 281903);
  REQUIRE(!s.histogram.empty());
  CHECK(s.histogram.back() > 0);  // the last bucket holds the largest in-degree
  CHECK((s.max >> (s.histogram.size() - 2)) == 1);
  // Heavy-tailed: the largest in-degree is hundreds of times the mean, the median below the mean.
  CHECK(s.max > 100 * s.mean);
  CHECK(s.median < s.mean);
  const std::string text = tut::describe(s);
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
}

}  // TEST_SUITE
