// Chapter 30 binary: the SpMM A_hat Z, a half-warp per row, handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gcn_main(argc, argv, {TUT_THIS_STEP, ch30::spmm_warp_per_row, ch30::refuses, ch30::workspace}); }
