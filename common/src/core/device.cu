#include <cstdio>

#include "tut/core/args.hpp"
#include "tut/core/check.cuh"
#include "tut/core/device.cuh"
#include "tut/core/device_facts.hpp"

namespace tut {

std::string DeviceInfo::cuda_version() const {
  return std::to_string(runtime_version / 1000) + "." + std::to_string((runtime_version % 1000) / 10);
}

double DeviceInfo::fp32_peak_gflops() const {
  return tut::fp32_peak_gflops(sms, fp32_lanes_per_sm(cc_major, cc_minor), clock_mhz);
}

double DeviceInfo::tf32_peak_gflops() const {
  return tut::tf32_peak_gflops(sms, tf32_flops_per_clk_per_sm(cc_major, cc_minor), clock_mhz);
}

double DeviceInfo::fp64_peak_gflops() const {
  return tut::fp32_peak_gflops(sms, fp64_lanes_per_sm(cc_major, cc_minor), clock_mhz);  // the same formula
}

double DeviceInfo::peak_gflops(Math m) const {
  switch (m) {
    case Math::Tf32: return tf32_peak_gflops();
    case Math::Fp64: return fp64_peak_gflops();
    default: return fp32_peak_gflops();
  }
}

double DeviceInfo::dram_peak_gbps() const { return 2.0 * mem_clock_mhz * 1e6 * bus_width_bits / 8.0 / 1e9; }

std::string DeviceInfo::slug() const { return gpu_slug(name); }

int cuda_device_count(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why) *why = std::string(cudaGetErrorString(err)) + " (" + cudaGetErrorName(err) + ")";
    cudaGetLastError();  // clear the sticky-free error state
    return 0;
  }
  if (count == 0 && why) *why = "the driver reports no CUDA devices";
  return count;
}

DeviceInfo open_device(int id) {
  DeviceInfo d;
  d.id = id;
  TUT_CUDA_CHECK(cudaSetDevice(id));
  cudaDeviceProp prop{};
  TUT_CUDA_CHECK(cudaGetDeviceProperties(&prop, id));
  d.name = prop.name;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sms = prop.multiProcessorCount;
  d.total_mem = prop.totalGlobalMem;
  d.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  d.bus_width_bits = prop.memoryBusWidth;
  int khz = 0;
  TUT_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, id));
  d.clock_mhz = khz / 1000.0;
  TUT_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, id));
  d.mem_clock_mhz = khz / 1000.0;
  TUT_CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  TUT_CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
  return d;
}

void print_device(std::ostream& os, const DeviceInfo& d) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "device %d: %s, sm_%d%d, %d SMs @ %.0f MHz, %s, L2 %s, CUDA %s (driver supports %d.%d)\n",
                d.id, d.name.c_str(), d.cc_major, d.cc_minor, d.sms, d.clock_mhz, format_bytes(double(d.total_mem)).c_str(),
                format_bytes(double(d.l2_bytes)).c_str(), d.cuda_version().c_str(), d.driver_version / 1000,
                (d.driver_version % 1000) / 10);
  os << buf;
  const int lanes = fp32_lanes_per_sm(d.cc_major, d.cc_minor);
  if (lanes > 0) {
    std::snprintf(buf, sizeof buf,
                  "          FP32 FMA peak %.1f TFLOP/s (%d SMs x %d lanes x 2 FLOP x %.0f MHz), DRAM %.0f GB/s "
                  "(theoretical)\n",
                  d.fp32_peak_gflops() / 1e3, d.sms, lanes, d.clock_mhz, d.dram_peak_gbps());
  } else {
    std::snprintf(buf, sizeof buf, "          FP32 FMA peak unknown for sm_%d%d, DRAM %.0f GB/s (theoretical)\n",
                  d.cc_major, d.cc_minor, d.dram_peak_gbps());
  }
  os << buf;
  const int tf32 = tf32_flops_per_clk_per_sm(d.cc_major, d.cc_minor);
  if (tf32 > 0) {
    std::snprintf(buf, sizeof buf, "          TF32 tensor-core peak %.1f TFLOP/s (dense: %d SMs x %d FLOP/clock x %.0f MHz)\n",
                  d.tf32_peak_gflops() / 1e3, d.sms, tf32, d.clock_mhz);
    os << buf;
  }
}

void print_device_facts(std::ostream& os, const DeviceInfo& d) {
  os << "name: " << d.name << "\n"
     << "slug: " << d.slug() << "\n"
     << "compute_capability: " << d.cc_major << "." << d.cc_minor << "\n"
     << "sms: " << d.sms << "\n"
     << "clock_mhz: " << d.clock_mhz << "\n"
     << "fp32_peak_gflops: " << d.fp32_peak_gflops() << "\n"
     << "tf32_peak_gflops: " << d.tf32_peak_gflops() << "\n"
     << "dram_peak_gbps: " << d.dram_peak_gbps() << "\n"
     << "l2_bytes: " << d.l2_bytes << "\n"
     << "memory_bytes: " << d.total_mem << "\n"
     << "cuda: " << d.cuda_version() << "\n";
}

}  // namespace tut
