// Chapter 11 binary: the TF32 mma.sync kernel handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gemm_main(argc, argv, {TUT_THIS_STEP, ch11::mma_gemm}); }
