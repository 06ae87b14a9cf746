// Shape functions of per-element ops, reductions and quantization: unary math and activations,
// broadcasting binary and variadic ops, Softmax family, Cast, Dropout, Reduce*, ArgMax/ArgMin,
// CumSum/CumProd and the QuantizeLinear family; with propagation of small integer values
// through the arithmetic that shape computations use (Shape -> Gather -> Mul -> Concat).
//
// Value propagation relies on one fact: a symbol in a propagated value always stands for a
// dimension (it comes from Shape, survives ops that are identities on it and only grows into
// derived symbols through operations that keep it non-negative), so it is a non-negative
// number. Every rule below is exact under that assumption; anything else gives an unknown
// element, and a value with an unknown element is not recorded (DimValues holds numbers and
// symbols only).
#include <algorithm>
#include <cctype>
#include <cstdint>

#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

using shape::propagate_type_and_shape;


// ---------------------------------------------------------------- element types

// The first known element type among the given inputs.
std::optional<DataType> first_elem_type(const InferenceContext& ctx, std::initializer_list<size_t> inputs) {
  for (size_t i : inputs)
    if (auto t = ctx.input_elem_type(i)) return t;
  return std::nullopt;
}

// Inputs bound to one type variable must agree when both types are known.
void require_same_type(const InferenceContext& ctx, size_t a, size_t b) {
  auto ta = ctx.input_elem_type(a);
  auto tb = ctx.input_elem_type(b);
  if (ta && tb && *ta != *tb)
    ctx.fail("shape.input-type", "inputs " + std::to_string(a) + " and " + std::to_string(b) +
                                     " must have the same element type, have " +
                                     std::string(data_type_name(*ta)) + " and " +
                                     std::string(data_type_name(*tb)));
}

DataType or_undefined(std::optional<DataType> t) { return t.value_or(DataType::kUndefined); }

// A data type given by an attribute (Cast 'to', output_dtype): checked to be a real type.
DataType attr_data_type(const InferenceContext& ctx, int64_t value, const std::string& attr) {
  if (value < 1 || value > kMaxDataType || !is_valid_data_type(static_cast<int32_t>(value)))
    ctx.fail("shape.attribute", "attribute '" + attr + "' is not a tensor data type: " + std::to_string(value));
  return static_cast<DataType>(value);
}

bool is_integer_or_bool(DataType t) { return is_integer_type(t) || t == DataType::kBool; }

// ---------------------------------------------------------------- value propagation
//
// Elements are reasoned about as intervals: a static v is [v, v], a symbol is [0, +inf), unknown is everything.

struct Range {
  bool bounded_below = false, bounded_above = false;
  int64_t lo = 0, hi = 0;
};

Range range_of(const Dim& d) {
  Range r;
  if (d.is_static()) {
    r.bounded_below = r.bounded_above = true;
    r.lo = r.hi = d.value;
  } else if (d.kind == Dim::Kind::kParam) {
    r.bounded_below = true;
    r.lo = 0;
  }
  return r;
}

bool same_symbol(const Dim& a, const Dim& b) {
  return a.kind == Dim::Kind::kParam && b.kind == Dim::Kind::kParam && a.param == b.param;
}

bool known(const Dim& d) { return d.kind != Dim::Kind::kUnknown; }

// a < b for every value the two may take: provably true / provably false / unknown.
std::optional<bool> less_than(const Dim& a, const Dim& b) {
  if (same_symbol(a, b)) return false;
  const Range ra = range_of(a), rb = range_of(b);
  if (ra.bounded_above && rb.bounded_below && ra.hi < rb.lo) return true;
  if (ra.bounded_below && rb.bounded_above && ra.lo >= rb.hi) return false;
  return std::nullopt;
}

std::optional<bool> less_equal(const Dim& a, const Dim& b) {
  if (auto gt = less_than(b, a)) return !*gt;
  return std::nullopt;
}

std::optional<bool> equal(const Dim& a, const Dim& b) {
  if (same_symbol(a, b)) return true;
  if (a.is_static() && b.is_static()) return a.value == b.value;
  if (less_than(a, b) == true || less_than(b, a) == true) return false;
  return std::nullopt;
}

Dim from_bool(std::optional<bool> b) { return b ? Dim::of(*b ? 1 : 0) : Dim{}; }

// Whether v is representable in an integer type (bool: 0 or 1).
bool fits(DataType t, int64_t v) {
  switch (t) {
    case DataType::kBool: return v == 0 || v == 1;
    case DataType::kInt8: return v >= INT8_MIN && v <= INT8_MAX;
    case DataType::kUInt8: return v >= 0 && v <= UINT8_MAX;
    case DataType::kInt16: return v >= INT16_MIN && v <= INT16_MAX;
    case DataType::kUInt16: return v >= 0 && v <= UINT16_MAX;
    case DataType::kInt32: return v >= INT32_MIN && v <= INT32_MAX;
    case DataType::kUInt32: return v >= 0 && v <= static_cast<int64_t>(UINT32_MAX);
    case DataType::kInt64: return true;
    case DataType::kUInt64: return v >= 0;
    default: return false;
  }
}

enum class ValueOp {
  kAdd, kSub, kMul, kDiv, kMod, kFmod, kMax, kMin,
  kEqual, kLess, kLessOrEqual, kGreater, kGreaterOrEqual, kAnd, kOr, kXor,
};

// A symbol combined with a number into a derived symbol ("2*h", "h+3", "floor(h/2)"), spelled
// like the dims of other families so that equal expressions compare equal. Only operations that
// keep a non-negative value non-negative qualify.
Dim derived(const InferenceContext& ctx, ValueOp op, const Dim& sym, const Dim& num) {
  if (sym.kind != Dim::Kind::kParam || !num.is_static()) return Dim{};
  switch (op) {
    case ValueOp::kAdd: return num.value >= 0 ? shape::affine_dim(ctx, sym, 1, num.value, 1) : Dim{};
    case ValueOp::kMul: return num.value >= 1 ? shape::affine_dim(ctx, sym, num.value, 0, 1) : Dim{};
    case ValueOp::kDiv: return num.value >= 1 ? shape::affine_dim(ctx, sym, 1, 0, num.value) : Dim{};
    default: return Dim{};
  }
}

Dim apply(const InferenceContext& ctx, ValueOp op, const Dim& a, const Dim& b) {
  const bool both = a.is_static() && b.is_static();
  int64_t r = 0;
  switch (op) {
    case ValueOp::kAdd:
      if (b.is_static() && b.value == 0) return a;
      if (a.is_static() && a.value == 0) return b;
      if (both && !__builtin_add_overflow(a.value, b.value, &r)) return Dim::of(r);
      if (a.kind == Dim::Kind::kParam && b.kind == Dim::Kind::kParam) return shape::sum_dims(ctx, a, b);
      return a.is_static() ? derived(ctx, op, b, a) : derived(ctx, op, a, b);
    case ValueOp::kSub:
      if (b.is_static() && b.value == 0) return a;
      if (same_symbol(a, b)) return Dim::of(0);
      if (both && !__builtin_sub_overflow(a.value, b.value, &r)) return Dim::of(r);
      return Dim{};
    case ValueOp::kMul:
      if (b.is_static() && b.value == 1) return a;
      if (a.is_static() && a.value == 1) return b;
      if ((a.is_static() && a.value == 0) || (b.is_static() && b.value == 0)) return Dim::of(0);
      if (both && !__builtin_mul_overflow(a.value, b.value, &r)) return Dim::of(r);
      return a.is_static() ? derived(ctx, op, b, a) : derived(ctx, op, a, b);
    case ValueOp::kDiv:  // integer division truncates toward zero
      if (b.is_static() && b.value == 1) return a;
      if (both && b.value != 0 && !(a.value == INT64_MIN && b.value == -1)) return Dim::of(a.value / b.value);
      return derived(ctx, op, a, b);  // truncation is floor for a non-negative dimension
    case ValueOp::kMod:  // the remainder takes the divisor's sign
    case ValueOp::kFmod:  // the remainder takes the dividend's sign
      if (both && b.value != 0 && !(a.value == INT64_MIN && b.value == -1)) {
        r = a.value % b.value;
        if (op == ValueOp::kMod && r != 0 && ((r < 0) != (b.value < 0))) r += b.value;
        return Dim::of(r);
      }
      return Dim{};
    case ValueOp::kMax:
      if (same_symbol(a, b) || less_equal(b, a) == true) return a;
      if (less_equal(a, b) == true) return b;
      return Dim{};
    case ValueOp::kMin:
      if (same_symbol(a, b) || less_equal(a, b) == true) return a;
      if (less_equal(b, a) == true) return b;
      return Dim{};
    case ValueOp::kEqual: return from_bool(equal(a, b));
    case ValueOp::kLess: return from_bool(less_than(a, b));
    case ValueOp::kLessOrEqual: return from_bool(less_equal(a, b));
    case ValueOp::kGreater: return from_bool(less_than(b, a));
    case ValueOp::kGreaterOrEqual: return from_bool(less_equal(b, a));
    case ValueOp::kAnd:
      if ((a.is_static() && a.value == 0) || (b.is_static() && b.value == 0)) return Dim::of(0);
      return both ? Dim::of(a.value != 0 && b.value != 0) : Dim{};
    case ValueOp::kOr:
      if ((a.is_static() && a.value != 0) || (b.is_static() && b.value != 0)) return Dim::of(1);
      return both ? Dim::of(0) : Dim{};
    case ValueOp::kXor:
      return both ? Dim::of((a.value != 0) != (b.value != 0)) : Dim{};
  }
  return Dim{};
}

// Records the values of output 0 when every element is known (a number or a symbol: the
// contract of DimValues) and every number fits the output's element type (the runtime would
// wrap it otherwise).
void set_values_checked(InferenceContext& ctx, DimValues values) {
  const TypeInfo* out = ctx.output_type(0);
  const DataType type = out ? out->data_type() : DataType::kUndefined;
  if (type != DataType::kUndefined && !is_integer_or_bool(type)) return;
  for (const Dim& d : values) {
    if (!known(d)) return;
    if (d.is_static() && type != DataType::kUndefined && !fits(type, d.value)) return;
  }
  ctx.set_output_values(0, std::move(values));
}

// Folds the known values of the given inputs elementwise (numpy broadcasting of 0-D/1-D
// values: equal lengths or length 1).
void propagate_values(InferenceContext& ctx, ValueOp op, std::initializer_list<size_t> inputs) {
  std::optional<DimValues> acc;
  for (size_t i : inputs) {
    const DimValues* v = ctx.input_values(i);
    if (!v) return;
    if (!acc) {
      acc = *v;
      continue;
    }
    const size_t n = std::max(acc->size(), v->size());
    if (acc->size() != n && acc->size() != 1) return;
    if (v->size() != n && v->size() != 1) return;
    DimValues out(n);
    for (size_t k = 0; k < n; ++k)
      out[k] = apply(ctx, op, (*acc)[acc->size() == 1 ? 0 : k], (*v)[v->size() == 1 ? 0 : k]);
    acc = std::move(out);
  }
  if (acc) set_values_checked(ctx, std::move(*acc));
}

// ---------------------------------------------------------------- unary ops

void infer_unary(InferenceContext& ctx) { propagate_type_and_shape(ctx, 0, 0); }

// Output element type bool, shape of input 0.
void infer_unary_to_bool(InferenceContext& ctx) {
  const Shape* s = ctx.input_shape(0);
  ctx.set_output_tensor(0, DataType::kBool, s ? std::optional<Shape>(*s) : std::nullopt);
}

void infer_neg(InferenceContext& ctx) {
  infer_unary(ctx);
  if (const DimValues* v = ctx.input_values(0)) {
    DimValues out;
    for (const Dim& d : *v)
      out.push_back(d.is_static() && d.value != INT64_MIN ? Dim::of(-d.value) : Dim{});
    set_values_checked(ctx, std::move(out));
  }
}

void infer_abs(InferenceContext& ctx) {
  infer_unary(ctx);
  if (const DimValues* v = ctx.input_values(0)) {
    DimValues out;
    for (const Dim& d : *v) {
      if (d.is_static()) out.push_back(d.value == INT64_MIN ? Dim{} : Dim::of(d.value < 0 ? -d.value : d.value));
      else out.push_back(d);  // a dimension is non-negative: Abs keeps it
    }
    set_values_checked(ctx, std::move(out));
  }
}

void infer_not(InferenceContext& ctx) {
  infer_unary(ctx);
  if (const DimValues* v = ctx.input_values(0)) {
    DimValues out;
    for (const Dim& d : *v) out.push_back(d.is_static() ? Dim::of(d.value == 0) : Dim{});
    set_values_checked(ctx, std::move(out));
  }
}

// Clip-1/6 (min/max attributes) and Clip-11+ (min/max optional inputs): the shape of the input;
// integer values are clamped when known.
void infer_clip(InferenceContext& ctx) {
  infer_unary(ctx);
  if (ctx.opset() < 11) return;
  const DimValues* v = ctx.input_values(0);
  if (!v) return;
  DimValues out = *v;
  for (size_t bound = 1; bound <= 2; ++bound) {
    if (!ctx.has_input(bound)) continue;
    const DimValues* b = ctx.input_values(bound);
    if (!b || b->size() != 1) return;
    for (Dim& d : out) d = apply(ctx, bound == 1 ? ValueOp::kMax : ValueOp::kMin, d, (*b)[0]);
  }
  set_values_checked(ctx, std::move(out));
}

// ---------------------------------------------------------------- broadcasting ops

// The broadcast shape of the given inputs, nullopt when one has an unknown rank.
std::optional<Shape> broadcast_inputs(const InferenceContext& ctx, std::initializer_list<size_t> inputs) {
  std::vector<const Shape*> shapes;
  for (size_t i : inputs) {
    const Shape* s = ctx.input_shape(i);
    if (!s) return std::nullopt;
    shapes.push_back(s);
  }
  return shape::broadcast(ctx, shapes);
}

enum class Result { kSameType, kBool };

// Multidirectional broadcasting of inputs 0 and 1 (opset 7 on).
void infer_broadcast_binary(InferenceContext& ctx, Result result, bool same_types) {
  if (same_types) require_same_type(ctx, 0, 1);
  const DataType type = result == Result::kBool ? DataType::kBool : or_undefined(first_elem_type(ctx, {0, 1}));
  ctx.set_output_tensor(0, type, broadcast_inputs(ctx, {0, 1}));
}

// Opset 1-6 binary ops: B is broadcast onto A only with broadcast=1, aligned at `axis` or at the
// end; the output has A's shape.
void infer_legacy_binary(InferenceContext& ctx, Result result) {
  require_same_type(ctx, 0, 1);
  const DataType type = result == Result::kBool ? DataType::kBool : or_undefined(first_elem_type(ctx, {0, 1}));
  const Shape* a = ctx.input_shape(0);
  const Shape* b = ctx.input_shape(1);
  if (!a) {
    ctx.set_output_tensor(0, type, std::nullopt);
    return;
  }
  Shape out = *a;
  if (b) {
    if (ctx.attr_int("broadcast", 0) == 0) {
      if (a->rank() != b->rank())
        ctx.fail("shape.broadcast", "without broadcast=1 both inputs need the same shape: " +
                                        a->to_string() + " vs " + b->to_string());
      for (size_t i = 0; i < a->rank(); ++i)
        out.dims[i] = shape::merge(ctx, a->dims[i], b->dims[i], "shape.broadcast",
                                   "without broadcast=1 both inputs need the same shape, dim " + std::to_string(i));
    } else if (b->rank() > a->rank()) {
      // "element size 1 (including ... any tensor with rank equal to or smaller than" A).
      ctx.fail("shape.broadcast", "B " + b->to_string() + " has a higher rank than A " + a->to_string());
    } else if (const auto count = shape::static_product(ctx, b->dims); !count || *count != 1) {
      // Otherwise B's dims are a contiguous run of A's, from `axis` or at the end. The spec adds
      // "1-dim expansion doesn't work yet"; its reference backend (Caffe2) expanded B's leading
      // and trailing 1s, and the PyTorch exports of the ONNX backend suite rely on that: only
      // the 1s between B's other dims must match A. While B's size is unknown it may still be
      // one element, so its 1s are not held against A at all.
      const int64_t ra = static_cast<int64_t>(a->rank()), rb = static_cast<int64_t>(b->rank());
      const int64_t start = ctx.has_attr("axis") ? shape::normalize_axis(ctx, ctx.attr_int("axis", 0), ra)
                                                 : ra - rb;
      if (start + rb > ra)
        ctx.fail("shape.broadcast", "B " + b->to_string() + " does not fit A " + a->to_string() +
                                        " from axis " + std::to_string(start));
      const auto is_one = [](const Dim& d) { return d.is_static() && d.value == 1; };
      int64_t first = 0, last = rb - 1;
      while (first < rb && is_one(b->dims[static_cast<size_t>(first)])) ++first;
      while (last >= first && is_one(b->dims[static_cast<size_t>(last)])) --last;
      for (int64_t i = first; i <= last; ++i) {
        const Dim& db = b->dims[static_cast<size_t>(i)];
        Dim& da = out.dims[static_cast<size_t>(start + i)];
        if (!count && is_one(db)) continue;
        da = shape::merge(ctx, da, db, "shape.broadcast",
                          "B " + b->to_string() + " must match A " + a->to_string() + " from axis " +
                              std::to_string(start) + " (before opset 7 only B's leading and trailing 1s expand), B dim " +
                              std::to_string(i));
      }
    }
  }
  ctx.set_output_tensor(0, type, std::move(out));
}

template <Result R, bool SameTypes>
void binary_fn(InferenceContext& ctx) {
  infer_broadcast_binary(ctx, R, SameTypes);
}

template <Result R, ValueOp Op>
void binary_values_fn(InferenceContext& ctx) {
  infer_broadcast_binary(ctx, R, true);
  propagate_values(ctx, Op, {0, 1});
}

template <Result R>
void legacy_fn(InferenceContext& ctx) {
  infer_legacy_binary(ctx, R);
}

template <Result R, ValueOp Op>
void legacy_values_fn(InferenceContext& ctx) {
  infer_legacy_binary(ctx, R);
  // Values are 0-D/1-D: the legacy alignment only matters for higher ranks.
  propagate_values(ctx, Op, {0, 1});
}

// Div: integer values only (floats carry no values, but check the type anyway).
template <bool Legacy>
void div_fn(InferenceContext& ctx) {
  if (Legacy) infer_legacy_binary(ctx, Result::kSameType);
  else infer_broadcast_binary(ctx, Result::kSameType, true);
  auto t = first_elem_type(ctx, {0, 1});
  if (!t || is_integer_type(*t)) propagate_values(ctx, ValueOp::kDiv, {0, 1});
}

void infer_mod(InferenceContext& ctx) {
  infer_broadcast_binary(ctx, Result::kSameType, true);
  auto t = first_elem_type(ctx, {0, 1});
  if (!t || is_integer_type(*t))
    propagate_values(ctx, ctx.attr_int("fmod", 0) != 0 ? ValueOp::kFmod : ValueOp::kMod, {0, 1});
}

// Pow: the output has the base's type (the exponent may differ from opset 12 on).
void infer_pow(InferenceContext& ctx) {
  const DataType type = or_undefined(ctx.input_elem_type(0));
  if (ctx.opset() < 7) {
    infer_legacy_binary(ctx, Result::kSameType);
    return;
  }
  ctx.set_output_tensor(0, type, broadcast_inputs(ctx, {0, 1}));
}

// Sum, Mean, Max, Min: every input broadcast together from opset 8 on; before 8 every input has
// the output's shape (no broadcasting at all), so static dims that differ are an error.
void infer_variadic(InferenceContext& ctx) {
  if (ctx.input_count() == 0) ctx.fail("shape.input-count", ctx.node().op_type + " needs at least one input");
  std::optional<DataType> type;
  std::vector<const Shape*> shapes;
  bool ranks_known = true;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    auto t = ctx.input_elem_type(i);
    if (t && type && *t != *type)
      ctx.fail("shape.input-type", "all inputs must have the same element type, have " +
                                       std::string(data_type_name(*type)) + " and " + std::string(data_type_name(*t)));
    if (t) type = t;
    const Shape* s = ctx.input_shape(i);
    if (s) shapes.push_back(s);
    else ranks_known = false;
  }
  if (ctx.opset() >= 8) {
    ctx.set_output_tensor(0, or_undefined(type),
                          ranks_known ? std::optional<Shape>(shape::broadcast(ctx, shapes)) : std::nullopt);
    return;
  }
  std::optional<Shape> out;
  for (const Shape* s : shapes) {
    if (!out) {
      out = *s;
      continue;
    }
    const std::string why = ctx.node().op_type + " before opset 8 needs inputs of one shape (no broadcasting)";
    if (s->rank() != out->rank())
      ctx.fail("shape.broadcast", why + ": " + out->to_string() + " vs " + s->to_string());
    for (size_t i = 0; i < s->rank(); ++i)
      out->dims[i] = shape::merge(ctx, out->dims[i], s->dims[i], "shape.broadcast",
                                  why + ", dim " + std::to_string(i) + " of " + out->to_string() + " vs " + s->to_string());
  }
  // With some ranks unknown the known inputs still give the shape: every input has it.
  ctx.set_output_tensor(0, or_undefined(type), out);
}

template <ValueOp Op>
void variadic_values_fn(InferenceContext& ctx) {
  infer_variadic(ctx);
  if (ctx.input_count() == 1) {
    if (const DimValues* v = ctx.input_values(0)) set_values_checked(ctx, *v);
    return;
  }
  if (ctx.input_count() == 2) propagate_values(ctx, Op, {0, 1});
  else if (ctx.input_count() == 3) propagate_values(ctx, Op, {0, 1, 2});
}

void infer_where(InferenceContext& ctx) {
  auto cond = ctx.input_elem_type(0);
  if (cond && *cond != DataType::kBool)
    ctx.fail("shape.input-type", "Where's condition must be bool, is " + std::string(data_type_name(*cond)));
  require_same_type(ctx, 1, 2);
  ctx.set_output_tensor(0, or_undefined(first_elem_type(ctx, {1, 2})), broadcast_inputs(ctx, {0, 1, 2}));

  const DimValues* c = ctx.input_values(0);
  const DimValues* x = ctx.input_values(1);
  const DimValues* y = ctx.input_values(2);
  if (!x || !y) return;
  const size_t cn = c ? c->size() : 1;
  const size_t n = std::max({cn, x->size(), y->size()});
  for (size_t len : {cn, x->size(), y->size()})
    if (len != n && len != 1) return;
  DimValues out(n);
  for (size_t k = 0; k < n; ++k) {
    const Dim& xv = (*x)[x->size() == 1 ? 0 : k];
    const Dim& yv = (*y)[y->size() == 1 ? 0 : k];
    const Dim* cv = c ? &(*c)[c->size() == 1 ? 0 : k] : nullptr;
    if (cv && cv->is_static()) out[k] = cv->value != 0 ? xv : yv;
    else if ((xv.is_static() && yv.is_static() && xv.value == yv.value) || same_symbol(xv, yv)) out[k] = xv;
  }
  set_values_checked(ctx, std::move(out));
}

// Before opset 7 PRelu's slope does not broadcast: it is one value ("shared across channels"),
// one per element (X's shape) or one per channel ([C], C being X's dim 1, as the exporters of
// that time wrote it). Fails only on static dims that rule out all three.
void check_legacy_slope(const InferenceContext& ctx, const Shape& x, const Shape& slope) {
  const auto count = shape::static_product(ctx, slope.dims);
  if (!count || *count == 1) return;
  const auto contradicts = [](const Dim& a, const Dim& b) { return a.is_static() && b.is_static() && a.value != b.value; };
  bool elementwise = slope.rank() == x.rank();
  for (size_t i = 0; elementwise && i < x.rank(); ++i) elementwise = !contradicts(x.dims[i], slope.dims[i]);
  const bool per_channel = slope.rank() == 1 && x.rank() >= 2 && !contradicts(x.dims[1], slope.dims[0]);
  if (!elementwise && !per_channel)
    ctx.fail("shape.broadcast", "slope " + slope.to_string() + " does not fit X " + x.to_string() +
                                    ": before opset 7 it is one value, one per element or one per channel");
}

// PRelu: slope broadcasts onto X (unidirectionally from opset 7); the output has X's shape.
void infer_prelu(InferenceContext& ctx) {
  require_same_type(ctx, 0, 1);
  const Shape* x = ctx.input_shape(0);
  const Shape* slope = ctx.input_shape(1);
  const DataType type = or_undefined(first_elem_type(ctx, {0, 1}));
  if (!x) {
    ctx.set_output_tensor(0, type, std::nullopt);
    return;
  }
  if (!slope || ctx.opset() < 7) {
    if (slope) check_legacy_slope(ctx, *x, *slope);
    ctx.set_output_tensor(0, type, *x);
    return;
  }
  Shape out = shape::broadcast(ctx, {x, slope});
  // Unidirectional: the slope must not enlarge X. Extra leading 1s are harmless.
  for (size_t i = 0; i < out.rank(); ++i) {
    const size_t lead = out.rank() - x->rank();
    if (i < lead) {
      if (out.dims[i].is_static() && out.dims[i].value != 1)
        ctx.fail("shape.broadcast", "slope " + slope->to_string() + " does not broadcast to X " + x->to_string());
      continue;
    }
    const Dim& xd = x->dims[i - lead];
    if (xd.is_static() && xd.value == 1 && out.dims[i].is_static() && out.dims[i].value != 1)
      ctx.fail("shape.broadcast", "slope " + slope->to_string() + " does not broadcast to X " + x->to_string());
    if (xd.is_static() || xd.kind == Dim::Kind::kParam) out.dims[i] = xd;
  }
  ctx.set_output_tensor(0, type, std::move(out));
}

// ---------------------------------------------------------------- Softmax family, Cast, Dropout

// Softmax, LogSoftmax, Hardmax: the input's shape; the axis must be within the rank (before
// opset 11 the input is coerced to 2-D, and axis == rank is accepted).
void infer_softmax(InferenceContext& ctx) {
  propagate_type_and_shape(ctx, 0, 0);
  const Shape* s = ctx.input_shape(0);
  if (!s) return;
  const int64_t rank = static_cast<int64_t>(s->rank());
  const int64_t axis = ctx.attr_int("axis", ctx.opset() >= 13 ? -1 : 1);
  if (ctx.opset() < 11) {
    if (axis < -rank || axis > rank)
      ctx.fail("shape.axis", "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    return;
  }
  shape::normalize_axis(ctx, axis, rank);
}

// Casts integer values to another integer (or bool) type; other targets carry no values.
void cast_values(InferenceContext& ctx, DataType to) {
  const DimValues* v = ctx.input_values(0);
  if (!v || !is_integer_or_bool(to)) return;
  DimValues out;
  for (const Dim& d : *v) {
    if (to == DataType::kBool) {
      // A symbol may be 0: only numbers are known after the cast.
      out.push_back(d.is_static() ? Dim::of(d.value != 0) : Dim{});
    } else if (d.is_static()) {
      out.push_back(fits(to, d.value) ? d : Dim{});
    } else {
      out.push_back(d);  // a dimension fits any integer type a model would cast it to
    }
  }
  set_values_checked(ctx, std::move(out));
}

void infer_cast(InferenceContext& ctx) {
  DataType to;
  if (ctx.opset() < 6) {
    // Cast-1 names the type as a string ("FLOAT", "INT64").
    std::string name = ctx.attr_string("to", "");
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    auto t = parse_data_type(name);
    if (!t || *t == DataType::kUndefined) ctx.fail("shape.attribute", "Cast 'to' is not a data type: '" + name + "'");
    to = *t;
  } else {
    if (!ctx.has_attr("to")) ctx.fail("shape.attribute", "Cast needs the 'to' attribute");
    to = attr_data_type(ctx, ctx.attr_int("to", 0), "to");
  }
  const Shape* s = ctx.input_shape(0);
  ctx.set_output_tensor(0, to, s ? std::optional<Shape>(*s) : std::nullopt);
  cast_values(ctx, to);
}

void infer_cast_like(InferenceContext& ctx) {
  const Shape* s = ctx.input_shape(0);
  auto to = ctx.input_elem_type(1);
  ctx.set_output_tensor(0, or_undefined(to), s ? std::optional<Shape>(*s) : std::nullopt);
  if (to) cast_values(ctx, *to);
}

// BitCast: reinterprets the bits, so source and target need the same width.
void infer_bit_cast(InferenceContext& ctx) {
  if (!ctx.has_attr("to")) ctx.fail("shape.attribute", "BitCast needs the 'to' attribute");
  const DataType to = attr_data_type(ctx, ctx.attr_int("to", 0), "to");
  auto from = ctx.input_elem_type(0);
  if (from && data_type_bits(*from) != data_type_bits(to))
    ctx.fail("shape.attribute", "BitCast from " + std::string(data_type_name(*from)) + " to " +
                                    std::string(data_type_name(to)) + " changes the bit width");
  const Shape* s = ctx.input_shape(0);
  ctx.set_output_tensor(0, to, s ? std::optional<Shape>(*s) : std::nullopt);
}

// Dropout: output like the input; the optional mask has the input's shape, typed like the input
// before opset 10 and bool from then on.
void infer_dropout(InferenceContext& ctx) {
  propagate_type_and_shape(ctx, 0, 0);
  if (ctx.output_count() < 2 || !ctx.has_output(1)) return;
  const Shape* s = ctx.input_shape(0);
  const DataType mask = ctx.opset() >= 10 ? DataType::kBool : or_undefined(ctx.input_elem_type(0));
  ctx.set_output_tensor(1, mask, s ? std::optional<Shape>(*s) : std::nullopt);
}

// ---------------------------------------------------------------- reductions

// The output shape of a reduction over `axes` (normalized, deduplicated; empty means all).
Shape reduced_shape(const InferenceContext& ctx, const Shape& in, const std::vector<int64_t>& axes, bool keepdims) {
  const int64_t rank = static_cast<int64_t>(in.rank());
  std::vector<bool> reduce(in.rank(), axes.empty());
  for (int64_t a : axes) reduce[static_cast<size_t>(shape::normalize_axis(ctx, a, rank, "axes"))] = true;
  Shape out;
  for (size_t i = 0; i < in.rank(); ++i) {
    if (!reduce[i]) out.dims.push_back(in.dims[i]);
    else if (keepdims) out.dims.push_back(Dim::of(1));
  }
  return out;
}

// Values of a 1-D integer input reduced to one number (ReduceSum/ReduceProd of a shape vector).
void reduce_values(InferenceContext& ctx, const std::vector<int64_t>* axes) {
  const std::string& op = ctx.node().op_type;
  if (op != "ReduceSum" && op != "ReduceProd") return;
  const DimValues* v = ctx.input_values(0);
  const Shape* s = ctx.input_shape(0);
  if (!v || !s || s->rank() != 1) return;
  if (axes && !axes->empty() && !(axes->size() == 1 && ((*axes)[0] == 0 || (*axes)[0] == -1))) return;
  Dim acc = Dim::of(op == "ReduceSum" ? 0 : 1);
  for (const Dim& d : *v) acc = apply(ctx, op == "ReduceSum" ? ValueOp::kAdd : ValueOp::kMul, acc, d);
  set_values_checked(ctx, {acc});
}

// Reduce* with the axes as an attribute (ReduceSum before 13, the others before 18).
void infer_reduce_attr_axes(InferenceContext& ctx) {
  const auto type = or_undefined(ctx.input_elem_type(0));
  const Shape* in = ctx.input_shape(0);
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const std::vector<int64_t> axes = ctx.attr_ints("axes").value_or(std::vector<int64_t>{});
  if (!in) {
    ctx.set_output_tensor(0, type, std::nullopt);
    return;
  }
  ctx.set_output_tensor(0, type, reduced_shape(ctx, *in, axes, keepdims));
  reduce_values(ctx, &axes);
}

// Reduce* with the axes as an optional input and noop_with_empty_axes (ReduceSum from 13, the
// others from 18).
void infer_reduce_input_axes(InferenceContext& ctx) {
  const auto type = or_undefined(ctx.input_elem_type(0));
  const Shape* in = ctx.input_shape(0);
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const bool noop_when_empty = ctx.attr_int("noop_with_empty_axes", 0) != 0;
  std::optional<std::vector<int64_t>> axes;
  bool axes_empty = !ctx.has_input(1);
  if (ctx.has_input(1)) {
    axes = ctx.input_ints(1);
    const Shape* as = ctx.input_shape(1);
    if (axes) axes_empty = axes->empty();
    else if (as && as->rank() == 1 && as->dims[0].is_static() && as->dims[0].value == 0) axes_empty = true;
  }
  if (axes_empty) {
    axes = std::vector<int64_t>{};
    if (noop_when_empty) {
      propagate_type_and_shape(ctx, 0, 0);
      if (const DimValues* v = ctx.input_values(0)) set_values_checked(ctx, *v);
      return;
    }
  }
  if (!in) {
    ctx.set_output_tensor(0, type, std::nullopt);
    return;
  }
  if (axes) {
    ctx.set_output_tensor(0, type, reduced_shape(ctx, *in, *axes, keepdims));
    reduce_values(ctx, &*axes);
    return;
  }
  // Axes given but unknown: with keepdims the rank stays and each dim is itself or 1.
  if (keepdims) {
    Shape out = shape::unknown_shape(in->rank());
    for (size_t i = 0; i < in->rank(); ++i)
      if (in->dims[i].is_static() && in->dims[i].value == 1) out.dims[i] = Dim::of(1);
    ctx.set_output_tensor(0, type, std::move(out));
    return;
  }
  const Shape* as = ctx.input_shape(1);
  if (as && as->rank() == 1 && as->dims[0].is_static()) {
    const int64_t k = as->dims[0].value;
    if (k > static_cast<int64_t>(in->rank()))
      ctx.fail("shape.axis", "reduces " + std::to_string(k) + " axes of a rank " + std::to_string(in->rank()) + " input");
    ctx.set_output_tensor(0, type, shape::unknown_shape(in->rank() - static_cast<size_t>(k)));
    return;
  }
  ctx.set_output_tensor(0, type, std::nullopt);
}

void infer_arg_reduce(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output_tensor(0, DataType::kInt64, std::nullopt);
    return;
  }
  const bool keepdims = ctx.attr_int("keepdims", 1) != 0;
  const int64_t axis = ctx.attr_int("axis", 0);
  ctx.set_output_tensor(0, DataType::kInt64, reduced_shape(ctx, *in, {axis}, keepdims));
}

// CumSum, CumProd: the input's shape; the axis (a 0-D input) must be within the rank.
void infer_cumulative(InferenceContext& ctx) {
  propagate_type_and_shape(ctx, 0, 0);
  const Shape* in = ctx.input_shape(0);
  auto axis = ctx.input_ints(1);
  if (in && axis && axis->size() == 1) shape::normalize_axis(ctx, (*axis)[0], static_cast<int64_t>(in->rank()));
}

// ---------------------------------------------------------------- quantization

// Checks the scale's shape against x for per-axis and blocked quantization (opset 13 on).
// Per-tensor scales (0-D, or a single element) always fit.
void check_scale_shape(const InferenceContext& ctx, size_t scale_input) {
  const Shape* x = ctx.input_shape(0);
  const Shape* scale = ctx.input_shape(scale_input);
  if (!x || !scale || scale->rank() == 0) return;
  const int64_t rank = static_cast<int64_t>(x->rank());
  const int64_t axis = ctx.attr_int("axis", 1);
  const int64_t block = ctx.opset() >= 21 ? ctx.attr_int("block_size", 0) : 0;
  if (block < 0) ctx.fail("shape.attribute", "block_size must not be negative, is " + std::to_string(block));
  if (block == 0) {
    if (scale->rank() != 1 || axis < -rank || axis >= rank) return;
    const Dim& d = x->dims[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
    const Dim& s = scale->dims[0];
    if (d.is_static() && s.is_static() && s.value != 1 && s.value != d.value)
      ctx.fail("shape.quantize", "per-axis scale has " + std::to_string(s.value) + " elements, axis " +
                                     std::to_string(axis) + " of x " + x->to_string() + " has " + std::to_string(d.value));
    return;
  }
  if (scale->rank() != x->rank())
    ctx.fail("shape.rank", "blocked quantization needs a scale of x's rank: scale " + scale->to_string() +
                               ", x " + x->to_string());
  const size_t ax = static_cast<size_t>(shape::normalize_axis(ctx, axis, rank));
  for (size_t i = 0; i < x->rank(); ++i) {
    const Dim& d = x->dims[i];
    const Dim& s = scale->dims[i];
    if (!d.is_static() || !s.is_static()) continue;
    const int64_t want = i == ax ? (d.value + block - 1) / block : d.value;
    if (s.value != want)
      ctx.fail("shape.quantize", "blocked scale " + scale->to_string() + " does not fit x " + x->to_string() +
                                     " with block_size " + std::to_string(block) + " on axis " + std::to_string(axis));
  }
}

// Scale and zero point must have the same number of elements when both are static.
void check_zero_point_shape(const InferenceContext& ctx, size_t scale_input, size_t zp_input) {
  const Shape* scale = ctx.input_shape(scale_input);
  const Shape* zp = ctx.has_input(zp_input) ? ctx.input_shape(zp_input) : nullptr;
  if (!scale || !zp) return;
  auto a = shape::static_product(ctx, scale->dims);
  auto b = shape::static_product(ctx, zp->dims);
  if (a && b && *a != *b)
    ctx.fail("shape.quantize", "zero point " + zp->to_string() + " does not match scale " + scale->to_string());
}

std::optional<Shape> input_shape_copy(const InferenceContext& ctx, size_t i) {
  const Shape* s = ctx.input_shape(i);
  return s ? std::optional<Shape>(*s) : std::nullopt;
}

// Output type: the zero point's, else output_dtype (opset 21 on), else uint8.
void infer_quantize_linear(InferenceContext& ctx) {
  const int64_t out_attr = ctx.opset() >= 21 ? ctx.attr_int("output_dtype", 0) : 0;
  std::optional<DataType> out_dtype;
  if (out_attr != 0) out_dtype = attr_data_type(ctx, out_attr, "output_dtype");
  DataType type = DataType::kUndefined;
  if (ctx.has_input(2)) {
    auto zp = ctx.input_elem_type(2);
    if (zp && out_dtype && *zp != *out_dtype)
      ctx.fail("shape.attribute", "output_dtype " + std::string(data_type_name(*out_dtype)) +
                                      " contradicts the zero point's type " + std::string(data_type_name(*zp)));
    type = zp ? *zp : or_undefined(out_dtype);
  } else {
    type = out_dtype.value_or(DataType::kUInt8);
  }
  if (ctx.opset() >= 13) check_scale_shape(ctx, 1);
  check_zero_point_shape(ctx, 1, 2);
  ctx.set_output_tensor(0, type, input_shape_copy(ctx, 0));
}

// Output type: float before opset 19, then the scale's type, then (23 on) output_dtype if set.
void infer_dequantize_linear(InferenceContext& ctx) {
  if (ctx.has_input(2)) require_same_type(ctx, 0, 2);
  DataType type = DataType::kFloat;
  if (ctx.opset() >= 19) {
    type = or_undefined(ctx.input_elem_type(1));
    const int64_t out_attr = ctx.opset() >= 23 ? ctx.attr_int("output_dtype", 0) : 0;
    if (out_attr != 0) type = attr_data_type(ctx, out_attr, "output_dtype");
    // A float8e8m0 scale is not an output type: without output_dtype the type stays unknown.
    if (type == DataType::kFloat8E8M0) type = DataType::kUndefined;
  }
  if (ctx.opset() >= 13) check_scale_shape(ctx, 1);
  check_zero_point_shape(ctx, 1, 2);
  ctx.set_output_tensor(0, type, input_shape_copy(ctx, 0));
}

void infer_dynamic_quantize_linear(InferenceContext& ctx) {
  ctx.set_output_tensor(0, DataType::kUInt8, input_shape_copy(ctx, 0));
  ctx.set_output_tensor(1, DataType::kFloat, Shape{});
  ctx.set_output_tensor(2, DataType::kUInt8, Shape{});
}

// ---------------------------------------------------------------- registration

void set_all(SchemaRegistry& r, std::initializer_list<const char*> ops, int from, ShapeFn fn) {
  for (const char* op : ops) r.set_shape_fn("", op, from, kMaxOpset, fn);
}

}  // namespace

void register_elementwise_shapes(SchemaRegistry& r) {
  // Unary math and activations: the output is the input's type and shape.
  set_all(r,
          {"Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Tan",
           "Asin", "Acos", "Atan", "Sinh", "Cosh", "Tanh", "Asinh", "Acosh", "Atanh", "Erf", "BitwiseNot",
           "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "ThresholdedRelu", "HardSigmoid", "HardSwish",
           "Sigmoid", "Softplus", "Softsign", "Mish", "Gelu", "Swish", "Shrink"},
          1, infer_unary);
  r.set_shape_fn("Neg", infer_neg);
  r.set_shape_fn("Abs", infer_abs);
  r.set_shape_fn("Not", infer_not);
  set_all(r, {"IsNaN", "IsInf"}, 1, infer_unary_to_bool);
  r.set_shape_fn("Clip", infer_clip);
  set_all(r, {"Softmax", "LogSoftmax", "Hardmax"}, 1, infer_softmax);
  r.set_shape_fn("Dropout", infer_dropout);
  r.set_shape_fn("Cast", infer_cast);
  r.set_shape_fn("CastLike", infer_cast_like);
  r.set_shape_fn("BitCast", infer_bit_cast);

  // Binary ops: opset 1-6 with the legacy broadcast attribute, from 7 numpy broadcasting.
  using R = Result;
  struct Binary {
    const char* op;
    ShapeFn legacy, numpy;
  };
  const Binary binary[] = {
      {"Add", legacy_values_fn<R::kSameType, ValueOp::kAdd>, binary_values_fn<R::kSameType, ValueOp::kAdd>},
      {"Sub", legacy_values_fn<R::kSameType, ValueOp::kSub>, binary_values_fn<R::kSameType, ValueOp::kSub>},
      {"Mul", legacy_values_fn<R::kSameType, ValueOp::kMul>, binary_values_fn<R::kSameType, ValueOp::kMul>},
      {"Div", div_fn<true>, div_fn<false>},
      {"And", legacy_values_fn<R::kBool, ValueOp::kAnd>, binary_values_fn<R::kBool, ValueOp::kAnd>},
      {"Or", legacy_values_fn<R::kBool, ValueOp::kOr>, binary_values_fn<R::kBool, ValueOp::kOr>},
      {"Xor", legacy_values_fn<R::kBool, ValueOp::kXor>, binary_values_fn<R::kBool, ValueOp::kXor>},
      {"Equal", legacy_values_fn<R::kBool, ValueOp::kEqual>, binary_values_fn<R::kBool, ValueOp::kEqual>},
      {"Greater", legacy_values_fn<R::kBool, ValueOp::kGreater>, binary_values_fn<R::kBool, ValueOp::kGreater>},
      {"Less", legacy_values_fn<R::kBool, ValueOp::kLess>, binary_values_fn<R::kBool, ValueOp::kLess>},
  };
  for (const Binary& b : binary) {
    r.set_shape_fn("", b.op, 1, 6, b.legacy);
    r.set_shape_fn("", b.op, 7, kMaxOpset, b.numpy);
  }
  r.set_shape_fn("Pow", infer_pow);
  r.set_shape_fn("Mod", infer_mod);
  r.set_shape_fn("GreaterOrEqual", binary_values_fn<R::kBool, ValueOp::kGreaterOrEqual>);
  r.set_shape_fn("LessOrEqual", binary_values_fn<R::kBool, ValueOp::kLessOrEqual>);
  set_all(r, {"BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}, 1, binary_fn<R::kSameType, true>);
  r.set_shape_fn("PRelu", infer_prelu);
  r.set_shape_fn("Where", infer_where);

  // Variadic ops.
  set_all(r, {"Sum", "Mean"}, 1, infer_variadic);
  r.set_shape_fn("Max", variadic_values_fn<ValueOp::kMax>);
  r.set_shape_fn("Min", variadic_values_fn<ValueOp::kMin>);

  // Reductions: the axes became an input at 13 for ReduceSum, at 18 for the others.
  r.set_shape_fn("", "ReduceSum", 1, 12, infer_reduce_attr_axes);
  r.set_shape_fn("", "ReduceSum", 13, kMaxOpset, infer_reduce_input_axes);
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    r.set_shape_fn("", op, 1, 17, infer_reduce_attr_axes);
    r.set_shape_fn("", op, 18, kMaxOpset, infer_reduce_input_axes);
  }
  set_all(r, {"ArgMax", "ArgMin"}, 1, infer_arg_reduce);
  set_all(r, {"CumSum", "CumProd"}, 1, infer_cumulative);

  // Quantization.
  r.set_shape_fn("QuantizeLinear", infer_quantize_linear);
  r.set_shape_fn("DequantizeLinear", infer_dequantize_linear);
  r.set_shape_fn("DynamicQuantizeLinear", infer_dynamic_quantize_linear);
  r.set_shape_fn(kMicrosoftDomain, "QuantizeLinear", 1, 1, infer_quantize_linear);
  r.set_shape_fn(kMicrosoftDomain, "DequantizeLinear", 1, 1, infer_dequantize_linear);
}

}  // namespace onnxtool::ir
