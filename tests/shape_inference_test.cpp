// Shape inference against the ONNX backend suite: every node test declares its outputs' types
// and shapes, which serve as the oracle. Declared output types are hidden from inference first.
#include <doctest/doctest.h>

#include <cstdlib>
#include <iostream>
#include <map>

#include "ir/model_io.h"
#include "ir/shape_inference.h"
#include "tests/test_data.h"

namespace onnxtool::shape_inference_test {
namespace {

enum class Outcome { kExact, kPartial, kUnknown, kWrong };

// Compares an inferred type with the declared one.
Outcome compare(const ir::TypeInfo& inferred, const ir::TypeInfo& declared) {
  using K = ir::TypeInfo::Kind;
  if (inferred.kind == K::kUnset) return Outcome::kUnknown;
  if (inferred.kind != declared.kind) return Outcome::kWrong;
  if (declared.kind == K::kSequence || declared.kind == K::kOptional) {
    if (!inferred.elem || !declared.elem) return Outcome::kPartial;
    return compare(*inferred.elem, *declared.elem);
  }
  if (declared.kind != K::kTensor) return Outcome::kExact;
  if (inferred.elem_type == 0) return Outcome::kPartial;
  if (inferred.elem_type != declared.elem_type) return Outcome::kWrong;
  if (!declared.shape) return Outcome::kExact;
  if (!inferred.shape) return Outcome::kPartial;
  if (inferred.shape->rank() != declared.shape->rank()) return Outcome::kWrong;
  bool exact = true;
  for (size_t i = 0; i < declared.shape->rank(); ++i) {
    const ir::Dim& a = inferred.shape->dims[i];
    const ir::Dim& b = declared.shape->dims[i];
    if (a.is_static() && b.is_static() && a.value != b.value) return Outcome::kWrong;
    if (b.is_static() && !a.is_static()) exact = false;
  }
  return exact ? Outcome::kExact : Outcome::kPartial;
}

struct OpStats {
  int exact = 0, partial = 0, unknown = 0, wrong = 0, alarms = 0;
  std::string example;
};

}  // namespace

TEST_SUITE("shape_inference") {
  TEST_CASE("backend node suite: declared output types are reproduced, no false alarms") {
    const auto root = testing::backend_data() / "node";
    if (!std::filesystem::exists(root)) {
      testing::skip_missing_data("the ONNX backend suite at " + root.string());
      return;
    }
    // ONNXTOOL_SHAPE_FILTER=substring restricts the run to matching test names (for development).
    const char* filter = std::getenv("ONNXTOOL_SHAPE_FILTER");
    std::map<std::string, OpStats> stats;
    int models = 0;
    std::vector<std::string> alarms, wrongs;
    for (const auto& path : testing::backend_models()) {
      if (path.string().find("/node/") == std::string::npos) continue;
      const std::string test = path.parent_path().filename().string();
      if (filter && test.find(filter) == std::string::npos) continue;
      ir::LoadedModel loaded = ir::load_model(path.string());
      ir::Graph& g = *loaded.model.graph;
      if (g.nodes().empty()) continue;
      ++models;
      const std::string op = g.nodes().back()->op_type;
      // Hide what the file declares for node outputs, so inference must produce it.
      std::vector<ir::TypeInfo> declared;
      for (const auto& o : g.outputs) declared.push_back(o.type.value_or(ir::TypeInfo{}));
      ir::for_each_graph(g, [](ir::Graph& sub) {
        for (const auto& n : sub.nodes())
          for (ir::Value* v : n->outputs())
            if (v) v->type = ir::TypeInfo{};
      });
      ir::DiagnosticSink sink;
      ir::infer_shapes(loaded.model, sink);
      OpStats& s = stats[op];
      for (const auto& d : sink.items()) {
        s.alarms++;
        alarms.push_back(test + ": " + d.rule + " " + d.message);
      }
      for (size_t i = 0; i < g.outputs.size(); ++i) {
        const ir::Value* v = g.outputs[i].value;
        if (!v->producer()) continue;  // an output that is a graph input
        switch (compare(v->type, declared[i])) {
          case Outcome::kExact: s.exact++; break;
          case Outcome::kPartial: s.partial++; if (s.example.empty()) s.example = test; break;
          case Outcome::kUnknown: s.unknown++; if (s.example.empty()) s.example = test; break;
          case Outcome::kWrong:
            s.wrong++;
            wrongs.push_back(test + ": output '" + v->name() + "' inferred " + v->type.to_string() +
                             ", declared " + declared[i].to_string());
            break;
        }
      }
    }
    int exact = 0, partial = 0, unknown = 0;
    std::string incomplete;
    for (const auto& [op, s] : stats) {
      exact += s.exact;
      partial += s.partial;
      unknown += s.unknown;
      if (s.partial + s.unknown > 0)
        incomplete += "  " + op + ": " + std::to_string(s.partial) + " partial, " +
                      std::to_string(s.unknown) + " unknown (e.g. " + s.example + ")\n";
    }
    std::cout << "shape inference over " << models << " node models: " << exact << " outputs exact, "
              << partial << " partial, " << unknown << " unknown, " << wrongs.size() << " wrong, "
              << alarms.size() << " false alarms\n";
    if (std::getenv("ONNXTOOL_SHAPE_VERBOSE")) std::cout << "incomplete ops:\n" << incomplete;
    for (const auto& a : alarms) std::cout << "false alarm: " << a << "\n";
    for (const auto& w : wrongs) std::cout << "wrong: " << w << "\n";
    CHECK(alarms.empty());
    CHECK(wrongs.empty());
  }
}

}  // namespace onnxtool::shape_inference_test
