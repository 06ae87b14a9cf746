// The Vulkan backend against the CPU runner: every backend-suite case with a node the Vulkan
// backend has a kernel for runs on both (test_data_set_0 inputs) and must agree within
// DeviceTolerance, identically from run to run, with the validation layer silent.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "ir/error.h"
#include "ir/model_io.h"
#include "ir/op_schema.h"
#include "runner/feeds.h"
#include "runner/vulkan/backend.h"
#include "tests/vulkan_test_util.h"

namespace onnxtool::vulkan_test {
namespace {

using testing::backend_models;
using testing::run_on_both;
using testing::vulkan_available;

/// The op types of the main graph that have a Vulkan kernel.
std::set<std::string> vulkan_ops(const ir::Model& m) {
  std::set<std::string> ops;
  for (const auto& n : m.graph->nodes()) {
    const auto opset = m.opset_version(std::string(ir::canonical_domain(n->domain)));
    if (runner::vulkan::kernel_table().find(n->domain, n->op_type, opset ? *opset : 0)) ops.insert(n->op_type);
  }
  return ops;
}

// The sanitizer build runs every third case, and every case with an op no earlier case had:
// it is there for memory errors on the code paths (each kernel and op stays covered), four times
// slower, while the Release build compares every case.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kCaseStride = 3;
#else
constexpr int kCaseStride = 1;
#endif

TEST_SUITE("vulkan_kernels") {
TEST_CASE("the backend suite's cases of the Vulkan ops agree with the CPU runner") {
  if (!vulkan_available()) return;
  int cases = 0, compared = 0, on_device = 0;
  std::set<std::string> seen_ops;
  std::map<std::string, std::map<std::string, int>> declined;  // op -> reason -> count
  std::vector<std::string> failures;
  for (const auto& path : backend_models()) {
    const auto dir = path.parent_path();
    if (!std::filesystem::exists(dir / "test_data_set_0")) continue;
    ir::LoadedModel loaded;
    try {
      loaded = ir::load_model(path.string());
    } catch (const Error&) {
      continue;
    }
    if (!loaded.model.graph) continue;
    const std::set<std::string> ops = vulkan_ops(loaded.model);
    if (ops.empty()) continue;
    std::map<std::string, runner::Value> feeds;
    try {
      runner::Session probe(loaded.model);
      runner::FeedOptions fo;
      fo.dir = (dir / "test_data_set_0").string();
      feeds = runner::load_feeds(probe, fo);
      probe.run(feeds);  // cases the CPU runner itself refuses (listed in its skips) are not ours
    } catch (const Error&) {
      continue;
    }
    ++cases;
    const bool new_op = std::any_of(ops.begin(), ops.end(), [&](const std::string& op) { return !seen_ops.count(op); });
    if (cases % kCaseStride != 1 % kCaseStride && !new_op) continue;
    seen_ops.insert(ops.begin(), ops.end());
    ++compared;
    try {
      const auto r = run_on_both(loaded.model, feeds);
      if (!r.mismatch.empty()) failures.push_back(dir.filename().string() + ": " + r.mismatch);
      if (r.placement.device_nodes > 0) ++on_device;
      for (const auto& c : r.placement.cpu_nodes) declined[c.node->op_type][c.reason]++;
    } catch (const Error& e) {
      failures.push_back(dir.filename().string() + ": " + e.what());
    }
  }
  std::cout << "vulkan backend suite: " << cases << " cases with a Vulkan op, " << compared << " compared, "
            << on_device << " ran nodes on the device, " << failures.size() << " disagree\n";
  for (const auto& [op, reasons] : declined)
    for (const auto& [reason, n] : reasons)
      if (runner::vulkan::kernel_table().find("", op, 1000) || reason.rfind("no Vulkan", 0) != 0)
        std::cout << "  on the CPU: " << op << " x" << n << " (" << reason << ")\n";
  for (const auto& f : failures) std::cout << "  FAIL " << f << "\n";
  CHECK(failures.empty());
  CHECK(on_device >= 150 / kCaseStride);
}
}

}  // namespace
}  // namespace onnxtool::vulkan_test
