// Walks the op schema registry: every version of every operator of the default domain (and the
// preview training domain) that is not deprecated must have a CPU kernel and a shape function,
// or an explicit reason here why not. A new schema without a kernel, or a reason that became
// stale because a kernel was added, fails the test. Likewise every version boundary the opset
// converter crosses needs an adapter row, a change its generic rule handles, or a stated reason.
// And every op registered in any layer has a family (ir/ops/families.h), the one of its shape
// function, and is registered only by files of that family, so docs/ops.md (the op index) and
// the family-to-files convention find it.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "convert/opset_adapters.h"
#include "convert/version_converter.h"
#include "ir/op_schema.h"
#include "ir/ops/families.h"
#include "quant/op_rules.h"
#include "runner/kernel.h"
#include "runner/vulkan/backend.h"

namespace onnxtool::kernel_coverage_test {
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

/// Version boundaries ("Op@b") whose change neither has an adapter in convert/opset_adapters.cpp
/// nor is one the generic rule of convert/version_converter.cpp handles (see
/// unhandled_change()), with why the converter needs no adapter for it.
const std::map<std::string, std::string>& no_adapter_reasons() {
  static const std::map<std::string, std::string> reasons = {
      {"AveragePool@19", "dilations added without a default: going down refuses it when set"},
      {"Constant@11", "sparse_value added: going down refuses it (no dense equivalent is written)"},
      {"Erf@13", "integer types dropped, bfloat16 added: an integer Erf going up fails the checker comparison"},
      {"LpPool@18", "dilations added without a default: going down refuses it when set"},
      {"MaxPool@8", "optional Indices output added: a node using it going down fails the checker comparison"},
      {"MaxPool@10", "dilations added without a default: going down refuses it when set"},
      {"Resize@18", "axes added without a default: going down refuses it when set"},
  };
  return reasons;
}

/// Boundaries whose meaning changed while the parameter lists stayed compatible (the schemas do
/// not show it, so unhandled_change() cannot), each needing an adapter row.
const std::map<std::string, std::string>& semantic_changes() {
  static const std::map<std::string, std::string> changes = {
      {"Max@8", "multidirectional broadcasting; before, inputs of one shape"},
      {"Min@8", "multidirectional broadcasting; before, inputs of one shape"},
      {"Sum@8", "multidirectional broadcasting; before, inputs of one shape"},
      {"Mean@8", "multidirectional broadcasting; before, inputs of one shape"},
      {"Softmax@13", "along one axis; before, on the input coerced to 2-D"},
      {"LogSoftmax@13", "along one axis; before, on the input coerced to 2-D"},
      {"Hardmax@13", "along one axis; before, on the input coerced to 2-D"},
      {"RoiAlign@16", "half-pixel sampling by default"},
      {"Concat@11", "negative axis accepted"},
      {"Gather@11", "negative axis accepted"},
      {"Unsqueeze@11", "negative axes accepted"},
  };
  return changes;
}

/// The family of an op ("domain::op" key of the kernel tables): the one that registered the shape
/// function of its versions; "" when none did. Versions of one op must agree.
std::string family_of(const std::string& key) {
  const size_t sep = key.find("::");
  const auto* versions = ir::SchemaRegistry::instance().versions(key.substr(0, sep), key.substr(sep + 2));
  std::string family;
  if (!versions) return family;
  for (const ir::OpSchema& s : *versions) {
    if (s.family.empty()) continue;
    CHECK_MESSAGE((family.empty() || family == s.family), key << ": versions in two families");
    family = std::string(s.family);
  }
  return family;
}

/// Checks each registration of a kernel table against its op's family.
template <class Entries>
void check_kernel_families(const Entries& entries) {
  for (const auto& [key, list] : entries) {
    const std::string family = family_of(key), op = key.substr(key.find("::") + 2);
    CHECK_MESSAGE(!family.empty(), key << " has a kernel but no family (no shape function): docs/ops.md cannot place it");
    for (const auto& e : list) {
      const std::string where = op + " " + std::string(e.file);
      CHECK_MESSAGE(std::count(std::begin(ir::kOpFamilies), std::end(ir::kOpFamilies), e.family) == 1,
                    where << ": the file's family '" << e.family << "' is not in ir/ops/families.h");
      CHECK_MESSAGE(e.family == family, where << ": a " << e.family << " file registers an op of family " << family
                                             << " (move the kernel, or its shape function)");
    }
  }
}

/// The types a formal parameter may bind to.
std::set<std::string> allowed_types(const ir::OpSchema& s, const ir::FormalParam& p) {
  if (const ir::TypeConstraint* c = s.constraint(p.type)) return {c->allowed.begin(), c->allowed.end()};
  return {p.type};  // a fixed type string
}

/// The first change of parameters from `prev` to `now` the generic rule does not cover: one
/// removed, or of another kind (single, optional, variadic), or needing more values, or whose
/// types narrowed; one added that is not optional (or any added output). "" when none. Fewer
/// values needed, like more types allowed, is a widening the checker comparison guards.
std::string unhandled_param_change(const ir::OpSchema& prev, const std::vector<ir::FormalParam>& before,
                                   const ir::OpSchema& now, const std::vector<ir::FormalParam>& after,
                                   const std::string& what, bool may_add_optional) {
  if (after.size() < before.size()) return what + "s removed";
  for (size_t i = 0; i < after.size(); ++i) {
    const std::string name = what + " " + after[i].name;
    if (i >= before.size()) {
      if (!may_add_optional || after[i].option != ir::ParamOption::kOptional) return name + " added";
      continue;
    }
    if (after[i].option != before[i].option || after[i].min_arity > before[i].min_arity)
      return name + " changed its arity";
    const auto old_types = allowed_types(prev, before[i]), new_types = allowed_types(now, after[i]);
    if (!std::includes(new_types.begin(), new_types.end(), old_types.begin(), old_types.end()))
      return name + " lost types";
  }
  return "";
}

/// What version `now` of an op changed from version `prev` that convert/version_converter.cpp's
/// cross_up/cross_down do not handle without an adapter, "" when nothing: they handle attributes
/// added with a default (dropped going down when at it), optional inputs added at the end
/// (refused going down when given) and widened types (the checker comparison refuses a type the
/// target does not allow).
std::string unhandled_change(const ir::OpSchema& prev, const ir::OpSchema& now) {
  for (const ir::AttributeSpec& a : prev.attributes) {
    const ir::AttributeSpec* spec = now.attribute(a.name);
    if (!spec) return "attribute " + a.name + " removed";
    if (spec->type != a.type || spec->default_value != a.default_value || spec->required != a.required)
      return "attribute " + a.name + " changed its type, default or requiredness";
  }
  for (const ir::AttributeSpec& a : now.attributes)
    if (!prev.attribute(a.name) && (a.required || a.default_value.empty()))
      return "attribute " + a.name + " added without a default";
  std::string change = unhandled_param_change(prev, prev.inputs, now, now.inputs, "input", true);
  if (change.empty()) change = unhandled_param_change(prev, prev.outputs, now, now.outputs, "output", false);
  return change;
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

  TEST_CASE("every com.microsoft.nchwc op has a CPU kernel and a shape function, in the nchwc family") {
    const auto& schemas = ir::SchemaRegistry::instance();
    const auto& kernels = runner::KernelRegistry::instance();
    int checked = 0;
    for (const ir::OpSchema* s : schemas.all()) {
      if (s->domain != ir::kNchwcDomain) continue;
      ++checked;
      const bool has_kernel = kernels.find(s->domain, s->name, s->since_version) != nullptr;
      const bool has_shape_fn = s->infer != nullptr;
      CHECK_MESSAGE(has_kernel, s->domain << "::" << s->name << "-" << s->since_version << " has no CPU kernel");
      CHECK_MESSAGE(has_shape_fn, s->domain << "::" << s->name << "-" << s->since_version << " has no shape function");
      CHECK_MESSAGE(s->family == "nchwc", s->name << " is in family '" << s->family << "', not nchwc");
    }
    CHECK(checked == 8);
  }

  TEST_CASE("every com.microsoft op the runner implements runs on the CPU and has a shape function") {
    // onnxruntime's contrib ops that onnxtool executes (runner/cpu/contrib.cpp): the ones its
    // graph optimizer writes into the models it saves. The other documented com.microsoft ops
    // have a schema (the checker validates them) and neither a kernel nor a shape function.
    // By family: the contrib ops of runner/cpu/contrib.cpp; DynamicQuantizeLSTM is the LSTM
    // kernel's 8-bit form (runner/cpu/rnn.cpp); QuantizeLinear and DequantizeLinear are the
    // standard kernels (runner/cpu/quantize_linear.cpp).
    const std::map<std::string, std::string> implemented = {
        {"FusedConv", "contrib"},   {"FusedGemm", "contrib"},  {"FusedMatMul", "contrib"},
        {"TransposeMatMul", "contrib"}, {"QuickGelu", "contrib"}, {"Gelu", "contrib"},
        {"FastGelu", "contrib"},    {"BiasGelu", "contrib"},   {"DynamicQuantizeMatMul", "contrib"},
        {"MatMulIntegerToFloat", "contrib"}, {"DynamicQuantizeLSTM", "nn"},
        {"QuantizeLinear", "elementwise"}, {"DequantizeLinear", "elementwise"},
        // The transformer ops of runner/cpu/contrib_transformer.cpp.
        {"SkipLayerNormalization", "contrib_transformer"}, {"SkipSimplifiedLayerNormalization", "contrib_transformer"},
        {"BiasAdd", "contrib_transformer"}, {"BiasSoftmax", "contrib_transformer"}, {"MatMulNBits", "contrib_transformer"},
        {"RotaryEmbedding", "contrib_transformer"}, {"EmbedLayerNormalization", "contrib_transformer"},
        {"Range", "contrib_transformer"}, {"ExpandDims", "contrib_transformer"}, {"Trilu", "contrib_transformer"},
        {"GatherND", "contrib_transformer"}, {"Inverse", "contrib_transformer"},
        // The fused attention ops of runner/cpu/contrib_attention.cpp.
        {"Attention", "contrib_transformer"}, {"MultiHeadAttention", "contrib_transformer"},
        {"GroupQueryAttention", "contrib_transformer"}, {"DecoderMaskedMultiHeadAttention", "contrib_transformer"},
        // The quantized (QLinear*) ops of runner/cpu/contrib_quant.cpp.
        {"QLinearAdd", "contrib_quant"}, {"QLinearMul", "contrib_quant"}, {"QLinearSigmoid", "contrib_quant"},
        {"QLinearLeakyRelu", "contrib_quant"}, {"QLinearConcat", "contrib_quant"},
        {"QLinearGlobalAveragePool", "contrib_quant"}, {"QLinearAveragePool", "contrib_quant"},
        {"QLinearSoftmax", "contrib_quant"}, {"QLinearWhere", "contrib_quant"}, {"QGemm", "contrib_quant"},
        {"NhwcMaxPool", "contrib_quant"},
    };
    const auto& schemas = ir::SchemaRegistry::instance();
    const auto& kernels = runner::KernelRegistry::instance();
    for (const auto& [op, family] : implemented) {
      const auto* versions = schemas.versions(ir::kMicrosoftDomain, op);
      REQUIRE_MESSAGE(versions != nullptr, op << " has no com.microsoft schema");
      for (const ir::OpSchema& s : *versions) {
        const bool has_kernel = kernels.find(s.domain, s.name, s.since_version) != nullptr;
        const bool has_shape_fn = s.infer != nullptr;
        CHECK_MESSAGE(has_kernel, op << "@" << s.since_version << " has no CPU kernel");
        CHECK_MESSAGE(has_shape_fn, op << "@" << s.since_version << " has no shape function");
        CHECK_MESSAGE(s.family == family, op << " is of family '" << s.family << "', not " << family);
      }
    }
    // And nothing else of the domain is half done: a kernel without a shape function or the
    // reverse, or an op missing from the list above.
    for (const ir::OpSchema* s : schemas.all()) {
      if (s->domain != ir::kMicrosoftDomain) continue;
      const bool has_kernel = kernels.find(s->domain, s->name, s->since_version) != nullptr;
      const bool has_shape_fn = s->infer != nullptr;
      CHECK_MESSAGE(has_kernel == has_shape_fn, s->name << ": a kernel without a shape function or the reverse");
      CHECK_MESSAGE(has_kernel == (implemented.count(s->name) == 1), s->name << ": add it to (or remove it from) the list");
    }
  }

  TEST_CASE("every com.microsoft op onnxruntime's CPU provider registers runs here, or has a stated reason") {
    // The com.microsoft ops onnxruntime's CPU execution provider has kernels for (its
    // OperatorKernels.md, release 1.24): what a model saved or written by onnxruntime's tools
    // for the CPU can hold.
    const std::vector<std::string> registered = {
        "Attention", "AttnLSTM", "BeamSearch", "BiasGelu", "BifurcationDetector", "CDist",
        "ConvTransposeWithDynamicPads", "CropAndResize", "DecoderMaskedMultiHeadAttention",
        "DequantizeLinear", "DynamicQuantizeLSTM", "DynamicQuantizeMatMul", "DynamicTimeWarping",
        "EmbedLayerNormalization", "ExpandDims", "FastGelu", "FusedConv", "FusedGemm", "FusedMatMul",
        "GatherBlockQuantized", "GatherND", "Gelu", "GreedySearch", "GridSample", "GroupQueryAttention",
        "Inverse", "MatMulBnb4", "MatMulFpQ4", "MatMulInteger16", "MatMulIntegerToFloat", "MatMulNBits",
        "MaxpoolWithMask", "MoE", "MultiHeadAttention", "MurmurHash3", "NGramRepeatBlock", "NhwcMaxPool",
        "Pad", "QAttention", "QEmbedLayerNormalization", "QGemm", "QLinearAdd", "QLinearConv",
        "QLinearLeakyRelu", "QLinearMul", "QLinearSigmoid", "QLinearSoftmax", "QLinearWhere", "QMoE",
        "QuantizeLinear", "QuickGelu", "Range", "RotaryEmbedding", "SampleOp", "Sampling",
        "SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "SparseAttention",
        "SparseToDenseMatMul", "Tokenizer", "TransposeMatMul", "Trilu", "UnfoldTensor", "Unique",
        "WhisperBeamSearch", "WordConvEmbedding"};
    // Why the others do not run in onnxtool (yet). A reason goes when its op gains a kernel.
    const std::string kAttention = "fused attention, written by onnxruntime's transformer optimizer and model builder: not implemented yet";
    const std::string kGeneration = "a whole text-generation loop over decoder subgraphs (onnxruntime's generation tools): not implemented";
    const std::string kRare = "written by no onnxruntime optimizer or quantizer, and by no exporter we know of: not implemented";
    const std::map<std::string, std::string> reasons = {
        {"SparseAttention", kAttention},
        {"QAttention", "8-bit fused attention, written by onnxruntime's older BERT quantization: not implemented yet"},
        {"QEmbedLayerNormalization", "8-bit fused BERT embedding, written by onnxruntime's older BERT quantization: not implemented yet"},
        {"BeamSearch", kGeneration},
        {"GreedySearch", kGeneration},
        {"Sampling", kGeneration},
        {"WhisperBeamSearch", kGeneration},
        {"BifurcationDetector", "a helper of aggressive decoding inside generation loops: not implemented"},
        {"NGramRepeatBlock", "a helper of generation loops (n-gram blocking): not implemented"},
        {"MoE", "mixture of experts with top-k routing: not implemented"},
        {"QMoE", "quantized mixture of experts: not implemented"},
        {"MatMulBnb4", "FP4/NF4 weights of bitsandbytes: not implemented (MatMulNBits is the form onnxruntime's quantizer writes)"},
        {"MatMulFpQ4", "an older pre-packed int4 blob whose layout depends on onnxruntime's MLAS build: not implemented"},
        {"GatherBlockQuantized", "a blocked-int4 embedding gather of onnxruntime's model builder: not implemented yet"},
        {"SampleOp", "onnxruntime's example op (echoes its input); no model carries it"},
        {"AttnLSTM", kRare},
        {"CDist", kRare},
        {"ConvTransposeWithDynamicPads", kRare},
        {"CropAndResize", kRare},
        {"DynamicTimeWarping", kRare},
        {"MatMulInteger16", kRare},
        {"MaxpoolWithMask", "internal to onnxruntime's training graphs: not implemented"},
        {"MurmurHash3", kRare},
        {"SparseToDenseMatMul", "takes a sparse tensor, which onnxtool's runner does not represent"},
        {"Tokenizer", kRare},
        {"UnfoldTensor", kRare},
        {"WordConvEmbedding", kRare},
        {"Pad", "the contrib form of ONNX Pad-11 from before opset 11 existed: not implemented (exporters write ONNX Pad)"},
        {"GridSample", "the contrib form of ONNX GridSample-16 from before opset 16 existed: not implemented (exporters write ONNX GridSample)"},
        {"Unique", "the contrib form of ONNX Unique-11: not implemented (exporters write ONNX Unique)"},
        {"QLinearConv", "the com.microsoft form of ONNX QLinearConv (NHWC channels_last): not implemented"},
    };
    const auto& schemas = ir::SchemaRegistry::instance();
    const auto& kernels = runner::KernelRegistry::instance();
    int runs = 0;
    for (const std::string& op : registered) {
      CAPTURE(op);
      bool has_kernel = false;
      if (const auto* versions = schemas.versions(ir::kMicrosoftDomain, op))
        for (const ir::OpSchema& s : *versions) has_kernel = has_kernel || static_cast<bool>(kernels.find(s.domain, s.name, s.since_version));
      if (has_kernel) {
        ++runs;
        CHECK_MESSAGE(reasons.count(op) == 0, "it runs now: remove its reason");
      } else {
        CHECK_MESSAGE(reasons.count(op) == 1, "neither a kernel nor a stated reason");
      }
    }
    for (const auto& [op, reason] : reasons)
      CHECK_MESSAGE(std::find(registered.begin(), registered.end(), op) != registered.end(), op << ": a reason for an op the list does not have");
    MESSAGE(runs << " of the " << registered.size() << " com.microsoft ops onnxruntime's CPU provider registers run in onnxtool; "
                 << registered.size() - runs << " have a stated reason");
  }

  TEST_CASE("every registered op has a family, and only files of that family register it") {
    check_kernel_families(runner::KernelRegistry::instance().entries());
    check_kernel_families(runner::vulkan::kernel_table().entries());
    // The quantizer's and the converter's rows name ops the index lists under a family too.
    for (const quant::OpRule& r : quant::op_rules())
      CHECK_MESSAGE(!family_of("::" + std::string(r.op_type)).empty(), r.op_type << ": a quantizer rule for an op without a family");
    for (const convert::OpsetAdapter& row : convert::opset_adapters())
      CHECK_MESSAGE(!family_of("::" + std::string(row.op)).empty(), row.op << ": an adapter for an op without a family");
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

  TEST_CASE("every operator version boundary the opset converter crosses has an adapter, or needs none") {
    const auto& schemas = ir::SchemaRegistry::instance();
    std::map<std::string, bool> reason_used, change_seen;
    for (const auto& [key, reason] : no_adapter_reasons()) reason_used[key] = false;
    for (const auto& [key, change] : semantic_changes()) change_seen[key] = false;
    int adapted = 0, begin_or_end = 0, generic = 0, stated = 0;
    const ir::OpSchema* prev = nullptr;  // the op's version before `s`, when there is one
    for (const ir::OpSchema* s : schemas.all()) {
      if (!s->domain.empty()) continue;
      if (prev && prev->name != s->name) prev = nullptr;
      const ir::OpSchema* older = prev;
      prev = s;
      if (s->since_version <= convert::kMinConvertOpset || s->since_version > convert::kMaxConvertOpset) continue;
      const std::string key = s->name + "@" + std::to_string(s->since_version);
      CAPTURE(key);
      const bool has_row = convert::find_opset_adapter(s->name, s->since_version) != nullptr;
      if (semantic_changes().count(key)) {
        change_seen[key] = true;
        CHECK_MESSAGE(has_row, semantic_changes().at(key) << ": add a row to convert/opset_adapters.cpp");
      }
      // Introduced (or brought back) here, or deprecated here: the converter refuses the node on
      // the side where the op does not exist, naming the opset.
      const bool op_begins_or_ends = !older || older->deprecated || s->deprecated;
      const std::string change = op_begins_or_ends ? "" : unhandled_change(*older, *s);
      if (no_adapter_reasons().count(key)) {
        reason_used[key] = true;
        CHECK_MESSAGE(!has_row, "remove the no-adapter reason: the boundary has an adapter now");
        CHECK_MESSAGE(!change.empty(), "remove the no-adapter reason: the generic rule handles the change");
        ++stated;
      } else if (has_row) {
        ++adapted;
      } else if (op_begins_or_ends) {
        ++begin_or_end;
      } else {
        CHECK_MESSAGE(change.empty(), change << ": add a row to convert/opset_adapters.cpp or a no-adapter reason");
        ++generic;
      }
    }
    for (const auto& [key, used] : reason_used)
      CHECK_MESSAGE(used, key << ": a no-adapter reason for an unknown boundary");
    for (const auto& [key, seen] : change_seen) CHECK_MESSAGE(seen, key << ": a semantic change at an unknown boundary");

    std::set<std::string> rows;
    for (const convert::OpsetAdapter& row : convert::opset_adapters()) {
      const std::string key = std::string(row.op) + "@" + std::to_string(row.boundary);
      CAPTURE(key);
      CHECK_MESSAGE(rows.insert(key).second, "two rows for one boundary: the converter would only use the first");
      CHECK((row.up || row.down));
      CHECK(!row.doc.empty());
      CHECK(row.boundary > convert::kMinConvertOpset);
      CHECK(row.boundary <= convert::kMaxConvertOpset);
      const auto* versions = schemas.versions("", row.op);
      const bool begins = versions && std::any_of(versions->begin(), versions->end(), [&](const ir::OpSchema& v) {
        return v.since_version == row.boundary;
      });
      CHECK_MESSAGE(begins, "no version of the operator begins at the row's boundary");
    }
    MESSAGE(adapted << " boundaries have adapters (" << rows.size() << " rows); " << begin_or_end
                    << " begin or deprecate an op and " << generic << " need none by the schemas; " << stated
                    << " need none for a stated reason");
  }
}

}  // namespace onnxtool::kernel_coverage_test
