// Shared CLI helpers.
#include "cli/common.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <iostream>

#include "checker/checker.h"
#include "ir/error.h"

namespace onnxtool::cli {

namespace {

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

}  // namespace

int run_action(const std::string& command, const Action& action) {
  try {
    const int code = action();
    // A report that did not reach its reader (a full disk or a closed pipe behind stdout) is a
    // failure, not a success with nothing printed.
    std::cout.flush();
    if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout)) {
      std::cerr << "onnxtool " << command << ": cannot write to standard output\n";
      return code == kExitOk ? kExitFailed : code;
    }
    return code;
  } catch (const Error& e) {
    std::cerr << "onnxtool " << command << ": " << one_line(e.what()) << "\n";
    return e.kind() == ErrorKind::kFailed ? kExitFailed : kExitUsage;
  } catch (const std::bad_alloc&) {
    std::cerr << "onnxtool " << command << ": out of memory\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "onnxtool " << command << ": internal error: " << one_line(e.what()) << "\n";
    return kExitUsage;
  }
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

void refuse_unrunnable(ir::Model& model, const std::string& path) {
  if (const auto d = checker::runner_error(model))
    throw_input_error(path + ": invalid model (" + describe(*d) + "); `onnxtool check` lists every error");
}

void print_json(const nlohmann::json& doc) { std::cout << doc.dump(2) << "\n"; }

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
