// Chapter 11 binary: the TF32 mma.sync kernel handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gemm_main(argc, argv, {TUT_STEP_NAME, TUT_STEP_TITLE, ch11::mma_gemm, TUT_STEP_MATH}); }
