// Sequence and optional kernels: SequenceConstruct, SequenceEmpty, SequenceAt, SequenceInsert,
// SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap, Optional,
// OptionalHasElement and OptionalGetElement.
#include "runner/cpu/kernels.h"
#include "runner/cpu/tensor_util.h"

namespace onnxtool::runner::cpu {
namespace {

// ---------------------------------------------------------------- sequences

const std::vector<Tensor>& sequence_input(const KernelContext& ctx, size_t i) {
  const Value& v = ctx.input_value(i);
  if (v.kind != Value::Kind::kSequence || !v.sequence) ctx.fail("input " + std::to_string(i) + " is " + v.describe() + ", not a sequence");
  return *v.sequence;
}

DataType sequence_type(const Value& v) {
  if (v.sequence && !v.sequence->empty()) return v.sequence->front().dtype();
  return v.elem_type;
}

/// A position in [-n, n - 1] (or [-n, n] with `allow_end`) made non-negative.
int64_t sequence_position(const KernelContext& ctx, size_t input, int64_t n, bool allow_end) {
  const int64_t p = read_int_scalar(ctx, ctx.input(input), "position");
  const int64_t hi = allow_end ? n : n - 1;
  if (p < -n || p > hi)
    ctx.fail("position " + std::to_string(p) + " is out of range for a sequence of " + std::to_string(n) + " tensors");
  return p < 0 ? p + n : p;
}

void sequence_construct(KernelContext& ctx) {
  std::vector<Tensor> items;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    items.push_back(ctx.input(i));
    if (items.back().dtype() != items.front().dtype()) ctx.fail("SequenceConstruct inputs have different types");
  }
  const DataType t = items.empty() ? DataType::kUndefined : items.front().dtype();
  ctx.set_output(0, Value::of_sequence(std::move(items), t));
}

void sequence_empty(KernelContext& ctx) {
  ctx.set_output(0, Value::of_sequence({}, static_cast<DataType>(ctx.attr_int("dtype", 1))));
}

void sequence_at(KernelContext& ctx) {
  const auto& seq = sequence_input(ctx, 0);
  ctx.set_output(0, seq[static_cast<size_t>(sequence_position(ctx, 1, static_cast<int64_t>(seq.size()), false))]);
}

void sequence_insert(KernelContext& ctx) {
  const Value& v = ctx.input_value(0);
  std::vector<Tensor> items = sequence_input(ctx, 0);
  const Tensor& t = ctx.input(1);
  const DataType type = sequence_type(v);
  if (type != DataType::kUndefined && type != t.dtype())
    ctx.fail("cannot insert " + t.describe() + " into a sequence of " + type_name(type));
  const int64_t n = static_cast<int64_t>(items.size());
  const int64_t pos = ctx.has_input(2) ? sequence_position(ctx, 2, n, true) : n;
  items.insert(items.begin() + pos, t);
  ctx.set_output(0, Value::of_sequence(std::move(items), t.dtype()));
}

void sequence_erase(KernelContext& ctx) {
  const Value& v = ctx.input_value(0);
  std::vector<Tensor> items = sequence_input(ctx, 0);
  const int64_t n = static_cast<int64_t>(items.size());
  if (n == 0) ctx.fail("cannot erase from an empty sequence");
  const int64_t pos = ctx.has_input(1) ? sequence_position(ctx, 1, n, false) : n - 1;
  items.erase(items.begin() + pos);
  ctx.set_output(0, Value::of_sequence(std::move(items), sequence_type(v)));
}

void sequence_length(KernelContext& ctx) {
  ctx.set_output(0, Tensor::scalar_int64(static_cast<int64_t>(sequence_input(ctx, 0).size())));
}

void split_to_sequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const size_t axis = static_cast<size_t>(normalize_axis(ctx, ctx.attr_int("axis", 0), static_cast<int64_t>(x.rank())));
  const int64_t dim = x.dim(axis);
  std::vector<Tensor> items;
  if (!ctx.has_input(1)) {
    // Chunks of one; keepdims=0 drops the axis.
    const bool keep = ctx.attr_int("keepdims", 1) != 0;
    std::vector<int64_t> squeezed = x.shape();
    squeezed.erase(squeezed.begin() + static_cast<int64_t>(axis));
    for (int64_t i = 0; i < dim; ++i) {
      Tensor part = axis_part(ctx, x, axis, i, 1);
      items.push_back(keep ? part : part.reshaped(squeezed));
    }
  } else {
    const Tensor& s = ctx.input(1);
    std::vector<int64_t> lens;
    if (s.rank() == 0) {
      const int64_t chunk = read_int_scalar(ctx, s, "split");
      if (chunk <= 0) ctx.fail("split must be positive");
      for (int64_t left = dim; left > 0; left -= chunk) lens.push_back(std::min(chunk, left));
    } else {
      lens = read_int_list(ctx, s, "split");
      check_split_lengths(ctx, lens, dim);
    }
    int64_t start = 0;
    for (int64_t len : lens) {
      items.push_back(axis_part(ctx, x, axis, start, len));
      start += len;
    }
  }
  ctx.set_output(0, Value::of_sequence(std::move(items), x.dtype()));
}

void concat_from_sequence(KernelContext& ctx) {
  const auto& seq = sequence_input(ctx, 0);
  if (seq.empty()) ctx.fail("cannot concatenate an empty sequence");
  if (!ctx.has_attr("axis")) ctx.fail("ConcatFromSequence needs the axis attribute");
  const bool new_axis = ctx.attr_int("new_axis", 0) != 0;
  const Tensor& first = seq.front();
  const int64_t r = static_cast<int64_t>(first.rank());
  const int64_t axis = normalize_axis(ctx, ctx.attr_int("axis", 0), r, new_axis);
  if (!new_axis && r == 0) ctx.fail("cannot concatenate scalars without new_axis");
  std::vector<int64_t> shape = first.shape();
  if (new_axis) shape.insert(shape.begin() + axis, 1);
  for (const Tensor& t : seq) {
    if (t.dtype() != first.dtype() || t.rank() != first.rank()) ctx.fail("sequence tensors differ in type or rank");
    for (size_t d = 0; d < t.rank(); ++d)
      if ((new_axis || static_cast<int64_t>(d) != axis) && t.dim(d) != first.dim(d))
        ctx.fail("sequence tensors differ in shape: " + t.describe() + " vs " + first.describe());
  }
  // Every tensor as a part [outer, len, inner] of the output along `axis`.
  std::vector<int64_t> out_shape = shape;
  out_shape[static_cast<size_t>(axis)] = 0;
  std::vector<Tensor> parts;
  for (const Tensor& t : seq) {
    std::vector<int64_t> s = t.shape();
    if (new_axis) s.insert(s.begin() + axis, 1);
    out_shape[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
    parts.push_back(is_sub_byte(t.dtype()) ? unpack_sub_byte(t).reshaped(s) : t.reshaped(s));
  }
  const DataType type = is_sub_byte(first.dtype()) ? DataType::kUInt8 : first.dtype();
  const size_t a = static_cast<size_t>(axis);
  const int64_t outer = dims_product(out_shape, 0, a), inner = dims_product(out_shape, a + 1, out_shape.size());
  Tensor out(type, out_shape);
  visit_storage_or_fail(ctx, type, [&](auto tag) {
    using E = typename decltype(tag)::type;
    E* dst = mutable_elements<E>(out);
    for (int64_t o = 0; o < outer; ++o)
      for (const Tensor& t : parts) {
        const int64_t block = t.dim(a) * inner;
        copy_elements(dst, elements<E>(t) + o * block, block);
        dst += block;
      }
  });
  ctx.set_output(0, is_sub_byte(first.dtype()) ? pack_sub_byte(out, first.dtype()) : out);
}

// ---------------------------------------------------------------- optionals

void optional_op(KernelContext& ctx) {
  Value v;
  v.kind = Value::Kind::kOptional;
  if (ctx.has_input(0)) {
    v.optional = std::make_shared<Value>(ctx.input_value(0));
  } else {
    const ir::Attribute* a = ctx.node().attr("type");
    if (!a || !a->tp) ctx.fail("an empty Optional needs the type attribute");
    const ir::TypeInfo& t = *a->tp;
    if (t.kind == ir::TypeInfo::Kind::kTensor) v.elem_type = t.data_type();
    else if (t.kind == ir::TypeInfo::Kind::kSequence && t.elem) v.elem_type = t.elem->data_type();
  }
  ctx.set_output(0, std::move(v));
}

void optional_has_element(KernelContext& ctx) {
  bool has = false;
  if (ctx.has_input(0)) {
    const Value& v = ctx.input_value(0);
    // Version 15 types its input as optional only; a plain tensor or sequence still counts as
    // present (a Loop may carry an optional in and a sequence out, as the suite's
    // test_loop16_seq_none does), as in version 18.
    has = v.kind == Value::Kind::kOptional ? v.optional != nullptr : v.kind != Value::Kind::kNone;
  }
  Tensor t(DataType::kBool, {});
  *t.mutable_data<uint8_t>() = has ? 1 : 0;
  ctx.set_output(0, t);
}

void optional_get_element(KernelContext& ctx) {
  const Value& v = ctx.input_value(0);
  if (v.kind != Value::Kind::kOptional) {  // a present value passes through (see OptionalHasElement)
    ctx.set_output(0, v);
    return;
  }
  if (!v.optional) ctx.fail("the optional input is empty");
  ctx.set_output(0, *v.optional);
}

/// SequenceMap: runs the body once per element of the first input sequence; sequence inputs
/// give their i-th element, tensor inputs the whole tensor; output k collects the body's output
/// k of every iteration into a sequence.
void sequence_map(KernelContext& ctx) {
  const ir::Graph* body = ctx.attr_graph("body");
  if (!body) ctx.fail("missing body");
  const Value& first = ctx.input_value(0);
  if (first.kind != Value::Kind::kSequence) ctx.fail("input 0 must be a sequence");
  const size_t n = first.sequence->size();
  for (size_t i = 1; i < ctx.input_count(); ++i) {
    const Value& v = ctx.input_value(i);
    if (v.kind == Value::Kind::kSequence && v.sequence->size() != n)
      ctx.fail("input " + std::to_string(i) + " has " + std::to_string(v.sequence->size()) +
               " elements, input 0 has " + std::to_string(n));
  }
  std::vector<std::vector<Tensor>> outs(ctx.output_count());
  for (size_t it = 0; it < n; ++it) {
    std::vector<Value> args;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
      const Value& v = ctx.input_value(i);
      args.push_back(v.kind == Value::Kind::kSequence ? Value::of((*v.sequence)[it]) : v);
    }
    auto out = ctx.run_subgraph(*body, args);
    if (out.size() < outs.size()) ctx.fail("body returned too few outputs");
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!out[k].is_tensor()) ctx.fail("body output " + std::to_string(k) + " is not a tensor");
      outs[k].push_back(out[k].tensor);
    }
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    // The element type of an empty result comes from the body's declared output type.
    DataType elem = DataType::kUndefined;
    if (k < body->outputs.size()) {
      const ir::ValueInfo& vi = body->outputs[k];
      const ir::TypeInfo& t = vi.type ? *vi.type : vi.value->type;
      if (t.is_tensor()) elem = t.data_type();
    }
    ctx.set_output(k, Value::of_sequence(std::move(outs[k]), elem));
  }
}

}  // namespace

void register_sequence_kernels(KernelRegistry& r) {
  r.add("SequenceConstruct", sequence_construct);
  r.add("SequenceEmpty", sequence_empty);
  r.add("SequenceAt", sequence_at);
  r.add("SequenceInsert", sequence_insert);
  r.add("SequenceErase", sequence_erase);
  r.add("SequenceLength", sequence_length);
  r.add("SplitToSequence", split_to_sequence);
  r.add("ConcatFromSequence", concat_from_sequence);
  r.add("Optional", optional_op);
  r.add("OptionalHasElement", optional_has_element);
  r.add("OptionalGetElement", optional_get_element);
  r.add("SequenceMap", sequence_map);
}

}  // namespace onnxtool::runner::cpu
