// Shared CLI helpers.
#include "cli/common.h"

#include <cstdio>
#include <iostream>

#include "ir/error.h"

namespace onnxtool::cli {

int run_action(const std::string& command, const Action& action) {
  try {
    return action();
  } catch (const Error& e) {
    std::cerr << "onnxtool " << command << ": " << e.what() << "\n";
    return e.kind() == ErrorKind::kFailed ? kExitFailed : kExitUsage;
  } catch (const std::bad_alloc&) {
    std::cerr << "onnxtool " << command << ": out of memory\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "onnxtool " << command << ": internal error: " << e.what() << "\n";
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
