// `run --dump-dir DIR`: every value the model computes, written as it is produced.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/model_io.h"
#include "ir/output_file.h"
#include "runner/session.h"
#include "runner/tensor_io.h"

namespace onnxtool::cli {

/// Writes each node output to DIR/<safe name>.npy (.pb for what .npy cannot hold: sequences,
/// optionals, bfloat16...) from the session's observer, so that no more than one value is held
/// for it at a time, and then DIR/index.json. A value of the main graph has one file; a value of
/// an If, Loop or Scan subgraph has one per run of its subgraph, DIR/<safe name>.<run>.npy,
/// counted from 0 (a branch taken once: .0; a Loop body: one per iteration). The index gives, by
/// tensor name, the file, node, op type, element type and shape of each main-graph value
/// ("tensors"), and, in "subgraph_tensors", each subgraph value with the subgraph that holds it
/// and its runs (safe names can collide: "a/b" and "a_b"; the index says which file is which).
/// How much one --dump-dir may write: past either bound the remaining values are listed in the
/// index as skipped, not written (a Loop of 20,000 iterations once wrote 40,000 files).
struct DumpLimits {
  size_t max_files = 10000;
  uint64_t max_bytes = uint64_t{4} << 30;
};

class ValueDump {
 public:
  /// Plans a file per main-graph value (collisions resolved in node order: NAME.npy, NAME_1.npy,
  /// ...; a name past 200 bytes shortened with a hash) and refuses (Error kUsage) a DIR that is
  /// not a directory or a file over the input model.
  ValueDump(const std::string& dir, const ir::LoadedModel& loaded, DumpLimits limits = {});
  /// Without finish() (the run failed): the files this dump wrote are removed, and DIR when it
  /// made it, so that a failed run leaves no partial dump.
  ~ValueDump();
  ValueDump(const ValueDump&) = delete;
  ValueDump& operator=(const ValueDump&) = delete;
  /// Writes `produced`, the value of `value` in this run (of its subgraph).
  void observe(const ir::Value& value, const runner::Value& produced);
  /// Writes index.json; values no node computed in the run are listed as skipped.
  void finish();

  const std::string& dir() const { return dir_; }
  std::string index_path() const;
  size_t written() const { return written_; }  ///< files written
  size_t subgraph_files() const { return subgraph_files_; }  ///< of them, runs of subgraph values
  size_t skipped() const { return skipped_; }
  /// The values left unwritten by DumpLimits ("" when none): "stopped at --max-dump-files 10000".
  const std::string& limited() const { return limited_; }

 private:
  struct Entry {
    std::string stem;  ///< file name without the extension (main graph values)
    std::string node;
    std::string op_type;
    std::string graph;  ///< for a subgraph value: "the subgraph 'body' of node 'loop' (Loop)"
    bool seen = false;
    nlohmann::json runs = nlohmann::json::array();  ///< for a subgraph value: one object per run
  };
  /// Writes one file; returns its index object (file, dtype, shape; or skipped, the reason).
  nlohmann::json write(const std::string& stem, const std::string& name, const runner::Value& produced);
  std::string dir_;
  const ir::LoadInfo* input_;
  runner::FileStems stems_;
  std::map<const ir::Value*, Entry> entries_;
  std::vector<const ir::Value*> subgraph_order_;  ///< subgraph values in the order of the model
  nlohmann::json index_ = nlohmann::json::object();
  size_t written_ = 0;
  size_t subgraph_files_ = 0;
  size_t skipped_ = 0;
  DumpLimits limits_;
  uint64_t bytes_ = 0;
  std::string limited_;
  std::unique_ptr<ir::OutputDir> folder_;  ///< opened once; every file is written through it
  bool finished_ = false;
  std::vector<std::string> created_;  ///< names of the files this dump made (not those it replaced)
};

}  // namespace onnxtool::cli
