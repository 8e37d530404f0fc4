// Chapter 31 binary: log_softmax row by row, a lane group per row, handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gcn_main(argc, argv, {TUT_THIS_STEP, ch31::log_softmax, ch31::refuses}); }
