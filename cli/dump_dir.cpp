// ValueDump: the files of `run --dump-dir` and their index.
#include "cli/dump_dir.h"

#include <filesystem>

#include "cli/common.h"
#include "ir/command_files.h"
#include "ir/error.h"
#include "ir/output_file.h"

namespace onnxtool::cli {

namespace {

std::string node_label(const ir::Graph& g, const ir::Node& n) {
  return n.name.empty() ? n.op_type + "#" + std::to_string(g.node_index(&n)) : n.name;
}

}  // namespace

ValueDump::ValueDump(const std::string& dir, const ir::LoadedModel& loaded)
    : dir_(dir), input_(&loaded.info), stems_({"index.json"}) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw_usage_error("--dump-dir " + dir + ": exists and is not a directory");
  const ir::Graph& g = *loaded.model.graph;
  for (const auto& n : g.nodes()) {
    for (const ir::Value* v : n->outputs()) {
      if (!v || v->producer() != n.get() || entries_.count(v)) continue;
      Entry e{stems_.claim(v->name()), node_label(g, *n), n->op_type};
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
            entries_[v] = Entry{"", node_label(*sub, *m), m->op_type, where};
            subgraph_order_.push_back(v);
          }
        self(*sub, self);
      }
  };
  walk(g, walk);
  fs::create_directories(dir, ec);
  if (ec) throw_usage_error("--dump-dir " + dir + ": cannot create it (" + ec.message() + ")");
}

std::string ValueDump::index_path() const { return (std::filesystem::path(dir_) / "index.json").string(); }

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
  const std::string path = (std::filesystem::path(dir_) / file).string();
  try {
    ir::check_not_input(*input_, path, "--dump-dir " + dir_);
    ir::claim_output(path, "--dump-dir " + path);
    // A name onnxtool made: never written through a link planted there.
    ir::OutputFile out(path, "--dump-dir " + path, ir::AtSymlink::kRefuse);
    if (npy) runner::write_npy(out, produced.tensor);
    else runner::write_pb(out, produced, name);
    out.sync();
    out.commit();
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
  ir::write_file(index_path(), nlohmann::json{{"tensors", index_}, {"subgraph_tensors", subgraph_values}}.dump(2) + "\n",
                 "--dump-dir " + index_path(), ir::AtSymlink::kRefuse);
}

}  // namespace onnxtool::cli
