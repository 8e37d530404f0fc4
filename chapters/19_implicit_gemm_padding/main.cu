// Chapter 19 binary: the padded implicit GEMM handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::conv_main(argc, argv, {TUT_THIS_STEP, ch19::padded_implicit_gemm}); }
