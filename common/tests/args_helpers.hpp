// What the flag tests of every family share: running a parser on a list of arguments, catching the
// one-line message it throws, and looking for a piece of it.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "tut/core/args.hpp"

namespace test {

// parse(argc, argv) on {"prog", args...}.
template <class Parse>
auto parse_list(Parse parse, std::initializer_list<const char*> args) {
  std::vector<const char*> argv{"prog"};
  argv.insert(argv.end(), args.begin(), args.end());
  return parse(static_cast<int>(argv.size()), argv.data());
}

// The message of the ArgError that parsing `args` raises ("" when none is raised).
template <class Parse>
std::string error_of(Parse parse, std::initializer_list<const char*> args) {
  try {
    parse_list(parse, args);
  } catch (const tut::ArgError& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace test
