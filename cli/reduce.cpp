// `onnxtool reduce MODEL -o OUT --command CMD | --compare-expect DIR`: shrinks a model that makes
// something fail to a small subgraph that still fails (a topological bisection, then delta
// debugging over the nodes left).
#include <regex.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "checker/checker.h"
#include "cli/common.h"
#include "cli/flags.h"
#include "cli/subprocess.h"
#include "cli/printers.h"
#include "cli/progress.h"
#include "cli/verify.h"
#include "cli/write_model.h"
#include "ir/command_files.h"
#include "ir/diagnostic.h"
#include "ir/error.h"
#include "ir/extract.h"
#include "ir/model_io.h"
#include "ir/output_file.h"
#include "ir/shape_inference.h"
#include "runner/compare.h"
#include "runner/feeds.h"
#include "runner/session.h"
#include "runner/tensor_io.h"

namespace onnxtool::cli {
namespace {

struct ReduceOptions {
  std::string model;
  std::string output;
  std::string inputs_out;  ///< --inputs-out: the result's input values
  std::string log;
  std::string command;         ///< --command: the predicate as a shell command
  std::string verify;          ///< --verify: 'optimize|convert ARGS', its verification must fail
  std::string crash;           ///< --crash: 'COMMAND ARGS', an onnxtool command that must crash
  std::string fails_when;      ///< --fails-when: a regex over the command's stdout+stderr
  double command_timeout = 60;
  std::string compare_expect;  ///< --compare-expect: the folder of reference values
  double rtol = 1e-3, atol = 1e-5;  ///< compare --expect's defaults (docs/cli.md)
  FeedFlags feed;  ///< --input, --seed, --input-shape, --input-range (random for the rest)
  int max_steps = 500;
  double time_limit = 0;  ///< seconds; 0: none
  bool json = false;
  std::set<std::string> given;
};

// --- values

/// The value files of `values` in DIR, `<safe name>.npy` (.pb where .npy cannot hold the value),
/// written all or none.
void write_value_files(const std::string& dir, const std::string& what,
                       const std::vector<std::pair<std::string, const runner::Value*>>& values) {
  ir::OutputDir folder(dir, what);
  runner::FileStems stems;
  std::vector<std::unique_ptr<ir::OutputFile>> files;
  for (const auto& [name, value] : values) {
    const std::string stem = stems.claim(name);
    const bool npy = value->is_tensor() && runner::npy_holds(value->tensor.dtype());
    auto file = std::make_unique<ir::OutputFile>(folder, stem + (npy ? ".npy" : ".pb"), what);
    if (npy) runner::write_npy(*file, value->tensor);
    else runner::write_pb(*file, *value, name);
    files.push_back(std::move(file));
  }
  for (auto& f : files) f->commit(/*durable=*/false);
}

/// --compare-expect DIR: the reference value of a tensor, found through DIR/index.json (what
/// `run --dump-dir` writes: safe names can collide, the index says which file is whose) or as
/// DIR/<safe name>.npy/.pb. Read once each.
class References {
 public:
  explicit References(std::string dir) : dir_(std::move(dir)) {
    if (!std::filesystem::is_directory(dir_)) throw_usage_error("--compare-expect " + dir_ + ": not a directory");
    const std::string index_path = (std::filesystem::path(dir_) / "index.json").string();
    if (!std::filesystem::exists(index_path)) return;
    std::ifstream in(index_path);
    nlohmann::json index;
    try {
      in >> index;
    } catch (const std::exception& e) {
      throw_input_error("--compare-expect " + index_path + ": not JSON (" + one_line(e.what()) + ")");
    }
    if (index.contains("tensors") && index["tensors"].is_object())
      for (const auto& [name, entry] : index["tensors"].items()) {
        // A value the dump skipped (past its limits, or no file format for it) has no file: no
        // reference then, rather than another tensor's file of the same safe name.
        const bool has_file = entry.is_object() && entry.contains("file") && entry["file"].is_string();
        files_[name] = has_file ? (std::filesystem::path(dir_) / entry["file"].get<std::string>()).string() : "";
      }
  }

  /// The reference of `name`, or nullptr when DIR has none.
  const runner::Value* find(const std::string& name) {
    if (auto it = cache_.find(name); it != cache_.end()) return it->second ? &*it->second : nullptr;
    std::string path;
    if (auto it = files_.find(name); it != files_.end()) path = it->second;
    else path = runner::find_reference_file(dir_, runner::safe_file_name(name), std::nullopt).path;
    std::optional<runner::Value>& slot = cache_[name];
    if (!path.empty() && std::filesystem::exists(path)) slot = runner::read_value_file(path, ir::TypeInfo{});
    return slot ? &*slot : nullptr;
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::map<std::string, std::string> files_;
  std::map<std::string, std::optional<runner::Value>> cache_;
};

/// The model under reduction run once on the runner, every value of its main graph kept (what
/// `run --dump-dir` writes, here in memory): the candidates' inputs and the types shape
/// inference leaves unknown.
std::map<std::string, runner::Value> record_values(ir::Model& model, const ReduceOptions& o) {
  {
    ir::DiagnosticSink ignored;  // contradictions are `onnxtool check`'s business
    ir::infer_shapes(model, ignored);
  }
  runner::Session session(model);
  runner::FeedOptions feed = feed_options(o.feed, "", /*random=*/true);
  feed.flags = {"--input", "", "", "--input-shape"};
  std::map<std::string, runner::Value> values;
  session.set_observer([&values](const ir::Value& v, const runner::Value& produced) { values[v.name()] = produced; });
  std::map<std::string, runner::Value> feeds;
  const auto run = [&](std::map<std::string, runner::Value>& f) {
    values.clear();  // an attempt that failed half way leaves nothing
    session.run(f);
  };
  try {
    if (runner::has_free_dims(session, feed)) {
      feeds = runner::feeds_that_run(session, feed, run);
    } else {
      feeds = runner::load_feeds(session, feed);
      run(feeds);
    }
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kUsage) throw;
    throw Error(ErrorKind::kInput, "the model does not run on the reference runner, so its values cannot be recorded: " +
                                       one_line(e.what()));
  }
  session.set_observer(nullptr);
  for (auto& [name, v] : feeds) values[name] = v;
  return values;
}

// --- candidates

/// A node that only holds a value (Constant): the search leaves it to the nodes that read it.
bool is_constant(const ir::Node& n) {
  return n.op_type == "Constant" && (n.domain.empty() || n.domain == "ai.onnx") && n.inputs().empty();
}

/// A subset of the main graph's nodes as a model of its own.
struct Candidate {
  ir::LoadedModel loaded;
  std::vector<size_t> nodes;         ///< positions in the sorted main graph, Constants included
  std::vector<std::string> inputs;   ///< in order of first use
  std::vector<std::string> outputs;
};

/// The output of a --command run kept for --fails-when and the crash verdict (the rest is read
/// and dropped).
constexpr size_t kOutputLimit = size_t{64} << 20;

/// How a --command run is judged: its exit (--command), an onnxtool command's verification
/// failing (--verify: exit 1) or that command crashing (--crash: a signal or an internal error).
enum class Verdict { kExit, kVerifyFails, kCrashes };

/// `s` quoted for /bin/sh.
std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// The path of this onnxtool binary, for --verify and --crash.
std::string own_binary() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw_input_error("cannot find onnxtool's own binary (/proc/self/exe): " + ec.message());
  return self.string();
}

/// The commands whose first argument is the model and that write a model with -o.
const std::set<std::string>& writing_commands() {
  static const std::set<std::string> names = {"optimize", "convert", "quantize", "extract", "edit"};
  return names;
}

/// --verify 'optimize|convert ARGS' and --crash 'COMMAND ARGS' as a shell command over {model},
/// {inputs} and {out}: onnxtool COMMAND {model} [-o {out}] [--inputs {inputs}] ARGS. --verify's
/// command verifies on the candidate's recorded inputs unless ARGS choose its inputs.
std::string onnxtool_command(const std::string& flag, const std::string& spec, bool verify) {
  std::istringstream words(spec);
  std::string command, rest, word;
  words >> command;
  std::getline(words, rest);
  if (command.empty()) throw_usage_error(flag + " needs an onnxtool command: " + flag + " '" + (verify ? "optimize" : "convert --opset 13") + "'");
  if (verify && command != "optimize" && command != "convert")
    throw_usage_error(flag + " '" + spec + "': the command that verifies its result is optimize or convert, not " + command);
  static const std::set<std::string> model_first = {"check", "optimize", "convert", "quantize", "run", "inspect",
                                                    "extract", "edit", "compare"};
  if (!model_first.count(command))
    throw_usage_error(flag + " '" + spec + "': " + command + " is not an onnxtool command that reads a model");
  // exec: the shell becomes onnxtool, whose end by a signal is then seen as such.
  std::string cmd = "exec " + shell_quoted(own_binary()) + " " + command + " {model}";
  if (writing_commands().count(command)) cmd += " -o {out}";
  bool chooses_inputs = false;
  for (std::istringstream args(rest); args >> word;)
    if (word.rfind("--input", 0) == 0 || word == "--random" || word == "--no-verify") chooses_inputs = true;
  if (verify && !chooses_inputs) cmd += " --inputs {inputs}";
  return cmd + rest;
}

/// --fails-when's pattern: a POSIX extended regular expression (the syntax of `grep -E`),
/// matched line by line as grep does (^ and $ at line ends; NUL bytes count as line ends).
class OutputPattern {
 public:
  explicit OutputPattern(const std::string& pattern) {
    const int rc = regcomp(&re_, pattern.c_str(), REG_EXTENDED | REG_NEWLINE | REG_NOSUB);
    if (rc != 0) {
      char why[256];
      regerror(rc, &re_, why, sizeof why);
      throw_usage_error("--fails-when '" + pattern + "': not a regular expression (" + why + ")");
    }
  }
  ~OutputPattern() { regfree(&re_); }
  OutputPattern(const OutputPattern&) = delete;
  OutputPattern& operator=(const OutputPattern&) = delete;

  bool found_in(std::string text) const {
    std::replace(text.begin(), text.end(), '\0', '\n');
    return regexec(&re_, text.c_str(), 0, nullptr, 0) == 0;
  }

 private:
  regex_t re_;
};

/// Reduction state shared by the steps: the options, the recorded and reference values.
class Reducer {
 public:
  Reducer(const ReduceOptions& o, std::map<std::string, runner::Value> recorded, References* references)
      : o_(o), recorded_(std::move(recorded)), references_(references) {
    if (!o.fails_when.empty()) fails_when_ = std::make_unique<OutputPattern>(o.fails_when);
    if (!o.verify.empty()) verdict_ = Verdict::kVerifyFails;
    if (!o.crash.empty()) verdict_ = Verdict::kCrashes;
  }

  /// The value a candidate's input `name` is fed: with --compare-expect, DIR's when it has one;
  /// else (and for the graph inputs, which a dump does not hold) the recorded run's.
  const runner::Value* input_value(const std::string& name) {
    if (references_)
      if (const runner::Value* v = references_->find(name)) return v;
    auto it = recorded_.find(name);
    return it == recorded_.end() ? nullptr : &it->second;
  }

  /// The model of the nodes at `chosen` (positions in the sorted main graph) and the Constants
  /// they read, or nullptr and `why` when it cannot be made or fails the checker.
  std::unique_ptr<Candidate> build(const std::vector<size_t>& chosen, std::string& why) {
    auto c = std::make_unique<Candidate>();
    c->loaded = ir::load_model(o_.model);
    ir::Model& model = c->loaded.model;
    refuse_unrunnable(model, o_.model);  // the same topological order as the recorded run's
    ir::Graph& g = *model.graph;
    std::vector<ir::Node*> nodes;
    std::unordered_map<const ir::Node*, size_t> position;
    for (const auto& n : g.nodes()) {
      position[n.get()] = nodes.size();
      nodes.push_back(n.get());
    }
    // A Constant goes with the nodes that read it, as an initializer would: alone it computes
    // nothing, and a Constant whose value is wrong shows in its readers' outputs.
    std::vector<size_t> kept = chosen;
    for (size_t i : chosen) {
      std::vector<ir::Value*> reads(nodes[i]->inputs().begin(), nodes[i]->inputs().end());
      for (ir::Value* v : g.implicit_inputs(nodes[i])) reads.push_back(v);
      for (const ir::Value* v : reads)
        if (v && v->producer() && is_constant(*v->producer())) kept.push_back(position.at(v->producer()));
    }
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    c->nodes = kept;
    std::unordered_set<const ir::Node*> in_set;
    std::unordered_set<const ir::Value*> produced;
    for (size_t i : kept) {
      in_set.insert(nodes[i]);
      for (const ir::Value* v : nodes[i]->outputs())
        if (v && !v->name().empty()) produced.insert(v);
    }
    std::unordered_set<const ir::Value*> taken;
    for (size_t i : kept) {
      std::vector<ir::Value*> reads(nodes[i]->inputs().begin(), nodes[i]->inputs().end());
      for (ir::Value* v : g.implicit_inputs(nodes[i])) reads.push_back(v);  // read by an If/Loop/Scan body
      for (const ir::Value* v : reads) {
        if (!v || v->name().empty() || produced.count(v) || v->is_initializer() || v->is_sparse_initializer()) continue;
        if (taken.insert(v).second) c->inputs.push_back(v->name());
      }
    }
    // Every value computed stays observable: the original outputs among them, and those no kept
    // node reads (what a dropped consumer read).
    for (size_t i : kept)
      for (const ir::Value* v : nodes[i]->outputs()) {
        if (!v || v->name().empty()) continue;
        const bool read_inside = std::any_of(v->uses().begin(), v->uses().end(),
                                             [&in_set](const ir::Use& u) { return in_set.count(u.node) > 0; });
        if (v->is_graph_output() || !read_inside) c->outputs.push_back(v->name());
      }
    for (const auto& name : c->inputs)
      if (!input_value(name)) {
        why = "no value of '" + name + "' to feed";
        return nullptr;
      }
    try {
      if (c->inputs.empty()) {
        why = "no input left: its nodes read only weights (initializers and Constants)";
        return nullptr;
      }
      ir::extract_subgraph(model, c->inputs, c->outputs);
      // Types inference cannot give (a value whose shape depends on data): the fed value's.
      for (auto& vi : g.inputs) {
        if (vi.type && vi.type->kind != ir::TypeInfo::Kind::kUnset) continue;
        const runner::Value* v = input_value(vi.value->name());
        if (v && v->is_tensor()) vi.type = tensor_type(v->tensor);
      }
      for (auto& vi : g.outputs) {
        if (vi.type && vi.type->kind != ir::TypeInfo::Kind::kUnset) continue;
        auto it = recorded_.find(vi.value->name());
        if (it != recorded_.end() && it->second.is_tensor()) vi.type = tensor_type(it->second.tensor);
      }
      check_before_writing(model);
    } catch (const Error& e) {
      why = one_line(e.what());
      return nullptr;
    }
    return c;
  }

  /// Whether the candidate still fails; `detail` says how (or why not).
  bool fails(Candidate& c, std::string& detail) {
    return o_.command.empty() ? fails_compare(c, detail) : fails_command(c, detail);
  }

  /// The candidate's input values, by name, for --inputs-out.
  std::vector<std::pair<std::string, const runner::Value*>> inputs_of(const Candidate& c) {
    std::vector<std::pair<std::string, const runner::Value*>> values;
    for (const auto& name : c.inputs) values.emplace_back(name, input_value(name));
    return values;
  }

  ~Reducer() {
    if (!scratch_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(scratch_, ec);
    }
  }

 private:
  static ir::TypeInfo tensor_type(const runner::Tensor& t) {
    ir::Shape shape;
    for (int64_t d : t.shape()) shape.dims.push_back(ir::Dim::of(d));
    return ir::TypeInfo::tensor(t.dtype(), shape);
  }

  /// --compare-expect: the candidate runs on DIR's values of its inputs; it fails when an output
  /// DIR holds departs from it beyond --rtol/--atol.
  bool fails_compare(Candidate& c, std::string& detail) {
    std::map<std::string, runner::Value> feeds;
    for (const auto& name : c.inputs) feeds[name] = *input_value(name);
    std::vector<runner::Value> got;
    try {
      runner::Session session(c.loaded.model);
      got = session.run(runner::conform_float_feeds(session, feeds), c.outputs);
    } catch (const Error& e) {
      detail = "does not run: " + one_line(e.what());
      return false;
    }
    size_t judged = 0;
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      const runner::Value* want = references_->find(c.outputs[i]);
      if (!want) continue;
      ++judged;
      const runner::ValueMatch m = runner::match_value(*want, got[i], o_.rtol, o_.atol);
      if (!m.within()) {
        detail = "'" + c.outputs[i] + "' departs from the reference: " + m.worst;
        return true;
      }
    }
    detail = judged ? "outputs within tolerance (" + std::to_string(judged) + " compared)" : "no output has a reference";
    return false;
  }

  /// --command: the candidate and its inputs written to a scratch folder, the command run on
  /// them through /bin/sh with --command-timeout.
  bool fails_command(Candidate& c, std::string& detail) {
    namespace fs = std::filesystem;
    if (scratch_.empty()) {
      std::string pattern = (fs::path(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") / "onnxtool_reduce.XXXXXX").string();
      if (!mkdtemp(pattern.data())) throw_input_error("cannot make a scratch folder " + pattern + ": " + std::strerror(errno));
      scratch_ = pattern;
    }
    const fs::path step = fs::path(scratch_) / ("step" + std::to_string(++written_));
    fs::create_directories(step);
    const std::string model_path = (step / "model.onnx").string();
    const std::string inputs_dir = (step / "inputs").string();
    ir::save_model(c.loaded.model, model_path);
    write_value_files(inputs_dir, "the inputs of a candidate", inputs_of(c));
    const std::string out_path = (step / "out.onnx").string();
    std::string cmd = o_.command;
    for (const auto& [key, value] : {std::pair<std::string, std::string>{"{model}", model_path}, {"{inputs}", inputs_dir},
                                     {"{out}", out_path}})
      for (size_t at = cmd.find(key); at != std::string::npos; at = cmd.find(key, at + value.size()))
        cmd.replace(at, key.size(), value);
    ChildOptions run;
    run.seconds = o_.command_timeout;
    run.merge_output = true;
    run.output_limit = kOutputLimit;
    const ChildResult r = run_child({"/bin/sh", "-c", cmd}, run);
    std::error_code ec;
    fs::remove_all(step, ec);
    if (r.start_error) throw_input_error(std::string("--command: cannot start /bin/sh: ") + std::strerror(r.start_error));
    // Interrupted: the scratch folder goes with the Reducer as the error unwinds, and OUT was
    // never begun.
    if (r.interrupted)
      throw Error(ErrorKind::kInput, "interrupted by signal " + std::to_string(r.interrupted) + "; nothing written");
    if (r.timed_out) {
      detail = "timed out after " + significant(o_.command_timeout, 3) + " s (counted as not failing)";
      return false;
    }
    const std::string how = r.signal ? "killed by signal " + std::to_string(r.signal) : "exit " + std::to_string(r.status);
    if (fails_when_) {
      const bool match = fails_when_->found_in(r.out);
      detail = how + (match ? ", output matches --fails-when" : ", output does not match --fails-when");
      return match;
    }
    detail = how;
    switch (verdict_) {
      case Verdict::kVerifyFails:
        return r.signal == 0 && r.status == kExitFailed;
      case Verdict::kCrashes: {
        // onnxtool ends an exception it did not expect with "internal error" (exit 2), a crash
        // by a signal (the sanitizers' reports: exit 1 with their banner).
        const bool internal = r.out.find(": internal error: ") != std::string::npos;
        const bool sanitizer = r.out.find("ERROR: AddressSanitizer") != std::string::npos ||
                               r.out.find("runtime error: ") != std::string::npos;
        if (internal) detail += ", internal error";
        if (sanitizer) detail += ", a sanitizer's report";
        return r.signal != 0 || internal || sanitizer;
      }
      case Verdict::kExit:
        break;
    }
    return r.signal != 0 || r.status != 0;
  }

  const ReduceOptions& o_;
  std::map<std::string, runner::Value> recorded_;
  References* references_;
  std::unique_ptr<OutputPattern> fails_when_;
  Verdict verdict_ = Verdict::kExit;
  std::string scratch_;
  size_t written_ = 0;
};

// --- the search

/// One predicate's verdicts over candidates (sets of node positions), each set judged once; the
/// budget counted in predicate runs and seconds.
class Search {
 public:
  Search(Reducer& reducer, const ReduceOptions& o, std::chrono::steady_clock::time_point start, std::ostream* log)
      : reducer_(reducer), o_(o), start_(start), log_(log) {}

  /// Whether the nodes at `kept` (sorted) still fail; false for an empty set, a candidate the
  /// checker refuses, and once the budget is spent (`stopped` then says why). `first`: the run
  /// of the whole model, which the budget does not stop (it would pass for a model that fails).
  bool test(const std::vector<size_t>& kept, bool first = false) {
    if (kept.empty()) return false;
    if (auto it = verdicts_.find(kept); it != verdicts_.end()) return it->second;
    if (!stopped.empty()) return false;
    if (!first && steps >= o_.max_steps) {
      stopped = "--max-steps " + std::to_string(o_.max_steps);
      return false;
    }
    if (!first && o_.time_limit > 0 && seconds() >= o_.time_limit) {
      stopped = "--time-limit " + significant(o_.time_limit, 6);
      return false;
    }
    ++tried;
    std::string detail;
    bool failing = false;
    std::string verdict;
    size_t count = kept.size();
    if (std::unique_ptr<Candidate> c = reducer_.build(kept, detail)) {
      count = c->nodes.size();
      ++steps;
      failing = reducer_.fails(*c, detail);
      verdict = failing ? "fails" : "passes";
    } else {
      ++skipped;
      verdict = "skipped";
    }
    if (log_)
      *log_ << "step " << tried << ": " << count << " nodes: " << verdict << " (" << detail << ")" << std::endl;
    report_step("predicate runs", steps, o_.max_steps, std::to_string(kept.size()) + " nodes");
    verdicts_[kept] = failing;
    last_detail = detail;
    last_built = verdict != "skipped";
    return failing;
  }

  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

  int steps = 0;    ///< predicate runs
  int tried = 0;    ///< candidates, the skipped ones included
  int skipped = 0;  ///< candidates refused before the predicate (not built, or failing check)
  std::string stopped;  ///< the budget that ended the search, "" when none did
  std::string last_detail;
  bool last_built = false;

 private:
  Reducer& reducer_;
  const ReduceOptions& o_;
  std::chrono::steady_clock::time_point start_;
  std::ostream* log_;
  std::map<std::vector<size_t>, bool> verdicts_;
};

/// (1) The topological cuts: the shortest failing suffix of the nodes, then the shortest failing
/// prefix of that, each by halving (the values at the cut fed as inputs). A predicate that holds
/// for every run containing one node (a crash on it, a wrong weight) gives that node in about
/// 2 log2(N) runs.
std::vector<size_t> bisect(Search& search, const std::vector<size_t>& order) {
  const size_t n = order.size();
  const auto slice = [&order](size_t lo, size_t hi) {
    return std::vector<size_t>(order.begin() + static_cast<std::ptrdiff_t>(lo), order.begin() + static_cast<std::ptrdiff_t>(hi));
  };
  size_t lo_fails = 0, lo_passes = n;  // [lo_fails, n) fails; [lo_passes, n) is empty
  while (lo_passes - lo_fails > 1 && search.stopped.empty()) {
    const size_t mid = lo_fails + (lo_passes - lo_fails) / 2;
    if (search.test(slice(mid, n))) lo_fails = mid;
    else lo_passes = mid;
  }
  size_t hi_fails = n, hi_passes = lo_fails;  // [lo_fails, hi_fails) fails
  while (hi_fails - hi_passes > 1 && search.stopped.empty()) {
    const size_t mid = hi_passes + (hi_fails - hi_passes) / 2;
    if (search.test(slice(lo_fails, mid))) hi_fails = mid;
    else hi_passes = mid;
  }
  return slice(lo_fails, hi_fails);
}

/// (2) Delta debugging: removes chunks of the set (halves, then quarters... down to single
/// nodes) while what is left still fails. Returns true when the result is 1-minimal: no single
/// node can go.
bool ddmin(Search& search, std::vector<size_t>& set) {
  size_t parts = 2;
  while (set.size() >= 2) {
    parts = std::min(parts, set.size());
    bool removed = false;
    for (size_t k = 0; k < parts && search.stopped.empty(); ++k) {
      const size_t begin = set.size() * k / parts, end = set.size() * (k + 1) / parts;
      std::vector<size_t> rest(set.begin(), set.begin() + static_cast<std::ptrdiff_t>(begin));
      rest.insert(rest.end(), set.begin() + static_cast<std::ptrdiff_t>(end), set.end());
      if (search.test(rest)) {
        set = std::move(rest);
        parts = std::max<size_t>(parts - 1, 2);
        removed = true;
        break;
      }
    }
    if (!search.stopped.empty()) return false;
    if (removed) continue;
    if (parts >= set.size()) return true;
    parts = std::min(parts * 2, set.size());
  }
  return true;  // one node: the empty set never fails
}

std::string node_list(const ir::Model& model, const std::vector<size_t>& kept) {
  std::string s;
  for (size_t i : kept) s += (s.empty() ? "" : ", ") + node_label(*model.graph->nodes()[i]);
  return s;
}

int run_reduce(const ReduceOptions& given) {
  const auto start = std::chrono::steady_clock::now();
  ReduceOptions o = given;
  if (o.output.empty()) throw_usage_error("-o OUT is required");
  const int predicates = !o.command.empty() + !o.compare_expect.empty() + !o.verify.empty() + !o.crash.empty();
  if (predicates == 0)
    throw_usage_error("a predicate is required: --command 'CMD {model} {inputs}', --compare-expect DIR, --verify "
                      "'optimize|convert ARGS' or --crash 'COMMAND ARGS'");
  if (predicates > 1)
    throw_usage_error("--command, --compare-expect, --verify and --crash exclude each other: give one predicate");
  refuse_unused(o.given, {
      {{"--fails-when"}, !o.command.empty(), "it judges --command's runs; add --command"},
      {{"--command-timeout"}, o.compare_expect.empty(), "it bounds the runs of --command, --verify or --crash"},
      {{"--rtol", "--atol"}, !o.compare_expect.empty(), "the tolerance of --compare-expect; add --compare-expect DIR"},
  });
  if (!(o.command_timeout > 0)) throw_usage_error("--command-timeout must be > 0");
  if (o.max_steps < 1) throw_usage_error("--max-steps must be at least 1");
  if (!o.fails_when.empty()) OutputPattern check(o.fails_when);  // refused before the model is read
  const std::string predicate = !o.verify.empty() ? "verify" : !o.crash.empty() ? "crash"
                                : !o.command.empty() ? "command" : "compare-expect";
  if (!o.verify.empty()) o.command = onnxtool_command("--verify", o.verify, /*verify=*/true);
  if (!o.crash.empty()) o.command = onnxtool_command("--crash", o.crash, /*verify=*/false);
  refuse_overwriting_input(o.model, o.output);
  std::unique_ptr<References> references;
  if (!o.compare_expect.empty()) references = std::make_unique<References>(o.compare_expect);

  ir::LoadedModel loaded = ir::load_model(o.model);
  ir::check_output_paths(loaded.info, o.output, "", /*in_place=*/false);
  if (!o.inputs_out.empty()) ir::check_not_input(loaded.info, o.inputs_out, "--inputs-out " + o.inputs_out);
  if (!o.log.empty()) {
    ir::check_not_input(loaded.info, o.log, "--log " + o.log);
    ir::claim_output(o.log, "--log " + o.log);
  }
  refuse_unrunnable(loaded.model, o.model);
  const size_t n = loaded.model.graph->nodes().size();
  std::vector<size_t> order;  // the nodes the search chooses among: all but Constants
  for (size_t i = 0; i < n; ++i)
    if (!is_constant(*loaded.model.graph->nodes()[i])) order.push_back(i);
  if (order.empty()) throw_input_error(o.model + ": the main graph has no node but Constants: nothing to reduce");

  report_step("recording the model's values", 0, 1);
  Reducer reducer(o, record_values(loaded.model, o), references.get());
  report_step("recording the model's values", 1, 1);

  std::ofstream log_file;
  if (!o.log.empty()) {
    log_file.open(o.log, std::ios::trunc);
    if (!log_file) throw_input_error("--log " + o.log + ": cannot write it");
  }
  Search search(reducer, o, start, o.log.empty() ? nullptr : &log_file);
  if (!search.test(order, /*first=*/true)) {
    if (!search.last_built)
      throw Error(ErrorKind::kInput, "the model as a candidate cannot be judged: " + search.last_detail);
    throw Error(ErrorKind::kFailed, "the model does not fail the predicate: nothing to reduce (" + search.last_detail + ")");
  }
  std::vector<size_t> best = bisect(search, order);
  const bool minimal = ddmin(search, best) && search.stopped.empty();

  std::string detail;
  std::unique_ptr<Candidate> result = reducer.build(best, detail);
  if (!result) throw Error(ErrorKind::kInternal, "the smallest failing candidate cannot be rebuilt: " + detail);
  const WrittenModel written = write_model(result->loaded.model, o.output);
  if (!o.inputs_out.empty()) write_value_files(o.inputs_out, "--inputs-out " + o.inputs_out, reducer.inputs_of(*result));
  const double seconds = search.seconds();
  best = result->nodes;  // with the Constants its nodes read
  const size_t constants = static_cast<size_t>(std::count_if(best.begin(), best.end(), [&](size_t i) {
    return is_constant(*loaded.model.graph->nodes()[i]);
  }));
  const std::string kept = node_list(loaded.model, best);
  if (log_file.is_open()) log_file << "result: " << best.size() << " nodes: " << kept << std::endl;

  if (o.json) {
    nlohmann::json nodes = nlohmann::json::array();
    for (size_t i : best) {
      const ir::Node& node = *loaded.model.graph->nodes()[i];
      nodes.push_back({{"name", node_label(node)}, {"op_type", node.op_type}});
    }
    print_json({{"output", o.output},
                {"predicate", predicate},
                {"nodes", {{"before", n}, {"after", best.size()}, {"constants", constants}}},
                {"kept", nodes},
                {"inputs", result->inputs},
                {"outputs", result->outputs},
                {"steps", search.steps},
                {"skipped", search.skipped},
                {"seconds", seconds},
                {"minimal", minimal},
                {"budget_ended", search.stopped.empty() ? nlohmann::json(nullptr) : nlohmann::json(search.stopped)},
                {"inputs_out", o.inputs_out.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.inputs_out)},
                {"model_bytes", saved_bytes(written.saved)},
                {"written", written_json(written)}});
    return kExitOk;
  }
  std::cout << "reduced " << n << " -> " << best.size() << " nodes in " << search.steps << " predicate runs ("
            << search.skipped << " candidates skipped), " << significant(seconds, 3) << " s; "
            << (search.stopped.empty() ? std::string(minimal ? "1-minimal: no single node can go" : "not 1-minimal")
                                       : "the budget ended the search (" + search.stopped + ")")
            << "\n";
  std::cout << "kept: " << kept;
  if (constants) std::cout << " (" << constants << " of them Constant" << (constants == 1 ? "" : "s") << ", kept with their readers)";
  std::cout << "\n";
  std::cout << "inputs:  " << result->inputs.size() << ", outputs: " << result->outputs.size() << "\n";
  if (!o.inputs_out.empty()) std::cout << "inputs written to " << o.inputs_out << "\n";
  print_wrote(o.output, written);
  return kExitOk;
}

}  // namespace

void register_reduce(CLI::App& app, Action& action) {
  auto o = std::make_shared<ReduceOptions>();
  CLI::App* sub = app.add_subcommand("reduce", "Shrink a model that makes something fail to a small subgraph that still fails");
  sub->add_option("MODEL", o->model, "input model")->required();
  sub->add_option("-o,--output", o->output, "the smallest failing subgraph found");
  sub->add_option("--inputs-out", o->inputs_out, "write the result's input values to DIR/<name>.npy");
  sub->add_option("--command", o->command,
                  "the predicate: a shell command (/bin/sh) run on each candidate, {model} its path and {inputs} "
                  "the folder of its input .npy files; it still fails when the command exits non-zero");
  sub->add_option("--verify", o->verify,
                  "the predicate: 'optimize|convert ARGS' run on each candidate (on its recorded inputs unless ARGS "
                  "choose them); it still fails when that command's verification or check of its result fails (exit 1)");
  sub->add_option("--crash", o->crash,
                  "the predicate: 'COMMAND ARGS', an onnxtool command run on each candidate; it still fails when the "
                  "command crashes (a signal, an internal error, a sanitizer's report)");
  sub->add_option("--fails-when", o->fails_when,
                  "with --command: it fails when this regular expression (POSIX extended, as grep -E) matches a line of its "
                  "stdout+stderr, whatever its exit");
  sub->add_option("--command-timeout", o->command_timeout,
                  "seconds each --command run may take; past them it is ended and counts as not failing (default 60)")
      ->check(number_in(0, 1e7, /*open_low=*/true));
  sub->add_option("--compare-expect", o->compare_expect,
                  "the predicate: DIR holds reference values of the tensors (run --dump-dir of a good model); a "
                  "candidate fed DIR's values fails when an output departs from DIR's");
  sub->add_option("--rtol", o->rtol, "relative tolerance of --compare-expect (default 1e-3)")->check(number_in(0, 1e6));
  sub->add_option("--atol", o->atol, "absolute tolerance of --compare-expect (default 1e-5)")->check(number_in(0, 1e300));
  sub->add_option("--input", o->feed.inputs, "NAME=FILE: an input of the recorded run (repeatable; others random)");
  sub->add_option("--seed", o->feed.seed, "seed of the random inputs of the recorded run (default 0)")
      ->check(number_in(0, kMaxSeed));
  sub->add_option("--input-shape", o->feed.shapes, "NAME=D1,D2,... sizes of the symbolic dims of random inputs");
  add_input_range_option(sub, o->feed.input_ranges);
  sub->add_option("--max-steps", o->max_steps, "at most N predicate runs (default 500)")->check(number_in(1, 1e9));
  sub->add_option("--time-limit", o->time_limit,
                  "seconds after which no further candidate is tried: the smallest failing one so far is written "
                  "(default: no limit)")
      ->check(number_in(0, 1e9, /*open_low=*/true));
  sub->add_option("--log", o->log, "one line per step: the step, the candidate's node count, the verdict");
  sub->add_flag("--json", o->json, "print one JSON document");
  add_quiet_flag(sub);
  add_threads_flag(sub);
  sub->callback([&action, o, sub] {
    o->given = given_options(*sub);
    action = [o] { return run_reduce(*o); };
  });
}

}  // namespace onnxtool::cli
