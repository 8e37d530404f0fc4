// Chapter 28 binary: the skinny GEMM H = X W from coalesced tiles of X in shared memory, handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gcn_main(argc, argv, {TUT_THIS_STEP, ch28::xw_coalesced, ch28::refuses}); }
