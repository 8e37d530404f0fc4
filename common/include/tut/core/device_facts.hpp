// Host-side facts derived from device properties: the FP32 and FP64 peak formulas and the GPU slug that
// names the results file. Pure functions, unit-tested without a GPU.
#pragma once

#include <string>

namespace tut {

// FP32 FMA lanes per SM ("CUDA cores") by compute capability, from the CUDA C++ Programming
// Guide's throughput table; 0 for an architecture this table does not know.
int fp32_lanes_per_sm(int major, int minor);

// Peak FP32 rate in GFLOP/s: SMs x lanes x 2 FLOPs per FMA x clock. With the H100 SXM's 132 SMs,
// 128 lanes and 1980 MHz boost clock: 66.9 TFLOP/s. Returns 0 when lanes is 0 (unknown).
double fp32_peak_gflops(int sms, int lanes_per_sm, double clock_mhz);

// FP64 FMA lanes per SM by compute capability (the same throughput table): the data-centre parts
// (6.0, 7.0, 8.0: 32; Hopper 9.0 and Blackwell 10.0: 64), 2 on the others (4 before Turing); 0 when
// unknown. H100 SXM: 132 x 64 x 2 x 1980 MHz = 33.5 TFLOP/s.
int fp64_lanes_per_sm(int major, int minor);

// Dense TF32 tensor-core FLOPs per clock per SM by compute capability (two per multiply-add), from
// the vendors' published peaks divided by SMs x clock: A100 (8.0) 1024, GA10x / Ada (8.6, 8.9) 256,
// Hopper (9.0) 2048; 0 for an architecture this table does not know. H100 SXM at 1980 MHz: 535
// TFLOP/s (the 495 of the data sheet is quoted at 1830 MHz).
int tf32_flops_per_clk_per_sm(int major, int minor);

// Peak dense TF32 tensor-core rate in GFLOP/s: SMs x FLOPs per clock x clock; 0 when unknown.
double tf32_peak_gflops(int sms, int flops_per_clk_per_sm, double clock_mhz);

// "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3": lower case, every run of characters other
// than [a-z0-9] becomes one '-', no leading or trailing '-'. "unknown-gpu" when nothing is left.
std::string gpu_slug(const std::string& name);

}  // namespace tut
