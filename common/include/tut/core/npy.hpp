// Writes arrays as NumPy .npy files (format version 1.0, little-endian, C order), so a reader can
// load a run's inputs and outputs with numpy.load. One writer serves every element type a family
// dumps: float32 (Parts I and II), float64 (Part III's features) and int32 / int64 (index arrays,
// e.g. a CSR matrix's indptr and indices). The bytes are the host's own, as every CUDA host is
// little-endian.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

namespace tut {

// The element types, by NumPy's descr: '<f4', '<f8', '<i4', '<i8'.
enum class NpyType { F32, F64, I32, I64 };

const char* npy_descr(NpyType type);      // "<f4", "<f8", "<i4", "<i8"
std::size_t npy_item_size(NpyType type);  // 4 or 8 bytes

// The NpyType of a C++ element type: float, double, or a 4- or 8-byte signed integer (int,
// std::int32_t, long, long long, std::int64_t). Any other type is a compile error.
template <class T>
constexpr NpyType npy_type_of() {
  using U = std::remove_cv_t<T>;
  static_assert(std::is_same_v<U, float> || std::is_same_v<U, double> ||
                    (std::is_integral_v<U> && std::is_signed_v<U> && (sizeof(U) == 4 || sizeof(U) == 8)),
                "a .npy array here holds float, double, or 4- or 8-byte signed integers");
  if constexpr (std::is_same_v<U, float>) {
    return NpyType::F32;
  } else if constexpr (std::is_same_v<U, double>) {
    return NpyType::F64;
  } else if constexpr (sizeof(U) == 4) {
    return NpyType::I32;
  } else {
    return NpyType::I64;
  }
}

// The .npy header of a C-order array of the given type and shape: magic, version, length, dict,
// padded with spaces and a newline to a multiple of 64 bytes. A 1-D shape is written as a Python
// 1-tuple "(7,)".
std::string npy_header(NpyType type, const std::vector<long long>& shape);

// The one writer behind every form below. The array is viewed as rows of the shape's last
// dimension (a 0-D or 1-D shape is one row); row r starts ld elements after row r - 1, and ld == 0
// means packed (ld = the last dimension). Throws std::invalid_argument on a negative dimension or
// 0 < ld < the last dimension, and std::runtime_error naming the path when the file cannot be
// written.
void write_npy(const std::string& path, NpyType type, const void* data, const std::vector<long long>& shape,
               long long ld = 0);

// A packed array of the given shape (C order: the last index varies fastest), e.g. an NCHW tensor
// as {N, C, H, W}, a (V, F) feature matrix, a CSR matrix's indices as {nnz}.
template <class T>
void write_npy(const std::string& path, const T* data, const std::vector<long long>& shape) {
  write_npy(path, npy_type_of<T>(), data, shape);
}

// The 'rows x cols' matrix whose row r starts at data + r * ld.
template <class T>
void write_npy(const std::string& path, const T* data, int rows, int cols, int ld) {
  write_npy(path, npy_type_of<T>(), data, std::vector<long long>{rows, cols}, ld);
}

// The float32 forms (Parts I and II), the same files as write_npy<float> above.
void write_npy_f32(const std::string& path, const float* data, int rows, int cols, int ld);
void write_npy_f32(const std::string& path, const float* data, const std::vector<long long>& shape);
std::string npy_header_f32(const std::vector<long long>& shape);
std::string npy_header_f32(int rows, int cols);

}  // namespace tut
