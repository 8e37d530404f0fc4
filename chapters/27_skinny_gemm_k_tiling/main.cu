// Chapter 27 binary: the skinny GEMM H = X W with K_TILE loads of X in flight per thread, handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gcn_main(argc, argv, {TUT_THIS_STEP, ch27::xw_k_tiling, ch27::refuses}); }
