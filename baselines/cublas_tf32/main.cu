// cuBLAS in TF32 (CUBLAS_COMPUTE_32F_FAST_TF32) run through the same harness as the chapters: the
// bar of the tensor-core charts. Its self-test checks it against true FP32 with the TF32 tolerance.
#include "tut/gemm/harness.cuh"

int main(int argc, char** argv) {
  return tut::gemm_main(argc, argv, {TUT_THIS_STEP, tut::cublas_tf32_gemm});
}
