// Shared CLI helpers.
#include "cli/common.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "checker/checker.h"
#include "cli/progress.h"
#include "ir/error.h"
#include "runner/session.h"
#include "runner/thread_pool.h"

namespace onnxtool::cli {

// Messages quote names from the model, which may hold control characters: keep the one line.
std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (static_cast<unsigned char>(c) < 0x20 && c != '\t') out += '?';
    else out += c;
  }
  return out;
}

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
    if (!opt->nonpositional()) continue;
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

namespace {
bool json_errors = false;
}  // namespace

void set_json_errors(bool on) { json_errors = on; }

void print_json_error(const std::string& command, const std::string& message, int exit_code) {
  if (!json_errors) return;
  print_json({{"command", command}, {"ok", false}, {"exit_code", exit_code}, {"error", message}});
  std::cout.flush();
}

std::string flag_for(const std::string& command, const std::string& parameter) {
  // Where a command spells a parameter otherwise than its name says.
  if (parameter == "sample_dirs") return command == "quantize" ? "--calib-data" : "--inputs";
  if (parameter == "output") return "-o";
  std::string flag = "--" + parameter;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::string flags_for(const std::string& command, const std::vector<std::string>& parameters) {
  std::string out;
  for (const auto& p : parameters) out += (out.empty() ? "" : ", ") + flag_for(command, p);
  return out;
}

std::string error_text(const std::string& command, const Error& e) {
  std::string text;
  if (!e.about().name.empty())
    text = flag_for(command, e.about().name) + (e.about().value.empty() ? "" : " " + e.about().value) + ": ";
  text += e.what();
  if (!e.remedies().empty()) text += " (" + flags_for(command, e.remedies()) + ")";
  return one_line(text);
}

int run_action(const std::string& command, const Action& action) {
  // The failure on stderr (one line) and, with --json, on stdout as JSON.
  const auto failed = [&command](const std::string& message, int code) {
    abandon_progress();  // the error goes on a line of its own
    std::cerr << "onnxtool " << command << ": " << message << "\n";
    print_json_error(command, message, code);
    return code;
  };
  begin_progress(command);
  try {
    const int code = action();
    end_progress();
    // A report that did not reach its reader (a full disk or a closed pipe behind stdout) is a
    // failure, not a success with nothing printed.
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::cerr << "onnxtool " << command << ": cannot write to standard output\n";
      return code == kExitOk ? kExitFailed : code;
    }
    return code;
  } catch (const Error& e) {
    return failed(error_text(command, e), e.kind() == ErrorKind::kFailed ? kExitFailed : kExitUsage);
  } catch (const TimeLimitReached& e) {
    const std::string remedies = flags_for(command, e.remedies());
    return failed(one_line(e.what() + (remedies.empty() ? "" : " (" + remedies + ")")), kExitUsage);
  } catch (const std::bad_alloc&) {
    return failed("out of memory", kExitUsage);
  } catch (const std::exception& e) {
    return failed("internal error: " + one_line(e.what()), kExitUsage);
  }
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
  sub->add_flag_callback("--quiet", [] { set_quiet(true); }, "no progress or notes on stderr (errors, warnings and results stay)");
}

CLI::Validator number_in(double lo, double hi, bool open_low) {
  std::ostringstream domain;
  domain.precision(17);
  domain << (open_low ? "(" : "[") << lo << ", " << hi << "]";
  const std::string description = "NUMBER in " + domain.str();
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
      description);
}

std::string describe(const ir::Diagnostic& d) {
  return d.rule + " " + (d.node.empty() ? d.tensor : d.node) + ": " + d.message;
}

int64_t refuse_unrunnable(ir::Model& model, const std::string& path) {
  // Nodes stored out of order run: sorted here, the checker's rules of names defined before use
  // judge what remains. A cycle stays for runner_error to name.
  int64_t moved = 0;
  try {
    moved = ir::sort_graphs(model);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kFailed) throw;
  }
  if (const auto d = checker::runner_error(model))
    throw_input_error(path + ": invalid model (" + describe(*d) + "); `onnxtool check` lists every error");
  return moved;
}

void print_json(const nlohmann::json& doc) {
  if (!doc.is_object() || doc.contains("schema_version")) {
    std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return;
  }
  nlohmann::json versioned = doc;
  versioned["schema_version"] = kJsonSchemaVersion;
  std::cout << versioned.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

nlohmann::json json_number(double v) {
  if (std::isnan(v)) return nullptr;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

std::vector<std::string> sample_dirs(const std::string& flag, const std::string& dir, int limit) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw_usage_error(flag + " " + dir + ": not a directory");
  std::vector<std::string> dirs;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_directory()) dirs.push_back(e.path().string());
  std::sort(dirs.begin(), dirs.end());
  if (dirs.empty()) throw_usage_error(flag + " " + dir + ": no sample folders (one subfolder per sample, one .npy per input)");
  if (limit > 0 && static_cast<size_t>(limit) < dirs.size()) dirs.resize(static_cast<size_t>(limit));
  return dirs;
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::pair<std::string, std::string> parse_assignment(const std::string& s, const char* flag) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0)
    throw_usage_error(std::string(flag) + " expects NAME=VALUE, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

std::vector<int64_t> parse_size_list(const std::string& flag, const std::string& name, const std::string& text) {
  std::vector<int64_t> dims;
  size_t i = 0;
  while (i <= text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    const std::string part = text.substr(i, j - i);
    if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string::npos)
      throw_usage_error(flag + " " + name + ": '" + text + "' is not a list of sizes like 1,3,224,224");
    dims.push_back(std::stoll(part));
    i = j + 1;
  }
  return dims;
}

}  // namespace onnxtool::cli

namespace onnxtool::cli {

namespace {

/// The CPU nodes of a placement grouped by op and reason, in order of first appearance.
std::vector<std::pair<std::string, size_t>> cpu_groups(const runner::Placement& p) {
  std::vector<std::pair<std::string, size_t>> groups;
  for (const auto& c : p.cpu_nodes) {
    const std::string key = c.node->op_type + " (" + c.reason + ")";
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) groups.emplace_back(key, 1);
    else it->second++;
  }
  return groups;
}

}  // namespace

std::string placement_line(const runner::DeviceInfo* device, const runner::Placement& p) {
  if (!device) return "";
  std::string line = device->id + " (" + device->name + "): " + std::to_string(p.device_nodes) +
                     " node(s) on the device";
  if (p.constant_nodes) line += ", " + std::to_string(p.constant_nodes) + " of constant inputs computed once on the CPU";
  if (p.cpu_nodes.empty()) return line + ", none on the CPU";
  line += "; " + std::to_string(p.cpu_nodes.size()) + " on the CPU: ";
  bool first = true;
  for (const auto& [key, count] : cpu_groups(p)) {
    line += (first ? "" : ", ") + key.substr(0, key.find(' ')) + (count > 1 ? " x" + std::to_string(count) : "") +
            key.substr(key.find(' '));
    first = false;
  }
  return line;
}

nlohmann::json placement_json(const runner::DeviceInfo* device, const runner::Placement& p) {
  if (!device) return nullptr;
  nlohmann::json cpu = nlohmann::json::array();
  for (const auto& c : p.cpu_nodes)
    cpu.push_back({{"node", c.node->name}, {"op_type", c.node->op_type}, {"reason", c.reason}});
  return {{"device", device->id},
          {"name", device->name},
          {"device_nodes", p.device_nodes},
          {"constant_nodes", p.constant_nodes},
          {"cpu_nodes", cpu}};
}

}  // namespace onnxtool::cli
