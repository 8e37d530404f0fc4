// Chapter 04 binary: the 1D register-tiled kernel handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gemm_main(argc, argv, {TUT_THIS_STEP, ch04::blocktile_1d_gemm}); }
