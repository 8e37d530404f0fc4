// Chapter 08 binary: the warp-tiled kernel handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gemm_main(argc, argv, {TUT_STEP_NAME, TUT_STEP_TITLE, ch08::warptile_gemm}); }
