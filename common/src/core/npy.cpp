#include "tut/core/npy.hpp"

#include <cstdint>
#include <fstream>
#include <stdexcept>

namespace tut {

const char* npy_descr(NpyType type) {
  switch (type) {
    case NpyType::F32: return "<f4";
    case NpyType::F64: return "<f8";
    case NpyType::I32: return "<i4";
    case NpyType::I64: return "<i8";
  }
  throw std::invalid_argument("npy_descr: unknown NpyType");
}

std::size_t npy_item_size(NpyType type) {
  return (type == NpyType::F32 || type == NpyType::I32) ? 4 : 8;
}

std::string npy_header(NpyType type, const std::vector<long long>& shape) {
  std::string dims;
  for (std::size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";  // a Python 1-tuple
  std::string dict = std::string("{'descr': '") + npy_descr(type) + "', 'fortran_order': False, 'shape': (" + dims + "), }";
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

void write_npy(const std::string& path, NpyType type, const void* data, const std::vector<long long>& shape,
               long long ld) {
  // rows x cols view: cols = the last dimension, rows = the product of the others.
  long long rows = 1, cols = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) throw std::invalid_argument(path + ": negative dimension " + std::to_string(shape[i]));
    if (i + 1 < shape.size()) {
      rows *= shape[i];
    } else {
      cols = shape[i];
    }
  }
  if (ld == 0) ld = cols;
  if (ld < cols) {
    throw std::invalid_argument(path + ": leading dimension " + std::to_string(ld) + " < row length " +
                                std::to_string(cols));
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  const std::string h = npy_header(type, shape);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  const std::size_t item = npy_item_size(type);
  const char* bytes = static_cast<const char*>(data);
  if (ld == cols) {  // packed: one write
    out.write(bytes, static_cast<std::streamsize>(rows * cols) * static_cast<std::streamsize>(item));
  } else {
    for (long long r = 0; r < rows; ++r) {
      out.write(bytes + std::size_t(r) * std::size_t(ld) * item, static_cast<std::streamsize>(cols * item));
    }
  }
  if (!out) throw std::runtime_error(path + ": write failed");
}

void write_npy_f32(const std::string& path, const float* data, int rows, int cols, int ld) {
  write_npy(path, data, rows, cols, ld);
}

void write_npy_f32(const std::string& path, const float* data, const std::vector<long long>& shape) {
  write_npy(path, data, shape);
}

std::string npy_header_f32(const std::vector<long long>& shape) { return npy_header(NpyType::F32, shape); }

std::string npy_header_f32(int rows, int cols) { return npy_header_f32(std::vector<long long>{rows, cols}); }

}  // namespace tut
