// Chapter 16 binary: the shared-memory tiled implicit GEMM handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::conv_main(argc, argv, {TUT_THIS_STEP, ch16::smem_implicit_gemm}); }
