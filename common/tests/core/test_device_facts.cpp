#include <doctest/doctest.h>

#include "tut/core/device_facts.hpp"

TEST_CASE("FP32 lanes per SM by compute capability") {
  CHECK(tut::fp32_lanes_per_sm(9, 0) == 128);  // H100
  CHECK(tut::fp32_lanes_per_sm(8, 0) == 64);   // A100
  CHECK(tut::fp32_lanes_per_sm(8, 6) == 128);  // RTX 30xx
  CHECK(tut::fp32_lanes_per_sm(8, 9) == 128);  // RTX 40xx
  CHECK(tut::fp32_lanes_per_sm(7, 0) == 64);   // V100
  CHECK(tut::fp32_lanes_per_sm(7, 5) == 64);   // T4
  CHECK(tut::fp32_lanes_per_sm(6, 0) == 64);
  CHECK(tut::fp32_lanes_per_sm(6, 1) == 128);
  CHECK(tut::fp32_lanes_per_sm(3, 5) == 0);    // unknown: no peak claimed
}

TEST_CASE("peak = SMs x lanes x 2 x clock") {
  // H100 SXM: 132 SMs x 128 lanes x 2 FLOP x 1980 MHz = 66908.16 GFLOP/s
  CHECK(tut::fp32_peak_gflops(132, 128, 1980.0) == doctest::Approx(66908.16));
  // A100: 108 x 64 x 2 x 1410 MHz = 19491.84
  CHECK(tut::fp32_peak_gflops(108, 64, 1410.0) == doctest::Approx(19491.84));
  CHECK(tut::fp32_peak_gflops(132, 0, 1980.0) == 0.0);
}

TEST_CASE("TF32 tensor-core peak = SMs x dense FLOPs per clock x clock") {
  CHECK(tut::tf32_flops_per_clk_per_sm(9, 0) == 2048);
  CHECK(tut::tf32_flops_per_clk_per_sm(8, 0) == 1024);
  CHECK(tut::tf32_flops_per_clk_per_sm(8, 6) == 256);
  CHECK(tut::tf32_flops_per_clk_per_sm(7, 0) == 0);  // no TF32 before Ampere
  // H100 SXM at the 1830 MHz of its data sheet: 494.7 TFLOP/s; at its 1980 MHz boost: 535.2
  CHECK(tut::tf32_peak_gflops(132, 2048, 1830.0) == doctest::Approx(494714.9));
  CHECK(tut::tf32_peak_gflops(132, 2048, 1980.0) == doctest::Approx(535265.3));
  // A100 SXM: 108 x 1024 x 1410 MHz = 155.9 TFLOP/s
  CHECK(tut::tf32_peak_gflops(108, 1024, 1410.0) == doctest::Approx(155934.7));
  CHECK(tut::tf32_peak_gflops(132, 0, 1980.0) == 0.0);
}

TEST_CASE("GPU slug") {
  CHECK(tut::gpu_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3");
  CHECK(tut::gpu_slug("NVIDIA GeForce RTX 4090") == "nvidia-geforce-rtx-4090");
  CHECK(tut::gpu_slug("  Tesla V100-SXM2-16GB  ") == "tesla-v100-sxm2-16gb");
  CHECK(tut::gpu_slug("NVIDIA A100-SXM4-80GB (MIG 1g.10gb)") == "nvidia-a100-sxm4-80gb-mig-1g-10gb");
  CHECK(tut::gpu_slug("") == "unknown-gpu");
  CHECK(tut::gpu_slug("---") == "unknown-gpu");
}
