#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
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
