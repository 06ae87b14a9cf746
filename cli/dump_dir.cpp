// ValueDump: the files of `run --dump-dir` and their index.
#include "cli/dump_dir.h"

#include <filesystem>

#include "cli/common.h"
#include "ir/command_files.h"
#include "ir/error.h"
#include "ir/output_file.h"

namespace onnxtool::cli {

ValueDump::ValueDump(const std::string& dir, const ir::LoadedModel& loaded, DumpLimits limits)
    : dir_(dir), input_(&loaded.info), stems_({"index.json"}), limits_(limits) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw_usage_error("--dump-dir " + dir + ": exists and is not a directory");
  const ir::Graph& g = *loaded.model.graph;
  for (const auto& n : g.nodes()) {
    for (const ir::Value* v : n->outputs()) {
      if (!v || v->producer() != n.get() || entries_.count(v)) continue;
      Entry e{stems_.claim(v->name()), node_label(*n), n->op_type};
      for (const char* ext : {".npy", ".pb"})
        ir::check_not_input(*input_, (fs::path(dir) / (e.stem + ext)).string(), "--dump-dir " + dir);
      entries_[v] = e;
    }
  }
  // Subgraph values, depth first in node order; their files are named as their runs come.
  const auto walk = [&](const ir::Graph& graph, const auto& self) -> void {
    for (const auto& n : graph.nodes())
      for (const ir::Graph* sub : n->subgraphs()) {
        const std::string where = "the subgraph '" + sub->name + "' of " + n->describe();
        for (const auto& m : sub->nodes())
          for (const ir::Value* v : m->outputs()) {
            if (!v || v->producer() != m.get() || entries_.count(v)) continue;
            entries_[v] = Entry{"", node_label(*m), m->op_type, where};
            subgraph_order_.push_back(v);
          }
        self(*sub, self);
      }
  };
  walk(g, walk);
  folder_ = std::make_unique<ir::OutputDir>(dir, "--dump-dir " + dir);
}

ValueDump::~ValueDump() {
  if (finished_) return;
  if (!folder_) return;
  for (const auto& f : created_) folder_->remove(f);
  folder_->remove_if_made_and_empty();
}

std::string ValueDump::index_path() const { return folder_ ? folder_->path_of("index.json") : dir_ + "/index.json"; }

nlohmann::json ValueDump::write(const std::string& stem, const std::string& name, const runner::Value& produced) {
  nlohmann::json j;
  if (produced.is_tensor()) {
    j["dtype"] = std::string(ir::data_type_name(produced.tensor.dtype()));
    j["shape"] = produced.tensor.shape();
  } else {
    j["dtype"] = produced.describe();
    j["shape"] = nullptr;
  }
  const bool npy = produced.is_tensor() && runner::npy_holds(produced.tensor.dtype());
  const std::string file = stem + (npy ? ".npy" : ".pb");
  const std::string path = folder_->path_of(file);
  const uint64_t bytes = produced.is_tensor() ? produced.tensor.bytes() : 0;
  if (limited_.empty() && written_ >= limits_.max_files)
    limited_ = "stopped at --max-dump-files " + std::to_string(limits_.max_files);
  if (limited_.empty() && bytes_ + bytes > limits_.max_bytes)
    limited_ = "stopped at --max-dump-bytes " + std::to_string(limits_.max_bytes);
  if (!limited_.empty()) {
    j["file"] = nullptr;
    j["skipped"] = limited_;
    ++skipped_;
    return j;
  }
  try {
    ir::check_not_input(*input_, path, "--dump-dir " + dir_);
    ir::claim_output(path, "--dump-dir " + path);
    // A name onnxtool made: never written through a link planted there.
    ir::OutputFile out(*folder_, file, "--dump-dir " + path);
    if (npy) runner::write_npy(out, produced.tensor);
    else runner::write_pb(out, produced, name);
    const bool existed = folder_->has(file);
    // Debugging output, not a deliverable: renamed into place whole, but not synced file by
    // file (index.json, written last, is).
    out.commit(/*durable=*/false);
    bytes_ += out.written();
    if (!existed) created_.push_back(file);
  } catch (const Error& err) {
    // A value no file format here holds is listed, not fatal; a failing disk is.
    if (err.kind() != ErrorKind::kUsage) throw;
    j["file"] = nullptr;
    j["skipped"] = err.what();
    ++skipped_;
    return j;
  }
  j["file"] = file;
  ++written_;
  return j;
}

void ValueDump::observe(const ir::Value& value, const runner::Value& produced) {
  const auto it = entries_.find(&value);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  if (e.graph.empty()) {
    if (e.seen) return;
    e.seen = true;
    nlohmann::json j = write(e.stem, value.name(), produced);
    j["node"] = e.node;
    j["op_type"] = e.op_type;
    index_[value.name()] = j;
    return;
  }
  const std::string stem = stems_.claim(value.name() + "." + std::to_string(e.runs.size()));
  e.runs.push_back(write(stem, value.name(), produced));
  if (!e.runs.back()["file"].is_null()) ++subgraph_files_;
}

void ValueDump::finish() {
  nlohmann::json subgraph_values = nlohmann::json::array();
  for (const auto& [value, e] : entries_) {
    if (!e.graph.empty() || e.seen) continue;
    index_[value->name()] = {{"node", e.node}, {"op_type", e.op_type}, {"file", nullptr}, {"dtype", nullptr}, {"shape", nullptr},
                             {"skipped", "not computed in this run (a branch not taken, or an output nothing reads)"}};
    ++skipped_;
  }
  for (const ir::Value* v : subgraph_order_) {
    const Entry& e = entries_.at(v);
    subgraph_values.push_back(
        {{"name", v->name()}, {"graph", e.graph}, {"node", e.node}, {"op_type", e.op_type}, {"runs", e.runs}});
  }
  ir::claim_output(index_path(), "--dump-dir " + index_path());
  // Replacement characters for names that are not UTF-8 (JSON cannot hold their bytes).
  const nlohmann::json index{{"tensors", index_}, {"subgraph_tensors", subgraph_values}};
  ir::OutputFile out(*folder_, "index.json", "--dump-dir " + index_path());
  out.write(index.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  out.commit();
  finished_ = true;
}

}  // namespace onnxtool::cli
