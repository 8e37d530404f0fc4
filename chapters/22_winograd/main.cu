// Chapter 22 binary: the fused Winograd convolution handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::conv_main(argc, argv, {TUT_THIS_STEP, ch22::winograd, ch22::workspace, nullptr, nullptr, ch22::unsupported, ch22::tolerance, false, ch22::norm_tolerance}); }
