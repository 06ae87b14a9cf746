// Shared CLI helpers.
#include "cli/common.h"

#include <cstdio>
#include <iostream>

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
    return action();
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

}  // namespace onnxtool::cli
