// The one error type of onnxtool's libraries; only cli/ turns it into exit codes and messages.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace onnxtool {

/// What went wrong, which decides the CLI's exit code (README, "Exit codes": 1 model failed, 2 bad usage
/// or unreadable input).
enum class ErrorKind {
  kUsage,     ///< bad flags or arguments (exit 2)
  kInput,     ///< unreadable or malformed input file, tensor or data (exit 2)
  kFailed,    ///< the model failed what was asked: check errors, tolerance, verification (exit 1)
  kInternal,  ///< a bug or resource failure in onnxtool itself (exit 2)
};

/// A parameter of a library call that an error is about or that would resolve it, by the name
/// the library's API gives it ("input_shape", "calib_data"), with the value given, if any ("x"
/// for one input's shape). Libraries never spell a command line's flags: cli/ words these.
struct Parameter {
  std::string name;
  std::string value;
};

/// Thrown by library code. `what()` is one line that names the file, node or tensor involved;
/// the parameter it is about and the ones that would resolve it come apart from it, for the
/// caller to word (the CLI: "--input-shape x: <what>", "(--inputs, --no-verify)").
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Error(ErrorKind kind, const std::string& message, Parameter about, std::vector<std::string> remedies = {})
      : std::runtime_error(message), kind_(kind), about_(std::move(about)), remedies_(std::move(remedies)) {}
  ErrorKind kind() const { return kind_; }
  /// The parameter the message is about (name empty: none).
  const Parameter& about() const { return about_; }
  /// Parameters that would resolve it, by name, in the order worth trying.
  const std::vector<std::string>& remedies() const { return remedies_; }

 private:
  ErrorKind kind_;
  Parameter about_;
  std::vector<std::string> remedies_;
};

/// A time bound ran out (the command's time limit, ONNXTOOL_TIME_LIMIT, verification's own
/// bound). Not an Error on purpose: library code that catches Error to try something else
/// (another input size, leaving a node unfolded) must not take it for a failed attempt. The CLI
/// exits 2.
class TimeLimitReached : public std::runtime_error {
 public:
  explicit TimeLimitReached(const std::string& message, std::vector<std::string> remedies = {})
      : std::runtime_error(message), remedies_(std::move(remedies)) {}
  /// Parameters that would change or lift the bound, as Error::remedies.
  const std::vector<std::string>& remedies() const { return remedies_; }

 private:
  std::vector<std::string> remedies_;
};

[[noreturn]] inline void throw_input_error(const std::string& message) {
  throw Error(ErrorKind::kInput, message);
}
[[noreturn]] inline void throw_usage_error(const std::string& message) {
  throw Error(ErrorKind::kUsage, message);
}

/// A bad value of parameter `about` (Error kUsage).
[[noreturn]] inline void throw_usage_error(Parameter about, const std::string& message) {
  throw Error(ErrorKind::kUsage, message, std::move(about));
}

}  // namespace onnxtool
