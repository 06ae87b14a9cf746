// ValueDump: the files of `run --dump-dir` and their index.
#include "cli/dump_dir.h"

#include <filesystem>

#include "cli/common.h"
#include "ir/error.h"
#include "ir/output_file.h"
#include "runner/tensor_io.h"

namespace onnxtool::cli {

ValueDump::ValueDump(const std::string& dir, const ir::LoadedModel& loaded) : dir_(dir), input_(&loaded.info) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw_usage_error("--dump-dir " + dir + ": exists and is not a directory");
  const ir::Graph& g = *loaded.model.graph;
  runner::FileStems taken({"index.json"});
  for (const auto& n : g.nodes()) {
    const std::string node = n->name.empty() ? n->op_type + "#" + std::to_string(g.node_index(n.get())) : n->name;
    for (const ir::Value* v : n->outputs()) {
      if (!v || v->producer() != n.get() || entries_.count(v->name())) continue;
      const std::string stem = taken.claim(v->name());
      for (const char* ext : {".npy", ".pb"})
        ir::check_not_input(*input_, (fs::path(dir) / (stem + ext)).string(), "--dump-dir " + dir);
      entries_[v->name()] = Entry{stem, node, n->op_type};
    }
  }
  fs::create_directories(dir, ec);
  if (ec) throw_usage_error("--dump-dir " + dir + ": cannot create it (" + ec.message() + ")");
}

void ValueDump::attach(runner::Session& session) {
  session.set_observer([this](const ir::Value& value, const runner::Value& produced) { write(value, produced); });
}

void ValueDump::detach(runner::Session& session) { session.set_observer(nullptr); }

std::string ValueDump::index_path() const { return (std::filesystem::path(dir_) / "index.json").string(); }

void ValueDump::write(const ir::Value& value, const runner::Value& produced) {
  const auto it = entries_.find(value.name());
  if (it == entries_.end() || it->second.seen) return;
  Entry& e = it->second;
  e.seen = true;
  nlohmann::json j = {{"node", e.node}, {"op_type", e.op_type}};
  if (produced.is_tensor()) {
    j["dtype"] = std::string(ir::data_type_name(produced.tensor.dtype()));
    j["shape"] = produced.tensor.shape();
  } else {
    j["dtype"] = produced.describe();
    j["shape"] = nullptr;
  }
  const bool npy = produced.is_tensor() && runner::npy_holds(produced.tensor.dtype());
  const std::string file = e.stem + (npy ? ".npy" : ".pb");
  const std::string path = (std::filesystem::path(dir_) / file).string();
  try {
    if (npy) {
      runner::write_npy(path, produced.tensor);
    } else {
      ir::OutputFile out(path, "--dump-dir " + path);
      runner::write_pb(out, produced, value.name());
      out.sync();
      out.commit();
    }
  } catch (const Error& err) {
    // A value no file format here holds is listed, not fatal; a failing disk is.
    if (err.kind() != ErrorKind::kUsage) throw;
    j["file"] = nullptr;
    j["skipped"] = err.what();
    index_[value.name()] = j;
    ++skipped_;
    return;
  }
  j["file"] = file;
  index_[value.name()] = j;
  ++written_;
}

void ValueDump::finish() {
  for (const auto& [name, e] : entries_) {
    if (e.seen) continue;
    index_[name] = {{"node", e.node}, {"op_type", e.op_type}, {"file", nullptr}, {"dtype", nullptr}, {"shape", nullptr},
                    {"skipped", "not computed in this run (a branch not taken, or an output nothing reads)"}};
    ++skipped_;
  }
  ir::write_file(index_path(), nlohmann::json{{"tensors", index_}}.dump(2) + "\n", "--dump-dir " + index_path());
}

}  // namespace onnxtool::cli
