// Chapter 26 binary: the skinny GEMM H = X W with the sums in registers and W in shared memory, handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gcn_main(argc, argv, {TUT_THIS_STEP, ch26::xw_smem_w, ch26::refuses}); }
