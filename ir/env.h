// Numbers taken from environment variables: checked like flags, never silently ignored.
#pragma once

#include <cstdint>
#include <string>

#include "ir/error.h"

namespace onnxtool::ir {

/// The byte count `text` of environment variable `name`: decimal digits only, at most 2^50.
/// Anything else ("abc", "-1", "1e30") throws Error(kUsage) naming the variable.
inline uint64_t env_bytes(const char* name, const char* text) {
  uint64_t n = 0;
  const std::string s(text);
  bool ok = !s.empty() && s.size() <= 16;
  for (char c : s) {
    if (c < '0' || c > '9') {
      ok = false;
      break;
    }
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  if (!ok || n > (uint64_t{1} << 50))
    throw_usage_error(std::string(name) + ": '" + s + "' is not a number of bytes (decimal digits, at most 2^50)");
  return n;
}

}  // namespace onnxtool::ir
