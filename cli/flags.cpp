// The flags every command shares, numeric checks, and what the command line gave.
#include "cli/flags.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "cli/progress.h"
#include "ir/error.h"
#include "runner/session.h"
#include "runner/thread_pool.h"

namespace onnxtool::cli {

namespace {

/// The word without its leading dashes, in lower case: "--JSN" is a slip for "--json" as much as
/// "-jsn" is.
std::string bare(const std::string& s) {
  std::string out = s.substr(std::min(s.size(), s.find_first_not_of('-')));
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// Edits (insertions, deletions, substitutions, swaps of neighbours) from a to b: the optimal
/// string alignment distance, a swap counting one, as the slips of typing go.
size_t edit_distance(const std::string& a, const std::string& b) {
  const size_t m = b.size();
  std::vector<size_t> before(m + 1), prev(m + 1), cur(m + 1);
  for (size_t j = 0; j <= m; ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= m; ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string w = bare(word);
  if (w.empty()) return "";
  // Beyond these, a suggestion is more often another word than the one meant; and a word as
  // short as its distance was replaced, not mistyped ("-x" is not a slip for "-o").
  const size_t allowed = std::min(w.size() - 1, size_t{w.size() >= 6 ? 2u : 1u});
  std::string best;
  size_t best_distance = allowed + 1;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(w, bare(c));
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  if (!best.empty()) return best;
  // "--external" for "--external-data": an abbreviation, when it abbreviates one name only.
  std::string only;
  for (const auto& c : candidates) {
    if (w.size() < 3 || bare(c).compare(0, w.size(), w) != 0) continue;
    if (!only.empty()) return "";
    only = c;
  }
  return only;
}

std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options()) {
    // Former names (add_old_name: hidden from help) are not suggested: a slip gets the new name.
    if (!opt->nonpositional() || opt->get_group().empty()) continue;
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

std::set<std::string> given_options(const CLI::App& app) {
  std::set<std::string> given;
  for (const CLI::Option* opt : app.get_options()) {
    if (!opt->nonpositional() || opt->count() == 0) continue;
    for (const auto& l : opt->get_lnames()) given.insert("--" + l);
    for (const auto& s : opt->get_snames()) given.insert("-" + s);
  }
  return given;
}

std::string given_list(const std::set<std::string>& given, const std::vector<std::string>& flags) {
  std::vector<std::string> named;
  for (const auto& f : flags)
    if (given.count(f)) named.push_back(f);
  std::string out;
  for (size_t i = 0; i < named.size(); ++i) out += (i == 0 ? "" : i + 1 == named.size() ? " and " : ", ") + named[i];
  return out;
}

void refuse_unused(const std::set<std::string>& given, const std::vector<FlagsUsedWhen>& table) {
  for (const auto& row : table)
    if (const std::string named = given_list(given, row.flags); !named.empty() && !row.used)
      throw_usage_error(named + ": " + row.why);
}

namespace {
bool g_time_limit_given = false;
bool g_threads_given = false;
}  // namespace

void add_threads_flag(CLI::App* sub) {
  sub->add_option_function<int>(
         "--threads", [](const int& n) { g_threads_given = true; runner::set_default_threads(n); },
         "threads for running models (default: ONNXTOOL_THREADS, else every core; the same output bytes "
         "whatever the count)")
      ->check(number_in(1, 1024));
}

void add_model_run_flags(CLI::App* sub) {
  add_threads_flag(sub);
  sub->add_option_function<double>(
         "--time-limit",
         [](const double& seconds) {
           g_time_limit_given = true;
           std::ostringstream name;
           name << "--time-limit " << seconds;
           runner::set_time_limit(seconds, name.str());
         },
         "end every model run past S seconds from the start (exit 2, naming the node; default: none, "
         "verification's own bound excepted; ONNXTOOL_TIME_LIMIT sets it for every command)")
      ->check(number_in(0, 1e9, /*open_low=*/true));
}

void apply_run_environment() {
  if (const char* text = std::getenv("ONNXTOOL_THREADS"); text && !g_threads_given) {
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno == ERANGE || n < 1 || n > 1024)
      throw_usage_error(std::string("ONNXTOOL_THREADS: '") + text + "' is not a whole number from 1 to 1024");
    runner::set_default_threads(static_cast<int>(n));
  }
  const char* text = std::getenv("ONNXTOOL_TIME_LIMIT");
  if (!text || g_time_limit_given) return;
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(seconds) || errno == ERANGE || seconds <= 0 || seconds > 1e9)
    throw_usage_error(std::string("ONNXTOOL_TIME_LIMIT: '") + text + "' is not a number of seconds in (0, 1e9]");
  runner::set_time_limit(seconds, "ONNXTOOL_TIME_LIMIT=" + std::string(text));
}

void add_quiet_flag(CLI::App* sub) {
  sub->add_flag_callback("--quiet", [] { set_quiet(true); }, "no progress or notes on stderr (errors, warnings, results and the line naming a renamed flag stay)");
}

void add_shared_flags(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (!sub->get_option_no_throw("--quiet")) add_quiet_flag(sub);
    if (!sub->get_option_no_throw("--threads"))
      sub->add_option_function<int>(
             "--threads", [](const int&) { g_threads_given = true; },
             "accepted as on every command; " + sub->get_name() + " runs no model, so it changes nothing")
          ->check(number_in(1, 1024));
  }
}

void note_renamed(const std::string& command, const std::set<std::string>& given, const std::vector<Renamed>& renamed) {
  for (const auto& r : renamed)
    if (given.count(r.old_name))
      std::cerr << "onnxtool " << command << ": " << r.old_name << " is now " << r.new_name << " (the old name still works"
                << (r.remark.empty() ? "" : "; " + r.remark) << ")\n";
}

void add_model_dims_flag(CLI::App* sub, ModelDimsFlag& flag, const std::string& name, const std::string& help) {
  sub->add_option(name, flag.values, help + " (repeatable; formerly --input-shape, which still means this here)");
  add_old_name(sub, "--input-shape", flag.old_values);
}

void take_old_dims(const std::string& command, const std::set<std::string>& given, ModelDimsFlag& flag,
                   const std::string& new_name, const std::string& verb) {
  flag.values.insert(flag.values.begin(), flag.old_values.begin(), flag.old_values.end());
  flag.old_values.clear();
  note_renamed(command, given,
               {{"--input-shape", new_name,
                 "here it " + verb + " the dims in the written model as before; elsewhere --input-shape only sizes "
                 "generated inputs"}});
}

CLI::Validator number_in(double lo, double hi, bool open_low) {
  std::ostringstream domain;
  domain.precision(17);
  domain << (open_low ? "(" : "[") << lo << ", " << hi << "]";
  // No description: help would print it after every numeric flag's type ("INT:NUMBER in [0,
  // 1.8446744073709552e+19]"); the help text gives each flag's range in words, and a value
  // outside it is refused naming the interval.
  return CLI::Validator(
      [lo, hi, open_low, domain = domain.str()](std::string& text) -> std::string {
        const char* begin = text.c_str();
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(begin, &end);
        if (end == begin || *end != '\0' || !std::isfinite(v) || errno == ERANGE)
          return "'" + text + "' is not a finite number";
        if (v > hi || v < lo || (open_low && v == lo)) return "'" + text + "' is outside " + domain;
        return "";
      },
      "");
}

}  // namespace onnxtool::cli
