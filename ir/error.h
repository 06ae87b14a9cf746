// The one error type of onnxtool's libraries; only cli/ turns it into exit codes and messages.
#pragma once

#include <stdexcept>
#include <string>

namespace onnxtool {

/// What went wrong, which decides the CLI's exit code (README, "Exit codes": 1 model failed, 2 bad usage
/// or unreadable input).
enum class ErrorKind {
  kUsage,     ///< bad flags or arguments (exit 2)
  kInput,     ///< unreadable or malformed input file, tensor or data (exit 2)
  kFailed,    ///< the model failed what was asked: check errors, tolerance, verification (exit 1)
  kInternal,  ///< a bug or resource failure in onnxtool itself (exit 2)
};

/// Thrown by library code. `what()` is one line that names the file, node or tensor involved.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

/// A time bound ran out (--time-limit, ONNXTOOL_TIME_LIMIT, verification's own bound). Not an
/// Error on purpose: library code that catches Error to try something else (another input
/// size, leaving a node unfolded) must not take it for a failed attempt. The CLI exits 2.
class TimeLimitReached : public std::runtime_error {
 public:
  explicit TimeLimitReached(const std::string& message) : std::runtime_error(message) {}
};

[[noreturn]] inline void throw_input_error(const std::string& message) {
  throw Error(ErrorKind::kInput, message);
}
[[noreturn]] inline void throw_usage_error(const std::string& message) {
  throw Error(ErrorKind::kUsage, message);
}

}  // namespace onnxtool
