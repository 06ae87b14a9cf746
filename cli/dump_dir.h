// `run --dump-dir DIR`: every value the main graph computes, written as it is produced.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "ir/model_io.h"
#include "runner/session.h"

namespace onnxtool::cli {

/// Writes each node output of the main graph to DIR/<safe name>.npy (.pb for what .npy cannot
/// hold: sequences, optionals, bfloat16...) from the session's observer, so that no more than
/// one value is held for it at a time, and then DIR/index.json: by tensor name, its file, node,
/// op type, element type and shape (safe names can collide: "a/b" and "a_b"; the index says
/// which file is which).
class ValueDump {
 public:
  /// Plans a file per value (collisions resolved in node order: NAME.npy, NAME_1.npy, ...) and
  /// refuses (Error kUsage) a DIR that is not a directory or a file over the input model.
  ValueDump(const std::string& dir, const ir::LoadedModel& loaded);
  /// Observes `session`'s next run; detach() stops it.
  void attach(runner::Session& session);
  void detach(runner::Session& session);
  /// Writes index.json; values no node computed in the run are listed as skipped.
  void finish();

  const std::string& dir() const { return dir_; }
  std::string index_path() const;
  size_t written() const { return written_; }
  size_t skipped() const { return skipped_; }

 private:
  struct Entry {
    std::string stem;  ///< file name without the extension
    std::string node;
    std::string op_type;
    bool seen = false;
  };
  void write(const ir::Value& value, const runner::Value& produced);
  std::string dir_;
  const ir::LoadInfo* input_;
  std::map<std::string, Entry> entries_;  ///< by value name
  nlohmann::json index_ = nlohmann::json::object();
  size_t written_ = 0;
  size_t skipped_ = 0;
};

}  // namespace onnxtool::cli
