#include "tut/core/verify.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <sstream>

namespace tut {

double reduction_tolerance(long long terms, double unit_roundoff) {
  const double nu = double(terms + 2) * unit_roundoff;
  if (nu >= 1.0) return INFINITY;  // no bound: this precision cannot sum that many terms
  return 2.0 * nu / (1.0 - nu);
}

const char* math_name(Math m) {
  switch (m) {
    case Math::Tf32: return "TF32";
    case Math::Fp64: return "FP64";
    default: return "FP32";
  }
}

double tf32_reduction_tolerance(long long terms) {
  const double gamma = reduction_tolerance(terms, 2.0 * kUnitRoundoffFp32) / 2.0;  // gamma_{L+2}(2^-23)
  if (!std::isfinite(gamma)) return INFINITY;
  const double rounded = (1.0 + kUnitRoundoffTf32) * (1.0 + kUnitRoundoffTf32);
  return 2.0 * (rounded * (1.0 + gamma) - 1.0);
}

double math_tolerance(Math m, long long terms) {
  switch (m) {
    case Math::Tf32: return tf32_reduction_tolerance(terms);
    case Math::Fp64: return reduction_tolerance(terms, 0x1p-53);
    default: return reduction_tolerance(terms);
  }
}

float to_tf32(float v) {
  if (!std::isfinite(v)) return v;  // cvt.rna keeps infinities and NaNs
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof bits);
  // Add half a TF32 unit in the last place (bit 12) to the magnitude, then drop the 13 low bits:
  // round to nearest, ties away from zero. A carry into the exponent is the correct rounding up.
  bits = (bits + 0x1000u) & 0xFFFFE000u;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

bool exact_in_tf32(const float* v, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (to_tf32(v[i]) != v[i]) return false;
  }
  return true;
}

VerifyResult verify_elements(std::size_t count, double tolerance, Match match,
                             const std::function<Element(std::size_t)>& element, const Locate& locate,
                             std::size_t max_report, double norm_tolerance) {
  VerifyResult r;
  r.match = match;
  r.tolerance = tolerance;
  r.norm_tolerance = norm_tolerance > 0 ? norm_tolerance : tolerance;
  r.checked = count;
  double diff2 = 0, ref2 = 0;
  bool any_err = false;
  for (std::size_t i = 0; i < count; ++i) {
    const Element e = element(i);
    const double bound = e.scale * tolerance;
    bool bad;
    double err;
    if (!std::isfinite(e.got)) {
      ++r.nonfinite;
      bad = !(e.got == e.want);  // only an identical infinity matches; NaN never does
      err = INFINITY;
    } else {
      err = std::fabs(e.got - e.want);
      bad = (match == Match::Exact) ? (e.got != e.want) : !(err <= bound);
      diff2 += err * err;
    }
    if (std::isfinite(e.want)) ref2 += e.want * e.want;
    if (err > r.max_abs_err) {
      r.max_abs_err = err;
      r.max_index = i;
      any_err = true;
    }
    if (bad) {
      ++r.mismatches;
      if (r.first.size() < max_report) r.first.push_back(Mismatch{i, locate(i, true), e.got, e.want, bound});
    }
  }
  r.max_where = locate(any_err ? r.max_index : 0, false);
  if (r.nonfinite > 0) {
    r.rel_err = INFINITY;
  } else {
    r.rel_err = (ref2 > 0) ? std::sqrt(diff2 / ref2) : (diff2 > 0 ? INFINITY : 0.0);
  }
  const bool norm_ok = (match == Match::Exact) || r.rel_err <= r.norm_tolerance;
  r.passed = (r.mismatches == 0) && norm_ok;
  return r;
}

std::string VerifyResult::summary() const {
  char buf[320];
  if (match == Match::Exact) {
    std::snprintf(buf, sizeof buf, "%s: exact match required; %zu of %zu elements differ (%zu not finite), "
                  "max |err| %.3g at (%s)",
                  passed ? "verified" : "FAILED", mismatches, checked, nonfinite, max_abs_err, max_where.c_str());
  } else {
    char tol[64];
    if (norm_tolerance > 0 && norm_tolerance != tolerance) {
      std::snprintf(tol, sizeof tol, "tol %.3g; per element %.3g", norm_tolerance, tolerance);
    } else {
      std::snprintf(tol, sizeof tol, "tol %.3g", tolerance);
    }
    std::snprintf(buf, sizeof buf, "%s: rel_err %.3g (%s), max |err| %.3g at (%s); %zu of %zu "
                  "elements over their bound (%zu not finite)",
                  passed ? "verified" : "FAILED", rel_err, tol, max_abs_err, max_where.c_str(),
                  mismatches, checked, nonfinite);
  }
  return buf;
}

std::string VerifyResult::details() const {
  std::ostringstream s;
  for (const auto& m : first) {
    char buf[240];
    if (match == Match::Exact) {
      std::snprintf(buf, sizeof buf, "  mismatch at (%s): got %.9g, want %.9g\n", m.where.c_str(), m.got, m.want);
    } else {
      std::snprintf(buf, sizeof buf, "  mismatch at (%s): got %.9g, want %.9g, |err| %.3g > bound %.3g\n",
                    m.where.c_str(), m.got, m.want, std::fabs(m.got - m.want), m.bound);
    }
    s << buf;
  }
  if (mismatches > first.size()) s << "  ... and " << (mismatches - first.size()) << " more\n";
  return s.str();
}

}  // namespace tut
