// Helpers shared by the subcommands: error-to-exit-code mapping, JSON output, parsing.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "ir/diagnostic.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "runner/feeds.h"

namespace onnxtool::cli {

/// The exit codes (README, "Exit codes"): 0 success, 1 the model failed what was asked, 2 bad
/// usage, unreadable input or an internal failure.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

/// A subcommand's work, run after parsing; returns the exit code.
using Action = std::function<int()>;

/// The version of every --json document's layout ("schema_version"): raised when a key is
/// renamed or removed, not when one is added.
constexpr int kJsonSchemaVersion = 2;

/// Set when the command line asks for --json: failures are then a JSON document on stdout too
/// (print_json_error), so that a CI step parsing stdout sees them.
void set_json_errors(bool on);

/// `s` as one line: newlines and carriage returns as \n and \r, other control characters as '?'
/// (messages quote names from the model, which may hold them).
std::string one_line(const std::string& s);

/// A library parameter ("input_shape", quant::QuantizeOptions' "op_types") as `command`'s flag
/// ("--input-shape"); the libraries never spell flags (ir/error.h, Parameter).
std::string flag_for(const std::string& command, const std::string& parameter);

/// "--a, --b": the flags of parameters, in order.
std::string flags_for(const std::string& command, const std::vector<std::string>& parameters);

/// A library error in `command`'s words: "FLAG VALUE: what (REMEDY FLAGS)", one line.
std::string error_text(const std::string& command, const Error& e);

/// Runs an action, turning onnxtool::Error (and any other exception) into one line on stderr
/// and the matching exit code (and, with --json, print_json_error).
int run_action(const std::string& command, const Action& action);

/// Prints a JSON document on stdout (one document, two-space indent), with "schema_version".
void print_json(const nlohmann::json& doc);

/// With --json: {"schema_version", "command", "ok": false, "exit_code", "error"} on stdout.
void print_json_error(const std::string& command, const std::string& message, int exit_code);

/// Splits "NAME=VALUE" (flag names the option in the error).
std::pair<std::string, std::string> parse_assignment(const std::string& s, const char* flag);
/// Parses "D1,D2,..." (non-negative sizes) of option `flag` for input `name`.
std::vector<int64_t> parse_size_list(const std::string& flag, const std::string& name, const std::string& text);
/// Each NAME=D1,D2,... of `flag` (--input-shape, --fix-input-shape) by name; a name given twice takes the last.
std::map<std::string, std::vector<int64_t>> parse_shapes(const std::string& flag, const std::vector<std::string>& items);

/// The inputs of `run` and `compare`: --input NAME=FILE, --inputs DIR, and random ones (--random,
/// --seed, --input-shape, --input-range).
struct FeedFlags {
  std::vector<std::string> inputs;
  std::string inputs_dir;
  bool random = false;
  uint64_t seed = 0;
  std::vector<std::string> shapes;      ///< --input-shape
  std::vector<std::string> old_shapes;  ///< --shape, its former name (merged into `shapes` after parsing)
  std::vector<std::string> input_ranges;
};
/// FeedFlags as the runner takes them, reading the files of `dir` and filling the rest at random
/// when `random`.
runner::FeedOptions feed_options(const FeedFlags& flags, const std::string& dir, bool random);

/// A node as listings name it: its name, or "Op#index" (its place in its graph) when unnamed.
std::string node_label(const ir::Node& n);

/// "rule node: message" (the tensor when no node): a diagnostic in one line, for refusals.
std::string describe(const ir::Diagnostic& d);

/// Sorts `model`'s graphs topologically (nodes stored out of order run as well), then refuses
/// (Error kInput, the rule's message) a model that breaks a rule every run relies on
/// (checker::runner_error): duplicate names, cycles, tensors with two data fields... Returns
/// the number of nodes the sort moved.
int64_t refuse_unrunnable(ir::Model& model, const std::string& path);

/// The sample folders of DIR (`quantize --inputs`, `compare --inputs`): its subfolders in name
/// order, at most `limit` when > 0. Errors (not a folder, no subfolder) name `flag` and DIR.
std::vector<std::string> sample_dirs(const std::string& flag, const std::string& dir, int limit = 0);

/// A metric for --json: the number, or "inf"/"-inf" (JSON has none; the SQNR of equal outputs,
/// the relative error against a zero), or null for NaN.
nlohmann::json json_number(double v);

/// "12.3 MB" style.
std::string human_bytes(uint64_t bytes);
/// A count the same way: "4.09 G", "25.6 M", "512".
std::string human_count(uint64_t n);

// Registration of each subcommand: adds it to `app` and sets `action` when it is selected.
void register_inspect(CLI::App& app, Action& action);
void register_check(CLI::App& app, Action& action);
void register_run(CLI::App& app, Action& action);
void register_convert(CLI::App& app, Action& action);
void register_optimize(CLI::App& app, Action& action);
void register_quantize(CLI::App& app, Action& action);
void register_compare(CLI::App& app, Action& action);
void register_diff(CLI::App& app, Action& action);
void register_extract(CLI::App& app, Action& action);
void register_edit(CLI::App& app, Action& action);
void register_reduce(CLI::App& app, Action& action);
void register_devices(CLI::App& app, Action& action);

}  // namespace onnxtool::cli
