// Chapter 25 binary: the naive skinny GEMM H = X W, one thread per row, handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gcn_main(argc, argv, {TUT_THIS_STEP, ch25::xw_naive, ch25::refuses}); }
