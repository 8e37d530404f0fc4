// Chapter 21 binary: the implicit GEMM on tensor cores handed to the shared harness (flags: --help).
// TUT_STEP_MATH is tut::Math::Tf32 (MATH tf32 in chapters/CMakeLists.txt): the harness checks the
// result against true FP32 with TF32's tolerance and times it against cuDNN's default math.
#include "kernel.cuh"

int main(int argc, char** argv) {
  tut::ConvStep step{TUT_STEP_NAME, TUT_STEP_TITLE, ch21::tf32_implicit_gemm, ch21::tf32_implicit_gemm_workspace};
  step.math = TUT_STEP_MATH;
  return tut::conv_main(argc, argv, step);
}
