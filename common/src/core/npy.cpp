#include "tut/core/npy.hpp"

#include <cstdint>
#include <fstream>
#include <stdexcept>

namespace tut {

std::string npy_header_f32(int rows, int cols) { return npy_header_f32(std::vector<long long>{rows, cols}); }

std::string npy_header_f32(const std::vector<long long>& shape) {
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";  // a Python 1-tuple
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const std::size_t preamble = 10;  // magic (6) + version (2) + header length (2)
  std::size_t total = preamble + dict.size() + 1;  // + '\n'
  const std::size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  const auto len = static_cast<std::uint16_t>(dict.size());
  std::string h = "\x93NUMPY";
  h += '\x01';
  h += '\x00';
  h += static_cast<char>(len & 0xff);
  h += static_cast<char>(len >> 8);
  return h + dict;
}

void write_npy_f32(const std::string& path, const float* data, int rows, int cols, int ld) {
  static_assert(sizeof(float) == 4, "float32 expected");
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  const std::string h = npy_header_f32(rows, cols);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (int r = 0; r < rows; ++r) {
    out.write(reinterpret_cast<const char*>(data + std::size_t(r) * ld), std::streamsize(cols) * 4);
  }
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace tut

namespace tut {

void write_npy_f32(const std::string& path, const float* data, const std::vector<long long>& shape) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  const std::string h = npy_header_f32(shape);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  long long count = 1;
  for (long long d : shape) count *= d;
  out.write(reinterpret_cast<const char*>(data), std::streamsize(count) * 4);
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace tut
