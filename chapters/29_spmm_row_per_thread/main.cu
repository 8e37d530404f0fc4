// Chapter 29 binary: the SpMM A_hat Z, one thread per row, handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gcn_main(argc, argv, {TUT_THIS_STEP, ch29::spmm_row_per_thread, ch29::refuses}); }
