// The printers several commands share.
#include "cli/printers.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <utility>
#include <vector>

namespace onnxtool::cli {

std::string significant(double v, int digits) {
  std::ostringstream out;
  out.precision(digits);
  out << v;
  return out.str();
}

std::string ratio_text(double v) {
  if (!std::isfinite(v)) return v > 0 ? "inf" : v < 0 ? "-inf" : "nan";
  if (v == 0) return "0";
  // Digits after the point that leave 3 significant ones (none past the units for 100 and more,
  // which are rounded to 3 significant digits too: 1089 -> 1090).
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  const int decimals = std::clamp(2 - magnitude, 0, 6);
  double shown = v;
  if (magnitude > 2) {
    const double unit = std::pow(10.0, magnitude - 2);
    shown = std::round(v / unit) * unit;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, shown);
  return buf;
}

std::string tolerance_text(double rtol, double atol) {
  std::ostringstream out;
  out << "rtol " << rtol << ", atol " << atol;
  return out.str();
}

nlohmann::json json_or_null(const std::string& text) { return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text); }

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
  // onnxruntime places its nodes itself, out of our sight.
  if (device->type == "onnxruntime") return device->id + " (" + device->name + "): the whole model on onnxruntime";
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
