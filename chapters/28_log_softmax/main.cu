// Chapter 28 binary: log_softmax row by row, a lane group per row, handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gcn_main(argc, argv, {TUT_THIS_STEP, ch28::log_softmax, ch28::refuses}); }
