// Chapter 23 binary: the implicit GEMM on tensor cores handed to the shared harness (flags: --help).
// Its step is declared MATH tf32 (chapters/CMakeLists.txt): the harness checks the
// result against true FP32 with TF32's tolerance and times it against cuDNN's default math.
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::conv_main(argc, argv, {TUT_THIS_STEP, ch23::tf32_implicit_gemm, ch23::tf32_implicit_gemm_workspace}); }
