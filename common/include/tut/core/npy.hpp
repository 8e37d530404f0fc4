// Writes a matrix or a tensor as a NumPy .npy file (format version 1.0, little-endian float32, C order), so a
// reader can load a run's inputs and outputs with numpy.load.
#pragma once

#include <string>
#include <vector>

namespace tut {

// The 'rows x cols' matrix whose row r starts at data + r * ld. Throws std::runtime_error naming
// the path when the file cannot be written.
void write_npy_f32(const std::string& path, const float* data, int rows, int cols, int ld);

// A packed float32 array of the given shape (C order: the last index varies fastest), e.g. an NCHW
// tensor as {N, C, H, W}. Throws like write_npy_f32 above.
void write_npy_f32(const std::string& path, const float* data, const std::vector<long long>& shape);

// The .npy header for a float32 C-order array of the given shape.
std::string npy_header_f32(const std::vector<long long>& shape);

// The .npy header for a float32 C-order (rows, cols) array: magic, version, length, dict, padded
// with spaces and a newline to a multiple of 64 bytes.
std::string npy_header_f32(int rows, int cols);

}  // namespace tut
