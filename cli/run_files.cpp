// `onnxtool run`'s files: the outputs --output-dir writes, and the references --expect reads.
#include <algorithm>
#include <filesystem>
#include <optional>

#include "cli/printers.h"
#include "cli/run.h"
#include "ir/command_files.h"
#include "ir/error.h"
#include "ir/output_file.h"
#include "runner/compare.h"
#include "runner/tensor_io.h"

namespace onnxtool::cli {
namespace {

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

/// Tensors are written in the format asked; sequences and optionals, which .npy cannot hold, as .pb.
bool as_npy(const RunOptions& o, const runner::Value& v) { return o.output_format == "npy" && v.is_tensor(); }

/// The file name of each output in --output-dir. Refuses what cannot be written, and claims each.
std::vector<std::string> output_leaves(const RunOptions& o, const ModelRun& run) {
  const std::vector<std::string> stems = output_stems(run.names);
  std::vector<std::string> leaves(run.results.size());
  for (size_t i = 0; i < run.results.size(); ++i) {
    const runner::Value& v = run.results[i];
    const std::string& name = run.names[i];
    if (v.kind == runner::Value::Kind::kNone) throw_usage_error("output '" + name + "' has no value to write");
    if (as_npy(o, v) && !runner::npy_holds(v.tensor.dtype()))
      throw_usage_error("output '" + name + "' is " + v.describe() + ", which .npy cannot hold; use --output-format pb");
    leaves[i] = stems[i] + (as_npy(o, v) ? ".npy" : ".pb");
    const std::string file = (std::filesystem::path(o.output_dir) / leaves[i]).string();
    ir::check_not_input(run.loaded.info, file, "--output-dir " + o.output_dir + ": " + file);
    ir::claim_output(file, "--output-dir " + file);
  }
  return leaves;
}

}  // namespace

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

std::vector<std::string> write_outputs(const RunOptions& o, const ModelRun& run) {
  std::vector<std::string> files(run.results.size());
  if (o.output_dir.empty()) return files;
  const std::vector<std::string> leaves = output_leaves(o, run);
  for (size_t i = 0; i < files.size(); ++i) files[i] = (std::filesystem::path(o.output_dir) / leaves[i]).string();
  const ir::OutputDir folder(o.output_dir, "--output-dir " + o.output_dir);
  // Every file is written before any is put in place: a failure (a string that is not UTF-8,
  // a full disk) leaves none behind, nor the folder when this run made it.
  try {
    std::vector<std::unique_ptr<ir::OutputFile>> out;
    for (size_t i = 0; i < files.size(); ++i) {
      // Names onnxtool made: never written through a link planted there.
      out.push_back(std::make_unique<ir::OutputFile>(folder, leaves[i], "--output-dir " + files[i]));
      const runner::Value& v = run.results[i];
      if (as_npy(o, v)) runner::write_npy(*out.back(), v.tensor);
      else runner::write_pb(*out.back(), v, run.names[i]);
    }
    for (auto& f : out) f->sync();
    for (auto& f : out) f->commit();
  } catch (...) {
    folder.remove_if_made_and_empty();
    throw;
  }
  return files;
}

std::vector<OutputMatch> match_outputs(const RunOptions& o, const ModelRun& run) {
  if (!std::filesystem::is_directory(o.expect_dir)) throw_usage_error("--expect " + o.expect_dir + ": not a directory");
  const runner::Session& session = *run.session;
  const std::vector<std::string>& names = run.names;
  const std::vector<std::string> stems = output_stems(names);
  std::vector<OutputMatch> matches(run.results.size());
  std::string looked_for;
  for (size_t i = 0; i < run.results.size(); ++i) {
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
    const runner::Value want = runner::read_value_file(m.file, reference_type(session, names[i], run.results[i]));
    const runner::ValueMatch v = runner::match_value(want, run.results[i], o.rtol, o.atol);
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

std::string describe_match(const OutputMatch& m) {
  if (m.file.empty()) return "no reference";
  if (m.match) return "matches " + m.file + " (max abs " + significant(m.max_abs, 3) + ")";
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

}  // namespace onnxtool::cli
