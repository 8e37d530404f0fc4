// Part I's cuBLAS baselines: the GEMM problem handed to core's row-major cuBLAS GEMM.
#include "tut/core/cublas.cuh"
#include "tut/gemm/harness.cuh"

namespace tut {

const char* cublas_sgemm_name() { return "cuBLAS FP32 (no TF32)"; }

void cublas_sgemm(const GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream) {
  cublas_gemm_f32(p.m, p.n, p.k, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc, Math::Fp32, stream);
}

const char* cublas_tf32_name() { return "cuBLAS TF32 (CUBLAS_COMPUTE_32F_FAST_TF32)"; }

// FP32 in and out; the tensor cores round A and B to TF32 and sum in FP32.
void cublas_tf32_gemm(const GemmProblem& p, const float* A, const float* B, float* C, cudaStream_t stream) {
  cublas_gemm_f32(p.m, p.n, p.k, p.alpha, A, p.lda, B, p.ldb, p.beta, C, p.ldc, Math::Tf32, stream);
}

}  // namespace tut
