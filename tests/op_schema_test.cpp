// Tests of the operator schema registry against facts checked by hand in the ONNX operator docs.
#include <doctest/doctest.h>

#include <climits>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "ir/error.h"
#include "ir/op_schema.h"

namespace onnxtool::ir::op_schema_test {
namespace {

const SchemaRegistry& registry() { return SchemaRegistry::instance(); }

/// The schema of exactly `name`-`version` in `domain`; fails the test when absent.
const OpSchema& exact(std::string_view domain, std::string_view name, int version) {
  const auto* list = registry().versions(domain, name);
  REQUIRE_MESSAGE(list != nullptr, name);
  for (const auto& s : *list)
    if (s.since_version == version) return s;
  static const OpSchema missing;
  FAIL("no ", name, "-", version);
  return missing;
}

std::vector<int> version_numbers(std::string_view domain, std::string_view name) {
  std::vector<int> out;
  if (const auto* list = registry().versions(domain, name))
    for (const auto& s : *list) out.push_back(s.since_version);
  return out;
}

std::vector<std::string> param_names(const std::vector<FormalParam>& params) {
  std::vector<std::string> out;
  for (const auto& p : params) out.push_back(p.name);
  return out;
}

/// Distinct op names of a domain, and how many of them are available at `opset`.
std::pair<size_t, size_t> op_counts(std::string_view domain, int opset) {
  std::set<std::string> names, available;
  for (const OpSchema* s : registry().all()) {
    if (s->domain != domain) continue;
    names.insert(s->name);
    if (registry().find(domain, s->name, opset) != nullptr) available.insert(s->name);
  }
  return {names.size(), available.size()};
}

}  // namespace

TEST_SUITE("op_schema") {
  TEST_CASE("Conv: attributes, inputs and version selection") {
    const OpSchema& conv = exact("", "Conv", 11);
    const AttributeSpec* auto_pad = conv.attribute("auto_pad");
    REQUIRE(auto_pad != nullptr);
    CHECK(auto_pad->type == AttrType::kString);
    CHECK_FALSE(auto_pad->required);
    CHECK(auto_pad->default_value == "NOTSET");
    const AttributeSpec* group = conv.attribute("group");
    REQUIRE(group != nullptr);
    CHECK(group->type == AttrType::kInt);
    CHECK(group->default_value == "1");
    REQUIRE(conv.attribute("kernel_shape") != nullptr);
    CHECK(conv.attribute("kernel_shape")->type == AttrType::kInts);
    CHECK(conv.attribute("kernel_shape")->default_value.empty());
    CHECK(conv.attribute("no_such_attribute") == nullptr);

    CHECK(param_names(conv.inputs) == std::vector<std::string>{"X", "W", "B"});
    CHECK(conv.inputs[0].option == ParamOption::kSingle);
    CHECK(conv.inputs[2].option == ParamOption::kOptional);
    CHECK(conv.min_inputs == 2);
    CHECK(conv.max_inputs == 3);
    CHECK(conv.min_outputs == 1);
    CHECK(conv.max_outputs == 1);
    const TypeConstraint* t = conv.constraint("T");
    REQUIRE(t != nullptr);
    CHECK(t->allowed ==
          std::vector<std::string>{"tensor(float16)", "tensor(float)", "tensor(double)"});

    // Operators.md: Conv versions 22, 11, 1; Conv-22 adds bfloat16.
    CHECK(version_numbers("", "Conv") == std::vector<int>{1, 11, 22});
    REQUIRE(registry().find("", "Conv", 22) != nullptr);
    CHECK(registry().find("", "Conv", 22)->since_version == 22);
    CHECK(registry().find("", "Conv", 28)->since_version == 22);
    CHECK(registry().find("", "Conv", 21)->since_version == 11);
    CHECK(registry().find("", "Conv", 10)->since_version == 1);
    CHECK(registry().find("ai.onnx", "Conv", 10)->since_version == 1);
    CHECK(registry().find("", "Conv", 0) == nullptr);
    CHECK(registry().find("", "conv", 11) == nullptr);
    CHECK(registry().find("", "Conv", 22)->constraint("T")->allowed.front() == "tensor(bfloat16)");
  }

  TEST_CASE("Reshape, Resize, Split, Slice") {
    const AttributeSpec* allowzero = exact("", "Reshape", 14).attribute("allowzero");
    REQUIRE(allowzero != nullptr);
    CHECK(allowzero->type == AttrType::kInt);
    CHECK(allowzero->default_value == "0");
    CHECK(exact("", "Reshape", 13).attribute("allowzero") == nullptr);
    CHECK(version_numbers("", "Reshape") == std::vector<int>{1, 5, 13, 14, 19, 21, 23, 24, 25});
    CHECK(exact("", "Reshape", 25).inputs[1].type == "tensor(int64)");

    CHECK(version_numbers("", "Resize") == std::vector<int>{10, 11, 13, 18, 19});
    CHECK(registry().find("", "Resize", 9) == nullptr);

    const OpSchema& split = exact("", "Split", 18);
    REQUIRE(split.attribute("num_outputs") != nullptr);
    CHECK(split.attribute("num_outputs")->type == AttrType::kInt);
    CHECK(split.attribute("axis")->default_value == "0");
    CHECK(param_names(split.inputs) == std::vector<std::string>{"input", "split"});
    CHECK(split.inputs[1].option == ParamOption::kOptional);
    CHECK(split.inputs[1].type == "tensor(int64)");
    REQUIRE(split.outputs.size() == 1);
    CHECK(split.outputs[0].option == ParamOption::kVariadic);
    CHECK(split.max_outputs == INT32_MAX);
    CHECK(exact("", "Split", 13).attribute("num_outputs") == nullptr);

    const OpSchema& slice = exact("", "Slice", 10);
    CHECK(param_names(slice.inputs) ==
          std::vector<std::string>{"data", "starts", "ends", "axes", "steps"});
    CHECK(slice.inputs[1].option == ParamOption::kSingle);
    CHECK(slice.inputs[2].option == ParamOption::kSingle);
    CHECK(slice.inputs[3].option == ParamOption::kOptional);
    CHECK(slice.inputs[4].option == ParamOption::kOptional);
    CHECK(slice.min_inputs == 3);
    CHECK(slice.max_inputs == 5);
    CHECK(slice.attributes.empty());
    CHECK(exact("", "Slice", 1).attribute("starts")->required);
    CHECK(version_numbers("", "Slice") == std::vector<int>{1, 10, 11, 13});
  }

  TEST_CASE("variadic parameters: Loop, Concat, Max") {
    const OpSchema& loop = exact("", "Loop", 1);
    REQUIRE(loop.inputs.size() == 3);
    CHECK(loop.inputs[0].option == ParamOption::kOptional);  // M
    CHECK(loop.inputs[1].option == ParamOption::kOptional);  // cond
    CHECK(loop.inputs[2].option == ParamOption::kVariadic);
    CHECK_FALSE(loop.inputs[2].homogeneous);
    CHECK(loop.outputs[0].option == ParamOption::kVariadic);
    CHECK_FALSE(loop.outputs[0].homogeneous);
    CHECK(loop.min_inputs == 3);
    CHECK(loop.max_inputs == INT32_MAX);
    CHECK(loop.attribute("body")->type == AttrType::kGraph);
    CHECK(loop.attribute("body")->required);
    // Loop-16 lets the loop carry no state values.
    CHECK(exact("", "Loop", 16).inputs[2].min_arity == 0);
    CHECK(exact("", "Loop", 16).min_inputs == 2);
    CHECK(version_numbers("", "Loop") == std::vector<int>{1, 11, 13, 16, 19, 21, 23, 24, 25});

    for (int version : {1, 4, 11, 13}) {
      const OpSchema& concat = exact("", "Concat", version);
      REQUIRE(concat.inputs.size() == 1);
      CHECK(concat.inputs[0].option == ParamOption::kVariadic);
      CHECK(concat.inputs[0].homogeneous);
      CHECK(concat.inputs[0].min_arity == 1);
      CHECK(concat.min_inputs == 1);
      CHECK(concat.max_inputs == INT32_MAX);
    }
    CHECK(exact("", "Concat", 13).attribute("axis")->required);

    const OpSchema* max = registry().find("", "Max", 28);
    REQUIRE(max != nullptr);
    CHECK(max->since_version == 13);
    CHECK(max->inputs[0].option == ParamOption::kVariadic);
    CHECK(max->inputs[0].homogeneous);
    CHECK(max->min_inputs == 1);
  }

  TEST_CASE("deprecated and experimental versions") {
    // Operators.md: Upsample (deprecated) 10, 9, 7; the changelog also lists experimental
    // Upsample-1.
    CHECK(version_numbers("", "Upsample") == std::vector<int>{1, 7, 9, 10});
    CHECK(exact("", "Upsample", 1).experimental);
    CHECK(exact("", "Upsample", 10).deprecated);
    CHECK(registry().find("", "Upsample", 9)->since_version == 9);
    CHECK(registry().find("", "Upsample", 8)->since_version == 7);
    for (int opset = 10; opset <= 28; ++opset)
      CHECK(registry().find("", "Upsample", opset) == nullptr);

    CHECK(registry().find("", "Scatter", 8) == nullptr);
    CHECK(registry().find("", "Scatter", 10)->since_version == 9);
    CHECK(registry().find("", "Scatter", 11) == nullptr);
    CHECK(registry().find("", "ScatterElements", 11)->since_version == 11);

    // GroupNormalization-18 is deprecated in favour of GroupNormalization-21.
    CHECK(exact("", "GroupNormalization", 18).deprecated);
    CHECK(registry().find("", "GroupNormalization", 20) == nullptr);
    CHECK(registry().find("", "GroupNormalization", 21)->since_version == 21);

    size_t deprecated = 0;
    for (const OpSchema* s : registry().all()) {
      if (!s->deprecated) continue;
      ++deprecated;
      CHECK(s->inputs.empty());
      CHECK(s->attributes.empty());
    }
    CHECK(deprecated == 5);  // Upsample-10, Scatter-11, GroupNormalization-18, 2 in ai.onnx.ml
  }

  TEST_CASE("operators new in opsets 18 to 28") {
    CHECK(version_numbers("", "Attention") == std::vector<int>{23, 24, 25});
    CHECK(registry().find("", "Attention", 22) == nullptr);
    const OpSchema& attention = exact("", "Attention", 25);
    CHECK(param_names(attention.inputs) ==
          std::vector<std::string>{"Q", "K", "V", "attn_mask", "past_key", "past_value",
                                   "nonpad_kv_seqlen"});
    CHECK(attention.min_inputs == 3);
    CHECK(attention.max_inputs == 7);
    CHECK(attention.max_outputs == 4);
    CHECK(attention.attribute("left_window_size")->default_value == "-1");
    CHECK(attention.attribute("softcap")->default_value == "0.0");
    CHECK(exact("", "Attention", 23).attribute("is_causal") != nullptr);

    const OpSchema& rms = exact("", "RMSNormalization", 23);
    CHECK(rms.attribute("epsilon")->type == AttrType::kFloat);
    CHECK(rms.attribute("epsilon")->default_value == "1e-05");
    CHECK(rms.attribute("axis")->default_value == "-1");
    CHECK(param_names(rms.inputs) == std::vector<std::string>{"X", "scale"});

    const OpSchema& rope = exact("", "RotaryEmbedding", 23);
    CHECK(param_names(rope.inputs) ==
          std::vector<std::string>{"X", "cos_cache", "sin_cache", "position_ids"});
    CHECK(rope.inputs[3].option == ParamOption::kOptional);
    CHECK(rope.constraint("M")->allowed == std::vector<std::string>{"tensor(int64)"});

    const OpSchema& scatter = exact("", "TensorScatter", 24);
    CHECK(scatter.attribute("mode")->default_value == "linear");
    CHECK(scatter.attribute("axis")->default_value == "-2");
    CHECK(scatter.min_inputs == 2);
    CHECK(registry().find("", "Swish", 24)->since_version == 24);

    CHECK(exact("", "BitCast", 26).attribute("to")->required);
    CHECK(param_names(exact("", "CumProd", 26).inputs) == std::vector<std::string>{"x", "axis"});
    const OpSchema& conv_state = exact("", "CausalConvWithState", 27);
    CHECK(conv_state.min_inputs == 2);
    CHECK(conv_state.max_inputs == 4);
    CHECK(conv_state.attribute("activation")->default_value == "none");
    const OpSchema& linear = exact("", "LinearAttention", 27);
    CHECK(linear.attribute("update_rule")->default_value == "gated_delta");
    CHECK(linear.attribute("chunk_size")->default_value == "64");
    CHECK(linear.attribute("q_num_heads")->required);
    CHECK(exact("", "Range", 27).attribute("stash_type")->default_value == "1");
    CHECK(exact("", "SwiGLU", 28).attribute("alpha")->default_value == "1.0");
    CHECK(registry().find("", "SwiGLU", 27) == nullptr);

    CHECK(version_numbers("", "CenterCropPad") == std::vector<int>{18});
    CHECK(version_numbers("", "Gelu") == std::vector<int>{20});
    CHECK(version_numbers("", "Cast") == std::vector<int>{1, 6, 9, 13, 19, 21, 23, 24, 25});
    CHECK(registry().max_version("") == 28);
    CHECK(registry().max_version("ai.onnx") == 28);
  }

  TEST_CASE("ai.onnx.ml and the preview domains") {
    CHECK(registry().has_domain("ai.onnx.ml"));
    CHECK(registry().max_version("ai.onnx.ml") == 5);
    const OpSchema& tree = exact("ai.onnx.ml", "TreeEnsemble", 5);
    CHECK(tree.domain == "ai.onnx.ml");
    CHECK(tree.attribute("leaf_weights")->type == AttrType::kTensor);
    CHECK(tree.attribute("leaf_weights")->required);
    CHECK(tree.attribute("aggregate_function")->default_value == "1");
    CHECK(tree.attribute("nodes_modes")->type == AttrType::kTensor);
    CHECK(registry().find("ai.onnx.ml", "TreeEnsemble", 4) == nullptr);
    CHECK(registry().find("ai.onnx.ml", "TreeEnsembleClassifier", 4)->since_version == 3);
    CHECK(registry().find("ai.onnx.ml", "TreeEnsembleClassifier", 5) == nullptr);

    CHECK(version_numbers("ai.onnx.ml", "LabelEncoder") == std::vector<int>{1, 2, 4});
    const OpSchema& label = exact("ai.onnx.ml", "LabelEncoder", 4);
    CHECK(label.attribute("default_float")->default_value == "-0.0");
    CHECK(label.attribute("default_string")->default_value == "_Unused");
    CHECK(label.attribute("keys_tensor")->type == AttrType::kTensor);
    CHECK(label.attribute("values_strings")->type == AttrType::kStrings);

    // Map types are written without spaces.
    const TypeConstraint* dict = exact("ai.onnx.ml", "DictVectorizer", 1).constraint("T1");
    REQUIRE(dict != nullptr);
    CHECK(dict->allowed.front() == "map(string,int64)");
    CHECK(exact("ai.onnx.ml", "ZipMap", 1).constraint("T")->allowed ==
          std::vector<std::string>{"seq(map(string,float))", "seq(map(int64,float))"});

    const OpSchema& flex = exact("ai.onnx.preview", "FlexAttention", 1);
    CHECK(flex.experimental);
    CHECK(flex.attribute("score_mod")->type == AttrType::kGraph);
    const OpSchema& gradient = exact("ai.onnx.preview.training", "Gradient", 1);
    CHECK(gradient.attribute("xs")->type == AttrType::kStrings);
    CHECK(gradient.attribute("xs")->required);
    CHECK_FALSE(gradient.inputs[0].homogeneous);
    CHECK(registry().find("ai.onnx.preview.training", "Adam", 1) != nullptr);
    CHECK(registry().fully_documented(""));
    CHECK(registry().fully_documented("ai.onnx.ml"));
    CHECK_FALSE(registry().has_domain("com.example"));
    CHECK_FALSE(registry().fully_documented("com.example"));
  }

  TEST_CASE("com.microsoft: onnxruntime's documented contrib operators, one version each") {
    CHECK(registry().has_domain("com.microsoft"));
    CHECK_FALSE(registry().fully_documented("com.microsoft"));
    CHECK(registry().max_version("com.microsoft") == 1);
    const OpSchema& conv = exact("com.microsoft", "FusedConv", 1);
    CHECK(conv.min_inputs == 2);
    CHECK(conv.max_inputs == 4);  // X, W, optional B and Z (a residual added before the activation)
    CHECK(conv.attribute("activation")->type == AttrType::kString);
    CHECK(conv.attribute("activation_params")->type == AttrType::kFloats);
    CHECK_FALSE(conv.attribute("activation")->required);
    // The document states defaults in prose only: none is recorded.
    CHECK(conv.attribute("group")->default_value.empty());
    const OpSchema& nbits = exact("com.microsoft", "MatMulNBits", 1);
    CHECK(nbits.attribute("K")->required);
    CHECK(nbits.attribute("N")->required);
    CHECK(nbits.attribute("block_size")->required);
    CHECK(nbits.constraint("T2")->allowed == std::vector<std::string>{"tensor(uint8)"});
    const OpSchema& gelu = exact("com.microsoft", "QuickGelu", 1);
    CHECK(gelu.attribute("alpha")->type == AttrType::kFloat);
    CHECK(registry().find("com.microsoft", "QuickGelu", 5) == &gelu);  // one version for every opset
    CHECK(registry().find("com.microsoft", "NoSuchOp", 1) == nullptr);
  }

  TEST_CASE("onnxruntime's own ai.onnx ops answer only where ONNX has none") {
    const OpSchema* ln13 = registry().onnxruntime_extension("", "LayerNormalization", 13);
    REQUIRE(ln13 != nullptr);
    CHECK(ln13->domain == kOnnxruntimeAiOnnx);
    CHECK(ln13->constraint("V") != nullptr);
    CHECK(registry().onnxruntime_extension("ai.onnx", "LayerNormalization", 16) == ln13);
    CHECK(registry().onnxruntime_extension("", "LayerNormalization", 17) == nullptr);  // ONNX's own
    CHECK(registry().onnxruntime_extension("", "SimplifiedLayerNormalization", 14) != nullptr);
    CHECK(registry().onnxruntime_extension("com.microsoft", "SimplifiedLayerNormalization", 1) == nullptr);
    CHECK(registry().onnxruntime_extension("", "Relu", 13) == nullptr);
    CHECK(registry().find("", "SimplifiedLayerNormalization", 14) == nullptr);  // not ONNX
  }

  TEST_CASE("com.microsoft.nchwc: onnxruntime's channel-blocked ops, with their defaults") {
    CHECK(registry().has_domain("com.microsoft.nchwc"));
    CHECK_FALSE(registry().fully_documented("com.microsoft.nchwc"));
    const OpSchema& conv = exact("com.microsoft.nchwc", "Conv", 1);
    CHECK(conv.min_inputs == 2);
    CHECK(conv.max_inputs == 4);  // X, W, optional B and Sum (added before the activation)
    CHECK(conv.attribute("group")->default_value == "1");
    CHECK(conv.constraint("T")->allowed == std::vector<std::string>{"tensor(float)"});
    CHECK(exact("com.microsoft.nchwc", "MaxPool", 1).attribute("kernel_shape")->required);
    CHECK(exact("com.microsoft.nchwc", "ReorderOutput", 1).attribute("channels")->default_value == "0");
    CHECK(exact("com.microsoft.nchwc", "Upsample", 1).attribute("coordinate_transformation_mode")->default_value ==
          "asymmetric");
  }

  TEST_CASE("counts per domain") {
    // Operators.md documents 203 ops of the default domain, two of them (Scatter, Upsample)
    // deprecated; Operators-ml.md documents 19, two of them deprecated.
    auto [onnx_names, onnx_available] = op_counts("", 28);
    auto [ml_names, ml_available] = op_counts("ai.onnx.ml", 5);
    size_t schemas = registry().all().size();
    MESSAGE("ai.onnx: ", onnx_names, " op names, ", onnx_available, " available at opset 28");
    MESSAGE("ai.onnx.ml: ", ml_names, " op names, ", ml_available, " available at opset 5");
    MESSAGE("schemas (every version of every op, all domains): ", schemas);
    CHECK(onnx_names == 203);
    CHECK(onnx_available == 201);
    CHECK(ml_names == 19);
    CHECK(ml_available == 17);
    CHECK(op_counts("ai.onnx.preview", 1).first == 1);
    CHECK(op_counts("ai.onnx.preview.training", 1).first == 4);
    // onnxruntime's ContribOperators.md (1.24) documents 113 com.microsoft ops.
    CHECK(op_counts("com.microsoft", 1).first == 113);
    // onnxruntime's NCHWc ops (ir/ops/nchwc_schemas.def, from its source).
    CHECK(op_counts("com.microsoft.nchwc", 1).first == 8);
    CHECK(schemas == 642 + 113 + 8 + 2);  // and onnxruntime's 2 own ai.onnx ops
  }

  TEST_CASE("the registry is consistent: unique, ascending, sorted, bounds match parameters") {
    std::set<std::tuple<std::string, std::string, int>> seen;
    const OpSchema* previous = nullptr;
    for (const OpSchema* s : registry().all()) {
      CHECK_MESSAGE(seen.emplace(s->domain, s->name, s->since_version).second, s->name);
      if (previous != nullptr) {
        CHECK(std::tie(previous->domain, previous->name, previous->since_version) <
              std::tie(s->domain, s->name, s->since_version));
      }
      previous = s;
      CHECK(s->domain != "ai.onnx");
      CHECK(s->since_version >= 1);
      for (const auto& a : s->attributes) {
        CHECK(a.type != AttrType::kUndefined);
        CHECK_FALSE((a.required && !a.default_value.empty()));
      }
      for (const auto* params : {&s->inputs, &s->outputs}) {
        for (size_t i = 0; i < params->size(); ++i) {
          const FormalParam& p = (*params)[i];
          if (p.option == ParamOption::kVariadic) CHECK(i + 1 == params->size());
          bool is_type_string = p.type.find('(') != std::string::npos;
          CHECK_MESSAGE((is_type_string || s->constraint(p.type) != nullptr), s->name, " ", p.name);
        }
      }
      for (const auto& c : s->type_constraints)
        for (const auto& type : c.allowed) CHECK(type.find(' ') == std::string::npos);
    }
  }

  TEST_CASE("instance() is built once, also across threads") {
    const SchemaRegistry* from_thread = nullptr;
    std::thread t([&] { from_thread = &SchemaRegistry::instance(); });
    const SchemaRegistry* here = &SchemaRegistry::instance();
    t.join();
    CHECK(here == from_thread);
  }

  TEST_CASE("SchemaRegistry: add, set_shape_fn, domains") {
    SchemaRegistry r;
    OpSchema v7;
    v7.domain = "ai.onnx";
    v7.name = "Foo";
    v7.since_version = 7;
    OpSchema v1 = v7;
    v1.since_version = 1;
    r.add(v7);
    r.add(v1);
    CHECK(r.has_domain(""));
    CHECK(r.has_domain("ai.onnx"));
    REQUIRE(r.versions("", "Foo") != nullptr);
    CHECK(r.versions("", "Foo")->front().since_version == 1);  // kept ascending
    CHECK(r.find("ai.onnx", "Foo", 6)->since_version == 1);
    CHECK_THROWS_AS(r.add(v7), Error);

    ShapeFn fn = [](InferenceContext&) {};
    r.set_shape_fn("", "Foo", 5, 100, fn);
    // Function pointers compared as booleans: doctest cannot print them.
    CHECK((r.find("", "Foo", 6)->infer == nullptr));
    CHECK((r.find("", "Foo", 7)->infer == fn));
    CHECK_THROWS_AS(r.set_shape_fn("", "Bar", 1, 100, fn), Error);
    CHECK_THROWS_AS(r.set_shape_fn("", "Foo", 8, 100, fn), Error);
  }

  TEST_CASE("the .def reader: valid text and errors with line numbers") {
    SchemaRegistry r;
    add_schemas_from_def(r,
                         "# a comment\n"
                         "\n"
                         "op ai.onnx Pick 3 inputs=2..inf outputs=1..1\n"
                         "  input x T\n"
                         "  input rest T variadic heterogeneous min_arity=1\n"
                         "  output y tensor(int64)\n"
                         "  attr mode string default a b c\n"
                         "  attr k int required\n"
                         "  attr w floats\n"
                         "  type T tensor(float) map(int64,string)\n"
                         "end\n",
                         "test.def");
    const OpSchema* pick = r.find("", "Pick", 3);
    REQUIRE(pick != nullptr);
    CHECK(pick->min_inputs == 2);
    CHECK(pick->max_inputs == INT32_MAX);
    CHECK_FALSE(pick->inputs[1].homogeneous);
    CHECK(pick->attribute("mode")->default_value == "a b c");
    CHECK(pick->attribute("k")->required);
    CHECK(pick->attribute("w")->type == AttrType::kFloats);
    CHECK(pick->constraint("T")->allowed.size() == 2);

    auto error_of = [](const std::string& text) -> std::string {
      SchemaRegistry scratch;
      try {
        add_schemas_from_def(scratch, text, "bad.def");
      } catch (const Error& e) {
        return e.what();
      }
      return "";
    };
    const std::string head = "op ai.onnx A 1 inputs=1..1 outputs=0..0\n  input x T\n";
    CHECK(error_of(head + "  type T tensor(float)\n  bogus\nend\n").rfind("bad.def:4:", 0) == 0);
    CHECK(error_of(head + "  attr a complex\n  type T tensor(float)\nend\n")
              .rfind("bad.def:3: unknown attribute type", 0) == 0);
    CHECK(error_of(head + "  type T tensor(float)\n").rfind("bad.def:1:", 0) == 0);  // no end
    CHECK(error_of(head + "end\n").rfind("bad.def:3:", 0) == 0);  // T is not a constraint
    CHECK(error_of("op ai.onnx A 1 inputs=0..1 outputs=0..0\n  input x tensor(float)\nend\n")
              .rfind("bad.def:3:", 0) == 0);  // bounds disagree with the parameters
    CHECK(error_of("op ai.onnx A 1 inputs=0..0 outputs=0..0\nend\n"
                   "op ai.onnx A 1 inputs=0..0 outputs=0..0\nend\n")
              .rfind("bad.def:4: duplicate", 0) == 0);
    CHECK(error_of("  input x T\n").rfind("bad.def:1:", 0) == 0);
    CHECK(error_of("op ai.onnx A x inputs=0..0 outputs=0..0\nend\n").rfind("bad.def:1:", 0) == 0);
    CHECK(error_of("op ai.onnx A 1 inputs=0..0 outputs=0..0 shiny\nend\n")
              .rfind("bad.def:1:", 0) == 0);
  }
}

}  // namespace onnxtool::ir::op_schema_test
