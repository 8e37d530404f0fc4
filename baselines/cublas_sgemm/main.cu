// The cuBLAS baseline run through the same harness as the chapters: its CSV rows give the
// library's bar in the charts. Its self-test checks cuBLAS against the CPU float64 reference.
#include "tut/gemm/harness.cuh"

int main(int argc, char** argv) {
  return tut::gemm_main(argc, argv, {TUT_THIS_STEP, tut::cublas_sgemm});
}
