// `onnxtool extract MODEL -o OUT --from A,B --to C,D`: the subgraph between named tensors,
// checked and run against the original before it is written.
#include <iostream>

#include "cli/common.h"
#include "cli/flags.h"
#include "cli/verify.h"
#include "cli/write_model.h"
#include "ir/error.h"
#include "ir/extract.h"
#include "ir/model_io.h"

namespace onnxtool::cli {
namespace {

struct ExtractOptions {
  std::string model;
  std::string output;
  std::vector<std::string> from;  ///< --from: the tensors that become the graph inputs
  std::vector<std::string> to;    ///< --to: the tensors that become the graph outputs
  std::vector<std::string> old_from;  ///< --inputs, the former name of --from
  std::vector<std::string> old_to;    ///< --outputs, the former name of --to
  std::vector<std::string> input_shapes;
  VerifyFlags check;
  bool json = false;
  std::set<std::string> given;
};

nlohmann::json io_list_json(const std::vector<ir::ValueInfo>& list) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& vi : list) {
    if (vi.value->is_initializer()) continue;
    arr.push_back({{"name", vi.value->name()}, {"type", (vi.type ? *vi.type : vi.value->type).to_string()}});
  }
  return arr;
}

std::string io_list_text(const std::vector<ir::ValueInfo>& list) {
  std::string out;
  for (const auto& vi : list)
    if (!vi.value->is_initializer())
      out += (out.empty() ? "" : ", ") + vi.value->name() + " " + (vi.type ? *vi.type : vi.value->type).to_string();
  return out;
}

int run_extract(const ExtractOptions& o) {
  if (o.from.empty()) throw_usage_error("--from is required: the tensors that become the graph inputs");
  if (o.to.empty()) throw_usage_error("--to is required: the tensors that become the graph outputs");
  if (o.output.empty()) throw_usage_error("-o OUT is required");
  refuse_overwriting_input(o.model, o.output);
  refuse_verify_flags_unused(o.check, o.given);
  if (o.given.count("--input-shape") && o.given.count("--input"))
    throw_usage_error("--input-shape sizes random verification inputs; with --input there are none");
  const auto shapes = parse_shapes("--input-shape", o.input_shapes);
  verify::VerifyInputs verify_in;
  if (!o.check.no_verify) verify_in = verify_inputs(o.check, shapes);
  const verify::Tolerance tol = tolerance(o.check, verify::kExactTolerance);

  auto loaded = ir::load_model(o.model);
  ir::check_output_paths(loaded.info, o.output, "", /*in_place=*/false);
  refuse_unrunnable(loaded.model, o.model);
  const ir::ExtractReport r = ir::extract_subgraph(loaded.model, o.from, o.to);

  ir::Model original = ir::load_model(o.model).model;
  const checker::WriteCheck gate = check_before_writing(loaded.model);
  std::optional<verify::SurgeryCheck> verified;
  if (!o.check.no_verify) {
    verified = verify::verify_extracted(original, loaded.model, verify_in, tol);
    refuse_mismatch(*verified);
  }
  const WrittenModel written = save_checked(gate, loaded.model, o.output);
  const ir::Graph& g = *loaded.model.graph;
  if (o.json) {
    print_json({{"output", o.output},
                {"inputs", io_list_json(g.inputs)},
                {"outputs", io_list_json(g.outputs)},
                {"nodes", {{"before", r.nodes_before}, {"after", r.nodes_after}}},
                {"initializers", {{"before", r.initializers_before}, {"after", r.initializers_after}}},
                {"model_bytes", saved_bytes(written.saved)},
                {"written", written_json(written)},
                {"verification", surgery_json(verified, tol)}});
    return kExitOk;
  }
  std::cout << "extracted " << r.nodes_after << " of " << r.nodes_before << " nodes, " << r.initializers_after << " of "
            << r.initializers_before << " initializers\n";
  std::cout << "inputs:  " << io_list_text(g.inputs) << "\n";
  std::cout << "outputs: " << io_list_text(g.outputs) << "\n";
  if (verified) std::cout << surgery_summary(*verified, tol) << "\n";
  else std::cout << "checked, not run (--no-verify)\n";
  print_wrote(o.output, written);
  return kExitOk;
}

}  // namespace

void register_extract(CLI::App& app, Action& action) {
  auto o = std::make_shared<ExtractOptions>();
  CLI::App* sub = app.add_subcommand("extract", "Cut out the subgraph between named tensors, verified against the original");
  sub->add_option("MODEL", o->model, "input model")->required();
  sub->add_option("-o,--output", o->output, "output model");
  sub->add_option("--from", o->from, "tensors that become the graph inputs (comma-separated; formerly --inputs)")->delimiter(',');
  sub->add_option("--to", o->to, "tensors that become the graph outputs (comma-separated; formerly --outputs)")->delimiter(',');
  // The former names keep their meaning here, tensor names: so no verification folder under
  // --inputs on extract (--input NAME=FILE gives files).
  add_old_name(sub, "--inputs", o->old_from)->delimiter(',');
  add_old_name(sub, "--outputs", o->old_to)->delimiter(',');
  add_verify_flags(sub, o->check, {verify::kExactTolerance}, false);
  add_verify_option(sub, o->check, "--input-shape", o->input_shapes,
                    "NAME=D1,D2,... sizes of the original's symbolic dims for random inputs");
  sub->add_flag("--json", o->json, "print one JSON document");
  add_model_run_flags(sub);
  sub->callback([&action, o, sub] {
    o->given = given_options(*sub);
    o->from.insert(o->from.begin(), o->old_from.begin(), o->old_from.end());
    o->to.insert(o->to.begin(), o->old_to.begin(), o->old_to.end());
    action = [o] {
      note_renamed("extract", o->given, {{"--inputs", "--from", ""}, {"--outputs", "--to", ""}});
      return run_extract(*o);
    };
  });
}

}  // namespace onnxtool::cli
