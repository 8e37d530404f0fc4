#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "tut/core/npy.hpp"

TEST_CASE("npy header: magic, version, 64-byte alignment, shape") {
  const std::string h = tut::npy_header_f32(3, 5);
  CHECK(h.size() % 64 == 0);
  CHECK(h.compare(0, 6, "\x93NUMPY") == 0);
  CHECK(h[6] == 1);
  CHECK(h[7] == 0);
  const std::size_t len = std::size_t(static_cast<unsigned char>(h[8])) | (std::size_t(static_cast<unsigned char>(h[9])) << 8);
  CHECK(len == h.size() - 10);
  CHECK(h.find("'descr': '<f4'") != std::string::npos);
  CHECK(h.find("'fortran_order': False") != std::string::npos);
  CHECK(h.find("'shape': (3, 5)") != std::string::npos);
  CHECK(h.back() == '\n');
}

TEST_CASE("npy file: header then the rows, skipping the leading-dimension padding") {
  const std::vector<float> m{1, 2, -1, 3, 4, -1};  // 2x2 with ld = 3
  const std::string path = "/tmp/tut_test_m.npy";
  tut::write_npy_f32(path, m.data(), 2, 2, 3);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  const std::string h = tut::npy_header_f32(2, 2);
  REQUIRE(bytes.size() == h.size() + 4 * sizeof(float));
  CHECK(bytes.compare(0, h.size(), h) == 0);
  float data[4];
  std::memcpy(data, bytes.data() + h.size(), sizeof data);
  CHECK(data[0] == 1);
  CHECK(data[1] == 2);
  CHECK(data[2] == 3);
  CHECK(data[3] == 4);
  CHECK_THROWS_AS(tut::write_npy_f32("/nonexistent/dir/x.npy", m.data(), 2, 2, 3), std::runtime_error);
}

namespace {

std::string slurp_binary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::string unique_npy_path(const char* name) {
  return "/tmp/tut_test_" + std::to_string(long(getpid())) + "_" + name;
}

// The header's length field, as a reader computes it.
std::size_t header_len(const std::string& h) {
  return std::size_t(static_cast<unsigned char>(h[8])) | (std::size_t(static_cast<unsigned char>(h[9])) << 8);
}

}  // namespace

TEST_CASE("npy header: N-D and 1-D shapes") {
  const std::string h4 = tut::npy_header_f32(std::vector<long long>{2, 3, 4, 5});
  CHECK(h4.size() % 64 == 0);
  CHECK(header_len(h4) == h4.size() - 10);
  CHECK(h4.find("'shape': (2, 3, 4, 5)") != std::string::npos);
  CHECK(h4.find("'descr': '<f4'") != std::string::npos);
  CHECK(h4.back() == '\n');

  const std::string h1 = tut::npy_header_f32(std::vector<long long>{7});
  CHECK(h1.size() % 64 == 0);
  CHECK(h1.find("'shape': (7,)") != std::string::npos);  // a Python 1-tuple

  // The matrix form is the 2-D shape.
  CHECK(tut::npy_header_f32(3, 5) == tut::npy_header_f32(std::vector<long long>{3, 5}));
  // Large dimensions are written in full.
  CHECK(tut::npy_header_f32(std::vector<long long>{128, 64, 56, 56}).find("'shape': (128, 64, 56, 56)") !=
        std::string::npos);
  CHECK(tut::npy_header_f32(std::vector<long long>{3000000000LL}).find("'shape': (3000000000,)") != std::string::npos);
}

TEST_CASE("npy file: a 4-D tensor, header then the data in C order") {
  std::vector<float> t(2 * 3 * 4 * 5);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = 0.5f * float(i) - 7.0f;
  const std::string path = unique_npy_path("t4.npy");
  tut::write_npy_f32(path, t.data(), std::vector<long long>{2, 3, 4, 5});
  const std::string bytes = slurp_binary(path);
  const std::string h = tut::npy_header_f32(std::vector<long long>{2, 3, 4, 5});
  REQUIRE(bytes.size() == h.size() + t.size() * sizeof(float));
  CHECK(bytes.compare(0, h.size(), h) == 0);
  CHECK(h.find("'shape': (2, 3, 4, 5)") != std::string::npos);
  std::vector<float> back(t.size());
  std::memcpy(back.data(), bytes.data() + h.size(), back.size() * sizeof(float));
  CHECK(back == t);
  // Element [1][2][3][4] is the last one.
  CHECK(back[((1 * 3 + 2) * 4 + 3) * 5 + 4] == t.back());
  std::remove(path.c_str());
}

TEST_CASE("npy file: a 1-D array") {
  const std::vector<float> v{1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f, 6.0f};
  const std::string path = unique_npy_path("v1.npy");
  tut::write_npy_f32(path, v.data(), std::vector<long long>{7});
  const std::string bytes = slurp_binary(path);
  const std::string h = tut::npy_header_f32(std::vector<long long>{7});
  CHECK(h.find("'shape': (7,)") != std::string::npos);
  REQUIRE(bytes.size() == h.size() + 7 * sizeof(float));
  CHECK(bytes.compare(0, h.size(), h) == 0);
  CHECK(std::memcmp(bytes.data() + h.size(), v.data(), 7 * sizeof(float)) == 0);
  std::remove(path.c_str());
  CHECK_THROWS_AS(tut::write_npy_f32("/nonexistent/dir/v.npy", v.data(), std::vector<long long>{7}),
                  std::runtime_error);
}

TEST_CASE("npy header: the float32 header byte for byte, and the one header builder for every type") {
  // Magic, version 1.0, the length 118 (little-endian), the dict, spaces and '\n' to 128 bytes.
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }";
  const std::string want = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict +
                           std::string(128 - 10 - dict.size() - 1, ' ') + "\n";
  CHECK(tut::npy_header_f32(3, 5) == want);
  CHECK(tut::npy_header(tut::NpyType::F32, std::vector<long long>{3, 5}) == want);

  const struct {
    tut::NpyType type;
    const char* descr;
    std::size_t size;
  } types[] = {{tut::NpyType::F32, "<f4", 4}, {tut::NpyType::F64, "<f8", 8},
               {tut::NpyType::I32, "<i4", 4}, {tut::NpyType::I64, "<i8", 8}};
  for (const auto& t : types) {
    CHECK(std::string(tut::npy_descr(t.type)) == t.descr);
    CHECK(tut::npy_item_size(t.type) == t.size);
    const std::string h = tut::npy_header(t.type, std::vector<long long>{281903, 16});
    CHECK(h.size() % 64 == 0);
    CHECK(header_len(h) == h.size() - 10);
    CHECK(h.find(std::string("'descr': '") + t.descr + "'") != std::string::npos);
    CHECK(h.find("'shape': (281903, 16)") != std::string::npos);
    // The float32 header with only the descr changed.
    std::string as_f32 = h;
    as_f32.replace(as_f32.find(t.descr), 3, "<f4");
    CHECK(as_f32 == tut::npy_header_f32(std::vector<long long>{281903, 16}));
  }
}

TEST_CASE("npy element types follow the C++ type") {
  static_assert(tut::npy_type_of<float>() == tut::NpyType::F32, "float");
  static_assert(tut::npy_type_of<const double>() == tut::NpyType::F64, "double");
  static_assert(tut::npy_type_of<int>() == tut::NpyType::I32, "int");
  static_assert(tut::npy_type_of<std::int32_t>() == tut::NpyType::I32, "int32_t");
  static_assert(tut::npy_type_of<long long>() == tut::NpyType::I64, "long long");
  static_assert(tut::npy_type_of<std::int64_t>() == tut::NpyType::I64, "int64_t");
  CHECK(tut::npy_type_of<long>() == (sizeof(long) == 8 ? tut::NpyType::I64 : tut::NpyType::I32));
}

TEST_CASE("npy file: float64, int32 and int64 arrays, header then the data") {
  const std::vector<double> d{1.0 / 3, -2.5, 1e300, -0.0, 4.9e-324, 6.0};  // a (2, 3) matrix
  const std::string pd = unique_npy_path("f8.npy");
  tut::write_npy(pd, d.data(), std::vector<long long>{2, 3});
  std::string bytes = slurp_binary(pd);
  std::string h = tut::npy_header(tut::NpyType::F64, std::vector<long long>{2, 3});
  CHECK(h.find("'descr': '<f8'") != std::string::npos);
  REQUIRE(bytes.size() == h.size() + d.size() * 8);
  CHECK(bytes.compare(0, h.size(), h) == 0);
  CHECK(std::memcmp(bytes.data() + h.size(), d.data(), d.size() * 8) == 0);
  std::remove(pd.c_str());

  const std::vector<int> indptr{0, 2, 3, 7};  // a CSR matrix's row pointers
  const std::string pi = unique_npy_path("i4.npy");
  tut::write_npy(pi, indptr.data(), std::vector<long long>{4});
  bytes = slurp_binary(pi);
  h = tut::npy_header(tut::NpyType::I32, std::vector<long long>{4});
  CHECK(h.find("'descr': '<i4', 'fortran_order': False, 'shape': (4,)") != std::string::npos);
  REQUIRE(bytes.size() == h.size() + 16);
  CHECK(bytes.compare(0, h.size(), h) == 0);
  CHECK(std::memcmp(bytes.data() + h.size(), indptr.data(), 16) == 0);
  std::remove(pi.c_str());

  const std::vector<long long> big{-1, 3000000000LL, 1LL << 40};
  const std::string pl = unique_npy_path("i8.npy");
  tut::write_npy(pl, big.data(), std::vector<long long>{3, 1});
  bytes = slurp_binary(pl);
  h = tut::npy_header(tut::NpyType::I64, std::vector<long long>{3, 1});
  CHECK(h.find("'descr': '<i8'") != std::string::npos);
  REQUIRE(bytes.size() == h.size() + 24);
  CHECK(std::memcmp(bytes.data() + h.size(), big.data(), 24) == 0);
  std::remove(pl.c_str());
}

TEST_CASE("npy file: a strided float64 matrix skips the padding; the float32 writers give the same bytes") {
  const std::vector<double> m{1, 2, -1, 3, 4, -1};  // 2x2 with ld = 3
  const std::string pm = unique_npy_path("f8ld.npy");
  tut::write_npy(pm, m.data(), 2, 2, 3);
  const std::string bytes = slurp_binary(pm);
  const std::string h = tut::npy_header(tut::NpyType::F64, std::vector<long long>{2, 2});
  REQUIRE(bytes.size() == h.size() + 4 * 8);
  double back[4];
  std::memcpy(back, bytes.data() + h.size(), sizeof back);
  CHECK(back[0] == 1);
  CHECK(back[1] == 2);
  CHECK(back[2] == 3);
  CHECK(back[3] == 4);
  std::remove(pm.c_str());

  const std::vector<float> f{1, 2, -1, 3, 4, -1, 5, 6, -1};
  const std::string p1 = unique_npy_path("f4a.npy"), p2 = unique_npy_path("f4b.npy");
  tut::write_npy_f32(p1, f.data(), 3, 2, 3);
  tut::write_npy(p2, f.data(), 3, 2, 3);
  CHECK(slurp_binary(p1) == slurp_binary(p2));
  tut::write_npy_f32(p1, f.data(), std::vector<long long>{3, 3});
  tut::write_npy(p2, tut::NpyType::F32, f.data(), std::vector<long long>{3, 3});
  CHECK(slurp_binary(p1) == slurp_binary(p2));
  std::remove(p1.c_str());
  std::remove(p2.c_str());

  CHECK_THROWS_AS(tut::write_npy(pm, m.data(), 2, 3, 2), std::invalid_argument);  // ld < cols
  CHECK_THROWS_AS(tut::write_npy(pm, m.data(), std::vector<long long>{2, -3}), std::invalid_argument);
  CHECK_THROWS_AS(tut::write_npy("/nonexistent/dir/d.npy", m.data(), std::vector<long long>{6}), std::runtime_error);
}
