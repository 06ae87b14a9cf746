// Shared CLI helpers: errors and exit codes, JSON output, numbers, paths and parsing.
#include "cli/common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "checker/checker.h"
#include "cli/progress.h"
#include "ir/error.h"

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
  if (parameter == "sample_dirs") return "--inputs";
  // The flags that write input dims into the model: optimize's --fix-input-shape (for folding) and
  // edit's --set-input-shape; --input-shape elsewhere sizes generated inputs only.
  if (parameter == "input_shape" && command == "optimize") return "--fix-input-shape";
  if (parameter == "input_shape" && command == "edit") return "--set-input-shape";
  // extract names the tensors of its cut with --from and --to.
  if (command == "extract" && parameter == "inputs") return "--from";
  if (command == "extract" && parameter == "outputs") return "--to";
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

std::string node_label(const ir::Node& n) {
  return n.name.empty() ? n.op_type + "#" + std::to_string(n.graph()->node_index(&n)) : n.name;
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

namespace {

/// `n` in thousands' units (units[0] for n < 1000, given exactly): 3 significant digits, as people
/// read sizes: "176 MB", "44.1 MB", "1.23 GB" (rounding may reach 1000: "1000 KB" is kept rather
/// than rounded up a unit).
std::string in_units(uint64_t n, const char* const (&units)[5]) {
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu%s", static_cast<unsigned long long>(n), units[0]);
  else std::snprintf(buf, sizeof buf, "%.*f%s", v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2, v, units[u]);
  return buf;
}

}  // namespace

std::string human_bytes(uint64_t bytes) { return in_units(bytes, {" B", " KB", " MB", " GB", " TB"}); }

std::string human_count(uint64_t n) { return in_units(n, {"", " K", " M", " G", " T"}); }

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

std::map<std::string, std::vector<int64_t>> parse_shapes(const std::string& flag, const std::vector<std::string>& items) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& s : items) {
    auto [name, text] = parse_assignment(s, flag.c_str());
    shapes[name] = parse_size_list(flag, name, text);
  }
  return shapes;
}

runner::FeedOptions feed_options(const FeedFlags& f, const std::string& dir, bool random) {
  runner::FeedOptions feed;
  for (const auto& s : f.inputs) feed.files.push_back(parse_assignment(s, "--input"));
  feed.dir = dir;
  feed.random = random;
  feed.flags = {"--input", "--inputs", "--random", "--input-shape"};
  feed.seed = f.seed;
  feed.shapes = parse_shapes("--input-shape", f.shapes);
  for (const auto& r : f.input_ranges) runner::add_input_range(feed, r, "--input-range");
  return feed;
}

}  // namespace onnxtool::cli
