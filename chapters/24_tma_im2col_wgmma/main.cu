// Chapter 24 binary: the implicit GEMM on TMA im2col + wgmma handed to the shared harness (flags:
// --help). Its step is declared MATH tf32 LAYOUT nhwc ARCH 90a (chapters/CMakeLists.txt): the harness
// hands it channels-last copies of x, w and y, and checks it with TF32's tolerance.
#include "kernel.cuh"

int main(int argc, char** argv) {
  return tut::conv_main(argc, argv, {TUT_THIS_STEP, ch24::launch, ch24::workspace, nullptr, nullptr,
                                     ch24::unsupported, nullptr, true});
}
