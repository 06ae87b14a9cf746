// What several commands print alike: numbers to a given precision, tolerances, and where a
// device session ran the nodes.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runner/session.h"

namespace onnxtool::cli {

/// `v` to `digits` significant digits, as a stream prints it ("0.99999996" with 8, "1e-07" with 3).
std::string significant(double v, int digits);

/// A ratio or factor for people: 3 significant digits and never an exponent ("0.255", "12.3",
/// "1090"); what a size shrank or grew by, a headroom.
std::string ratio_text(double v);

/// "rtol 0.001, atol 1e-05": the tolerance a comparison judged by (run --expect, compare).
std::string tolerance_text(double rtol, double atol);

/// A text for --json, or null when empty (no file written, no problem found).
nlohmann::json json_or_null(const std::string& text);

/// Where a device session ran the nodes of its last run, one line ("" for a CPU session):
/// "vulkan:0 (NAME): 120 nodes on the device; 3 on the CPU: Shape x2 (no Vulkan kernel), ...".
std::string placement_line(const runner::DeviceInfo* device, const runner::Placement& placement);
/// The same as JSON (null for a CPU session).
nlohmann::json placement_json(const runner::DeviceInfo* device, const runner::Placement& placement);

}  // namespace onnxtool::cli
