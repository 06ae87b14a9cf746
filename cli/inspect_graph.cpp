// `onnxtool inspect MODEL --graph OUT.dot|OUT.svg`: the main graph drawn by ir::graph_dot, laid
// out by Graphviz's dot for .svg.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli/common.h"
#include "cli/inspect.h"
#include "cli/subprocess.h"
#include "ir/edit.h"
#include "ir/extract.h"
#include "ir/graph_dot.h"
#include "ir/model_io.h"
#include "ir/output_file.h"
#include "ir/shape_inference.h"

namespace onnxtool::cli {
namespace {

const char* const kInstallDot =
    "Graphviz's dot is not on PATH: install graphviz (apt-get install graphviz) to write .svg; "
    "a .dot file needs nothing";

/// Seconds as given: 300, 0.5.
std::string seconds_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// "svg" or "dot" from OUT's extension (any case); "" for anything else.
std::string graph_format(const std::string& path) {
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return "";
  std::string ext = path.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == "svg" || ext == "dot" ? ext : "";
}

/// The `dot` program PATH leads to, "" when there is none.
std::string find_dot() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
    const std::string candidate = dir + "/dot";
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return "";
}

/// Runs `dot -Tsvg` on `text` and returns its SVG. Past `seconds` it is killed and
/// TimeLimitReached says so; a failure of dot is Error(kInput) with its first stderr line.
std::string run_dot(const std::string& dot, const std::string& text, double seconds, size_t nodes, const std::string& out) {
  ChildOptions run;
  run.input = text;
  run.seconds = seconds;
  const ChildResult r = run_child({dot, "-Tsvg"}, run);
  if (r.start_error) throw_usage_error(std::string(kInstallDot) + " (" + dot + ": " + std::strerror(r.start_error) + ")");
  if (r.interrupted)
    throw Error(ErrorKind::kInput, "--graph " + out + ": interrupted by signal " + std::to_string(r.interrupted) +
                                       "; nothing written");
  if (r.timed_out)
    throw TimeLimitReached("--graph " + out + ": dot did not lay out the graph (" + std::to_string(nodes) +
                           " nodes) within " + seconds_text(seconds) +
                           " s; cluster it (--cluster-depth), draw part of it (--from/--to), write .dot (no layout) or "
                           "raise --time-limit");
  const std::string first = r.err.substr(0, r.err.find('\n'));
  if (r.signal)
    throw_input_error("--graph " + out + ": dot died of signal " + std::to_string(r.signal) + (first.empty() ? "" : ": " + first));
  if (r.status != 0 || r.out.empty())
    throw_input_error("--graph " + out + ": dot -Tsvg failed (exit " + std::to_string(r.status) + ")" +
                      (first.empty() ? "" : ": " + first));
  return r.out;
}

}  // namespace

void check_graph_request(const GraphRequest& r) {
  const std::string format = graph_format(r.output);
  if (format.empty())
    throw_usage_error("--graph " + r.output + ": write .dot (Graphviz text) or .svg (laid out by Graphviz's dot)");
  if (format == "svg" && find_dot().empty()) throw_usage_error(kInstallDot);
  if (r.from.empty() != r.to.empty())
    throw_usage_error("--from and --to go together: the tensors that begin and end the part drawn");
  if (r.time_limit_given && format != "svg")
    throw_usage_error("--time-limit bounds the layout of an .svg by dot; a .dot is not laid out");
  if (!(r.time_limit > 0)) throw_usage_error("--time-limit " + seconds_text(r.time_limit) + ": seconds, more than 0");
}

GraphWritten write_graph(const std::string& model_path, const GraphRequest& r) {
  const std::string format = graph_format(r.output);
  auto loaded = ir::load_model(model_path);
  ir::check_not_input(loaded.info, r.output, "--graph " + r.output);
  // Opened before the work: a folder, a read-only file or a FIFO nothing reads at OUT is refused
  // at once, and nothing is put in place unless everything succeeds.
  ir::OutputFile file(r.output, "--graph " + r.output);
  ir::Model& model = loaded.model;
  if (!model.graph) throw_input_error(model_path + ": the model has no graph to draw");

  if (!r.input_shapes.empty()) {
    ir::EditRequest request;
    for (const auto& [name, dims] : r.input_shapes) {
      std::vector<ir::Dim> d;
      for (int64_t x : dims) d.push_back(ir::Dim::of(x));
      request.input_shapes.emplace_back(name, d);
    }
    ir::edit_model(model, request);
  } else {
    // A drawing shows what inference can tell; contradictions are `onnxtool check`'s to report.
    ir::DiagnosticSink ignored;
    ir::ShapeInferenceOptions inference;
    inference.check_declared = false;
    ir::infer_shapes(model, ignored, inference);
  }
  if (!r.from.empty()) {
    try {
      ir::extract_subgraph(model, r.from, r.to);
    } catch (const Error& e) {
      // extract's library names its tensors "inputs" and "outputs"; here they are --from and --to.
      const std::string& about = e.about().name;
      if (about != "inputs" && about != "outputs") throw;
      throw Error(e.kind(), e.what(), {about == "inputs" ? "from" : "to", e.about().value});
    }
  }

  ir::DotOptions options;
  options.cluster_depth = r.cluster_depth;
  ir::DotGraph dot = ir::graph_dot(model, options);
  const std::string bytes = format == "svg" ? run_dot(find_dot(), dot.text, r.time_limit, dot.nodes, r.output) : dot.text;
  file.write(bytes);
  file.sync();
  file.commit();
  return {format, dot.nodes, dot.edges, dot.clusters, bytes.size()};
}

}  // namespace onnxtool::cli
