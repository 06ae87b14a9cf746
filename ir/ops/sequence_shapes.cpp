// Shape functions of optionals and sequences: Optional, OptionalHasElement,
// OptionalGetElement, Sequence*, SplitToSequence, ConcatFromSequence and SequenceMap (kernels:
// runner/cpu/tensor_ops.cpp, SequenceMap in runner/cpu/control.cpp).
#include <algorithm>

#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

using shape::dtype_attr;
using shape::normalize_axis;
using shape::propagate_type_and_shape;
using shape::rank_of;
using shape::same_dim;

TypeInfo sequence_of(TypeInfo elem) {
  TypeInfo t;
  t.kind = TypeInfo::Kind::kSequence;
  t.elem = Box<TypeInfo>(std::move(elem));
  return t;
}

TypeInfo optional_of(TypeInfo elem) {
  TypeInfo t;
  t.kind = TypeInfo::Kind::kOptional;
  t.elem = Box<TypeInfo>(std::move(elem));
  return t;
}

// GCC 12 at -O3 reports a false -Wmaybe-uninitialized for the std::optional<Shape> moved by
// `return out` below, as it does for control_shapes.cpp's union_type; it did not while this
// function was in the larger tensor_shapes.cpp (other inlining decisions there).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
/// The tensor type covering both: one element type, dims that agree kept, others unknown, an
/// unknown rank when ranks differ. kUnset operands are ignored.
TypeInfo union_tensor(const InferenceContext& ctx, const TypeInfo& a, const TypeInfo& b) {
  if (a.kind == TypeInfo::Kind::kUnset) return b;
  if (b.kind == TypeInfo::Kind::kUnset) return a;
  if (a.kind != b.kind)
    ctx.fail("shape.input-type", "sequence elements of different kinds: " + a.to_string() + " and " + b.to_string());
  if (a.kind != TypeInfo::Kind::kTensor) return a;
  if (a.elem_type && b.elem_type && a.elem_type != b.elem_type)
    ctx.fail("shape.input-type", "sequence elements of different types: " + a.to_string() + " and " + b.to_string());
  TypeInfo out = a;
  if (!out.elem_type) out.elem_type = b.elem_type;
  if (!a.shape || !b.shape || a.shape->rank() != b.shape->rank()) {
    out.shape.reset();
    return out;
  }
  for (size_t i = 0; i < a.shape->rank(); ++i)
    if (!same_dim(a.shape->dims[i], b.shape->dims[i])) out.shape->dims[i] = Dim{};
  return out;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/// A sequence input's element type, or nullptr.
const TypeInfo* sequence_elem(const InferenceContext& ctx, size_t i) {
  const TypeInfo* t = ctx.input_type(i);
  if (!t || t->kind != TypeInfo::Kind::kSequence || !t->elem || t->elem->kind == TypeInfo::Kind::kUnset)
    return nullptr;
  return t->elem.get();
}

void infer_optional(InferenceContext& ctx) {
  if (ctx.has_input(0)) {
    if (const TypeInfo* t = ctx.input_type(0)) ctx.set_output(0, optional_of(*t));
    return;
  }
  const Attribute* a = ctx.node().attr("type");
  if (!a || !a->tp)
    ctx.fail("shape.attribute", "Optional without an input needs the 'type' attribute");
  ctx.set_output(0, optional_of(*a->tp));
}

void infer_optional_has_element(InferenceContext& ctx) {
  ctx.set_output_tensor(0, DataType::kBool, Shape{});
}

// OptionalGetElement-15: optional input; -18: also accepts a tensor or sequence as is.
void infer_optional_get_element(InferenceContext& ctx) {
  const TypeInfo* t = ctx.input_type(0);
  if (!t) return;
  if (t->kind == TypeInfo::Kind::kOptional) {
    if (t->elem) ctx.set_output(0, *t->elem);
  } else {
    ctx.set_output(0, *t);
  }
}

void infer_sequence_construct(InferenceContext& ctx) {
  TypeInfo elem;
  for (size_t i = 0; i < ctx.input_count(); ++i)
    if (const TypeInfo* t = ctx.input_type(i)) elem = union_tensor(ctx, elem, *t);
  if (elem.kind != TypeInfo::Kind::kUnset) ctx.set_output(0, sequence_of(std::move(elem)));
}

void infer_sequence_empty(InferenceContext& ctx) {
  ctx.set_output(0, sequence_of(TypeInfo::tensor(dtype_attr(ctx, "dtype", DataType::kFloat))));
}

void infer_sequence_at(InferenceContext& ctx) {
  if (const TypeInfo* e = sequence_elem(ctx, 0)) ctx.set_output(0, *e);
}

void infer_sequence_insert(InferenceContext& ctx) {
  const TypeInfo* seq = ctx.input_type(0);
  const TypeInfo* t = ctx.input_type(1);
  TypeInfo elem;
  if (seq && seq->kind == TypeInfo::Kind::kSequence && seq->elem) elem = *seq->elem;
  if (t) {
    // An element type without shape (SequenceEmpty) says nothing about the shapes: keep the
    // inserted tensor's type then only when the sequence has no element type at all.
    elem = elem.kind == TypeInfo::Kind::kUnset ? *t : union_tensor(ctx, elem, *t);
  }
  if (elem.kind != TypeInfo::Kind::kUnset) ctx.set_output(0, sequence_of(std::move(elem)));
}

void infer_sequence_erase(InferenceContext& ctx) { propagate_type_and_shape(ctx, 0, 0); }

void infer_sequence_length(InferenceContext& ctx) {
  ctx.set_output_tensor(0, DataType::kInt64, Shape{});
}

// SplitToSequence: a sequence of parts of the input along `axis`.
void infer_split_to_sequence(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  const DataType et = ctx.input_elem_type(0).value_or(DataType::kUndefined);
  if (!in) {
    ctx.set_output(0, sequence_of(TypeInfo::tensor(et)));
    return;
  }
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), rank_of(*in));
  Shape part = *in;
  Dim& d = part.dims[static_cast<size_t>(axis)];
  if (!ctx.has_input(1)) {
    if (ctx.attr_int("keepdims", 1) == 0) part.dims.erase(part.dims.begin() + axis);
    else d = Dim::of(1);
  } else {
    const Shape* ss = ctx.input_shape(1);
    auto split = ctx.input_ints(1);
    if (split && ss && ss->rank() == 0) {
      const int64_t s = (*split)[0];
      if (s < 1) ctx.fail("shape.split", "split must be positive, is " + std::to_string(s));
      d = d.is_static() && d.value % s == 0 ? Dim::of(s) : Dim{};
    } else if (split && !split->empty()) {
      int64_t sum = 0;
      for (int64_t s : *split) {
        if (s < 0) ctx.fail("shape.split", "split has the negative size " + std::to_string(s));
        if (__builtin_add_overflow(sum, s, &sum)) ctx.fail("shape.overflow", "split sizes overflow int64");
      }
      if (d.is_static() && sum != d.value)
        ctx.fail("shape.split", "split sizes add up to " + std::to_string(sum) + ", the axis has " + std::to_string(d.value));
      const bool equal = std::all_of(split->begin(), split->end(), [&](int64_t s) { return s == (*split)[0]; });
      d = equal ? Dim::of((*split)[0]) : Dim{};
    } else {
      d = Dim{};
    }
  }
  ctx.set_output(0, sequence_of(TypeInfo::tensor(et, std::move(part))));
}

// ConcatFromSequence: the elements' shape with the `axis` dim data-dependent (new_axis=1 inserts it).
void infer_concat_from_sequence(InferenceContext& ctx) {
  const TypeInfo* e = sequence_elem(ctx, 0);
  if (!e) return;
  const DataType et = e->data_type();
  if (!e->shape) {
    ctx.set_output_tensor(0, et, std::nullopt);
    return;
  }
  const bool new_axis = ctx.attr_int("new_axis", 0) != 0;
  const int64_t r = rank_of(*e->shape);
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), new_axis ? r + 1 : r);
  Shape out = *e->shape;
  if (new_axis) out.dims.insert(out.dims.begin() + axis, Dim{});
  else out.dims[static_cast<size_t>(axis)] = Dim{};
  ctx.set_output_tensor(0, et, std::move(out));
}

// SequenceMap: the body runs on one element of every sequence input (tensors as they are).
void infer_sequence_map(InferenceContext& ctx) {
  Graph* body = ctx.attr_graph("body");
  if (!body) ctx.fail("node.attribute-missing", "SequenceMap needs a body");
  if (body->inputs.size() != ctx.input_count())
    ctx.fail("graph.subgraph-arity", "SequenceMap body has " + std::to_string(body->inputs.size()) +
                                         " inputs, the node gives " + std::to_string(ctx.input_count()));
  if (body->outputs.size() != ctx.output_count())
    ctx.fail("graph.subgraph-arity", "SequenceMap body has " + std::to_string(body->outputs.size()) +
                                         " outputs, the node has " + std::to_string(ctx.output_count()));
  std::vector<std::optional<TypeInfo>> in;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const TypeInfo* t = ctx.input_type(i);
    if (!t) in.emplace_back();
    else if (t->kind == TypeInfo::Kind::kSequence) in.emplace_back(t->elem ? std::optional<TypeInfo>(*t->elem) : std::nullopt);
    else in.emplace_back(*t);
  }
  auto out = ctx.infer_subgraph(*body, in);
  for (size_t o = 0; o < out.size() && o < ctx.output_count(); ++o)
    if (out[o].kind != TypeInfo::Kind::kUnset) ctx.set_output(o, sequence_of(out[o]));
}

}  // namespace

void register_sequence_shapes(SchemaRegistry& r) {
  r.set_shape_fn("Optional", infer_optional);
  r.set_shape_fn("OptionalHasElement", infer_optional_has_element);
  r.set_shape_fn("OptionalGetElement", infer_optional_get_element);
  r.set_shape_fn("SequenceConstruct", infer_sequence_construct);
  r.set_shape_fn("SequenceEmpty", infer_sequence_empty);
  r.set_shape_fn("SequenceAt", infer_sequence_at);
  r.set_shape_fn("SequenceInsert", infer_sequence_insert);
  r.set_shape_fn("SequenceErase", infer_sequence_erase);
  r.set_shape_fn("SequenceLength", infer_sequence_length);
  r.set_shape_fn("SplitToSequence", infer_split_to_sequence);
  r.set_shape_fn("ConcatFromSequence", infer_concat_from_sequence);
  r.set_shape_fn("SequenceMap", infer_sequence_map);
}

}  // namespace onnxtool::ir
