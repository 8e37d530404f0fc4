// Chapter 18 binary: the warp-tiled implicit GEMM with a cheap gather, handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::conv_main(argc, argv, {TUT_THIS_STEP, ch18::warptile_implicit_gemm}); }
