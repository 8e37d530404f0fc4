// Chapter 09 binary: the double-buffered kernel handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gemm_main(argc, argv, {TUT_THIS_STEP, ch09::double_buffered_gemm}); }
