// Chapter 14 binary: im2col, chapter 09's GEMM and a permute handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::conv_main(argc, argv, {TUT_THIS_STEP, ch14::im2col_gemm_conv, ch14::workspace_bytes}); }
