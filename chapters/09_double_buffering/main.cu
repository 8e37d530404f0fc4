// Chapter 09 binary: the double-buffered kernel handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gemm_main(argc, argv, {TUT_STEP_NAME, TUT_STEP_TITLE, ch09::double_buffered_gemm}); }
