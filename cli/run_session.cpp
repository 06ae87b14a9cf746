// `onnxtool run`: the run itself. Loads the model, makes its inputs, runs it once (returning
// values of subgraphs where --outputs names them, every value with --dump-dir), then times the
// --benchmark and --profile runs.
#include <algorithm>
#include <chrono>
#include <map>

#include "cli/progress.h"
#include "cli/run.h"
#include "ir/command_files.h"
#include "ir/diagnostic.h"
#include "ir/error.h"
#include "ir/extract.h"
#include "ir/output_file.h"
#include "ir/shape_inference.h"
#include "runner/cost.h"
#include "runner/feeds.h"

namespace onnxtool::cli {
namespace {

/// The model loaded and checked, the trace file claimed, and the session made.
void load_session(const RunOptions& o, ModelRun& run) {
  run.loaded = ir::load_model(o.model);
  refuse_unrunnable(run.loaded.model, o.model);
  if (!o.trace_file.empty()) {
    ir::check_not_input(run.loaded.info, o.trace_file, "--profile " + o.trace_file);
    ir::claim_output(o.trace_file, "--profile " + o.trace_file);
  }
  if (!o.report.empty()) {
    ir::check_not_input(run.loaded.info, o.report, "--report " + o.report);
    ir::claim_output(o.report, "--report " + o.report);
  }
  {
    // Static shapes let the session refuse, before running, a model whose tensors cannot fit in
    // memory. Contradictions are `onnxtool check`'s business, not a reason to refuse a run.
    ir::DiagnosticSink sink;
    ir::infer_shapes(run.loaded.model, sink);
  }
  runner::SessionOptions options;
  options.device = runner::DeviceSpec::parse(o.device);
  run.session = std::make_unique<runner::Session>(run.loaded.model, options);
}

/// The inputs: files, and random ones. Random inputs with free dims are sized as verification
/// sizes them (1, then 64, then 512), each tried by a plain run until one runs.
std::map<std::string, runner::Value> make_feeds(const RunOptions& o, runner::Session& session) {
  const runner::FeedOptions feed = feed_options(o.feed, o.feed.inputs_dir, o.feed.random);
  std::map<std::string, runner::Value> feeds;
  if (o.feed.random && runner::has_free_dims(session, feed)) {
    try {
      feeds = runner::feeds_that_run(session, feed, [&session](std::map<std::string, runner::Value>& f) { session.run(f); });
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kUsage || e.kind() == ErrorKind::kInternal) throw;
      throw Error(e.kind(), error_text("run", e) + " (random inputs with free dims of 1, 64 and 512 all failed; give " +
                                "the sizes with --input-shape NAME=D1,D2,...)");
    }
  } else {
    feeds = runner::load_feeds(session, feed);
  }
  // float32 files for a float16/bfloat16 input: cast, as compare casts them, and said. Any other
  // type mismatch stays the session's error.
  for (const auto* in : session.inputs()) {
    auto it = feeds.find(in->value->name());
    const ir::DataType want = in->type ? in->type->data_type() : ir::DataType::kUndefined;
    if (it == feeds.end() || !it->second.is_tensor() || it->second.tensor.dtype() != ir::DataType::kFloat ||
        (want != ir::DataType::kFloat16 && want != ir::DataType::kBFloat16))
      continue;
    it->second = runner::Value::of(runner::cast_float(it->second.tensor, want));
    info("run", "input '" + it->first + "' cast from float to the model's " + std::string(ir::data_type_name(want)));
  }
  return feeds;
}

/// --outputs naming values of If/Loop/Scan subgraphs. Such a value lives in the frame of one run
/// of its subgraph: the session's observer returns it when its subgraph ran once in the run (a
/// branch of an If of the main graph), and it is refused otherwise.
class SubgraphOutputs {
 public:
  SubgraphOutputs(ir::Model& model, const std::vector<std::string>& names) {
    for (const auto& name : names) {
      if (const ir::Value* v = model.graph->find(name); (v && !v->is_undefined()) || from_subgraphs_.count(name)) {
        if (v && !v->is_undefined()) main_names_.push_back(name);
        continue;
      }
      const std::string where = ir::subgraph_holding(model, name);
      if (where.empty()) {
        main_names_.push_back(name);  // the session names it unknown
        continue;
      }
      FromSubgraph& f = from_subgraphs_[name];
      f.where = where;
      // Sibling branches may both define the name: whichever runs gives the value.
      ir::for_each_graph(*model.graph, [&](ir::Graph& g) {
        if (&g == model.graph.get()) return;
        if (const ir::Value* v = g.find(name); v && !v->is_undefined() && v->producer()) captured_[v] = &f;
      });
    }
  }
  SubgraphOutputs(const SubgraphOutputs&) = delete;
  SubgraphOutputs& operator=(const SubgraphOutputs&) = delete;

  /// The names the session returns itself: values of the main graph, or names it refuses.
  const std::vector<std::string>& main_names() const { return main_names_; }
  bool any() const { return !captured_.empty(); }
  bool wants(const ir::Value& value) const { return captured_.count(&value) > 0; }
  void observe(const ir::Value& value, const runner::Value& produced) {
    if (const auto it = captured_.find(&value); it != captured_.end()) {
      ++it->second->runs;
      it->second->value = produced;
    }
  }

  /// The values of `names` in order: the session's `main` results and the captured ones.
  /// Refuses a subgraph value computed other than once.
  std::vector<runner::Value> results(std::vector<runner::Value> main, const std::vector<std::string>& names) const {
    for (const auto& [name, f] : from_subgraphs_) {
      if (f.runs == 0)
        throw_usage_error("--outputs: '" + name + "', a value of " + f.where +
                          ", was not computed in this run (a branch not taken, or a loop run 0 times)");
      if (f.runs > 1)
        throw_usage_error("--outputs: '" + name + "', a value of " + f.where + ", was computed " + std::to_string(f.runs) +
                          " times in this run, once per run of its subgraph; --dump-dir writes each");
    }
    if (from_subgraphs_.empty()) return main;
    std::vector<runner::Value> results;
    size_t k = 0;
    for (const auto& name : names)
      results.push_back(from_subgraphs_.count(name) ? from_subgraphs_.at(name).value : std::move(main[k++]));
    return results;
  }

 private:
  struct FromSubgraph {
    std::string where;  ///< "the subgraph 'then_branch' of node 'select' (If)"
    size_t runs = 0;
    runner::Value value;
  };
  std::map<std::string, FromSubgraph> from_subgraphs_;
  std::map<const ir::Value*, FromSubgraph*> captured_;
  std::vector<std::string> main_names_;
};

/// --profile times the --benchmark runs, or one run after the first (whose one-time work, such
/// as constants computed and weights packed, it leaves out).
void timed_runs(const RunOptions& o, ModelRun& run, const std::map<std::string, runner::Value>& feeds,
                const std::vector<std::string>& main_names) {
  runner::Session& session = *run.session;
  if (o.profile) {
    session.set_profiler(&run.profiler);
    if (o.benchmark == 0) session.run(feeds, main_names);
  }
  if (o.benchmark > 0) {
    report_step("benchmark runs", 0, o.benchmark);
    for (int i = 0; i < o.benchmark; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      session.run(feeds, main_names);
      run.times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      report_step("benchmark runs", i + 1, o.benchmark);  // outside the timed span
    }
    std::sort(run.times.begin(), run.times.end());
  }
  session.set_profiler(nullptr);
  run.device_id = session.device() ? session.device()->id : "cpu";
  if (o.profile) run.profile = runner::summarize(run.profiler, run.device_id);
}

/// --profile: each node's FLOPs on the shapes this run had (runner::model_cost, as `inspect
/// --cost` counts them), and on the CPU the rate of this runner's own GEMM on the run's threads
/// to compare the nodes' rates with. After the runs: the cost sets the model's input dims.
void profile_costs(const std::map<std::string, runner::Value>& feeds, ModelRun& run) {
  runner::CostOptions options;
  for (const auto& [name, value] : feeds)
    if (value.is_tensor()) options.input_shapes[name] = value.tensor.shape();
  try {
    const runner::ModelCost cost = runner::model_cost(run.loaded.model, options);
    const std::map<const ir::Node*, std::string> names = runner::node_display_names(run.profiler);
    for (const auto& n : cost.nodes)
      if (const auto it = names.find(n.node); n.flops && it != names.end()) run.node_flops.emplace(it->second, *n.flops);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal) throw;
    run.cost_unknown = e.what();
  }
  if (run.device_id == "cpu") run.gemm_peak = runner::measure_gemm_peak(run.session->threads());
}

}  // namespace

void run_model_once(const RunOptions& o, ModelRun& run) {
  load_session(o, run);
  runner::Session& session = *run.session;
  const std::map<std::string, runner::Value> feeds = make_feeds(o, session);
  run.names = o.outputs;
  SubgraphOutputs subgraphs(run.loaded.model, run.names);
  if (!o.dump_dir.empty()) run.dump = std::make_unique<ValueDump>(o.dump_dir, run.loaded, o.dump_limits);
  ValueDump* dump = run.dump.get();
  if (dump || subgraphs.any()) {
    runner::ObserverFilter wants;
    if (!dump) wants = [&subgraphs](const ir::Value& v) { return subgraphs.wants(v); };
    session.set_observer(
        [&](const ir::Value& value, const runner::Value& produced) {
          if (dump) dump->observe(value, produced);
          subgraphs.observe(value, produced);
        },
        /*subgraphs=*/true, wants);
  }
  report_step("running the model", 0, 1);
  auto main_results = session.run(feeds, subgraphs.main_names());
  session.set_observer(nullptr);
  if (dump) dump->finish();
  run.results = subgraphs.results(std::move(main_results), run.names);
  report_step("running the model", 1, 1);
  if (run.names.empty())
    for (const auto* vi : session.outputs()) run.names.push_back(vi->value->name());
  timed_runs(o, run, feeds, subgraphs.main_names());
  if (o.profile) profile_costs(feeds, run);
}

}  // namespace onnxtool::cli
