// The Vulkan backend against the CPU runner: every backend-suite case with a node the Vulkan
// backend has a kernel for runs on both (test_data_set_0 inputs) and must agree within
// DeviceTolerance, identically from run to run, with the validation layer silent.
#include <doctest/doctest.h>

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

namespace onnxtool {
namespace {

using testing::backend_models;
using testing::run_on_both;
using testing::vulkan_available;

/// Whether any node of the main graph has a Vulkan kernel.
bool has_vulkan_node(const ir::Model& m) {
  for (const auto& n : m.graph->nodes()) {
    const auto opset = m.opset_version(std::string(ir::canonical_domain(n->domain)));
    if (runner::vulkan::kernel_table().find(n->domain, n->op_type, opset ? *opset : 0)) return true;
  }
  return false;
}

TEST_SUITE("vulkan_kernels") {
TEST_CASE("the backend suite's cases of the Vulkan ops agree with the CPU runner") {
  if (!vulkan_available()) return;
  int cases = 0, on_device = 0;
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
    if (!loaded.model.graph || !has_vulkan_node(loaded.model)) continue;
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
    try {
      const auto r = run_on_both(loaded.model, feeds);
      if (!r.mismatch.empty()) failures.push_back(dir.filename().string() + ": " + r.mismatch);
      if (r.placement.device_nodes > 0) ++on_device;
      for (const auto& c : r.placement.cpu_nodes) declined[c.node->op_type][c.reason]++;
    } catch (const Error& e) {
      failures.push_back(dir.filename().string() + ": " + e.what());
    }
  }
  std::cout << "vulkan backend suite: " << cases << " cases with a Vulkan op, " << on_device
            << " ran nodes on the device, " << failures.size() << " disagree\n";
  for (const auto& [op, reasons] : declined)
    for (const auto& [reason, n] : reasons)
      if (runner::vulkan::kernel_table().find("", op, 1000) || reason.rfind("no Vulkan", 0) != 0)
        std::cout << "  on the CPU: " << op << " x" << n << " (" << reason << ")\n";
  for (const auto& f : failures) std::cout << "  FAIL " << f << "\n";
  CHECK(failures.empty());
  CHECK(on_device >= 150);
}
}

}  // namespace
}  // namespace onnxtool
