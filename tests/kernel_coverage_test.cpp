// Walks the op schema registry: every version of every operator of the default domain (and the
// preview training domain) that is not deprecated must have a CPU kernel and a shape function,
// or an explicit reason here why not. A new schema without a kernel, or a reason that became
// stale because a kernel was added, fails the test.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "ir/op_schema.h"
#include "quant/op_rules.h"
#include "runner/kernel.h"

namespace onnxtool {
namespace {

/// Operators the runner does not execute, with the reason (refused before running, naming the
/// op and node).
const std::map<std::string, std::string>& no_kernel_reasons() {
  static const std::map<std::string, std::string> reasons = {
      {"ImageDecoder", "decoding JPEG/PNG/BMP/WebP/TIFF needs image codecs that onnxtool does not link"},
      {"ai.onnx.preview.training::Gradient", "needs automatic differentiation of the graph (training)"},
      {"Upsample@1", "version 1 is experimental (attributes width_scale/height_scale); versions 7-9 run"},
  };
  return reasons;
}

}  // namespace

TEST_SUITE("kernel_coverage") {
  TEST_CASE("every current operator version has a kernel and a shape function, or a stated reason") {
    const auto& schemas = ir::SchemaRegistry::instance();
    const auto& kernels = runner::KernelRegistry::instance();
    std::map<std::string, std::string> missing;
    std::map<std::string, bool> reason_used;
    for (const auto& [key, reason] : no_kernel_reasons()) reason_used[key] = false;
    int checked = 0;
    for (const ir::OpSchema* s : schemas.all()) {
      if (s->deprecated || (!s->domain.empty() && s->domain != "ai.onnx.preview.training")) continue;
      const std::string key = s->domain.empty() ? s->name : s->domain + "::" + s->name;
      const std::string version_key = key + "@" + std::to_string(s->since_version);
      if (no_kernel_reasons().count(version_key)) {
        reason_used[version_key] = true;
        continue;
      }
      if (no_kernel_reasons().count(key)) {
        reason_used[key] = true;
        const bool has_kernel = kernels.find(s->domain, s->name, s->since_version) != nullptr;
        CHECK_MESSAGE(!has_kernel, key << " has a kernel now: remove its no-kernel reason");
        continue;
      }
      ++checked;
      if (!kernels.find(s->domain, s->name, s->since_version))
        missing[key] += " " + std::to_string(s->since_version);
      const bool has_shape_fn = s->infer != nullptr;
      CHECK_MESSAGE(has_shape_fn, key << "-" << s->since_version << " has no shape function");
    }
    for (const auto& [op, versions] : missing) FAIL_CHECK("no kernel for " << op << " version(s)" << versions);
    for (const auto& [key, used] : reason_used) CHECK_MESSAGE(used, key << ": a no-kernel reason for an unknown op");
    MESSAGE(checked << " operator versions have kernels; " << no_kernel_reasons().size() << " ops have none, with reasons");
  }

  TEST_CASE("every quantizer rule names an operator, its weight axis, and an integer kernel that exists") {
    const auto& schemas = ir::SchemaRegistry::instance();
    const auto& kernels = runner::KernelRegistry::instance();
    for (const quant::OpRule& r : quant::op_rules()) {
      const std::string op(r.op_type);
      CAPTURE(op);
      CHECK(schemas.versions("", op) != nullptr);
      CHECK((r.static_qdq || r.dynamic));
      if (r.weight_input >= 0) {
        CHECK(static_cast<bool>(r.weight_axis));
        CHECK(static_cast<bool>(r.macs));
      } else {
        CHECK(r.bias_input < 0);  // a bias is quantized with the weight's scale
        CHECK(r.integer_kernel.empty());
      }
      // A standard integer kernel must run in onnxtool's runner (calibration, --verify and compare
      // judge the quantized model there); a contrib one is written by no quantizer mode today.
      const std::string kernel(r.integer_kernel);
      if (!kernel.empty() && kernel.find("::") == std::string::npos)
        CHECK_MESSAGE(static_cast<bool>(kernels.find("", kernel, 21)), kernel << " has no kernel");
    }
  }
}

}  // namespace onnxtool
