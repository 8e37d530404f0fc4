// Chapter 22 binary: the Winograd convolution (fused, or three kernels) handed to the shared harness,
// with its two paths for the self-test (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::conv_main(argc, argv, {TUT_THIS_STEP, ch22::winograd, ch22::workspace, nullptr, nullptr, ch22::unsupported, ch22::tolerance, false, ch22::norm_tolerance, ch22::PATH_NAMES, 2, ch22::force_path}); }
