// `onnxtool edit MODEL -o OUT|--in-place`: rename inputs and outputs, set input dims, metadata;
// the result checked and, on input dims both models take, run against the original before it is
// written (a fixed dim changed to another size, or another rank, leaves none: checked alone).
#include <iostream>
#include <map>
#include <optional>

#include "cli/common.h"
#include "cli/flags.h"
#include "cli/verify.h"
#include "cli/write_model.h"
#include "ir/edit.h"
#include "ir/error.h"
#include "ir/model_io.h"

namespace onnxtool::cli {
namespace {

struct EditOptions {
  std::string model;
  std::string output;
  bool in_place = false;
  std::vector<std::string> rename_inputs;
  std::vector<std::string> rename_outputs;
  ModelDimsFlag input_shapes;  ///< --set-input-shape
  std::vector<std::string> set_metadata;
  std::vector<std::string> remove_metadata;
  std::string producer_name;
  std::string doc_string;
  bool fix_declarations = false;
  VerifyFlags check;
  bool json = false;
  std::set<std::string> given;
};

std::vector<std::pair<std::string, std::string>> assignments(const std::vector<std::string>& items, const char* flag) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& s : items) out.push_back(parse_assignment(s, flag));
  return out;
}

ir::EditRequest edit_request(const EditOptions& o) {
  ir::EditRequest r;
  r.rename_inputs = assignments(o.rename_inputs, "--rename-input");
  r.rename_outputs = assignments(o.rename_outputs, "--rename-output");
  // "a=b,c=d" would rename a to "b,c=d": one rename per flag.
  for (const auto* renames : {&r.rename_inputs, &r.rename_outputs})
    for (const auto& [from, to] : *renames)
      if (to.find_first_of(",=") != std::string::npos)
        throw_usage_error("rename " + from + "=" + to + ": a new name with ',' or '='; give each rename its own flag");
  for (const auto& [name, text] : assignments(o.input_shapes.values, "--set-input-shape"))
    r.input_shapes.emplace_back(name, ir::parse_dims("--set-input-shape " + name, text));
  r.set_metadata = assignments(o.set_metadata, "--set-metadata");
  r.remove_metadata = o.remove_metadata;
  if (o.given.count("--producer-name")) r.producer_name = o.producer_name;
  if (o.given.count("--doc-string")) r.doc_string = o.doc_string;
  r.fix_declarations = o.fix_declarations;
  return r;
}

/// The dims of each input whose shape the edit sets, as both the original and the edited
/// model take them (by the original's input names): a dim fixed in either keeps its size, one
/// free in both is 1. nullopt, with `why`, when a new dim contradicts the original's fixed one
/// (224 -> 320): the original cannot run on the new shape.
std::optional<std::map<std::string, std::vector<int64_t>>> shared_input_shapes(const ir::Model& original,
                                                                                const ir::EditRequest& request,
                                                                                std::string& why) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [given, dims] : request.input_shapes) {
    std::string name = given;  // the original's name, also when the edit renames the input (in a chain: back to its start)
    for (auto it = request.rename_inputs.rbegin(); it != request.rename_inputs.rend(); ++it)
      if (it->second == name) name = it->first;
    const ir::ValueInfo* input = nullptr;
    for (const auto& in : original.graph->inputs)
      if (in.value && in.value->name() == name) input = &in;
    // An input that is not there is edit_model's usage error.
    if (!input || !input->type || !input->type->shape) continue;
    if (input->type->shape->rank() != dims.size()) {
      why = "input '" + name + "' was " + input->type->to_string() + ", now of rank " + std::to_string(dims.size()) +
            " (the original cannot take the new shape)";
      return std::nullopt;
    }
    std::vector<int64_t> both;
    for (size_t k = 0; k < dims.size(); ++k) {
      const ir::Dim& was = input->type->shape->dims[k];
      const ir::Dim& now = dims[k];
      const bool was_fixed = was.kind == ir::Dim::Kind::kValue, now_fixed = now.kind == ir::Dim::Kind::kValue;
      if (was_fixed && now_fixed && was.value != now.value) {
        why = "input '" + name + "' dim " + std::to_string(k) + " was " + std::to_string(was.value) + ", now " +
              std::to_string(now.value) + " (the original cannot take the new shape)";
        return std::nullopt;
      }
      both.push_back(was_fixed ? was.value : now_fixed ? now.value : 1);
    }
    shapes[name] = both;
  }
  return shapes;
}

/// The original's name of each input the edit renames, to its new name. The renames apply in
/// order, so a chain (x=a, then a=b) takes the original's x to b.
std::map<std::string, std::string> input_renames(const ir::EditRequest& request) {
  std::map<std::string, std::string> renames;
  for (const auto& [from, to] : request.rename_inputs) {
    bool chained = false;
    for (auto& [original_name, current] : renames)
      if (current == from) {
        current = to;
        chained = true;
      }
    if (!chained) renames[from] = to;
  }
  return renames;
}

void print_edit_json(const EditOptions& o, const ir::EditReport& r, const std::optional<verify::SurgeryCheck>& verified,
                     const verify::Tolerance& tol, const WrittenModel& written) {
  print_json({{"output", o.output},
              {"renamed", r.renamed},
              {"input_shapes_set", r.shapes_set},
              {"declarations_updated", r.declarations_updated},
              {"declarations_cleared", r.declarations_cleared},
              {"metadata_set", r.metadata_set},
              {"metadata_removed", r.metadata_removed},
              {"model_bytes", saved_bytes(written.saved)},
              {"checked", true},
              {"written", written_json(written)},
              {"verification", surgery_json(verified, tol)}});
}

/// "edited: 1 renamed, 1 input shape(s) set", how the result was checked, and what was written.
void print_edited(const EditOptions& o, const ir::EditRequest& request, const ir::EditReport& r,
                  const std::optional<verify::SurgeryCheck>& verified, const verify::Tolerance& tol,
                  const std::string& cannot_run, const WrittenModel& written) {
  std::string done;
  const auto add = [&done](size_t n, const std::string& what) {
    if (n) done += (done.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(r.renamed, "renamed");
  add(r.shapes_set, "input shape(s) set");
  add(r.declarations_updated, "declared shape(s) re-inferred");
  add(r.declarations_cleared, "stale declared shape(s) cleared");
  add(r.metadata_set, "metadata set");
  add(r.metadata_removed, "metadata removed");
  if (request.producer_name) done += std::string(done.empty() ? "" : ", ") + "producer set";
  if (request.doc_string) done += std::string(done.empty() ? "" : ", ") + "doc string set";
  std::cout << "edited: " << done << "\n";
  if (verified) std::cout << surgery_summary(*verified, tol) << "\n";
  else if (o.check.no_verify) std::cout << "checked, not run against the original (--no-verify)\n";
  else std::cout << "checked, not run against the original: " << cannot_run << "\n";
  print_wrote(o.output, written);
}

int run_edit(EditOptions& o) {
  o.output = output_or_in_place(o.model, o.output, o.in_place);
  refuse_overwriting_input(o.model, o.output, o.in_place);
  const ir::EditRequest request = edit_request(o);
  if (request.rename_inputs.empty() && request.rename_outputs.empty() && request.input_shapes.empty() &&
      request.set_metadata.empty() && request.remove_metadata.empty() && !request.producer_name && !request.doc_string &&
      !request.fix_declarations)
    throw_usage_error("nothing to edit: pass --rename-input, --rename-output, --set-input-shape, --fix-declarations, "
                      "--set-metadata, --remove-metadata, --producer-name or --doc-string");
  refuse_verify_flags_unused(o.check, o.given);
  const verify::Tolerance tol = tolerance(o.check, verify::kExactTolerance);

  auto loaded = ir::load_model(o.model);
  refuse_in_place_elsewhere(o.model, o.output, o.in_place);
  ir::check_output_paths(loaded.info, o.output, "", o.in_place);
  ir::Model original = ir::load_model(o.model).model;
  // New input shapes: both models run on inputs of dims they both take, unless a new dim
  // contradicts the original's fixed one.
  std::string cannot_run;
  const auto shapes = shared_input_shapes(original, request, cannot_run);
  if (const std::string named = given_list(o.given, o.check.names); !shapes && !named.empty())
    throw_usage_error(named + ": the result is checked, not run against the original: " + cannot_run);
  verify::VerifyInputs verify_in;
  const bool run_both = !o.check.no_verify && shapes;
  if (run_both) verify_in = verify_inputs(o.check, *shapes);
  const ir::EditReport r = ir::edit_model(loaded.model, request);

  const checker::WriteCheck gate = check_before_writing(loaded.model);
  std::optional<verify::SurgeryCheck> verified;
  if (run_both) {
    verified = verify::verify_edited(original, loaded.model, input_renames(request), verify_in, tol);
    refuse_mismatch(*verified);
  }
  const WrittenModel written = save_checked(gate, loaded.model, o.output);
  if (o.json) print_edit_json(o, r, verified, tol, written);
  else print_edited(o, request, r, verified, tol, cannot_run, written);
  return kExitOk;
}

}  // namespace

void register_edit(CLI::App& app, Action& action) {
  auto o = std::make_shared<EditOptions>();
  CLI::App* sub = app.add_subcommand("edit", "Rename inputs and outputs, set input dims, edit metadata; verified before writing");
  sub->add_option("MODEL", o->model, "input model")->required();
  sub->add_option("-o,--output", o->output, "output model (required unless --in-place)");
  sub->add_flag("--in-place", o->in_place, "replace the input model with the result (-o may then be left out)");
  sub->add_option("--rename-input", o->rename_inputs, "OLD=NEW rename a graph input and every use (repeatable)");
  sub->add_option("--rename-output", o->rename_outputs, "OLD=NEW rename a graph output and every use (repeatable)");
  add_model_dims_flag(sub, o->input_shapes, "--set-input-shape",
                      "NAME=D1,D2,... set an input's dims in the model: sizes, symbols (N) or ?; shapes are then "
                      "re-inferred");
  sub->add_flag("--fix-declarations", o->fix_declarations,
                "replace declared shapes (outputs, value_info) that the model's nodes contradict with the inferred ones");
  sub->add_option("--set-metadata", o->set_metadata, "KEY=VALUE add or replace a metadata entry (repeatable)");
  sub->add_option("--remove-metadata", o->remove_metadata, "KEY remove a metadata entry (repeatable)");
  sub->add_option("--producer-name", o->producer_name, "set the producer name");
  sub->add_option("--doc-string", o->doc_string, "set the model's doc string");
  add_verify_flags(sub, o->check, {verify::kExactTolerance});
  sub->add_flag("--json", o->json, "print one JSON document");
  add_model_run_flags(sub);
  sub->callback([&action, o, sub] {
    o->given = given_options(*sub);
    action = [o] {
      take_old_dims("edit", o->given, o->input_shapes, "--set-input-shape", "sets");
      return run_edit(*o);
    };
  });
}

}  // namespace onnxtool::cli
