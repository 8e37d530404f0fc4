// What a step is (core/step.hpp): tags, the math's spelling, the declaration checks.
#include <doctest/doctest.h>

#include "tut/core/device_facts.hpp"
#include "tut/core/step.hpp"

TEST_CASE("a step's tags are whole words") {
  const tut::StepInfo s{"10_small_problems", "small and odd problems", "gemm", tut::Math::Fp32, "gemm", "suite planned", 0};
  CHECK(s.has_tag("suite"));
  CHECK(s.has_tag("planned"));
  CHECK_FALSE(s.has_tag("plan"));
  CHECK_FALSE(s.has_tag("suite planned"));
  CHECK_FALSE(s.has_tag(""));
  const tut::StepInfo none{"01_naive_gemm", "naive", "gemm", tut::Math::Fp32, "gemm", "", 0};
  CHECK_FALSE(none.has_tag("suite"));
}

TEST_CASE("math keys are CMake's MATH words") {
  CHECK(std::string(tut::math_key(tut::Math::Fp32)) == "fp32");
  CHECK(std::string(tut::math_key(tut::Math::Tf32)) == "tf32");
  CHECK(std::string(tut::math_key(tut::Math::Fp64)) == "fp64");
  CHECK(std::string(tut::math_name(tut::Math::Fp64)) == "FP64");
}

TEST_CASE("a family refuses a step declared for another part or math") {
  const tut::StepInfo conv{"21_x", "t", "conv", tut::Math::Tf32, "conv", "", 0};
  CHECK(tut::check_declaration(conv, "conv", {tut::Math::Fp32, tut::Math::Tf32}).empty());
  CHECK(tut::check_declaration(conv, "gemm", {tut::Math::Fp32, tut::Math::Tf32}).find("PART conv") != std::string::npos);
  CHECK(tut::check_declaration(conv, "conv", {tut::Math::Fp32}).find("MATH tf32") != std::string::npos);
  const tut::StepInfo gcn{"29_x", "t", "gcn", tut::Math::Fp64, "layer", "", 0};
  CHECK(tut::check_declaration(gcn, "gcn", {tut::Math::Fp64}).empty());
}

TEST_CASE("FP64 lanes: half of FP32's on the data-centre parts, few elsewhere") {
  CHECK(tut::fp64_lanes_per_sm(9, 0) == 64);
  CHECK(tut::fp64_lanes_per_sm(8, 0) == 32);
  CHECK(tut::fp64_lanes_per_sm(8, 9) == 2);
  CHECK(tut::fp64_lanes_per_sm(1, 0) == 0);
  // H100 SXM: 132 SMs x 64 lanes x 2 x 1980 MHz = 33.45 TFLOP/s.
  CHECK(tut::fp32_peak_gflops(132, tut::fp64_lanes_per_sm(9, 0), 1980) == doctest::Approx(33454.08));
}

TEST_CASE("FP64 reductions get FP64's tolerance") {
  CHECK(tut::math_tolerance(tut::Math::Fp64, 1000) < 1e-12);
  CHECK(tut::math_tolerance(tut::Math::Fp64, 1000) > 0);
}
