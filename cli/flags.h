// The flags every command shares, the checks of numeric flags, and what the command line gave:
// which options were given, and which name a slip was probably meant as.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace onnxtool::cli {

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

/// Adds --quiet and --threads to every subcommand of `app` that lacks them, so that one command
/// line (`--threads 1 --quiet --json`) fits every command. Where a command runs no model (check,
/// diff, inspect, devices) --threads is accepted and changes nothing; its help says so.
void add_shared_flags(CLI::App& app);

/// Sets each command's --help footer: two or three examples that work on testdata/tiny_cnn.onnx
/// (cli/examples.cpp).
void add_examples(CLI::App& app);

/// A flag's former name, kept working: an option hidden from --help that stores into `value`
/// (the command merges it with the new name's value). `note_renamed` says it was used.
template <class T>
CLI::Option* add_old_name(CLI::App* sub, const std::string& old_name, T& value) {
  return sub->add_option(old_name, value, "former name")->group("");
}

/// A flag renamed: its former spelling and the name to use now, and an optional word on what
/// the former spelling still means on this command.
struct Renamed {
  std::string old_name;
  std::string new_name;
  std::string remark;
};
/// One stderr line per former name in `renamed` that was given ("onnxtool quantize: --calib-data
/// is now --inputs (the old name still works)"). Never on stdout, so --json stays one document;
/// not silenced by --quiet, so that a script learns of the change.
void note_renamed(const std::string& command, const std::set<std::string>& given, const std::vector<Renamed>& renamed);

/// A flag that writes input dims into the model (optimize --fix-input-shape, edit
/// --set-input-shape), spelt --input-shape on that command before --input-shape came to size
/// generated inputs only. The former spelling keeps its meaning there, so that no command line
/// written for it changes silently.
struct ModelDimsFlag {
  std::vector<std::string> values;      ///< NAME=D1,D2,... as given, former spelling's first
  std::vector<std::string> old_values;  ///< --input-shape (merged into `values` by take_old_dims)
};
/// Adds `name` and its hidden former spelling --input-shape to `sub`, both storing into `flag`.
void add_model_dims_flag(CLI::App* sub, ModelDimsFlag& flag, const std::string& name, const std::string& help);
/// Merges the values given under --input-shape into `flag.values` and, when there were any,
/// says on stderr that `new_name` is the flag's name now and what the former one still does on
/// `command` (`verb`: "fixes", "sets").
void take_old_dims(const std::string& command, const std::set<std::string>& given, ModelDimsFlag& flag,
                   const std::string& new_name, const std::string& verb);

/// Range check of a numeric flag: the text must be a finite number in [lo, hi] (or (lo, hi] with
/// `open_low`). CLI11 alone takes "nan", "inf" and, for unsigned options, "-1" (as 2^64 - 1).
CLI::Validator number_in(double lo, double hi, bool open_low = false);
/// The largest --seed (a uint64), as number_in's bound.
constexpr double kMaxSeed = 18446744073709551615.0;

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

/// A row of a command's table of flags that need another: `flags` are refused (a usage error,
/// "FLAGS: WHY") when given while `used` is false.
struct FlagsUsedWhen {
  std::vector<std::string> flags;
  bool used;
  std::string why;
};
/// Refuses the first row of `table` whose flags were given and would be ignored.
void refuse_unused(const std::set<std::string>& given, const std::vector<FlagsUsedWhen>& table);

}  // namespace onnxtool::cli
