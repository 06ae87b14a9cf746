// Verification flags and reports shared by the writers: optimize and convert, edit and extract.
#include "cli/verify.h"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "cli/common.h"
#include "cli/flags.h"
#include "ir/error.h"

namespace onnxtool::cli {

void add_verify_flags(CLI::App* sub, VerifyFlags& flags, const std::vector<verify::Tolerance>& policies, bool inputs_folder) {
  // "(default 0)" or "(default: rewrite 0.0001, float16 0.01)": each policy's default.
  auto defaults = [&](double verify::Tolerance::*which) {
    std::ostringstream s;
    s << "(default" << (policies.size() > 1 ? ":" : "");
    for (size_t i = 0; i < policies.size(); ++i) {
      s << (i ? ", " : " ");
      if (policies.size() > 1) s << policies[i].name << " ";
      s << policies[i].*which;
    }
    s << ")";
    return s.str();
  };
  sub->add_flag("--no-verify", flags.no_verify, "write without comparing the result with the original on the runner");
  if (inputs_folder)
    add_verify_option(sub, flags, "--inputs", flags.inputs_dir, "verify on this folder of inputs (default: seeded random inputs)");
  add_verify_option(sub, flags, "--input", flags.inputs, "NAME=FILE (.npy/.pb) verification input (repeatable)");
  flags.seed_option = add_verify_option(sub, flags, "--seed", flags.seed, "seed of the random verification inputs (default 0)")
                          ->check(number_in(0, kMaxSeed));
  flags.names.push_back("--input-range");
  add_input_range_option(sub, flags.input_ranges);
  add_verify_option(sub, flags, "--rtol", flags.rtol, "relative tolerance of verification " + defaults(&verify::Tolerance::rtol))
      ->check(number_in(0, 1e30));
  add_verify_option(sub, flags, "--atol", flags.atol,
                    "absolute tolerance of verification, times max(1, the output's largest magnitude) " +
                        defaults(&verify::Tolerance::atol))
      ->check(number_in(0, 1e30));
  add_verify_option(sub, flags, "--device", flags.device, "run the result on cpu (default), vulkan or vulkan:N to verify it (the original always runs on the CPU; not onnxruntime)");
}

CLI::Option* add_input_range_option(CLI::App* sub, std::vector<std::string>& ranges) {
  return sub->add_option("--input-range", ranges,
                         "NAME=LO,HI (or LO,HI for every input) values of random inputs: floats uniform in [LO, HI), "
                         "integers in [LO, HI], LO=HI that value (default: floats in [-1, 1), integers in [0, 9]; repeatable)");
}

std::string random_inputs_note(const std::string& real) {
  return "random inputs prove less than real data: they may not reach the values real inputs do (the range float16 "
         "must hold, a branch, a detector's peaks); " + real + " gives real samples, --input-range shapes the random ones";
}

nlohmann::json random_note_json(bool random, const std::string& real) {
  return random ? nlohmann::json(random_inputs_note(real)) : nlohmann::json(nullptr);
}

void refuse_verify_flags_unused(const VerifyFlags& flags, const std::set<std::string>& given) {
  if (!flags.no_verify) return;
  if (const std::string named = given_list(given, flags.names); !named.empty())
    throw_usage_error(named + ": they choose how the result is verified; --no-verify runs nothing");
}

verify::VerifyInputs verify_inputs(const VerifyFlags& flags, const std::map<std::string, std::vector<int64_t>>& shapes,
                                   const std::string& shape_flag) {
  const bool files = !flags.inputs_dir.empty() || !flags.inputs.empty();
  const std::string given = flags.inputs_dir.empty() ? "--input" : flags.inputs.empty() ? "--inputs" : "--inputs and --input";
  if (flags.seed_option && flags.seed_option->count() && files)
    throw_usage_error("--seed seeds random verification inputs; with " + given + " there are none");
  if (!flags.input_ranges.empty() && files)
    throw_usage_error("--input-range shapes random verification inputs; with " + given + " there are none");
  verify::VerifyInputs in;
  in.feeds.dir = flags.inputs_dir;
  for (const auto& s : flags.inputs) in.feeds.files.push_back(parse_assignment(s, "--input"));
  in.feeds.seed = flags.seed;
  in.feeds.flags = {"--input", "--inputs", "", shape_flag};  // verification inputs are random or all given
  for (const auto& [name, dims] : shapes)
    if (std::find(dims.begin(), dims.end(), 0) != dims.end())
      throw_usage_error(shape_flag + " " + name + ": a dim of 0 makes an empty tensor, and a verification on empty "
                        "tensors compares nothing; give every dim at least 1");
  in.feeds.shapes = shapes;
  for (const auto& r : flags.input_ranges) runner::add_input_range(in.feeds, r, "--input-range");
  in.device = runner::DeviceSpec::parse(flags.device);
  // Verification is of onnxtool's rewrite on the runner that checks it; onnxruntime would judge
  // itself as much as the rewrite.
  if (in.device.kind == runner::DeviceSpec::Kind::kOnnxruntime)
    throw_usage_error("--device " + flags.device + ": verification runs on cpu or vulkan; compare the result with "
                      "`onnxtool compare MODEL --device-a cpu --device-b onnxruntime` instead");
  return in;
}

verify::Tolerance tolerance(const VerifyFlags& flags, const verify::Tolerance& policy) {
  verify::Tolerance t = policy;
  if (flags.rtol >= 0 || flags.atol >= 0) t.name = "given";
  if (flags.rtol >= 0) t.rtol = flags.rtol;
  if (flags.atol >= 0) t.atol = flags.atol;
  return t;
}

nlohmann::json tolerance_json(const verify::Tolerance& tolerance) {
  return {{"policy", tolerance.name}, {"rtol", tolerance.rtol}, {"atol", tolerance.atol}};
}

nlohmann::json verify_json(const std::optional<verify::Reference>& reference, const verify::VerifyResult& result,
                           const verify::Tolerance& tolerance, double seconds) {
  if (!reference) return nullptr;
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& c : result.outputs) {
    nlohmann::json o{{"name", c.name}, {"type", c.type}, {"exact", c.exact}, {"within", c.within}};
    if (!c.exact)
      o.update({{"max_abs_error", c.diff.max_abs},
                {"max_rel_error", json_number(c.diff.max_rel)},
                {"mean_abs_error", c.diff.mean_abs},
                {"cosine", c.diff.cosine_meaningful ? nlohmann::json(c.diff.cosine) : nlohmann::json(nullptr)},
                {"sqnr_db", json_number(c.diff.sqnr_db)}});
    outputs.push_back(o);
  }
  return {{"inputs", reference->inputs_description()},
          {"random_inputs", reference->random_inputs()},
          {"note", random_note_json(reference->random_inputs())},
          {"tolerance", tolerance_json(tolerance)},
          {"outputs", outputs},
          {"ok", result.ok()},
          {"seconds", seconds}};
}

void print_verification(const std::optional<verify::Reference>& reference, const verify::VerifyResult& result,
                        const verify::Tolerance& tolerance, double seconds) {
  if (!reference) {
    std::cout << "not verified (--no-verify)\n";
    return;
  }
  double max_abs = 0;
  size_t exact = 0;
  for (const auto& c : result.outputs) {
    if (c.exact) ++exact;
    else max_abs = std::max(max_abs, c.diff.max_abs);
  }
  std::ostringstream s;
  s << "verified " << result.outputs.size() << " output(s) on " << reference->inputs_description() << ": ";
  if (exact) s << exact << " exact, ";
  s << "max abs error " << max_abs << " (" << tolerance.name << " tolerance rtol " << tolerance.rtol << ", atol "
    << tolerance.atol << "), " << std::fixed;
  s.precision(2);
  s << seconds << " s";
  if (reference->random_inputs()) s << "\nnote: " << random_inputs_note();
  std::cout << s.str() << "\n";
}

void refuse_mismatch(const verify::SurgeryCheck& check) {
  if (!check.result.ok())
    throw Error(ErrorKind::kFailed, "verification failed: " + check.result.first_failure() +
                                        "; nothing written (--no-verify writes it anyway)");
}

nlohmann::json surgery_json(const std::optional<verify::SurgeryCheck>& check, const verify::Tolerance& tolerance) {
  if (!check) return nullptr;
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& c : check->result.outputs) {
    nlohmann::json o{{"name", c.name}, {"type", c.type}, {"within", c.within}};
    if (c.diff.elements) o.update({{"max_abs_error", c.diff.max_abs}, {"elements_differing", c.diff.beyond + c.diff.nonfinite_count}});
    outputs.push_back(o);
  }
  return {{"inputs", check->inputs},
          {"random_inputs", check->random_inputs},
          {"note", random_note_json(check->random_inputs)},
          {"tolerance", tolerance_json(tolerance)},
          {"outputs", outputs},
          {"ok", check->result.ok()}};
}

std::string surgery_summary(const verify::SurgeryCheck& check, const verify::Tolerance& tolerance) {
  size_t identical = 0;
  double max_abs = 0;
  for (const auto& c : check.result.outputs) {
    if (c.diff.max_abs == 0 && c.within) ++identical;
    max_abs = std::max(max_abs, c.diff.max_abs);
  }
  std::ostringstream s;
  s << "verified " << check.result.outputs.size() << " output(s) on " << check.inputs << ": " << identical
    << " identical";
  if (identical < check.result.outputs.size()) s << ", max abs error " << max_abs;
  s << " (" << tolerance.name << " tolerance)";
  if (check.random_inputs) s << "\nnote: " << random_inputs_note();
  return s.str();
}

}  // namespace onnxtool::cli
