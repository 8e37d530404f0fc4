// Chapter 15 binary: the naive implicit GEMM handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::conv_main(argc, argv, {TUT_THIS_STEP, ch15::naive_implicit_gemm}); }
