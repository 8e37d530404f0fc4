// Chapter 17 binary: the warp-tiled implicit GEMM handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::conv_main(argc, argv, {TUT_STEP_NAME, TUT_STEP_TITLE, ch17::warptile_implicit_gemm}); }
