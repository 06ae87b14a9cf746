// `onnxtool run MODEL ...`: execute a model on the reference runner.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "cli/common.h"
#include "cli/dump_dir.h"
#include "cli/progress.h"
#include "cli/verify.h"
#include "ir/command_files.h"
#include "ir/diagnostic.h"
#include "ir/error.h"
#include "ir/extract.h"
#include "ir/model_io.h"
#include "ir/output_file.h"
#include "ir/shape_inference.h"
#include "runner/compare.h"
#include "runner/feeds.h"
#include "runner/profile.h"
#include "runner/session.h"
#include "runner/tensor_io.h"

namespace onnxtool::cli {
namespace {

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;
  std::string inputs_dir;
  bool random = false;
  uint64_t seed = 0;
  std::vector<std::string> shapes;
  std::vector<std::string> input_ranges;  ///< --input-range
  std::string output_dir;
  std::string output_format = "npy";  ///< of tensors; sequences and optionals are always .pb
  std::string expect_dir;             ///< reference outputs to compare with
  double rtol = 1e-3, atol = 1e-5;    ///< --expect's tolerance
  std::vector<std::string> outputs;
  std::string dump_dir;  ///< --dump-dir: every value computed, subgraphs' once per run
  DumpLimits dump_limits;  ///< --max-dump-files, --max-dump-bytes
  std::string device = "cpu";
  int benchmark = 0;
  bool profile = false;
  std::string trace_file;  ///< --profile FILE: the Chrome trace
  bool json = false;
  std::set<std::string> given;  ///< the options on the command line
};

// --output-dir must be a directory or a path where one can be made; checked before running so
// that a bad path costs no run and leaves nothing behind.
void check_output_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(dir);
  if (fs::exists(p, ec)) {
    if (!fs::is_directory(p, ec)) throw_usage_error("--output-dir " + dir + ": exists and is not a directory");
    return;
  }
  // The nearest existing ancestor must be a directory.
  for (fs::path q = p.parent_path(); !q.empty(); q = q.parent_path()) {
    if (fs::exists(q, ec)) {
      if (!fs::is_directory(q, ec))
        throw_usage_error("--output-dir " + dir + ": " + q.string() + " is not a directory");
      return;
    }
    if (q == q.parent_path()) break;
  }
}

/// --expect's folder is read after the run: --output-dir or --dump-dir there would replace the
/// reference files with the outputs they are then compared with. And the dump's files and the
/// outputs' would share names.
void refuse_shared_folders(const RunOptions& o) {
  std::error_code ec;
  const auto same = [&](const std::string& a, const std::string& b) {
    namespace fs = std::filesystem;
    return !a.empty() && !b.empty() &&
           (fs::equivalent(a, b, ec) || fs::weakly_canonical(fs::absolute(a), ec) == fs::weakly_canonical(fs::absolute(b), ec));
  };
  for (const auto& [flag, dir] : {std::pair<const char*, std::string>{"--output-dir", o.output_dir}, {"--dump-dir", o.dump_dir}})
    if (same(dir, o.expect_dir))
      throw_usage_error(std::string(flag) + " " + dir + ": is the --expect folder; its reference files would be replaced by the outputs compared with them");
  if (same(o.output_dir, o.dump_dir))
    throw_usage_error("--dump-dir " + o.dump_dir + ": is the --output-dir folder; give each its own");
}

/// The profile as text: the run, every op type, the slowest nodes.
void print_profile(const runner::ProfileSummary& p, const std::string& trace_file) {
  const auto pct = [](double share) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
    return std::string(buf);
  };
  const auto ms = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    return std::string(buf);
  };
  // On a device, a node's time is the device's (timestamps); the host's, recording its work, is
  // the last column.
  const bool device = std::any_of(p.nodes.begin(), p.nodes.end(), [](const auto& r) { return r.device_timed; });
  const auto host = [&](const runner::ProfileSummary::Row& r) {
    return device ? "  " + (r.device_timed ? ms(r.host_ms) : std::string("-")) : std::string();
  };
  std::cout << "profile over " << p.runs << " run(s): " << ms(p.run_ms) << " ms per run, of which nodes "
            << ms(p.nodes_ms) << " ms" << (device ? " (device nodes: the device's time)" : "") << "\n";
  std::cout << "  the run's tensors of 1 MiB and more held at most " << ms(static_cast<double>(p.tensor_peak_bytes) / (1 << 20))
            << " MiB at once\n";
  std::cout << "  op type                      count/run    ms/run   share" << (device ? "  host ms/run" : "") << "\n";
  for (const auto& r : p.op_types) {
    char line[200];
    std::snprintf(line, sizeof line, "  %-28s %9.1f %9s %7s", r.name.c_str(), static_cast<double>(r.count) / p.runs,
                  ms(r.ms).c_str(), pct(r.share).c_str());
    std::cout << line << host(r) << "\n";
  }
  const size_t shown = std::min<size_t>(p.nodes.size(), 15);
  std::cout << "  slowest " << shown << " of " << p.nodes.size() << " nodes:\n";
  for (size_t i = 0; i < shown; ++i) {
    const auto& r = p.nodes[i];
    char line[400];
    std::snprintf(line, sizeof line, "  %-40s %-18s %-9s %9s %7s", r.name.c_str(), r.op_type.c_str(),
                  r.device.c_str(), ms(r.ms).c_str(), pct(r.share).c_str());
    std::cout << line << host(r) << "\n";
  }
  if (!trace_file.empty()) std::cout << "  trace: " << trace_file << " (Chrome trace format; opens in Perfetto)\n";
}

nlohmann::json profile_json(const runner::ProfileSummary& p, const std::string& trace_file) {
  const auto rows = [&p](const std::vector<runner::ProfileSummary::Row>& rows, bool nodes) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows) {
      nlohmann::json j = {{nodes ? "name" : "op_type", r.name},
                          {"count_per_run", static_cast<double>(r.count) / p.runs},
                          {"ms_per_run", r.ms},
                          {"host_ms_per_run", r.host_ms},
                          {"device_timed", r.device_timed},
                          {"share", r.share}};
      if (nodes) {
        j["op_type"] = r.op_type;
        j["device"] = r.device;
      }
      out.push_back(j);
    }
    return out;
  };
  return {{"runs", p.runs},
          {"run_ms", p.run_ms},
          {"nodes_ms", p.nodes_ms},
          {"tensor_peak_bytes", p.tensor_peak_bytes},
          {"op_types", rows(p.op_types, false)},
          {"nodes", rows(p.nodes, true)},
          {"trace", trace_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(trace_file)}};
}

/// The file stem of each output (--output-dir writes these files and --expect DIR reads them).
std::vector<std::string> output_stems(const std::vector<std::string>& names) {
  runner::FileStems taken;
  std::vector<std::string> stems;
  for (const auto& n : names) stems.push_back(taken.claim(n));
  return stems;
}

/// The type to read an output's reference file as: the model's declaration of a graph output,
/// else the kind of the value computed (an intermediate value named by --outputs).
ir::TypeInfo reference_type(const runner::Session& session, const std::string& name, const runner::Value& got) {
  for (const auto* vi : session.outputs())
    if (vi->value->name() == name) {
      const ir::TypeInfo& t = vi->type ? *vi->type : vi->value->type;
      if (t.kind != ir::TypeInfo::Kind::kUnset) return t;
    }
  ir::TypeInfo t;
  if (got.kind == runner::Value::Kind::kSequence) t.kind = ir::TypeInfo::Kind::kSequence;
  if (got.kind == runner::Value::Kind::kOptional) t.kind = ir::TypeInfo::Kind::kOptional;
  return t;
}

/// One output against its reference.
struct OutputMatch {
  std::string file;      ///< the reference file; "" when --expect DIR has none for this output
  bool match = true;
  std::string worst;     ///< where it differs most, or what differs (type, shape, length)
  double max_abs = 0, max_rel = 0;
  int64_t beyond = 0, elements = 0;  ///< elements beyond tolerance (NaN and infinities included), of all
};

std::string three_digits(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

/// --expect DIR: each output against its reference file in DIR (runner::find_reference_file).
std::vector<OutputMatch> match_outputs(const runner::Session& session, const std::vector<std::string>& names,
                                       const std::vector<runner::Value>& results, const RunOptions& o) {
  if (!std::filesystem::is_directory(o.expect_dir)) throw_usage_error("--expect " + o.expect_dir + ": not a directory");
  const std::vector<std::string> stems = output_stems(names);
  std::vector<OutputMatch> matches(results.size());
  std::string looked_for;
  for (size_t i = 0; i < results.size(); ++i) {
    std::optional<size_t> position;
    for (size_t k = 0; k < session.outputs().size() && !position; ++k)
      if (session.outputs()[k]->value->name() == names[i]) position = k;
    const runner::ReferenceFile ref = runner::find_reference_file(o.expect_dir, stems[i], position);
    if (ref.path.empty()) {
      if (looked_for.empty()) looked_for = ref.looked_for + " for '" + names[i] + "'";
      continue;
    }
    OutputMatch& m = matches[i];
    m.file = ref.path;
    const runner::Value want = runner::read_value_file(m.file, reference_type(session, names[i], results[i]));
    const runner::ValueMatch v = runner::match_value(want, results[i], o.rtol, o.atol);
    m.match = v.within();
    m.worst = v.worst;
    m.max_abs = v.diff.max_abs;
    m.max_rel = v.diff.max_rel;
    m.beyond = v.diff.beyond + v.diff.nonfinite_count;
    m.elements = v.diff.elements;
  }
  if (std::all_of(matches.begin(), matches.end(), [](const OutputMatch& m) { return m.file.empty(); }))
    throw_usage_error("--expect " + o.expect_dir + ": no reference for any output (no " + looked_for + ")");
  return matches;
}

/// One line: "matches FILE (max abs 1e-07)" / "differs from FILE: element [0,1]: ...".
std::string describe_match(const OutputMatch& m) {
  if (m.file.empty()) return "no reference";
  if (m.match) return "matches " + m.file + " (max abs " + three_digits(m.max_abs) + ")";
  std::string s = "differs from " + m.file + ": " + m.worst;
  if (m.beyond > 0) s += "; " + std::to_string(m.beyond) + " of " + std::to_string(m.elements) + " elements beyond tolerance";
  return s;
}

nlohmann::json match_json(const OutputMatch& m) {
  if (m.file.empty()) return nullptr;
  return {{"file", m.file},
          {"match", m.match},
          {"max_abs_error", json_number(m.max_abs)},
          {"max_rel_error", json_number(m.max_rel)},
          {"beyond", m.beyond},
          {"elements", m.elements},
          {"worst", m.match ? nlohmann::json(nullptr) : nlohmann::json(m.worst)}};
}

int run_model(const RunOptions& o) {
  if (o.benchmark < 0) throw_usage_error("--benchmark must be >= 0");
  // --seed and --shape concern random inputs only: without --random they would be ignored.
  if (const std::string named = given_list(o.given, {"--seed", "--shape", "--input-range"}); !named.empty() && !o.random)
    throw_usage_error(named + ": for random inputs only; add --random");
  if (o.given.count("--output-format") && o.output_dir.empty()) throw_usage_error("--output-format: add --output-dir");
  if (const std::string named = given_list(o.given, {"--max-dump-files", "--max-dump-bytes"}); !named.empty() && o.dump_dir.empty())
    throw_usage_error(named + ": the bounds of --dump-dir; add --dump-dir DIR");
  if (const std::string named = given_list(o.given, {"--rtol", "--atol"}); !named.empty() && o.expect_dir.empty())
    throw_usage_error(named + ": the tolerance of --expect; add --expect DIR");
  if (!o.output_dir.empty()) check_output_dir(o.output_dir);
  refuse_shared_folders(o);
  auto loaded = ir::load_model(o.model);
  refuse_unrunnable(loaded.model, o.model);
  if (!o.trace_file.empty()) {
    ir::check_not_input(loaded.info, o.trace_file, "--profile " + o.trace_file);
    ir::claim_output(o.trace_file, "--profile " + o.trace_file);
  }
  {
    // Static shapes let the session refuse, before running, a model whose tensors cannot fit in
    // memory. Contradictions are `onnxtool check`'s business, not a reason to refuse a run.
    ir::DiagnosticSink sink;
    ir::infer_shapes(loaded.model, sink);
  }
  runner::SessionOptions options;
  options.device = runner::DeviceSpec::parse(o.device);
  runner::Session session(loaded.model, options);

  runner::FeedOptions feed;
  for (const auto& s : o.inputs) feed.files.push_back(parse_assignment(s, "--input"));
  feed.dir = o.inputs_dir;
  feed.random = o.random;
  feed.flags = {"--input", "--inputs", "--random", "--shape"};
  feed.seed = o.seed;
  for (const auto& s : o.shapes) {
    auto [name, text] = parse_assignment(s, "--shape");
    feed.shapes[name] = parse_size_list("--shape", name, text);
  }
  for (const auto& r : o.input_ranges) runner::add_input_range(feed, r, "--input-range");
  // Random inputs with free dims: sized as verification sizes them (1, then 64, then 512), each
  // tried by a plain run until one runs.
  std::map<std::string, runner::Value> feeds;
  if (o.random && runner::has_free_dims(session, feed)) {
    try {
      feeds = runner::feeds_that_run(session, feed, [&session](std::map<std::string, runner::Value>& f) { session.run(f); });
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kUsage || e.kind() == ErrorKind::kInternal) throw;
      throw Error(e.kind(), error_text("run", e) + " (random inputs with free dims of 1, 64 and 512 all failed; give " +
                                "the sizes with --shape NAME=D1,D2,...)");
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

  std::vector<std::string> names = o.outputs;
  // A value of an If/Loop/Scan subgraph lives in the frame of one run of its subgraph: the
  // session's observer returns it when its subgraph ran once in the run (a branch of an If of
  // the main graph), and refuses it otherwise.
  struct FromSubgraph {
    std::string where;  ///< "the subgraph 'then_branch' of node 'select' (If)"
    size_t runs = 0;
    runner::Value value;
  };
  std::map<std::string, FromSubgraph> from_subgraphs;
  std::map<const ir::Value*, FromSubgraph*> captured;
  std::vector<std::string> main_names;
  for (const auto& name : names) {
    if (const ir::Value* v = loaded.model.graph->find(name); (v && !v->is_undefined()) || from_subgraphs.count(name)) {
      if (v && !v->is_undefined()) main_names.push_back(name);
      continue;
    }
    const std::string where = ir::subgraph_holding(loaded.model, name);
    if (where.empty()) {
      main_names.push_back(name);  // the session names it unknown
      continue;
    }
    FromSubgraph& f = from_subgraphs[name];
    f.where = where;
    // Sibling branches may both define the name: whichever runs gives the value.
    ir::for_each_graph(*loaded.model.graph, [&](ir::Graph& g) {
      if (&g == loaded.model.graph.get()) return;
      if (const ir::Value* v = g.find(name); v && !v->is_undefined() && v->producer()) captured[v] = &f;
    });
  }
  std::optional<ValueDump> dump;
  if (!o.dump_dir.empty()) dump.emplace(o.dump_dir, loaded, o.dump_limits);
  if (dump || !captured.empty()) {
    runner::ObserverFilter wants;
    if (!dump) wants = [&captured](const ir::Value& v) { return captured.count(&v) > 0; };
    session.set_observer(
        [&](const ir::Value& value, const runner::Value& produced) {
          if (dump) dump->observe(value, produced);
          if (const auto it = captured.find(&value); it != captured.end()) {
            ++it->second->runs;
            it->second->value = produced;
          }
        },
        /*subgraphs=*/true, wants);
  }
  report_step("running the model", 0, 1);
  auto main_results = session.run(feeds, main_names);
  session.set_observer(nullptr);
  if (dump) dump->finish();
  for (const auto& [name, f] : from_subgraphs) {
    if (f.runs == 0)
      throw_usage_error("--outputs: '" + name + "', a value of " + f.where +
                        ", was not computed in this run (a branch not taken, or a loop run 0 times)");
    if (f.runs > 1)
      throw_usage_error("--outputs: '" + name + "', a value of " + f.where + ", was computed " + std::to_string(f.runs) +
                        " times in this run, once per run of its subgraph; --dump-dir writes each");
  }
  std::vector<runner::Value> results;
  if (from_subgraphs.empty()) {
    results = std::move(main_results);
  } else {
    size_t k = 0;
    for (const auto& name : names)
      results.push_back(from_subgraphs.count(name) ? from_subgraphs.at(name).value : std::move(main_results[k++]));
  }
  report_step("running the model", 1, 1);
  if (names.empty())
    for (const auto* vi : session.outputs()) names.push_back(vi->value->name());

  // --profile times the --benchmark runs, or one run after the first (whose one-time work, such
  // as constants computed and weights packed, it leaves out).
  runner::Profiler profiler;
  if (o.profile) {
    session.set_profiler(&profiler);
    if (o.benchmark == 0) session.run(feeds, main_names);
  }
  std::vector<double> times;
  if (o.benchmark > 0) {
    report_step("benchmark runs", 0, o.benchmark);
    for (int i = 0; i < o.benchmark; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      session.run(feeds, main_names);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      report_step("benchmark runs", i + 1, o.benchmark);  // outside the timed span
    }
    std::sort(times.begin(), times.end());
  }
  session.set_profiler(nullptr);
  const std::string device_id = session.device() ? session.device()->id : "cpu";
  runner::ProfileSummary profile;
  if (o.profile) profile = runner::summarize(profiler, device_id);

  std::vector<std::string> files(results.size());
  std::vector<std::string> leaves(results.size());
  if (!o.output_dir.empty()) {
    // Tensors in the format asked; sequences and optionals, which .npy cannot hold, as .pb.
    const bool npy = o.output_format == "npy";
    const std::vector<std::string> stems = output_stems(names);
    for (size_t i = 0; i < results.size(); ++i) {
      const runner::Value& v = results[i];
      if (v.kind == runner::Value::Kind::kNone) throw_usage_error("output '" + names[i] + "' has no value to write");
      if (npy && v.is_tensor() && !runner::npy_holds(v.tensor.dtype()))
        throw_usage_error("output '" + names[i] + "' is " + v.describe() + ", which .npy cannot hold; use --output-format pb");
      leaves[i] = stems[i] + (npy && v.is_tensor() ? ".npy" : ".pb");
      files[i] = (std::filesystem::path(o.output_dir) / leaves[i]).string();
      ir::check_not_input(loaded.info, files[i], "--output-dir " + o.output_dir + ": " + files[i]);
      ir::claim_output(files[i], "--output-dir " + files[i]);
    }
    const ir::OutputDir folder(o.output_dir, "--output-dir " + o.output_dir);
    // Every file is written before any is put in place: a failure (a string that is not UTF-8,
    // a full disk) leaves none behind, nor the folder when this run made it.
    try {
      std::vector<std::unique_ptr<ir::OutputFile>> out;
      for (size_t i = 0; i < results.size(); ++i) {
        // Names onnxtool made: never written through a link planted there.
        out.push_back(std::make_unique<ir::OutputFile>(folder, leaves[i], "--output-dir " + files[i]));
        if (npy && results[i].is_tensor()) runner::write_npy(*out.back(), results[i].tensor);
        else runner::write_pb(*out.back(), results[i], names[i]);
      }
      for (auto& f : out) f->sync();
      for (auto& f : out) f->commit();
    } catch (...) {
      folder.remove_if_made_and_empty();
      throw;
    }
  }
  // The trace after the outputs, whose names were claimed first: a trace named like one of them
  // is refused before either is written.
  if (o.profile && !o.trace_file.empty())
    ir::write_file(o.trace_file, runner::chrome_trace(profiler, device_id), "--profile " + o.trace_file);
  std::vector<OutputMatch> matches;
  if (!o.expect_dir.empty()) matches = match_outputs(session, names, results, o);
  const auto differing = std::find_if(matches.begin(), matches.end(), [](const OutputMatch& m) { return !m.match; });
  // The failure's one line on stderr: the first output that differs, and how many more do.
  const auto report_mismatch = [&] {
    if (differing == matches.end()) return kExitOk;
    const auto more = std::count_if(differing + 1, matches.end(), [](const OutputMatch& m) { return !m.match; });
    std::cerr << "onnxtool run: output '" << names[static_cast<size_t>(differing - matches.begin())] << "' "
              << describe_match(*differing) << " (rtol " << o.rtol << ", atol " << o.atol << ")"
              << (more ? " and " + std::to_string(more) + " more output(s) differ" : std::string()) << "\n";
    return kExitFailed;
  };
  auto pct = [&times](double q) { return times[std::min(times.size() - 1, static_cast<size_t>(q * static_cast<double>(times.size() - 1) + 0.5))]; };
  if (o.json) {
    nlohmann::json outs = nlohmann::json::array();
    for (size_t i = 0; i < results.size(); ++i) {
      nlohmann::json j = {{"name", names[i]}};
      if (results[i].is_tensor()) {
        j["dtype"] = std::string(ir::data_type_name(results[i].tensor.dtype()));
        j["shape"] = results[i].tensor.shape();
      } else {
        j["dtype"] = results[i].describe();
        j["shape"] = nullptr;
      }
      // The text's statistics (null where it shows none: no tensor, or not numeric).
      const runner::TensorStats st = results[i].is_tensor() ? runner::tensor_stats(results[i].tensor) : runner::TensorStats{};
      j["min"] = st.numeric ? json_number(st.min) : nullptr;
      j["max"] = st.numeric ? json_number(st.max) : nullptr;
      j["mean"] = st.numeric ? json_number(st.mean) : nullptr;
      j["file"] = files[i].empty() ? nlohmann::json(nullptr) : nlohmann::json(files[i]);
      j["expect"] = matches.empty() ? nlohmann::json(nullptr) : match_json(matches[i]);
      outs.push_back(j);
    }
    nlohmann::json doc = {{"outputs", outs}, {"threads", session.threads()}, {"placement", placement_json(session.device(), session.placement())}};
    if (!times.empty()) doc["latency_ms"] = {{"median", pct(0.5)}, {"min", times.front()}, {"p90", pct(0.9)}, {"runs", times.size()}};
    if (o.profile) doc["profile"] = profile_json(profile, o.trace_file);
    if (dump) doc["dump"] = {{"dir", dump->dir()}, {"index", dump->index_path()}, {"written", dump->written()},
                     {"subgraph_files", dump->subgraph_files()}, {"skipped", dump->skipped()}};
    doc["expect"] = o.expect_dir.empty() ? nlohmann::json(nullptr)
                                         : nlohmann::json{{"dir", o.expect_dir}, {"rtol", o.rtol}, {"atol", o.atol},
                                                          {"match", differing == matches.end()}};
    print_json(doc);
    return report_mismatch();
  }
  for (size_t i = 0; i < results.size(); ++i) {
    std::cout << names[i] << ": " << results[i].describe();
    if (results[i].is_tensor()) {
      const runner::TensorStats s = runner::tensor_stats(results[i].tensor);
      if (s.numeric) std::cout << "  min " << s.min << "  max " << s.max << "  mean " << s.mean;
    }
    if (!files[i].empty()) std::cout << "  -> " << files[i];
    std::cout << "\n";
  }
  if (!matches.empty()) {
    std::cout << "expect " << o.expect_dir << " (rtol " << o.rtol << ", atol " << o.atol << "):\n";
    for (size_t i = 0; i < matches.size(); ++i) std::cout << "  " << names[i] << ": " << describe_match(matches[i]) << "\n";
  }
  if (const std::string line = placement_line(session.device(), session.placement()); !line.empty()) std::cout << line << "\n";
  if (!times.empty())
    std::cout << "latency over " << times.size() << " runs: median " << pct(0.5) << " ms, min " << times.front()
              << " ms, p90 " << pct(0.9) << " ms\n";
  if (o.profile) print_profile(profile, o.trace_file);
  if (dump && !dump->limited().empty())
    warning("run", "--dump-dir " + dump->dir() + ": " + dump->limited() + "; the values after it are listed in the index as skipped");
  if (dump)
    std::cout << "dumped " << dump->written() << " values to " << dump->dir() << " ("
              << (dump->subgraph_files() ? std::to_string(dump->subgraph_files()) + " of them runs of subgraph values; " : "")
              << dump->skipped() << " skipped; index " << dump->index_path() << ")\n";
  return report_mismatch();
}

}  // namespace

void register_run(CLI::App& app, Action& action) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "Execute a model on the reference runner (CPU or a Vulkan device)");
  sub->add_option("MODEL", o->model, "model file")->required();
  sub->add_option("--input", o->inputs, "NAME=FILE (.npy, or a TensorProto, SequenceProto or OptionalProto .pb as the model declares NAME); repeatable");
  sub->add_option("--inputs", o->inputs_dir, "folder of <name>.npy/.pb files, or a test_data_set_N folder");
  sub->add_flag("--random", o->random, "fill inputs not given with deterministic random data");
  sub->add_option("--seed", o->seed, "seed for --random (default 0)")->check(number_in(0, kMaxSeed));
  sub->add_option("--shape", o->shapes, "NAME=D1,D2,... sizes for symbolic dims of random inputs");
  add_input_range_option(sub, o->input_ranges);
  sub->add_option("--output-dir", o->output_dir, "write each output to DIR/<name>.npy (or .pb: see --output-format)");
  sub->add_option("--output-format", o->output_format,
                  "npy (default: tensors as .npy; bfloat16, float8 and int4 refused) or pb (TensorProto); "
                  "sequences and optionals are always .pb (SequenceProto, OptionalProto)")
      ->check(CLI::IsMember({"npy", "pb"}));
  sub->add_option("--expect", o->expect_dir,
                  "compare the outputs with DIR's: a test_data_set_N folder (output_K.pb) or what --output-dir "
                  "wrote (<name>.npy/.pb); exit 1 when any differs");
  sub->add_option("--rtol", o->rtol, "relative tolerance of --expect (default 1e-3)")->check(number_in(0, 1e6));
  sub->add_option("--atol", o->atol, "absolute tolerance of --expect (default 1e-5)")->check(number_in(0, 1e300));
  sub->add_option("--outputs", o->outputs, "names of the values to return, of the main graph or of a subgraph run once (default: graph outputs)")->delimiter(',');
  sub->add_option("--dump-dir", o->dump_dir, "write every value computed to DIR/<name>.npy (.pb; a subgraph's: <name>.<run>.npy), with DIR/index.json");
  sub->add_option("--max-dump-files", o->dump_limits.max_files,
                  "--dump-dir writes at most N files; the values past them are listed in index.json as skipped (default 10000)")
      ->check(CLI::Range(size_t{1}, size_t{100000000}));
  sub->add_option("--max-dump-bytes", o->dump_limits.max_bytes,
                  "--dump-dir writes at most B bytes of tensors (default 4294967296, 4 GiB)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 50));
  sub->add_option("--device", o->device, "cpu (default), vulkan or vulkan:N, optionally :fp32-arithmetic (`onnxtool devices` lists them)");
  sub->add_option("--benchmark", o->benchmark, "time N runs after one warm-up run")->check(number_in(0, 1e7));
  CLI::Option* profile =
      sub->add_option("--profile", o->trace_file,
                      "time every node of the --benchmark runs (or of one run after the first): per op type and "
                      "per node; with FILE, also a Chrome trace of every node there")
          ->expected(0, 1);
  sub->add_flag("--json", o->json, "print one JSON document");
  add_quiet_flag(sub);
  add_model_run_flags(sub);
  sub->callback([&action, o, profile, sub] {
    o->profile = profile->count() > 0;
    o->given = given_options(*sub);
    action = [o] { return run_model(*o); };
  });
}

}  // namespace onnxtool::cli
