// cuBLAS for every family: one handle per process, every call checked. A failure throws
// tut::CudaError with the call, file and line (the harness exits with code 4).
#pragma once

#include <cublas_v2.h>

#include <string>

#include "tut/core/check.cuh"

namespace tut {

void cublas_check(cublasStatus_t st, const char* expr, const char* file, int line);

// The process's handle, in the default math mode (no TF32 or other reduced precision unless a
// call's compute type asks for it). The caller sets its stream before each call.
cublasHandle_t cublas_handle();

// "cuBLAS 13.0.2"
std::string cublas_version_text();

}  // namespace tut

#define TUT_CUBLAS_CHECK(expr) ::tut::cublas_check((expr), #expr, __FILE__, __LINE__)
