// Model summary for `onnxtool inspect`.
#include "ir/summary.h"

namespace onnxtool::ir {
namespace {

IoSummary describe_io(const ValueInfo& vi) {
  IoSummary s;
  s.name = vi.value->name();
  const TypeInfo& t = vi.type ? *vi.type : vi.value->type;
  if (t.kind == TypeInfo::Kind::kTensor || t.kind == TypeInfo::Kind::kSparseTensor) {
    s.type = std::string(data_type_name(t.data_type()));
    if (t.kind == TypeInfo::Kind::kSparseTensor) s.type = "sparse " + s.type;
    if (t.shape) {
      s.has_shape = true;
      for (const auto& d : t.shape->dims) s.dims.push_back(d.to_string());
    }
  } else {
    s.type = t.to_string();
  }
  return s;
}

void count_tensor(ModelSummary& s, const Tensor& t) {
  const uint64_t n = t.element_count().value_or(0);
  const uint64_t bytes = t.type() == DataType::kString ? 0 : t.data_bytes();
  s.parameter_count += n;
  s.parameter_bytes += bytes;
  TypeBytes& tb = s.parameters_by_type[std::string(data_type_name(t.type()))];
  tb.count += n;
  tb.bytes += bytes;
  tb.tensors += 1;
  if (t.is_external()) s.external_bytes += bytes;
}

}  // namespace

ModelSummary summarize(const LoadedModel& loaded) {
  const Model& m = loaded.model;
  ModelSummary s;
  s.path = loaded.info.path;
  s.file_size = loaded.info.file_size;
  s.ir_version = m.ir_version;
  for (const auto& o : m.opset_import)
    s.opset_import.emplace_back(o.domain.empty() ? "ai.onnx" : o.domain, o.version);
  s.producer_name = m.producer_name;
  s.producer_version = m.producer_version;
  s.domain = m.domain;
  s.model_version = m.model_version;
  s.external_files = loaded.info.external_files;
  for (const auto& f : m.functions) s.functions.push_back((f.domain.empty() ? "" : f.domain + "::") + f.name);
  for (const auto& kv : m.metadata_props) s.metadata.emplace_back(kv.key, kv.value);
  if (!m.graph) return s;

  Graph& g = *m.graph;
  s.graph_name = g.name;
  for (const auto& vi : g.inputs)
    if (!vi.value->is_initializer()) s.inputs.push_back(describe_io(vi));
  for (const auto& vi : g.outputs) s.outputs.push_back(describe_io(vi));
  s.node_count = g.nodes().size();
  for_each_graph(g, [&s, &g](Graph& sub) {
    if (&sub != &g) s.subgraph_count++;
    s.node_count_total += sub.nodes().size();
    for (const auto& n : sub.nodes()) {
      s.op_counts[n->qualified_op()]++;
      if (n->op_type != "Constant" || !(n->domain.empty() || n->domain == "ai.onnx")) continue;
      const Attribute* value = n->attr("value");
      if (value && value->t) {
        s.constant_tensor_count++;
        count_tensor(s, *value->t);
      }
    }
    for (const auto& t : sub.initializers()) count_tensor(s, *t);
    s.initializer_count += sub.initializers().size() + sub.sparse_initializers.size();
    for (const auto& sp : sub.sparse_initializers)
      if (sp.values) count_tensor(s, *sp.values);
  });
  return s;
}

}  // namespace onnxtool::ir
