// quantize's report: what was quantized, what stayed float and why, and how accurate the result
// is on what samples; as text, JSON, a markdown file, or an HTML page with charts.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "cli/common.h"
#include "cli/html_report.h"
#include "cli/printers.h"
#include "cli/progress.h"
#include "cli/quantize.h"
#include "cli/verify.h"

namespace onnxtool::cli {
namespace {

/// Why a node stays float, the options that decide it named as flags.
std::string float_reason(const quant::FloatNode& f) {
  return f.options.empty() ? f.reason : f.reason + " (" + flags_for("quantize", f.options) + ")";
}

nlohmann::json kept_float_json(const quant::QuantizeReport& r) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& f : r.kept_float)
    list.push_back({{"node", f.node}, {"op_type", f.op_type}, {"tensor", f.tensor}, {"reason", float_reason(f)}});
  return list;
}

/// The nodes kept float, grouped by reason (one line per reason, a few node names each).
void print_kept_float(const quant::QuantizeReport& r) {
  if (r.kept_float.empty()) return;
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const auto& f : r.kept_float) {
    const std::string reason = float_reason(f);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == reason; });
    if (it == groups.end()) it = groups.insert(groups.end(), {reason, {}});
    it->second.push_back(f.node.empty() ? f.tensor : f.node);
  }
  std::cout << "kept float: " << r.kept_float.size() << " nodes\n";
  for (const auto& [reason, names] : groups) {
    std::cout << "  " << names.size() << " (";
    for (size_t i = 0; i < names.size() && i < 3; ++i) std::cout << (i ? ", " : "") << names[i];
    if (names.size() > 3) std::cout << ", ...";
    std::cout << "): " << reason << "\n";
  }
}

/// A figure for --json that is negative when not measured: null then.
nlohmann::json measured(double v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); }

/// A small output's relative error r = |a - b| / |a| (norms over the samples) as an SQNR, the
/// metric compare and optimize report too: -20 log10 r.
nlohmann::json sqnr_json(double rel) { return rel < 0 ? nlohmann::json(nullptr) : json_number(-20 * std::log10(rel)); }

/// The figures of the outputs, the quantized groups and the quantized nodes.
nlohmann::json outputs_json(const quant::QuantizeReport& report) {
  nlohmann::json outputs = nlohmann::json::array();
  for (const auto& e : report.outputs)
    outputs.push_back({{"name", e.name}, {"cosine", measured(e.cosine)}, {"sqnr_db", sqnr_json(e.rel_error)}});
  return outputs;
}

nlohmann::json groups_json(const quant::QuantizeReport& report) {
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : report.groups)
    groups.push_back({{"nodes", g.nodes}, {"int8_macs", g.int8_macs}, {"border_elements", g.border_elements},
                      {"border_nodes", g.border_nodes}, {"slow_convs", g.slow_convs},
                      {"gain", report.float_cost > 0 ? g.gain / report.float_cost : 0.0}});
  return groups;
}

nlohmann::json quantized_nodes_json(const quant::QuantizeReport& report) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : report.nodes)
    nodes.push_back({{"node", n.node}, {"op_type", n.op_type}, {"tensor", n.tensor}, {"min", n.range_min}, {"max", n.range_max},
                     {"scale", n.scale}, {"zero_point", n.zero_point}, {"sqnr_db", json_number(n.sqnr_db)},
                     {"cosine", json_number(n.cosine)}, {"added_noise_db", json_number(n.added_noise_db)}});
  return nodes;
}

/// The markdown --report FILE.md.
std::string markdown_report(const quant::QuantizeReport& r) {
  std::ostringstream out;
  out << "# onnxtool quantize report\n\n";
  out << "Quantized nodes: " << r.quantized_nodes << "; weights " << r.float_weight_bytes << " -> "
      << r.quantized_weight_bytes << " bytes; calibration samples: " << r.samples << " (NaN " << r.nan_values
      << ", Inf " << r.inf_values << ").\n\n";
  if (r.output_cosine >= 0)
    out << "Output cosine similarity to the reference (" << r.reference << "; lowest over the outputs, " << r.error_samples
        << " calibration samples): " << r.output_cosine << ".\n\n";
  if (!r.auto_excluded.empty()) {
    out << "Kept in float by --auto-exclude:\n\n";
    for (const auto& e : r.auto_excluded) out << "- " << e << "\n";
    out << "\n";
  }
  if (!r.kept_float.empty()) {
    out << "Nodes left float, and why:\n\n| node | op | output | reason |\n| --- | --- | --- | --- |\n";
    for (const auto& f : r.kept_float) out << "| " << f.node << " | " << f.op_type << " | " << f.tensor << " | " << float_reason(f) << " |\n";
    out << "\n";
  }
  out << "SQNR and cosine compare each quantized tensor with the reference (the error accumulated up to it); "
         "added noise is the noise-to-signal ratio it adds to that of the quantized tensors feeding it.\n\n";
  out << "| node | op | tensor | min | max | scale | zero point | SQNR (dB) | cosine | added noise (dB) |\n"
         "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  for (const auto& n : r.nodes)
    out << "| " << n.node << " | " << n.op_type << " | " << n.tensor << " | " << n.range_min << " | " << n.range_max
        << " | " << n.scale << " | " << n.zero_point << " | " << n.sqnr_db << " | " << n.cosine << " | " << n.added_noise_db
        << " |\n";
  return out.str();
}

/// The nodes quantized and kept float, in the order of `graph_order` (node name -> position in
/// the quantized model); a node it lacks (renamed by the rewrite) follows the row before it in
/// the report. Each row holds the figures of its row in `doc` ("nodes" or "kept_float").
nlohmann::json graph_rows(const nlohmann::json& doc, const std::map<std::string, size_t>& graph_order) {
  std::vector<std::pair<std::pair<size_t, size_t>, nlohmann::json>> rows;
  for (const char* list : {"nodes", "kept_float"}) {
    size_t key = 0;
    for (const auto& n : doc[list]) {
      const std::string name = n["node"].get<std::string>();
      if (const auto it = graph_order.find(name); it != graph_order.end()) key = it->second;
      nlohmann::json row = {{"node", name}, {"op_type", n["op_type"]}, {"tensor", n["tensor"]},
                            {"quantized", std::string(list) == "nodes"}};
      for (const char* figure : {"sqnr_db", "cosine", "reason"})
        row[figure] = n.contains(figure) ? n[figure] : nlohmann::json(nullptr);
      rows.push_back({{key, rows.size()}, row});
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  nlohmann::json out = nlohmann::json::array();
  for (auto& r : rows) out.push_back(std::move(r.second));
  return out;
}

/// The HTML --report FILE.html: the summary, SQNR and cosine along the graph with the nodes
/// kept float marked, the spread of the per-node errors, and the tables.
std::string html_report(const nlohmann::json& doc, const std::map<std::string, size_t>& graph_order) {
  nlohmann::json data = doc;
  data["graph_rows"] = graph_rows(doc, graph_order);
  const nlohmann::json& rows = data["graph_rows"];
  const bool activations = doc["mode"] == "static";
  html::Page page("onnxtool quantize report: " + doc["output"].get<std::string>());
  page.heading("Summary");
  page.summary(doc);
  html::LineChart sqnr{activations ? "SQNR of each quantized tensor against the reference (dB; the error accumulated up to it)"
                                   : "SQNR of each quantized weight (dB)",
                       "SQNR (dB)", {}, {html::Series{"SQNR (dB)", {}}}, {}, false};
  html::LineChart cosine{"Cosine similarity of each quantized tensor to the reference", "cosine", {}, {html::Series{"cosine", {}}}, {}, false};
  for (const auto& r : rows) {
    // A graph input quantized has no node: its tensor names the row.
    const std::string name = r["node"].get<std::string>().empty() ? r["tensor"].get<std::string>() : r["node"].get<std::string>();
    for (html::LineChart* c : {&sqnr, &cosine}) {
      c->rows.push_back(name);
      c->series[0].values.push_back(r["quantized"].get<bool>() ? r[c == &sqnr ? "sqnr_db" : "cosine"] : nlohmann::json(nullptr));
      if (!r["quantized"].get<bool>())
        c->markers.push_back({c->rows.size() - 1,
                              "kept float: " + name + " (" + r["op_type"].get<std::string>() + "): " + r["reason"].get<std::string>(),
                              "float"});
    }
  }
  page.heading("Along the graph");
  page.paragraph(std::to_string(doc["nodes"].size()) + " quantized nodes and " + std::to_string(doc["kept_float"].size()) +
                 " kept float (grey dashed lines; the reasons are listed under the chart and in the table below), in graph order.");
  page.line_chart(sqnr);
  if (activations) page.line_chart(cosine);
  page.heading("Outputs");
  std::vector<std::vector<html::Cell>> outputs;
  for (const auto& o : doc["outputs"])
    outputs.push_back({html::Cell{o["name"].get<std::string>()}, html::figure(o["cosine"]), html::figure(o["sqnr_db"])});
  if (outputs.empty()) page.paragraph("No output error was measured (no samples, or --no-verify).");
  else page.table({"output", "cosine", "SQNR (dB)"}, outputs);
  page.heading("Error distributions");
  page.paragraph("The report holds one error figure per output (above), not a distribution of each output's errors: "
                 "the histograms show the spread of the per-node figures over the quantized tensors instead.");
  std::vector<nlohmann::json> node_sqnr, node_noise;
  for (const auto& n : doc["nodes"]) {
    node_sqnr.push_back(n["sqnr_db"]);
    node_noise.push_back(n["added_noise_db"]);
  }
  page.histogram("Per-node SQNR over the quantized tensors", "SQNR (dB)", node_sqnr);
  if (activations) page.histogram("Per-node added noise over the quantized tensors", "added noise (dB, relative to the signal)", node_noise);
  page.heading("Kept float");
  std::vector<std::vector<html::Cell>> kept;
  for (const auto& f : doc["kept_float"])
    kept.push_back({html::Cell{f["node"].get<std::string>()}, html::Cell{f["op_type"].get<std::string>()}, html::Cell{f["tensor"].get<std::string>()},
                    html::Cell{f["reason"].get<std::string>()}});
  if (kept.empty()) page.paragraph("No candidate node stayed float.");
  else page.table({"node", "op", "output", "reason"}, kept);
  page.heading("Quantized nodes");
  std::vector<std::vector<html::Cell>> nodes;
  for (const auto& n : doc["nodes"])
    nodes.push_back({html::Cell{n["node"].get<std::string>()}, html::Cell{n["op_type"].get<std::string>()},
                     html::Cell{n["tensor"].get<std::string>()}, html::figure(n["scale"]),
                     html::figure(n["zero_point"]), html::figure(n["sqnr_db"]), html::figure(n["cosine"]), html::figure(n["added_noise_db"])});
  page.table({"node", "op", "tensor", "scale", "zero point", "SQNR (dB)", "cosine", "added noise (dB)"}, nodes);
  return page.finish(data);
}

/// The accuracy, on what samples.
void print_accuracy(const QuantizeCliOptions& o, const quant::QuantizeReport& report) {
  const std::string measured_on = std::to_string(report.error_samples) +
                                  (report.random_samples.empty() ? " calibration samples" : " samples, " + report.random_samples);
  if (report.output_cosine >= 0)
    std::cout << "output cosine similarity to " << report.reference << " on " << measured_on << ": " << report.output_cosine
              << " (--accuracy-target " << o.accuracy_target << ")\n";
  if (report.output_rel_error >= 0)
    std::cout << "largest relative error of a small output (at most " << quant::kSmallOutput << " elements): " << report.output_rel_error
              << "\n";
  if (const double score = report.output_score(); report.aimed_target > 0 && score >= 0 && score < report.aimed_target)
    std::cout << "reached --accuracy-target " << o.accuracy_target << " but not the " << report.aimed_target
              << " aimed at beyond it with any layers kept float: new inputs may score below the target\n";
}

/// The samples the accuracy was measured (or the model calibrated) on.
void print_samples(const QuantizeCliOptions& o, const quant::QuantizeReport& report) {
  if (!report.random_samples.empty())
    std::cout << "measured on " << report.samples << " samples, " << report.random_samples << "\nnote: " << random_inputs_note("--inputs DIR")
              << "\n";
  else if (report.samples && o.mode != "static")
    std::cout << "measured on " << report.samples << " samples\n";
  else if (o.no_verify)
    std::cout << "accuracy not measured (--no-verify): nothing says how far the result departs from the float model\n";
  else if (report.samples)
    std::cout << "calibrated on " << report.samples << " samples" << (report.nan_values || report.inf_values
                                                                          ? " (ignored " + std::to_string(report.nan_values) + " NaN, " +
                                                                                std::to_string(report.inf_values) + " Inf values)"
                                                                          : std::string())
              << "\n";
}

}  // namespace

/// Why the model is written unchanged, in words naming the options that change the outcome.
std::string unchanged_text(const quant::QuantizeReport& r, const QuantizeCliOptions& o) {
  auto figure = [](double v, int digits = 6) { return significant(v, digits); };
  switch (r.unchanged) {
    case quant::Unchanged::kNo: return "";
    case quant::Unchanged::kLargerThanHalf:
      return "the float16 model's weights (" + std::to_string(r.half_weight_bytes) + " bytes) are smaller than the result's (" +
             std::to_string(r.result_weight_bytes) + " bytes: what stays float is float32)";
    case quant::Unchanged::kSlowerEstimate:
      return "the estimated speed-up with integer kernels, " + figure(r.estimated_speedup, 3) + "x, is below " +
             figure(quant::kWorthSpeedup) + "x: within the estimate's error, not worth the quantization's (--op-types forces it)";
    case quant::Unchanged::kTimedOut:
    case quant::Unchanged::kMissedTarget: {
      std::string why = r.timed_out_after ? "the time limit ran out after " + std::to_string(r.timed_out_after) +
                                                " attempts of the accuracy search, before a quantization reached --accuracy-target " +
                                                figure(o.accuracy_target)
                                          : "no quantization reaches --accuracy-target " + figure(o.accuracy_target);
      if (r.missed_target >= 0) why += " (the best with a node quantized: " + figure(r.missed_target) + ")";
      if (r.blocking_outputs.empty()) return why;
      std::string scores, others;
      for (const auto& [name, score] : r.blocking_outputs) scores += (scores.empty() ? "" : ", ") + name + " " + figure(score);
      for (const auto& name : r.reaching_outputs) others += (others.empty() ? "" : ",") + name;
      return why + "; with every layer quantized, outputs " + scores + " miss it where " + others +
             " reach it: if the model is used for " + others + " only, judge just those with --accuracy-outputs " + others;
    }
    case quant::Unchanged::kAllKeptFloat:
      return "every candidate stays float (" + std::to_string(r.kept_float.size()) + " nodes; --report lists why)";
    case quant::Unchanged::kNoCandidate:
      return o.mode == "static"        ? "no supported op with calibrated float inputs"
             : o.mode == "weight-only" ? "no MatMul with a constant 2-D float weight"
                                       : "no MatMul or Gemm with a constant float weight (Conv only with --op-types Conv)";
  }
  return "";
}

nlohmann::json quantize_json(const QuantizeCliOptions& o, const quant::QuantizeReport& report, const std::string& unchanged,
                             uint64_t file_bytes, const WrittenModel& written) {
  return {{"output", o.output},
          {"mode", o.mode},
          {"format", o.format},
          {"reference", report.reference},
          {"quantized_nodes", report.quantized_nodes},
          {"changed", unchanged.empty()},
          {"unchanged", json_or_null(unchanged)},
          {"timed_out_after_attempts", report.timed_out_after},
          {"weight_bytes", {{"float", report.float_weight_bytes}, {"quantized", report.quantized_weight_bytes}}},
          {"file_bytes", file_bytes_json(file_bytes, written.saved)},
          {"written", written_json(written)},
          {"calibration", {{"samples", report.samples}, {"nan", report.nan_values}, {"inf", report.inf_values},
                           {"method", o.calib_method}, {"fell_back_to_minmax", report.calibration_fallback},
                           {"method_score", measured(report.calibration_scores.first)},
                           {"minmax_score", measured(report.calibration_scores.second)}}},
          {"opset", report.opset_to ? nlohmann::json{{"from", report.opset_from}, {"to", report.opset_to}} : nlohmann::json(nullptr)},
          {"cosine", measured(report.output_cosine)},
          {"sqnr_db", sqnr_json(report.output_rel_error)},
          {"error_samples", report.error_samples},
          {"random_samples", json_or_null(report.random_samples)},
          {"note", random_note_json(!report.random_samples.empty(), "--inputs DIR")},
          {"auto_excluded", report.auto_excluded},
          {"aimed_target", measured(report.aimed_target)},
          {"kept_float", kept_float_json(report)},
          {"outputs", outputs_json(report)},
          {"estimated_speedup", measured(unchanged.empty() ? report.estimated_speedup : -1)},
          {"groups", groups_json(report)},
          {"nodes", quantized_nodes_json(report)}};
}

void write_report(ir::OutputFile& file, const std::string& path, const quant::QuantizeReport& r, const nlohmann::json& doc,
                  const std::map<std::string, size_t>& graph_order) {
  const bool markdown = path.size() > 3 && path.substr(path.size() - 3) == ".md";
  // Through the safe writer: no fixed temporary name to plant a symlink at, a full disk is an
  // error, and nothing is replaced until the whole report is written.
  file.write(html::is_html_path(path) ? html_report(doc, graph_order)
             : markdown              ? markdown_report(r)
                                     : doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  file.commit();
}

void print_quantized(const QuantizeCliOptions& o, const quant::QuantizeReport& report, const std::string& unchanged,
                     uint64_t file_bytes, const WrittenModel& written) {
  if (!unchanged.empty()) {
    std::cout << "nothing quantized: " << unchanged << "\n";
    warning("quantize", o.output + " is written unchanged: " + unchanged);
    print_kept_float(report);
    print_sorted(written);
    std::cout << "wrote " << o.output << " unchanged\n";
    return;
  }
  std::cout << "quantized " << report.quantized_nodes << " nodes (" << o.mode << ", " << o.format << ")";
  if (report.float_weight_bytes)
    std::cout << "; weights " << human_bytes(static_cast<uint64_t>(report.float_weight_bytes)) << " -> "
              << human_bytes(static_cast<uint64_t>(report.quantized_weight_bytes)) << " ("
              << ratio_text(static_cast<double>(report.quantized_weight_bytes) / static_cast<double>(report.float_weight_bytes)) << "x)";
  std::cout << "\n";
  if (report.opset_to) std::cout << "moved the model from opset " << report.opset_from << " to " << report.opset_to << "\n";
  print_accuracy(o, report);
  print_kept_float(report);
  if (report.calibration_fallback)
    std::cout << "--calib-method " << o.calib_method << " ranges scored " << report.calibration_scores.first
              << " against the extremes' " << report.calibration_scores.second << ": used minmax ranges instead\n";
  if (report.estimated_speedup >= 0)
    std::cout << "estimated speed-up with integer kernels (onnxruntime CPU): " << std::setprecision(3) << report.estimated_speedup
              << "x over " << report.groups.size() << " quantized group" << (report.groups.size() == 1 ? "" : "s") << "\n"
              << std::setprecision(6);
  print_samples(o, report);
  std::cout << "file " << human_bytes(file_bytes) << " -> " << human_bytes(saved_bytes(written.saved)) << "\nwrote " << o.output << "\n";
}

}  // namespace onnxtool::cli
