// Chapter 05 binary: the 2D register-tiled kernel handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gemm_main(argc, argv, {TUT_THIS_STEP, ch05::blocktile_2d_gemm}); }
