// Shape helpers: broadcasting, dim merging and arithmetic.
#include "ir/ops/shape_util.h"

#include <cstring>
#include <limits>

namespace onnxtool::ir::shape {

Shape broadcast(const InferenceContext& ctx, const std::vector<const Shape*>& shapes) {
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->rank());
  Shape out;
  out.dims.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right.
    std::optional<Dim> result;
    bool unknown = false;
    for (const Shape* s : shapes) {
      if (i + s->rank() < rank) continue;
      const Dim& d = s->dims[i + s->rank() - rank];
      if (d.is_static() && d.value == 1) continue;
      if (!result) {
        result = d;
        continue;
      }
      if (d.kind == Dim::Kind::kUnknown || result->kind == Dim::Kind::kUnknown) {
        if (d.is_static() && !result->is_static()) result = d;
        else if (!d.is_static()) unknown = unknown || !result->is_static();
        continue;
      }
      if (result->is_static() && d.is_static()) {
        if (result->value != d.value)
          ctx.fail("shape.broadcast", "cannot broadcast dimension " + std::to_string(result->value) +
                                          " with " + std::to_string(d.value));
        continue;
      }
      if (result->kind == Dim::Kind::kParam && d.kind == Dim::Kind::kParam) {
        if (result->param != d.param) unknown = true;
        continue;
      }
      // A static size against a symbol: the symbol must be that size (or 1): keep the static.
      if (d.is_static()) result = d;
    }
    if (!result) out.dims[i] = Dim::of(1);
    else if (unknown && !result->is_static()) out.dims[i] = Dim{};
    else out.dims[i] = *result;
  }
  return out;
}

Dim merge(const InferenceContext& ctx, const Dim& a, const Dim& b, const std::string& rule,
          const std::string& what) {
  if (a.is_static() && b.is_static()) {
    if (a.value != b.value)
      ctx.fail(rule, what + ": " + std::to_string(a.value) + " vs " + std::to_string(b.value));
    return a;
  }
  if (a.is_static()) return a;
  if (b.is_static()) return b;
  if (a.kind == Dim::Kind::kParam) return a;
  return b;
}

int64_t normalize_axis(const InferenceContext& ctx, int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank)
    ctx.fail("shape.axis", what + " " + std::to_string(axis) + " is out of range for rank " +
                               std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::optional<int64_t> static_product(const InferenceContext& ctx, const std::vector<Dim>& dims) {
  int64_t p = 1;
  for (const Dim& d : dims) {
    if (!d.is_static()) return std::nullopt;
    if (d.value < 0) ctx.fail("shape.negative-dim", "negative dimension " + std::to_string(d.value));
    if (d.value != 0 && p > std::numeric_limits<int64_t>::max() / d.value)
      ctx.fail("shape.overflow", "element count overflows int64");
    p *= d.value;
  }
  return p;
}

Dim mul(const InferenceContext& ctx, const Dim& a, const Dim& b) {
  if (a.is_static() && a.value == 1) return b;
  if (b.is_static() && b.value == 1) return a;
  if (!a.is_static() || !b.is_static()) return Dim{};
  if (a.value != 0 && b.value != 0 &&
      std::abs(a.value) > std::numeric_limits<int64_t>::max() / std::abs(b.value))
    ctx.fail("shape.overflow", "dimension product overflows int64");
  return Dim::of(a.value * b.value);
}

Dim add(const InferenceContext& ctx, const Dim& a, const Dim& b) {
  if (a.is_static() && a.value == 0) return b;
  if (b.is_static() && b.value == 0) return a;
  if (!a.is_static() || !b.is_static()) return Dim{};
  int64_t r;
  if (__builtin_add_overflow(a.value, b.value, &r)) ctx.fail("shape.overflow", "dimension sum overflows int64");
  return Dim::of(r);
}

Shape unknown_shape(size_t rank) {
  Shape s;
  s.dims.resize(rank);
  return s;
}

Shape from_ints(const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t d : dims) s.dims.push_back(Dim::of(d));
  return s;
}

void propagate_type_and_shape(InferenceContext& ctx, size_t in, size_t out) {
  const TypeInfo* t = ctx.input_type(in);
  if (t) ctx.set_output(out, *t);
}

void propagate_type(InferenceContext& ctx, size_t in, size_t out, std::optional<Shape> shape) {
  auto et = ctx.input_elem_type(in);
  ctx.set_output_tensor(out, et.value_or(DataType::kUndefined), std::move(shape));
}

std::optional<std::vector<int64_t>> tensor_ints(const Tensor& t, size_t max_elements) {
  const DataType dt = t.type();
  if (!is_integer_type(dt) || data_type_bits(dt) < 8) return std::nullopt;
  auto n = t.element_count();
  if (!n || *n > max_elements) return std::nullopt;
  Bytes raw;
  try {
    raw = t.raw_bytes();
  } catch (...) {
    return std::nullopt;
  }
  std::vector<int64_t> out(static_cast<size_t>(*n));
  const int bytes = data_type_bits(dt) / 8;
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t* p = raw.data() + i * static_cast<size_t>(bytes);
    switch (dt) {
      case DataType::kInt64: { int64_t v; std::memcpy(&v, p, 8); out[i] = v; break; }
      case DataType::kInt32: { int32_t v; std::memcpy(&v, p, 4); out[i] = v; break; }
      case DataType::kInt16: { int16_t v; std::memcpy(&v, p, 2); out[i] = v; break; }
      case DataType::kInt8: out[i] = static_cast<int8_t>(*p); break;
      case DataType::kUInt8: out[i] = *p; break;
      case DataType::kUInt16: { uint16_t v; std::memcpy(&v, p, 2); out[i] = v; break; }
      case DataType::kUInt32: { uint32_t v; std::memcpy(&v, p, 4); out[i] = v; break; }
      case DataType::kUInt64: { uint64_t v; std::memcpy(&v, p, 8); out[i] = static_cast<int64_t>(v); break; }
      default: return std::nullopt;
    }
  }
  return out;
}

// ---------------------------------------------------------------- symbolic dim arithmetic

namespace {

int64_t gcd_of(int64_t a, int64_t b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (b != 0) {
    const int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

int64_t floor_div(int64_t n, int64_t d) {
  int64_t q = n / d;
  if ((n % d != 0) && ((n < 0) != (d < 0))) --q;
  return q;
}

// Depth-0 positions only: a derived name's parenthesised parts are opaque.
bool has_top_level(const std::string& s, const char* ops) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    else if (s[i] == ')') --depth;
    else if (depth == 0 && i > 0 && std::strchr(ops, s[i])) return true;
  }
  return false;
}

// Splits "expr+3" / "expr-3" into ("expr", +-3); a name without a trailing constant term gives
// (name, 0).
std::pair<std::string, int64_t> split_offset(const std::string& s) {
  int depth = 0;
  size_t last = std::string::npos;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    else if (s[i] == ')') --depth;
    else if (depth == 0 && i > 0 && (s[i] == '+' || s[i] == '-')) last = i;
  }
  if (last == std::string::npos || last + 1 >= s.size() || s.size() - last > 18) return {s, 0};
  for (size_t i = last + 1; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return {s, 0};
  const int64_t k = std::stoll(s.substr(last + 1));
  return {s.substr(0, last), s[last] == '-' ? -k : k};
}

}  // namespace

Dim affine_dim(const InferenceContext& ctx, const Dim& d, int64_t mul, int64_t add, int64_t div) {
  if (mul < 1 || div < 1) return Dim{};
  if (d.is_static()) {
    int64_t n;
    if (__builtin_mul_overflow(d.value, mul, &n) || __builtin_add_overflow(n, add, &n))
      ctx.fail("shape.overflow", "dimension arithmetic overflows int64");
    return Dim::of(floor_div(n, div));
  }
  if (d.kind != Dim::Kind::kParam || d.param.empty()) return Dim{};
  auto [base, k] = split_offset(d.param);
  // mul * (base + k) + add
  int64_t shifted;
  if (__builtin_mul_overflow(mul, k, &shifted) || __builtin_add_overflow(shifted, add, &add))
    return Dim{};
  if (div > 1) {
    const int64_t g = gcd_of(gcd_of(mul, add), div);
    mul /= g;
    add /= g;
    div /= g;
  }
  if (div > 1 && mul % div == 0) {
    // floor((m*div*h + a) / div) = m*h + floor(a / div) for integer h.
    mul /= div;
    add = floor_div(add, div);
    div = 1;
  }
  const bool compound = has_top_level(base, "+-");
  std::string term = mul == 1 ? base : std::to_string(mul) + "*" + (compound ? "(" + base + ")" : base);
  std::string num = term;
  if (add > 0) num += "+" + std::to_string(add);
  if (add < 0) num += "-" + std::to_string(-add);
  if (div == 1) return Dim::symbol(num);
  const bool bare = num == base && !compound && !has_top_level(base, "*");
  return Dim::symbol("floor(" + (bare ? num : "(" + num + ")") + "/" + std::to_string(div) + ")");
}

Dim sum_dims(const InferenceContext& ctx, const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static()) return add(ctx, a, b);
  if (a.is_static() && a.value == 0) return b;
  if (b.is_static() && b.value == 0) return a;
  if (a.kind == Dim::Kind::kParam && b.is_static()) return affine_dim(ctx, a, 1, b.value, 1);
  if (b.kind == Dim::Kind::kParam && a.is_static()) return affine_dim(ctx, b, 1, a.value, 1);
  if (a.kind == Dim::Kind::kParam && b.kind == Dim::Kind::kParam && !a.param.empty() && !b.param.empty())
    return Dim::symbol(a.param + "+" + b.param);
  return Dim{};
}

}  // namespace onnxtool::ir::shape
