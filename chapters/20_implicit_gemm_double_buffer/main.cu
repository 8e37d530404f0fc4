// Chapter 20 binary: the double-buffered implicit GEMM handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::conv_main(argc, argv, {TUT_THIS_STEP, ch20::double_buffered_implicit_gemm, ch20::double_buffered_implicit_gemm_workspace}); }
