// Shape functions of constants and control flow: Constant, Identity, If, Loop, Scan.
#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

using shape::propagate_type_and_shape;

void infer_constant(InferenceContext& ctx) {
  const Node& n = ctx.node();
  if (n.attributes.size() != 1)
    ctx.fail("node.attribute-count", "Constant needs exactly one value attribute, has " +
                                         std::to_string(n.attributes.size()));
  const Attribute& a = n.attributes[0];
  auto scalar = [&](DataType dt) { ctx.set_output_tensor(0, dt, Shape{}); };
  auto vector = [&](DataType dt, size_t len) { ctx.set_output_tensor(0, dt, shape::from_ints({static_cast<int64_t>(len)})); };
  if (a.name == "value" && a.t) {
    ctx.set_output_tensor(0, a.t->type(), shape::from_ints(a.t->dims));
    if (a.t->dims.size() <= 1) {
      if (auto ints = shape::tensor_ints(*a.t, 64)) {
        DimValues dv;
        for (int64_t v : *ints) dv.push_back(Dim::of(v));
        ctx.set_output_values(0, std::move(dv));
      }
    }
  } else if (a.name == "sparse_value" && a.sparse_tensor) {
    const auto& dims = a.sparse_tensor->dims;
    const DataType dt = a.sparse_tensor->values ? a.sparse_tensor->values->type() : DataType::kUndefined;
    ctx.set_output_tensor(0, dt, shape::from_ints(dims));
  } else if (a.name == "value_int") {
    scalar(DataType::kInt64);
    ctx.set_output_values(0, {Dim::of(a.i)});
  } else if (a.name == "value_ints") {
    vector(DataType::kInt64, a.ints.size());
    DimValues dv;
    for (int64_t v : a.ints) dv.push_back(Dim::of(v));
    ctx.set_output_values(0, std::move(dv));
  } else if (a.name == "value_float") {
    scalar(DataType::kFloat);
  } else if (a.name == "value_floats") {
    vector(DataType::kFloat, a.floats.size());
  } else if (a.name == "value_string") {
    scalar(DataType::kString);
  } else if (a.name == "value_strings") {
    vector(DataType::kString, a.strings.size());
  } else {
    ctx.fail("node.attribute-unknown", "Constant has no value attribute (found '" + a.name + "')");
  }
}

void infer_identity(InferenceContext& ctx) {
  propagate_type_and_shape(ctx, 0, 0);
  if (const DimValues* v = ctx.input_values(0)) ctx.set_output_values(0, *v);
}

// The common type of two branch outputs: equal element types, shapes merged dim by dim (a dim
// that differs between branches becomes unknown; different ranks give an unknown rank).
TypeInfo union_type(const InferenceContext& ctx, const TypeInfo& a, const TypeInfo& b, size_t index) {
  if (a.kind == TypeInfo::Kind::kUnset) return b;
  if (b.kind == TypeInfo::Kind::kUnset) return a;
  if (a.kind != b.kind)
    ctx.fail("shape.if-branches", "output " + std::to_string(index) + ": then branch gives " +
                                      a.to_string() + ", else branch " + b.to_string());
  if (a.kind != TypeInfo::Kind::kTensor) return a;
  if (a.elem_type && b.elem_type && a.elem_type != b.elem_type)
    ctx.fail("shape.if-branches", "output " + std::to_string(index) + ": then branch gives " +
                                      a.to_string() + ", else branch " + b.to_string());
  // One object returned on every path: GCC 12 warned of a maybe-uninitialized Shape when a
  // copy with its shape reset was returned from a branch of its own.
  TypeInfo out = a;
  if (!a.shape || !b.shape || a.shape->rank() != b.shape->rank()) {
    out.shape.reset();
  } else {
    for (size_t i = 0; i < a.shape->rank(); ++i) {
      const Dim& x = a.shape->dims[i];
      const Dim& y = b.shape->dims[i];
      const bool same = (x.is_static() && y.is_static() && x.value == y.value) ||
                        (x.kind == Dim::Kind::kParam && y.kind == Dim::Kind::kParam && x.param == y.param);
      if (!same) out.shape->dims[i] = Dim{};
    }
  }
  return out;
}

void infer_if(InferenceContext& ctx) {
  Graph* then_g = ctx.attr_graph("then_branch");
  Graph* else_g = ctx.attr_graph("else_branch");
  if (!then_g || !else_g) ctx.fail("node.attribute-missing", "If needs then_branch and else_branch");
  if (!then_g->inputs.empty() || !else_g->inputs.empty())
    ctx.fail("graph.subgraph-arity", "If branches take no inputs");
  auto t = ctx.infer_subgraph(*then_g, {});
  auto e = ctx.infer_subgraph(*else_g, {});
  if (t.size() != e.size())
    ctx.fail("graph.subgraph-arity", "then branch has " + std::to_string(t.size()) +
                                         " outputs, else branch " + std::to_string(e.size()));
  if (t.size() != ctx.output_count())
    ctx.fail("graph.subgraph-arity", "If has " + std::to_string(ctx.output_count()) +
                                         " outputs, its branches " + std::to_string(t.size()));
  for (size_t i = 0; i < t.size(); ++i) ctx.set_output(i, union_type(ctx, t[i], e[i], i));
}

// Loop(M, cond, v_initial...) -> (v_final..., scan_outputs...); body(iter, cond, v...) ->
// (cond, v..., scan...).
void infer_loop(InferenceContext& ctx) {
  Graph* body = ctx.attr_graph("body");
  if (!body) ctx.fail("node.attribute-missing", "Loop needs a body");
  const size_t n_state = ctx.input_count() >= 2 ? ctx.input_count() - 2 : 0;
  if (body->inputs.size() != n_state + 2)
    ctx.fail("graph.subgraph-arity", "Loop body has " + std::to_string(body->inputs.size()) +
                                         " inputs, the node gives " + std::to_string(n_state + 2));
  if (body->outputs.size() < n_state + 1)
    ctx.fail("graph.subgraph-arity", "Loop body has " + std::to_string(body->outputs.size()) +
                                         " outputs, needs at least " + std::to_string(n_state + 1));
  std::vector<std::optional<TypeInfo>> in;
  in.push_back(TypeInfo::tensor(DataType::kInt64, Shape{}));
  in.push_back(TypeInfo::tensor(DataType::kBool, Shape{}));
  for (size_t i = 0; i < n_state; ++i) {
    const TypeInfo* t = ctx.input_type(i + 2);
    if (!t) {
      in.emplace_back();
      continue;
    }
    // Loop-carried shapes may change between iterations: pass only the type and rank.
    TypeInfo loose = *t;
    if (loose.shape) loose.shape = shape::unknown_shape(loose.shape->rank());
    in.emplace_back(std::move(loose));
  }
  auto out = ctx.infer_subgraph(*body, in);
  for (size_t i = 0; i < n_state && i < ctx.output_count(); ++i) {
    TypeInfo t = out[i + 1];
    if (t.kind == TypeInfo::Kind::kTensor && t.shape) {
      const Shape* init = ctx.input_shape(i + 2);
      if (init && init->rank() == t.shape->rank()) {
        for (size_t d = 0; d < init->rank(); ++d) {
          const Dim& a = init->dims[d];
          const Dim& b = t.shape->dims[d];
          const bool same = (a.is_static() && b.is_static() && a.value == b.value) ||
                            (a.kind == Dim::Kind::kParam && b.kind == Dim::Kind::kParam && a.param == b.param);
          if (!same) t.shape->dims[d] = Dim{};
        }
      }
    }
    ctx.set_output(i, std::move(t));
  }
  for (size_t k = n_state + 1; k < out.size() && k - 1 < ctx.output_count(); ++k) {
    TypeInfo t = out[k];
    // Scan outputs gain a leading iteration-count dimension.
    if (t.kind == TypeInfo::Kind::kTensor && t.shape) t.shape->dims.insert(t.shape->dims.begin(), Dim{});
    ctx.set_output(k - 1, std::move(t));
  }
}

// Scan-9+: inputs are N state values then M scan inputs; outputs N states then K scan outputs.
void infer_scan(InferenceContext& ctx) {
  Graph* body = ctx.attr_graph("body");
  if (!body) ctx.fail("node.attribute-missing", "Scan needs a body");
  const int64_t m = ctx.attr_int("num_scan_inputs", -1);
  if (m < 1) ctx.fail("node.attribute-missing", "Scan needs num_scan_inputs >= 1");
  const bool has_seq_lens = ctx.opset() < 9;  // Scan-8 takes sequence_lens first
  const size_t first = has_seq_lens ? 1 : 0;
  if (ctx.input_count() < first + static_cast<size_t>(m))
    ctx.fail("graph.subgraph-arity", "Scan has fewer inputs than num_scan_inputs");
  const size_t n_state = ctx.input_count() - first - static_cast<size_t>(m);
  if (body->inputs.size() != n_state + static_cast<size_t>(m))
    ctx.fail("graph.subgraph-arity", "Scan body has " + std::to_string(body->inputs.size()) +
                                         " inputs, the node gives " + std::to_string(n_state + m));
  auto in_axes = ctx.attr_ints("scan_input_axes").value_or(std::vector<int64_t>(static_cast<size_t>(m), 0));
  std::vector<std::optional<TypeInfo>> in;
  Dim seq_len;
  for (size_t i = 0; i < n_state; ++i) {
    const TypeInfo* t = ctx.input_type(first + i);
    if (!t) {
      in.emplace_back();
      continue;
    }
    TypeInfo state = *t;
    // Scan-8 states carry a leading batch dimension that the body does not see.
    if (has_seq_lens && state.shape) {
      if (state.shape->rank() == 0) ctx.fail("shape.rank", "Scan-8 state values need a batch dimension");
      state.shape->dims.erase(state.shape->dims.begin());
    }
    in.push_back(std::move(state));
  }
  for (int64_t j = 0; j < m; ++j) {
    const Shape* s = ctx.input_shape(first + n_state + static_cast<size_t>(j));
    auto et = ctx.input_elem_type(first + n_state + static_cast<size_t>(j));
    if (!s || !et) {
      in.emplace_back();
      continue;
    }
    Shape sliced = *s;
    const int64_t batch_axis = has_seq_lens ? 1 : 0;
    if (sliced.rank() < static_cast<size_t>(batch_axis) + 1) ctx.fail("shape.rank", "Scan input has rank 0");
    int64_t axis = has_seq_lens ? 1
                                : shape::normalize_axis(ctx, j < static_cast<int64_t>(in_axes.size()) ? in_axes[static_cast<size_t>(j)] : 0,
                                                        static_cast<int64_t>(sliced.rank()), "scan_input_axes");
    seq_len = sliced.dims[static_cast<size_t>(axis)];
    sliced.dims.erase(sliced.dims.begin() + axis);
    if (has_seq_lens) sliced.dims.erase(sliced.dims.begin());
    in.emplace_back(TypeInfo::tensor(*et, std::move(sliced)));
  }
  auto out = ctx.infer_subgraph(*body, in);
  auto out_axes = ctx.attr_ints("scan_output_axes");
  for (size_t i = 0; i < out.size() && i < ctx.output_count(); ++i) {
    TypeInfo t = out[i];
    if (i >= n_state && t.kind == TypeInfo::Kind::kTensor && t.shape && !has_seq_lens) {
      const size_t k = i - n_state;
      int64_t axis = out_axes && k < out_axes->size() ? (*out_axes)[k] : 0;
      axis = shape::normalize_axis(ctx, axis, static_cast<int64_t>(t.shape->rank()) + 1, "scan_output_axes");
      t.shape->dims.insert(t.shape->dims.begin() + axis, seq_len);
    } else if (has_seq_lens) {
      t.shape.reset();  // Scan-8 outputs gain batch (and sequence) dimensions
    }
    ctx.set_output(i, std::move(t));
  }
}

}  // namespace

void register_control_shapes(SchemaRegistry& r) {
  r.set_shape_fn("Constant", infer_constant);
  r.set_shape_fn("Identity", infer_identity);
  r.set_shape_fn("If", infer_if);
  r.set_shape_fn("Loop", infer_loop);
  r.set_shape_fn("Scan", infer_scan);
}

}  // namespace onnxtool::ir
