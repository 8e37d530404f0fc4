// Chapter 10 binary: chapter 09's kernel in three tile shapes with split-K, planned per problem, handed to the shared harness (flags: --help).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gemm_main(argc, argv, {TUT_THIS_STEP, ch10::planner()}); }
