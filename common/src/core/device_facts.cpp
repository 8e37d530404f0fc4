#include "tut/core/device_facts.hpp"

namespace tut {

int fp32_lanes_per_sm(int major, int minor) {
  switch (major) {
    case 5: return 128;                                   // Maxwell
    case 6: return minor == 0 ? 64 : 128;                 // GP100: 64, GP10x: 128
    case 7: return 64;                                    // Volta, Turing
    case 8: return minor == 0 ? 64 : 128;                 // A100: 64, GA10x / Ada: 128
    case 9: return 128;                                   // Hopper
    case 10: case 11: case 12: return 128;                // Blackwell
    default: return 0;
  }
}

double fp32_peak_gflops(int sms, int lanes_per_sm, double clock_mhz) {
  return double(sms) * double(lanes_per_sm) * 2.0 * clock_mhz * 1e-3;
}

int fp64_lanes_per_sm(int major, int minor) {
  switch (major) {
    case 5: return 4;                                     // Maxwell
    case 6: return minor == 0 ? 32 : 4;                   // GP100: 32, GP10x: 4
    case 7: return minor == 0 ? 32 : (minor == 5 ? 2 : 4);  // Volta: 32, Turing: 2
    case 8: return minor == 0 ? 32 : 2;                   // A100: 32, GA10x / Ada: 2
    case 9: return 64;                                    // Hopper
    case 10: return 64;                                   // Blackwell data centre
    case 11: case 12: return 2;
    default: return 0;
  }
}

int tf32_flops_per_clk_per_sm(int major, int minor) {
  if (major == 8 && minor == 0) return 1024;
  if (major == 8 && (minor == 6 || minor == 9)) return 256;
  if (major == 9 && minor == 0) return 2048;
  return 0;
}

double tf32_peak_gflops(int sms, int flops_per_clk_per_sm, double clock_mhz) {
  return double(sms) * double(flops_per_clk_per_sm) * clock_mhz * 1e-3;
}

std::string gpu_slug(const std::string& name) {
  std::string out;
  bool dash = false;
  for (char ch : name) {
    const unsigned char c = static_cast<unsigned char>(ch);
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum) {
      if (dash && !out.empty()) out += '-';
      dash = false;
      out += static_cast<char>((c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c);
    } else {
      dash = true;
    }
  }
  return out.empty() ? "unknown-gpu" : out;
}

}  // namespace tut
