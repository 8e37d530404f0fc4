#include <doctest/doctest.h>

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
