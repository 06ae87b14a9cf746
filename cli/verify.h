// The verification flags the writers share (optimize, convert, edit, extract), and how they
// report it: the rewritten model runs against the original on the runner before anything is
// written.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "verify/reference.h"
#include "verify/surgery.h"

namespace onnxtool::cli {

struct VerifyFlags {
  bool no_verify = false;
  std::string inputs_dir;
  std::vector<std::string> inputs;  ///< NAME=FILE
  uint64_t seed = 0;
  std::vector<std::string> input_ranges;  ///< NAME=LO,HI or LO,HI of random inputs
  double rtol = -1;  ///< < 0: the policy's
  double atol = -1;
  std::string device = "cpu";  ///< where the result runs (the original runs on the CPU)
  const CLI::Option* seed_option = nullptr;  ///< tells --seed given from the default
  /// The flags add_verify_flags added that choose how the result is verified (all but
  /// --no-verify), and any a command adds with add_verify_option.
  std::vector<std::string> names;
};

/// Adds --no-verify, --inputs (a folder of inputs; not with `inputs_folder` false, for extract
/// whose --inputs names tensors), --input, --seed, --input-range, --rtol, --atol and --device. Their help
/// names the command's default tolerances, `policies` (convert: rewrite, and float16 for
/// --to-fp16).
void add_verify_flags(CLI::App* sub, VerifyFlags& flags, const std::vector<verify::Tolerance>& policies,
                      bool inputs_folder = true);

/// Adds a command's own option that only matters to its verification (--input-shape where it
/// sizes random inputs), so that --no-verify refuses it with the others.
template <class T>
CLI::Option* add_verify_option(CLI::App* sub, VerifyFlags& flags, const std::string& name, T& value, const std::string& help) {
  flags.names.push_back(name);
  return sub->add_option(name, value, help);
}

/// With --no-verify, refuses the verification flags (flags.names) that were given (`given`:
/// the command line's options): they choose how the result is verified, and nothing runs.
/// Every writer (optimize, convert, edit, extract) refuses them alike, as flags that would be
/// ignored are refused.
void refuse_verify_flags_unused(const VerifyFlags& flags, const std::set<std::string>& given);

/// The verification inputs: the user's files, else random with `shapes` for symbolic dims
/// (given by `shape_flag`, which errors name). Refuses --seed with files (no random input left
/// to seed).
verify::VerifyInputs verify_inputs(const VerifyFlags& flags, const std::map<std::string, std::vector<int64_t>>& shapes,
                                   const std::string& shape_flag = "--input-shape");

/// The policy with the user's --rtol/--atol in place of its own.
verify::Tolerance tolerance(const VerifyFlags& flags, const verify::Tolerance& policy);

/// What a verification on random inputs cannot prove, said wherever one is reported (text, and
/// "note" in --json).
/// `real` names the flag that gives real samples ("--inputs DIR").
std::string random_inputs_note(const std::string& real = "--inputs DIR");
/// "note" in --json: random_inputs_note(real) where the inputs were random, else null.
nlohmann::json random_note_json(bool random, const std::string& real = "--inputs DIR");

/// Adds --input-range NAME=LO,HI (repeatable) to a command that makes random inputs.
CLI::Option* add_input_range_option(CLI::App* sub, std::vector<std::string>& ranges);

/// {"policy", "rtol", "atol"} for --json.
nlohmann::json tolerance_json(const verify::Tolerance& tolerance);

/// A verification's facts for --json; null without a reference (--no-verify).
nlohmann::json verify_json(const std::optional<verify::Reference>& reference, const verify::VerifyResult& result,
                           const verify::Tolerance& tolerance, double seconds);

/// "verified 2 outputs on random (seed 0): x=float32[1,3]: max abs error 1e-7 (rewrite tolerance
/// rtol 1e-4, atol 1e-5), 0.12 s", and the note of random inputs; without a reference
/// (--no-verify), "not verified (--no-verify)".
void print_verification(const std::optional<verify::Reference>& reference, const verify::VerifyResult& result,
                        const verify::Tolerance& tolerance, double seconds);

/// extract, edit: refuses (Error kFailed) a result whose outputs differ from the original's.
void refuse_mismatch(const verify::SurgeryCheck& check);

/// extract, edit: the run's facts for --json: inputs, tolerance, each output, ok; null when
/// nothing ran.
nlohmann::json surgery_json(const std::optional<verify::SurgeryCheck>& check, const verify::Tolerance& tolerance);

/// extract, edit: "verified 2 output(s) on random (seed 0): x=float32[1,3]: 2 exact (exact
/// tolerance)".
std::string surgery_summary(const verify::SurgeryCheck& check, const verify::Tolerance& tolerance);

}  // namespace onnxtool::cli
