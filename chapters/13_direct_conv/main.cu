// Chapter 13 binary: the direct convolution handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::conv_main(argc, argv, {TUT_THIS_STEP, ch13::direct_conv}); }
