// verify_extracted, verify_edited: the runs that check `extract`'s and `edit`'s results.
#include "verify/surgery.h"

#include <sstream>
#include <vector>

#include "ir/error.h"
#include "runner/compare.h"
#include "runner/session.h"

namespace onnxtool::verify {
namespace {

OutputCheck compare_values(const std::string& name, const runner::Value& want, const runner::Value& got,
                                   const Tolerance& tolerance) {
  OutputCheck c;
  c.name = name;
  c.type = want.describe();
  if (!want.is_tensor() || !got.is_tensor()) {
    c.exact = true;
    c.within = want.describe() == got.describe();
    if (!c.within) c.why = "was " + want.describe() + ", now " + got.describe();
    return c;
  }
  c.exact = tolerance.rtol == 0 && tolerance.atol == 0;
  c.diff = runner::compare_tensors(want.tensor, got.tensor, tolerance.rtol, tolerance.atol);
  c.within = c.diff.within();
  if (!c.within) {
    std::ostringstream why;
    if (!c.diff.problem.empty()) why << c.diff.problem << " (" << want.describe() << " became " << got.describe() << ")";
    else
      why << c.diff.beyond + c.diff.nonfinite_count << " of " << c.diff.elements << " elements differ, max abs error "
          << c.diff.max_abs << " (" << tolerance.name << ": rtol " << tolerance.rtol << ", atol " << tolerance.atol << ")";
    c.why = why.str();
  }
  return c;
}

/// Runs the result on `feeds`, bounded by the original's run, on the device asked for. The
/// original runs on the CPU runner (Reference does too), so that a device kernel's error cannot
/// pass as agreement. A result that does not run where the original did fails the check; it is
/// no usage error.
std::vector<runner::Value> run_result(ir::Model& result, const std::map<std::string, runner::Value>& feeds,
                                      const VerifyInputs& inputs, const Reference& reference) {
  runner::SessionOptions options;
  options.device = inputs.device;
  try {
    runner::Session session(result, options);
    reference.bound(session);
    return session.run(feeds);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal) throw e;
    throw Error(ErrorKind::kFailed, std::string("the result does not run where the original did: ") + e.what());
  }
}

}  // namespace

SurgeryCheck verify_extracted(ir::Model& original, ir::Model& extracted, const VerifyInputs& inputs,
                              const Tolerance& tolerance) {
  const Reference reference(original, inputs);
  std::vector<std::string> names;
  for (const auto& vi : extracted.graph->inputs)
    if (!vi.value->is_initializer()) names.push_back(vi.value->name());
  const size_t n_inputs = names.size();
  for (const auto& vi : extracted.graph->outputs) names.push_back(vi.value->name());
  runner::Session whole(original);
  reference.bound(whole);
  const std::vector<runner::Value> values = whole.run(reference.feeds(), names);

  std::map<std::string, runner::Value> feeds;
  for (size_t i = 0; i < n_inputs; ++i) feeds[names[i]] = values[i];
  const std::vector<runner::Value> got = run_result(extracted, feeds, inputs, reference);
  SurgeryCheck check;
  check.inputs = reference.inputs_description();
  check.random_inputs = reference.random_inputs();
  for (size_t i = n_inputs; i < names.size(); ++i)
    check.result.outputs.push_back(compare_values(names[i], values[i], got[i - n_inputs], tolerance));
  return check;
}

SurgeryCheck verify_edited(ir::Model& original, ir::Model& edited, const std::map<std::string, std::string>& input_renames,
                           const VerifyInputs& inputs, const Tolerance& tolerance) {
  const Reference reference(original, inputs);
  std::map<std::string, runner::Value> feeds;
  for (const auto& [name, value] : reference.feeds()) {
    const auto it = input_renames.find(name);
    feeds[it == input_renames.end() ? name : it->second] = value;
  }
  const std::vector<runner::Value> got = run_result(edited, feeds, inputs, reference);
  // The edited model's outputs under the original's names, in order: what Reference compares.
  std::map<std::string, runner::Tensor> by_name;
  const auto& outputs = original.graph->outputs;
  for (size_t i = 0; i < outputs.size() && i < got.size(); ++i)
    if (got[i].is_tensor()) by_name.emplace(outputs[i].value->name(), got[i].tensor);
  SurgeryCheck check;
  check.inputs = reference.inputs_description();
  check.random_inputs = reference.random_inputs();
  check.result = reference.compare(by_name, tolerance);
  return check;
}

}  // namespace onnxtool::verify
