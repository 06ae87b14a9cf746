// compare's report: each output's figures and gates, the layers with --per-layer, where the
// models ran, and the verdict; as text or JSON, with the failures in one line on stderr, and
// --report FILE as JSON or an HTML page with the error along the graph.
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/compare.h"
#include "cli/html_report.h"
#include "cli/printers.h"
#include "cli/verify.h"

namespace onnxtool::cli {
namespace {

/// The flag that sets a gate.
const char* gate_flag(runner::Gate::Kind kind) {
  switch (kind) {
    case runner::Gate::Kind::kMinCosine: return "--min-cosine";
    case runner::Gate::Kind::kMaxRelError: return "--max-rel-error";
    case runner::Gate::Kind::kMinSqnr: return "--min-sqnr";
    case runner::Gate::Kind::kMaxAbsError: return "--max-abs-error";
  }
  return "";
}


nlohmann::json worst_json(const std::string& name, const runner::WorstDiff& w) {
  const auto& d = w.diff;
  nlohmann::json j = {{"name", name}};
  if (!d.problem.empty()) {
    j["problem"] = d.problem;
    return j;
  }
  const runner::SampleStats& st = w.stats;
  j["elements"] = d.elements;
  j["max_abs_error"] = st.max_abs_error.value;
  j["max_rel_error"] = json_number(st.max_rel_error.value);
  j["mean_abs_error"] = st.mean_abs_error;
  j["cosine"] = st.cosine_meaningful ? nlohmann::json(st.cosine()) : nlohmann::json(nullptr);
  j["sqnr_db"] = json_number(st.sqnr_db());
  j["lowest_sample"] = {{"cosine", st.cosine_meaningful ? nlohmann::json(st.lowest_cosine.value) : nlohmann::json(nullptr)},
                        {"sqnr_db", json_number(st.lowest_sqnr_db.value)}};
  j["worst_samples"] = {{"max_abs_error", st.max_abs_error.sample}, {"max_rel_error", st.max_rel_error.sample},
                        {"cosine", st.lowest_cosine.sample}, {"sqnr_db", st.lowest_sqnr_db.sample}};
  j["beyond_tolerance"] = d.beyond;
  if (d.top1_rows >= 0) j["top1_agreement"] = d.top1_rows ? static_cast<double>(d.top1_agree) / static_cast<double>(d.top1_rows) : 1.0;
  nlohmann::json nf = nlohmann::json::array();
  for (const auto& m : d.nonfinite) nf.push_back({{"index", m.index}, {"a", std::to_string(m.a)}, {"b", std::to_string(m.b)}});
  j["nonfinite_mismatches"] = {{"count", d.nonfinite_count}, {"first", nf}};
  j["worst_sample"] = w.sample;
  return j;
}


/// The figures of one tensor; over several samples (named by `sample_names`) cosine and SQNR
/// are followed by the lowest single sample's.
std::string describe_worst(const runner::WorstDiff& w, const std::vector<std::string>& sample_names) {
  const auto& d = w.diff;
  if (!d.problem.empty()) return d.problem;
  const runner::SampleStats& st = w.stats;
  auto lowest = [&](const runner::SampleStats::Worst& x, int digits) {
    std::ostringstream s;
    s << std::setprecision(digits);
    if (st.samples > 1 && x.sample >= 0 && static_cast<size_t>(x.sample) < sample_names.size())
      s << " (lowest " << x.value << " on " << sample_names[static_cast<size_t>(x.sample)] << ")";
    return s.str();
  };
  std::ostringstream s;
  s << std::setprecision(3) << "max abs " << st.max_abs_error.value << ", max rel " << st.max_rel_error.value << ", mean abs "
    << st.mean_abs_error << ", cosine ";
  if (st.cosine_meaningful) s << std::setprecision(6) << st.cosine() << lowest(st.lowest_cosine, 6);
  else s << "n/a (" << (d.elements < 2 ? "one element" : "constant reference") << ")";
  s << ", SQNR " << std::setprecision(3) << st.sqnr_db() << " dB" << lowest(st.lowest_sqnr_db, 3);
  if (d.top1_rows > 0) s << ", top-1 " << d.top1_agree << "/" << d.top1_rows;
  if (d.nonfinite_count) {
    s << ", " << d.nonfinite_count << " NaN/Inf mismatches (first at " << d.nonfinite[0].index << ": " << d.nonfinite[0].a << " vs "
      << d.nonfinite[0].b << ")";
  }
  if (d.beyond) s << ", " << d.beyond << " of " << d.elements << " elements beyond tolerance";
  return s.str();
}


/// "--min-cosine 0.999: cosine 0.9981 on sample s2" (what a gate measured, for both outcomes).
std::string describe_gate(const GateVerdict& v, const std::vector<std::string>& sample_names) {
  std::string line = std::string(gate_flag(v.gate.kind)) + " " + significant(v.gate.threshold, 6) + ": ";
  if (!v.problem.empty()) return line + v.problem;
  line += v.result.by_rel_error ? "cosine not meaningful (one element or a constant reference), judged by max_rel_error as cosine "
                                : std::string(runner::gate_metric(v.gate.kind)) + " ";
  line += significant(v.result.measured, 6);
  if (v.result.sample >= 0) line += " on sample " + sample_names[static_cast<size_t>(v.result.sample)];
  return line;
}


/// The gates judged on output `i`.
nlohmann::json gates_json(const Comparison& c, size_t i) {
  nlohmann::json gates = nlohmann::json::array();
  for (const auto& v : c.verdicts) {
    if (v.output != i) continue;
    // Pooled figures (cosine, SQNR over every sample together) were measured on no one sample.
    const bool measured = v.problem.empty();
    const bool one_sample = measured && v.result.sample >= 0;
    gates.push_back({{"gate", gate_flag(v.gate.kind)},
                     {"metric", v.result.by_rel_error ? "max_rel_error" : runner::gate_metric(v.gate.kind)},
                     {"threshold", v.gate.threshold},
                     {"measured", measured ? json_number(v.result.measured) : nlohmann::json(nullptr)},
                     {"sample", one_sample ? nlohmann::json(c.sample_names[static_cast<size_t>(v.result.sample)]) : nlohmann::json(nullptr)},
                     {"pass", v.result.pass},
                     {"problem", json_or_null(v.problem)}});
  }
  return gates;
}

nlohmann::json per_layer_json(const runner::ModelComparison& r) {
  nlohmann::json worst_layers = nlohmann::json::array();
  for (size_t i : r.worst_layers) {
    auto j = worst_json(r.layers[i].tensor, r.layers[i].worst);
    j["node"] = r.layers[i].node;
    worst_layers.push_back(j);
  }
  const runner::LayerDiff* first_bad = r.first_beyond < 0 ? nullptr : &r.layers[static_cast<size_t>(r.first_beyond)];
  return {{"matched", r.layers.size()},
          {"first_beyond_tolerance", first_bad ? nlohmann::json({{"tensor", first_bad->tensor}, {"node", first_bad->node}})
                                               : nlohmann::json(nullptr)},
          {"worst", worst_layers}};
}

nlohmann::json side_json(const std::optional<runner::SidePlacement>& s) {
  return s ? placement_json(&s->device, s->placement) : nlohmann::json(nullptr);
}

nlohmann::json comparison_json(const CompareCliOptions& o, const Comparison& c) {
  const runner::ModelComparison& r = c.result;
  const bool expect = !o.expect_dir.empty();
  nlohmann::json outs = nlohmann::json::array();
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    auto j = worst_json(r.outputs[i], r.output_diffs[i]);
    j["gates"] = gates_json(c, i);
    outs.push_back(j);
  }
  nlohmann::json doc = {{"a", o.a}, {"b", expect ? nlohmann::json(nullptr) : nlohmann::json(o.b.empty() ? o.a : o.b)},
                        {"expect", expect ? nlohmann::json(o.expect_dir) : nlohmann::json(nullptr)},
                        {"device_a", c.options.device_a.to_string()},
                        {"device_b", expect ? nlohmann::json(nullptr) : nlohmann::json(c.options.device_b.to_string())},
                        {"samples", c.options.samples}, {"sample_names", c.sample_names}, {"rtol", o.rtol}, {"atol", o.atol},
                        {"tolerance_applied", c.tolerance_applies},
                        {"within_tolerance", r.within}, {"gates_passed", o.gates.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.failed_gates == 0)},
                        {"ok", c.ok()}, {"notes", r.notes}, {"outputs", outs},
                        {"random_inputs", c.random},
                        {"note", random_note_json(c.random)},
                        {"placement_a", side_json(r.placement_a)}, {"placement_b", side_json(r.placement_b)}};
  if (o.per_layer) doc["per_layer"] = per_layer_json(r);
  return doc;
}

/// Every matched intermediate tensor, in A's graph order, with its figures.
nlohmann::json layers_json(const runner::ModelComparison& r) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& l : r.layers) {
    auto j = worst_json(l.tensor, l.worst);
    j["node"] = l.node;
    layers.push_back(j);
  }
  return layers;
}

/// The per-output table of the HTML page.
void outputs_table(html::Page& page, const nlohmann::json& outputs) {
  std::vector<std::vector<html::Cell>> rows;
  for (const auto& out : outputs) {
    if (out.contains("problem")) {
      rows.push_back({html::Cell{out["name"].get<std::string>()}, html::Cell{out["problem"].get<std::string>(), nullptr, "bad"}});
      continue;
    }
    // The worst layers have no gates (none is judged on them).
    const nlohmann::json gates = out.value("gates", nlohmann::json::array());
    bool gates_pass = true;
    for (const auto& g : gates) gates_pass = gates_pass && g["pass"].get<bool>();
    html::Cell beyond = html::figure(out["beyond_tolerance"]);
    if (out["beyond_tolerance"].get<int64_t>() > 0) beyond.kind = "num bad";
    rows.push_back({html::Cell{out["name"].get<std::string>()}, html::figure(out["elements"]), html::figure(out["max_abs_error"]),
                    html::figure(out["max_rel_error"]), html::figure(out["mean_abs_error"]), html::figure(out["cosine"]),
                    html::figure(out["sqnr_db"]), beyond,
                    html::Cell{gates.empty() ? "-" : gates_pass ? "pass" : "FAIL", nullptr, gates_pass ? "" : "bad"}});
  }
  page.table({"output", "elements", "max abs error", "max rel error", "mean abs error", "cosine", "SQNR (dB)", "beyond tolerance", "gates"}, rows);
}

/// The HTML page: the summary, the error along the graph with the first tensor beyond
/// tolerance marked (--per-layer), the worst layers and the outputs.
std::string html_page(const nlohmann::json& data) {
  html::Page page("onnxtool compare: " + html::text_of(data["a"]) + " vs " +
                  (data["b"].is_null() ? "--expect " + html::text_of(data["expect"]) : html::text_of(data["b"])));
  page.heading("Summary");
  page.summary(data);
  if (data.contains("layers")) {
    const nlohmann::json& layers = data["layers"];
    html::LineChart sqnr{"SQNR of each intermediate tensor of B against A's (dB; infinite where they are equal)", "SQNR (dB)", {},
                         {html::Series{"SQNR (dB)", {}}}, {}, false};
    html::LineChart error{"Largest absolute and mean absolute error of each intermediate tensor", "error", {},
                          {html::Series{"max abs error", {}}, html::Series{"mean abs error", {}}}, {}, true};
    for (const auto& l : layers) {
      const nlohmann::json none;
      sqnr.rows.push_back(l["name"].get<std::string>());
      sqnr.series[0].values.push_back(l.contains("sqnr_db") ? l["sqnr_db"] : none);
      error.series[0].values.push_back(l.contains("max_abs_error") ? l["max_abs_error"] : none);
      error.series[1].values.push_back(l.contains("mean_abs_error") ? l["mean_abs_error"] : none);
    }
    error.rows = sqnr.rows;
    const nlohmann::json& first = data["per_layer"]["first_beyond_tolerance"];
    for (size_t i = 0; !first.is_null() && i < layers.size(); ++i)
      if (layers[i]["name"] == first["tensor"]) {
        const html::Marker m{
            i, "first beyond tolerance: tensor " + first["tensor"].get<std::string>() + " (node " + first["node"].get<std::string>() + ")",
            "diverge"};
        sqnr.markers.push_back(m);
        error.markers.push_back(m);
        break;
      }
    page.heading("Along the graph");
    page.paragraph(std::to_string(layers.size()) + " intermediate tensors both models have, in A's graph order. " +
                   (first.is_null() ? "None is beyond tolerance."
                                    : "The red dashed line marks the first beyond tolerance: tensor " + first["tensor"].get<std::string>() +
                                          " (node " + first["node"].get<std::string>() + ")."));
    page.line_chart(sqnr);
    page.line_chart(error);
    page.heading("Worst layers");
    page.paragraph("Lowest cosine first.");
    outputs_table(page, data["per_layer"]["worst"]);
  }
  page.heading("Outputs");
  outputs_table(page, data["outputs"]);
  return page.finish(data);
}

/// The intermediate tensors both models have: the first beyond tolerance, and the worst.
void print_layers(const Comparison& c) {
  const runner::ModelComparison& r = c.result;
  std::cout << r.layers.size() << " intermediate tensors matched\n";
  if (r.first_beyond >= 0) {
    const runner::LayerDiff& first_bad = r.layers[static_cast<size_t>(r.first_beyond)];
    std::cout << "first beyond tolerance: tensor " << first_bad.tensor << " (node " << first_bad.node
              << "): " << describe_worst(first_bad.worst, c.sample_names) << "\n";
  }
  std::cout << "worst layers:\n";
  for (size_t i : r.worst_layers)
    std::cout << "  " << r.layers[i].tensor << " (node " << r.layers[i].node << "): " << describe_worst(r.layers[i].worst, c.sample_names) << "\n";
}

void print_comparison_text(const CompareCliOptions& o, const Comparison& c) {
  const runner::ModelComparison& r = c.result;
  for (const auto& n : r.notes) std::cout << n << "\n";
  if (c.random)
    std::cout << "inputs: " << runner::random_inputs_description(c.options.feeds)
              << (c.options.samples > 1 ? ", the seed counting up per sample" : "") << "\nnote: " << random_inputs_note() << "\n";
  if (c.options.samples > 1) std::cout << c.options.samples << " samples; max errors of the worst sample, cosine and SQNR over all samples together, mean abs error averaged\n";
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    std::cout << "output " << r.outputs[i] << ": " << describe_worst(r.output_diffs[i], c.sample_names) << "\n";
    for (const auto& v : c.verdicts)
      if (v.output == i) std::cout << "  " << (v.result.pass ? "pass " : "FAIL ") << describe_gate(v, c.sample_names) << "\n";
  }
  if (o.per_layer) print_layers(c);
  if (r.placement_a) std::cout << "A: " << placement_line(&r.placement_a->device, r.placement_a->placement) << "\n";
  if (r.placement_b) std::cout << "B: " << placement_line(&r.placement_b->device, r.placement_b->placement) << "\n";
  if (c.tolerance_applies)
    std::cout << (r.within ? "within" : "beyond") << " tolerance (" << tolerance_text(o.rtol, o.atol) << ")\n";
  else
    std::cout << "tolerance not applied: gates decide (give --atol or --rtol to apply it too)\n";
  if (!o.gates.empty())
    std::cout << (c.failed_gates == 0 ? "gates passed" : "gates failed") << " (" << c.verdicts.size() - c.failed_gates << " of "
              << c.verdicts.size() << ")\n";
}

}  // namespace

void print_comparison(const CompareCliOptions& o, const Comparison& c) {
  if (o.json) print_json(comparison_json(o, c));
  else print_comparison_text(o, c);
}

void write_comparison_report(const CompareCliOptions& o, const Comparison& c) {
  if (o.report.empty()) return;
  ir::OutputFile file(o.report, "--report " + o.report);
  nlohmann::json doc = comparison_json(o, c);
  if (o.per_layer) doc["layers"] = layers_json(c.result);
  file.write(html::is_html_path(o.report) ? html_page(doc) : doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  file.commit();
}

void print_failures(const CompareCliOptions& o, const Comparison& c) {
  const runner::ModelComparison& r = c.result;
  std::vector<std::string> failures;
  for (const auto& v : c.verdicts)
    if (!v.result.pass) failures.push_back("output " + r.outputs[v.output] + ": " + describe_gate(v, c.sample_names) + " fails");
  for (size_t i = 0; c.tolerance_applies && i < r.outputs.size(); ++i)
    if (const runner::WorstDiff& w = r.output_diffs[i]; !w.diff.within())
      failures.push_back("output " + r.outputs[i] + ": beyond tolerance (" + tolerance_text(o.rtol, o.atol) + ") on sample " +
                         c.sample_names[static_cast<size_t>(w.sample)] + ": " + describe_worst(w, c.sample_names));
  if (failures.empty()) return;
  std::cerr << failures[0];
  if (failures.size() > 1)
    std::cerr << " (and " << failures.size() - 1 << " more failure" << (failures.size() > 2 ? "s" : "") << ")";
  std::cerr << "\n";
}

}  // namespace onnxtool::cli
