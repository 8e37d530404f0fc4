// Chapter 12 binary: the TMA + wgmma kernel in three tile shapes with split-K, planned per problem,
// handed to the shared harness (flags: --help). Built for sm_90a only; on any other GPU it says so
// in one line (the self-test reports "skipped", exit 77).
#include "kernel.cuh"

int main(int argc, char** argv) { return tut::gemm_main(argc, argv, {TUT_THIS_STEP, ch12::planner()}); }
