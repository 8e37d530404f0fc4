// Chapter 21 binary: the implicit GEMM with a fused bias + ReLU epilogue handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::conv_main(argc, argv, {TUT_THIS_STEP, ch21::fused_implicit_gemm, ch21::fused_implicit_gemm_workspace, ch21::unfused_conv_bias_relu, "20_implicit_gemm_double_buffer + bias/ReLU kernel"}); }
