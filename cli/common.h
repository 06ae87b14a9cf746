// Helpers shared by the subcommands: error-to-exit-code mapping, output formatting.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "ir/diagnostic.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "runner/session.h"

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

/// Adds --quiet to a command that can take long: no progress or informational lines on stderr
/// (cli/progress.h), errors, warnings (what a result does not prove) and results unchanged.
void add_quiet_flag(CLI::App* sub);

/// Adds to a command that runs models (its own, verification's, calibration's, constant
/// folding's):
///  - --threads N: the runner's threads (runner::set_default_threads); ONNXTOOL_THREADS sets the
///    default for every command, else OMP_NUM_THREADS, else every core the process may use;
///  - --time-limit S: every run ends past S seconds from the start with one line naming the
///    node and exit 2 (runner::set_time_limit); ONNXTOOL_TIME_LIMIT sets it for every command.
/// The flags win over the variables (apply_run_environment).
void add_model_run_flags(CLI::App* sub);
/// --threads alone (quantize, whose --time-limit bounds its accuracy search).
void add_threads_flag(CLI::App* sub);
/// ONNXTOOL_TIME_LIMIT and ONNXTOOL_THREADS, unless the flag was given: checked (a usage error
/// naming the variable) and applied.
void apply_run_environment();

/// Prints a JSON document on stdout (one document, two-space indent), with "schema_version".
void print_json(const nlohmann::json& doc);

/// With --json: {"schema_version", "command", "ok": false, "exit_code", "error"} on stdout.
void print_json_error(const std::string& command, const std::string& message, int exit_code);

/// Where a device session ran the nodes of its last run, one line ("" for a CPU session):
/// "vulkan:0 (NAME): 120 nodes on the device; 3 on the CPU: Shape x2 (no Vulkan kernel), ...".
std::string placement_line(const runner::DeviceInfo* device, const runner::Placement& placement);
/// The same as JSON (null for a CPU session).
nlohmann::json placement_json(const runner::DeviceInfo* device, const runner::Placement& placement);

/// Splits "NAME=VALUE" (flag names the option in the error).
std::pair<std::string, std::string> parse_assignment(const std::string& s, const char* flag);
/// Parses "D1,D2,..." (non-negative sizes) of option `flag` for input `name`.
std::vector<int64_t> parse_size_list(const std::string& flag, const std::string& name, const std::string& text);

/// Range check of a numeric flag: the text must be a finite number in [lo, hi] (or (lo, hi] with
/// `open_low`). CLI11 alone takes "nan", "inf" and, for unsigned options, "-1" (as 2^64 - 1).
CLI::Validator number_in(double lo, double hi, bool open_low = false);
/// The largest --seed (a uint64), as number_in's bound.
constexpr double kMaxSeed = 18446744073709551615.0;

/// "rule node: message" (the tensor when no node): a diagnostic in one line, for refusals.
std::string describe(const ir::Diagnostic& d);

/// Sorts `model`'s graphs topologically (nodes stored out of order run as well), then refuses
/// (Error kInput, the rule's message) a model that breaks a rule every run relies on
/// (checker::runner_error): duplicate names, cycles, tensors with two data fields... Returns
/// the number of nodes the sort moved.
int64_t refuse_unrunnable(ir::Model& model, const std::string& path);

/// The candidate `word` was probably meant as: the closest by edit distance (a letter added,
/// dropped, changed, or two swapped), leading dashes ignored, when few enough edits separate them
/// to be a slip (one up to 5 letters, two from 6), or else the only candidate `word` begins; ""
/// when none.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

/// The long and short names of `app`'s options ("--json", "-o"), positionals left out.
std::vector<std::string> option_names(const CLI::App& app);

/// The names (long and short) of `app`'s options given on the command line: a default value
/// cannot tell a flag given from one left alone, and flags that would be ignored are refused.
std::set<std::string> given_options(const CLI::App& app);

/// "--a", "--a and --b", "--a, --b and --c": the flags of `given` among `flags`, in that order.
std::string given_list(const std::set<std::string>& given, const std::vector<std::string>& flags);

/// The sample folders of DIR (`quantize --calib-data`, `compare --inputs`): its subfolders in name
/// order, at most `limit` when > 0. Errors (not a folder, no subfolder) name `flag` and DIR.
std::vector<std::string> sample_dirs(const std::string& flag, const std::string& dir, int limit = 0);

/// A metric for --json: the number, or "inf"/"-inf" (JSON has none; the SQNR of equal outputs,
/// the relative error against a zero), or null for NaN.
nlohmann::json json_number(double v);

/// "12.3 MB" style.
std::string human_bytes(uint64_t bytes);

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
void register_devices(CLI::App& app, Action& action);

}  // namespace onnxtool::cli
