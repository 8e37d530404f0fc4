// Chapter 08 binary: the warp-tiled kernel handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gemm_main(argc, argv, {TUT_THIS_STEP, ch08::warptile_gemm}); }
