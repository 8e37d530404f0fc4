// Chapter 32 binary: the whole GCN layer in two passes, H = X W, then A_hat H with bias + log_softmax in its epilogue, handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gcn_main(argc, argv, {TUT_THIS_STEP, ch32::gcn_layer_fused, ch32::refuses, ch32::workspace}); }
