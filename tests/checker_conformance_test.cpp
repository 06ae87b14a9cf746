// No false alarms: check_file gives no error on any model of the ONNX backend suite or on the
// real models, except for the models listed here, each with the reason it is genuinely invalid.
// A listed model that starts to pass fails the test too, so that the list stays exact.
#include <doctest/doctest.h>

#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "checker/checker.h"
#include "ir/error.h"
#include "tests/test_data.h"

namespace onnxtool::checker_conformance_test {
namespace {

namespace fs = std::filesystem;

/// Backend models (by "<collection>/<test>") that are invalid per the spec, with the reason.
const std::map<std::string, std::string>& known_invalid() {
  static const std::map<std::string, std::string> list = {
      {"pytorch-converted/test_PixelShuffle",
       "its Constant (opset 1..8: Constant-1) produces int64, and Constant-1 allows float types "
       "only; onnx.checker full_check rejects it too"},
      {"pytorch-operator/test_operator_repeat",
       "its Constant (Constant-1) produces int64, which Constant-1 does not allow; onnx.checker "
       "full_check rejects it too"},
      {"pytorch-operator/test_operator_repeat_dim_overflow",
       "its Constant (Constant-1) produces int64, which Constant-1 does not allow; onnx.checker "
       "full_check rejects it too"},
  };
  return list;
}

/// The first few errors of a result, one per line.
std::string first_errors(const checker::CheckResult& r, size_t limit = 3) {
  std::ostringstream out;
  size_t shown = 0;
  for (const auto& d : r.diagnostics) {
    if (d.severity != ir::Severity::kError) continue;
    if (shown++ == limit) break;
    out << "    " << d.rule << " [" << d.graph;
    if (d.node_index >= 0) out << " node #" << d.node_index << " '" << d.node << "' (" << d.op_type << ")";
    if (!d.tensor.empty()) out << " tensor '" << d.tensor << "'";
    out << "]: " << d.message << "\n";
  }
  return out.str();
}

}  // namespace

TEST_SUITE("checker_conformance") {
  TEST_CASE("backend suite and real models: no errors except the listed invalid models") {
    std::vector<std::pair<std::string, fs::path>> models;  // (label, path)
    for (const auto& path : testing::backend_models()) {
      // <data>/<collection>/<test>/model.onnx -> "<collection>/<test>"
      const fs::path test_dir = path.parent_path();
      models.emplace_back(test_dir.parent_path().filename().string() + "/" + test_dir.filename().string(),
                          path);
    }
    for (const auto& path : testing::installed_real_models())
      models.emplace_back("real model " + path.filename().string(), path);

    size_t valid = 0, listed = 0, unexpected = 0;
    std::set<std::string> listed_seen;
    for (const auto& [label, path] : models) {
      checker::CheckResult r;
      try {
        r = checker::check_file(path.string());
      } catch (const Error& e) {
        ++unexpected;
        FAIL_CHECK(label << ": check_file refused the file: " << e.what());
        continue;
      }
      auto known = known_invalid().find(label);
      if (known != known_invalid().end()) {
        listed_seen.insert(label);
        CHECK_MESSAGE(r.errors > 0, label << " is listed as invalid (" << known->second
                                          << ") but now has no error: take it off the list");
        listed += r.errors > 0;
        continue;
      }
      if (r.errors == 0) {
        ++valid;
        continue;
      }
      ++unexpected;
      FAIL_CHECK(label << ": " << r.errors << " error(s), a false alarm or a model to list:\n"
                       << first_errors(r));
    }
    if (!models.empty() && !testing::backend_models().empty())
      for (const auto& [label, reason] : known_invalid())
        CHECK_MESSAGE(listed_seen.count(label), label << " is listed but not in the backend suite");

    std::cout << "checker conformance: " << models.size() << " models checked, " << valid << " valid, "
              << listed << " listed as invalid (" << known_invalid().size() << " on the list), " << unexpected
              << " unexpected failures\n";
  }
}

}  // namespace onnxtool::checker_conformance_test
