// The ONNX backend conformance suite run through the reference runner: every case of node,
// pytorch-converted, pytorch-operator and simple, compared with the reference outputs (rtol 1e-3,
// atol 1e-5; exact for integers, bool and strings). Every case must pass except those in
// tests/conformance/skips.txt, each with its reason; tests/conformance/passing.txt lists the
// passing cases (so that a change shows as a diff). ONNXTOOL_CONFORMANCE_WRITE=1 rewrites
// passing.txt from this run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "ir/error.h"
#include "ir/model_io.h"
#include "ir/wire.h"
#include "runner/session.h"
#include "runner/tensor_io.h"
#include "tests/test_data.h"

namespace onnxtool::conformance_test {
namespace {

using runner::Tensor;
using runner::Value;

/// Tolerances of the conformance run (a named policy: "close").
constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-5;

double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case ir::DataType::kFloat: return t.data<float>()[i];
    case ir::DataType::kDouble: return t.data<double>()[i];
    case ir::DataType::kFloat16: return runner::half_to_float(t.data<uint16_t>()[i]);
    case ir::DataType::kBFloat16: return runner::bfloat16_to_float(t.data<uint16_t>()[i]);
    default: return 0;
  }
}

// Empty when equal within tolerance, else a one-line reason.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype())
    return "type " + std::string(ir::data_type_name(got.dtype())) + " vs expected " +
           std::string(ir::data_type_name(want.dtype()));
  if (got.shape() != want.shape()) return "shape " + runner::shape_string(got.shape()) + " vs expected " + runner::shape_string(want.shape());
  const auto dt = got.dtype();
  if (dt == ir::DataType::kString) return got.strings() == want.strings() ? "" : "strings differ";
  if (dt == ir::DataType::kFloat || dt == ir::DataType::kDouble || dt == ir::DataType::kFloat16 ||
      dt == ir::DataType::kBFloat16) {
    for (int64_t i = 0; i < got.size(); ++i) {
      const double a = element(got, i), b = element(want, i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (a == b) continue;
      if (!(std::fabs(a - b) <= kAtol + kRtol * std::fabs(b)))
        return "element " + std::to_string(i) + ": " + std::to_string(a) + " vs expected " + std::to_string(b);
    }
    return "";
  }
  if (got.bytes() != want.bytes() || std::memcmp(got.raw(), want.raw(), got.bytes()) != 0) {
    return "values differ (exact comparison)";
  }
  return "";
}

std::string compare_values(const Value& got, const Value& want) {
  if (want.is_tensor()) {
    if (!got.is_tensor()) return "not a tensor (" + got.describe() + ")";
    return compare(got.tensor, want.tensor);
  }
  if (want.kind == Value::Kind::kSequence) {
    if (got.kind != Value::Kind::kSequence) return "not a sequence (" + got.describe() + ")";
    if (got.sequence->size() != want.sequence->size())
      return "sequence length " + std::to_string(got.sequence->size()) + " vs expected " + std::to_string(want.sequence->size());
    for (size_t i = 0; i < want.sequence->size(); ++i) {
      const std::string why = compare((*got.sequence)[i], (*want.sequence)[i]);
      if (!why.empty()) return "sequence item " + std::to_string(i) + ": " + why;
    }
    return "";
  }
  // Optional: an optional of a tensor may also come back as the bare tensor (Identity-like ops).
  if (got.kind != Value::Kind::kOptional) {
    if (!want.optional) return "expected an empty optional, got " + got.describe();
    return compare_values(got, *want.optional);
  }
  if (!want.optional != !got.optional) return want.optional ? "empty optional vs expected a value" : "a value vs expected an empty optional";
  return want.optional ? compare_values(*got.optional, *want.optional) : "";
}

std::set<std::string> read_list(const std::filesystem::path& p, std::map<std::string, std::string>* reasons = nullptr) {
  std::set<std::string> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.find(' ');
    const std::string name = line.substr(0, space);
    out.insert(name);
    if (reasons && space != std::string::npos) (*reasons)[name] = line.substr(space + 1);
  }
  return out;
}

enum class Result { kPass, kFail, kNoKernel, kSkipped };

// Runs one case folder; `detail` gets the failure reason.
Result run_case(const std::filesystem::path& dir, std::string& detail) {
  try {
    ir::LoadedModel loaded = ir::load_model((dir / "model.onnx").string());
    ir::Model& model = loaded.model;
    std::unique_ptr<runner::Session> session;
    try {
      session = std::make_unique<runner::Session>(model, runner::SessionOptions{1});
    } catch (const Error& e) {
      detail = e.what();
      return std::string(e.what()).find("no kernel") != std::string::npos ? Result::kNoKernel : Result::kFail;
    }
    std::vector<const ir::ValueInfo*> feeds_order;
    for (const auto& vi : model.graph->inputs)
      if (!vi.value->is_initializer()) feeds_order.push_back(&vi);
    int sets = 0;
    for (int k = 0;; ++k) {
      const auto set = dir / ("test_data_set_" + std::to_string(k));
      if (!std::filesystem::exists(set)) break;
      ++sets;
      std::map<std::string, runner::Value> feeds;
      for (size_t i = 0; i < feeds_order.size(); ++i) {
        const auto f = set / ("input_" + std::to_string(i) + ".pb");
        if (!std::filesystem::exists(f)) break;
        const ir::ValueInfo& vi = *feeds_order[i];
        feeds[vi.value->name()] = runner::read_value_file(f.string(), vi.type ? *vi.type : vi.value->type);
      }
      auto outputs = session->run(feeds);
      for (size_t i = 0; i < outputs.size(); ++i) {
        const auto f = set / ("output_" + std::to_string(i) + ".pb");
        if (!std::filesystem::exists(f)) continue;
        const ir::ValueInfo& vi = model.graph->outputs[i];
        const Value want = runner::read_value_file(f.string(), vi.type ? *vi.type : vi.value->type);
        std::string why = compare_values(outputs[i], want);
        if (!why.empty()) {
          detail = "set " + std::to_string(k) + " output " + std::to_string(i) + ": " + why;
          return Result::kFail;
        }
      }
    }
    if (!sets) {
      detail = "no test data";
      return Result::kSkipped;
    }
    return Result::kPass;
  } catch (const Error& e) {
    detail = e.what();
    return Result::kFail;
  } catch (const std::exception& e) {
    detail = std::string("exception: ") + e.what();
    return Result::kFail;
  } catch (const ir::wire::ParseError& e) {
    detail = "test data: " + e.message;
    return Result::kFail;
  }
}

}  // namespace

TEST_SUITE("conformance") {
  TEST_CASE("ONNX backend suite through the runner") {
    const auto root = testing::backend_data();
    if (!std::filesystem::exists(root)) {
      testing::skip_missing_data("the ONNX backend suite at " + root.string());
      return;
    }
    const auto lists = testing::source_dir() / "tests" / "conformance";
    std::map<std::string, std::string> skip_reasons;
    const auto skips = read_list(lists / "skips.txt", &skip_reasons);
    const auto passing = read_list(lists / "passing.txt");
    const char* filter = std::getenv("ONNXTOOL_CONFORMANCE_FILTER");

    std::map<std::string, std::map<Result, int>> counts;
    std::vector<std::string> now_passing, regressions, new_passes, unexpected;
    std::map<std::string, int> missing_kernels;
    for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
      const auto dir = root / suite;
      if (!std::filesystem::exists(dir)) continue;
      std::vector<std::filesystem::path> cases;
      for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.is_directory()) cases.push_back(e.path());
      std::sort(cases.begin(), cases.end());
      for (const auto& c : cases) {
        const std::string name = std::string(suite) + "/" + c.filename().string();
        if (filter && name.find(filter) == std::string::npos) continue;
        if (skips.count(name)) {
          counts[suite][Result::kSkipped]++;
          continue;
        }
        std::string detail;
        const Result r = run_case(c, detail);
        counts[suite][r]++;
        if (r == Result::kPass) {
          now_passing.push_back(name);
          if (!passing.count(name)) new_passes.push_back(name);
        } else {
          if (passing.count(name)) regressions.push_back(name + ": " + detail);
          unexpected.push_back(name + ": " + detail);
          if (r == Result::kNoKernel) {
            auto p = detail.find("no kernel for ");
            auto q = detail.find(" (opset", p);
            if (p != std::string::npos && q != std::string::npos) missing_kernels[detail.substr(p + 14, q - p - 14)]++;
          }
          if (std::getenv("ONNXTOOL_CONFORMANCE_VERBOSE") && r == Result::kFail)
            std::cout << "FAIL " << name << ": " << detail << "\n";
        }
      }
    }
    for (const auto& [suite, c] : counts) {
      auto get = [&c](Result r) { auto it = c.find(r); return it == c.end() ? 0 : it->second; };
      const int total = get(Result::kPass) + get(Result::kFail) + get(Result::kNoKernel) + get(Result::kSkipped);
      std::cout << "conformance " << suite << ": " << get(Result::kPass) << " passed, " << get(Result::kFail)
                << " failed, " << get(Result::kNoKernel) << " without kernel, " << get(Result::kSkipped)
                << " skipped, of " << total << " (" << (total ? 100.0 * get(Result::kPass) / total : 0.0) << "% pass)\n";
    }
    if (std::getenv("ONNXTOOL_CONFORMANCE_VERBOSE")) {
      std::cout << "ops without kernel (cases):";
      for (const auto& [op, n] : missing_kernels) std::cout << " " << op << "(" << n << ")";
      std::cout << "\n";
    }
    if (!new_passes.empty())
      std::cout << new_passes.size() << " cases pass that passing.txt does not list yet\n";
    if (std::getenv("ONNXTOOL_CONFORMANCE_WRITE") && !filter) {
      std::ofstream out(lists / "passing.txt");
      out << "# ONNX backend cases the runner passes (regenerate: ONNXTOOL_CONFORMANCE_WRITE=1 ctest -R conformance)\n";
      for (const auto& n : now_passing) out << n << "\n";
    }
    for (const auto& r : regressions) std::cout << "REGRESSION " << r << "\n";
    CHECK(regressions.empty());
    // Every case runs and passes unless tests/conformance/skips.txt says why not.
    for (const auto& u : unexpected) std::cout << "UNEXPECTED " << u << "\n";
    CHECK_MESSAGE(unexpected.empty(), unexpected.size() << " cases fail or lack a kernel without a reason in skips.txt");
  }
}

}  // namespace onnxtool::conformance_test
