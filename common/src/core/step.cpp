// What a step is (core/step.hpp).
#include "tut/core/step.hpp"

#include <sstream>

namespace tut {

bool StepInfo::has_tag(const std::string& tag) const {
  std::istringstream words(tags ? tags : "");
  std::string w;
  while (words >> w) {
    if (w == tag) return true;
  }
  return false;
}

const char* math_key(Math m) {
  switch (m) {
    case Math::Tf32: return "tf32";
    case Math::Fp64: return "fp64";
    default: return "fp32";
  }
}

std::string check_declaration(const StepInfo& step, const char* part, std::initializer_list<Math> maths) {
  if (std::string(step.part ? step.part : "") != part) {
    return std::string("declared PART ") + (step.part ? step.part : "(none)") + " but built on the " + part +
           " harness";
  }
  for (Math m : maths) {
    if (m == step.math) return "";
  }
  return std::string("declared MATH ") + math_key(step.math) + ", which the " + part + " harness does not compute in";
}

}  // namespace tut
