// cuDNN for the families that use it (conv, gcn): one handle per process, every call checked.
// Compiled only where cuDNN was found (the tut_cudnn library, which defines TUT_HAVE_CUDNN=1 for
// whatever links it); a build without cuDNN never includes this header.
#pragma once

#include <cudnn.h>

#include <string>

#include "tut/core/check.cuh"

namespace tut {

void cudnn_check(cudnnStatus_t st, const char* expr, const char* file, int line);

// The process's handle (creating one loads cuDNN's kernels: slow to repeat per problem). The caller
// sets its stream before each call.
cudnnHandle_t cudnn_handle();

// "cuDNN 9.14.0"
std::string cudnn_version_text();

}  // namespace tut

#define TUT_CUDNN_CHECK(expr) ::tut::cudnn_check((expr), #expr, __FILE__, __LINE__)
