// What the harness reports about the GPU, read from the CUDA runtime.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "tut/core/verify.hpp"  // Math

namespace tut {

struct DeviceInfo {
  int id = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  double clock_mhz = 0;       // peak SM clock
  double mem_clock_mhz = 0;   // peak memory clock
  int bus_width_bits = 0;
  std::size_t total_mem = 0, l2_bytes = 0;
  int runtime_version = 0, driver_version = 0;

  std::string cuda_version() const;     // the runtime, "13.0"
  double fp32_peak_gflops() const;      // see device_facts.hpp; 0 when unknown
  double tf32_peak_gflops() const;      // dense TF32 tensor cores (device_facts.hpp); 0 when unknown
  double fp64_peak_gflops() const;      // FP64 FMA units (device_facts.hpp); 0 when unknown
  double peak_gflops(Math m) const;     // the peak of the math a step computes in
  double dram_peak_gbps() const;        // 2 (DDR) x memory clock x bus width / 8
  std::string slug() const;
};

// Number of usable devices; 0 with `why` set when there is no GPU or no driver.
int cuda_device_count(std::string* why);
// Reads the properties of device `id` and makes it current.
DeviceInfo open_device(int id);
void print_device(std::ostream& os, const DeviceInfo& d);
// "name: ...", "slug: ...", one fact per line, for scripts (--device-info).
void print_device_facts(std::ostream& os, const DeviceInfo& d);

}  // namespace tut
