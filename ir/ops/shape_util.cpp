// Shape helpers: broadcasting, dim merging and arithmetic, and small helpers several op
// families share.
#include "ir/ops/shape_util.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "ir/constant.h"

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
  if (!is_integer_type(t.type())) return std::nullopt;  // bool is no shape or index
  return read_ints(t, max_elements);
}

// ---------------------------------------------------------------- helpers of several families

bool same_dim(const Dim& a, const Dim& b) {
  if (a.is_static() && b.is_static()) return a.value == b.value;
  return a.kind == Dim::Kind::kParam && b.kind == Dim::Kind::kParam && a.param == b.param;
}

Shape shape_of_dims(std::vector<Dim> dims) {
  Shape s;
  s.dims = std::move(dims);
  return s;
}

Shape vector_shape(Dim length) { return shape_of_dims({std::move(length)}); }

int64_t rank_of(const Shape& s) { return static_cast<int64_t>(s.rank()); }

int64_t checked_mul(const InferenceContext& ctx, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) ctx.fail("shape.overflow", "dimension product overflows int64");
  return r;
}

std::optional<int64_t> vector_length(const InferenceContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  if (const DimValues* v = ctx.input_values(i)) return static_cast<int64_t>(v->size());
  const Shape* s = ctx.input_shape(i);
  if (!s) return std::nullopt;
  if (s->rank() == 0) return 1;
  // A declared length beyond any tensor's rank says nothing usable (a shape of that many dims
  // would not even fit in memory).
  if (s->rank() == 1 && s->dims[0].is_static() && s->dims[0].value <= kMaxVectorLength) return s->dims[0].value;
  return std::nullopt;
}

std::optional<Dim> scalar_dim(const InferenceContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  const DimValues* v = ctx.input_values(i);
  if (!v || v->size() != 1) return std::nullopt;
  return (*v)[0];
}

std::optional<int64_t> scalar_int(const InferenceContext& ctx, size_t i) {
  auto d = scalar_dim(ctx, i);
  if (!d || !d->is_static()) return std::nullopt;
  return d->value;
}

std::vector<int64_t> normalize_axes(const InferenceContext& ctx, const std::vector<int64_t>& axes,
                                    int64_t rank, const std::string& what) {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(ctx, a, rank, what);
    if (seen[static_cast<size_t>(n)])
      ctx.fail("shape.axis", what + " repeats axis " + std::to_string(a));
    seen[static_cast<size_t>(n)] = true;
    out.push_back(n);
  }
  return out;
}

std::vector<int64_t> all_axes(int64_t rank) {
  std::vector<int64_t> out(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) out[static_cast<size_t>(i)] = i;
  return out;
}

DataType dtype_attr(const InferenceContext& ctx, const char* name, DataType fallback) {
  const int64_t v = ctx.attr_int(name, static_cast<int64_t>(fallback));
  if (!is_valid_data_type(static_cast<int32_t>(v)))
    ctx.fail("shape.attribute", std::string(name) + " " + std::to_string(v) + " is not a data type");
  return static_cast<DataType>(v);
}

Dim exact_quotient(const Dim& d, int64_t k) {
  if (k == 1) return d;
  if (d.is_static() && k > 0 && d.value % k == 0) return Dim::of(d.value / k);
  return Dim{};
}

const Shape* shape_of_rank(const InferenceContext& ctx, size_t i, size_t rank, const char* what) {
  const Shape* s = ctx.input_shape(i);
  if (s && s->rank() != rank)
    ctx.fail("shape.rank", std::string(what) + " must have rank " + std::to_string(rank) + ", has shape " +
                               s->to_string());
  return s;
}

Dim dim_at(const Shape* s, size_t i) {
  if (!s || i >= s->rank()) return Dim{};
  return s->dims[i];
}

Dim divide_dim(const InferenceContext& ctx, const Dim& d, int64_t factor, const std::string& what) {
  if (factor == 1) return d;
  if (!d.is_static()) return shape::affine_dim(ctx, d, 1, 0, factor);
  if (d.value % factor != 0)
    ctx.fail("shape.blocksize", what + " " + std::to_string(d.value) + " is not a multiple of " + std::to_string(factor));
  return Dim::of(d.value / factor);
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

// The index of the parenthesis closing the one at `open`, or npos.
size_t closing_paren(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    else if (s[i] == ')' && --depth == 0) return i;
  }
  return std::string::npos;
}

std::string strip_parens(const std::string& s) {
  if (s.size() >= 2 && s.front() == '(' && closing_paren(s, 0) == s.size() - 1) return s.substr(1, s.size() - 2);
  return s;
}

// A derived dim read back: floor((mul * base + add) / div), `base` opaque.
struct AffineForm {
  std::string base;
  int64_t mul = 1, add = 0, div = 1;
};

// "c*base+k" with the coefficient and the offset optional.
AffineForm parse_linear(const std::string& s) {
  AffineForm a;
  auto [rest, k] = split_offset(s);
  a.base = rest;
  a.add = k;
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  if (digits > 0 && digits < 18 && digits + 1 < rest.size() && rest[digits] == '*') {
    const std::string tail = rest.substr(digits + 1);
    const int64_t c = std::stoll(rest.substr(0, digits));
    if (c >= 1 && !has_top_level(tail, "+-")) {
      a.mul = c;
      a.base = strip_parens(tail);
    }
  }
  return a;
}

// Reads back what format_affine writes; anything else is an opaque base.
AffineForm parse_affine(const std::string& s) {
  if (s.size() > 7 && s.compare(0, 6, "floor(") == 0 && closing_paren(s, 5) == s.size() - 1) {
    const std::string inner = s.substr(6, s.size() - 7);
    int depth = 0;
    size_t slash = std::string::npos;
    for (size_t i = 0; i < inner.size(); ++i) {
      if (inner[i] == '(') ++depth;
      else if (inner[i] == ')') --depth;
      else if (depth == 0 && inner[i] == '/') slash = i;
    }
    if (slash != std::string::npos && slash > 0 && inner.size() - slash > 1 && inner.size() - slash < 18 &&
        inner.find_first_not_of("0123456789", slash + 1) == std::string::npos) {
      AffineForm a = parse_linear(strip_parens(inner.substr(0, slash)));
      a.div = std::stoll(inner.substr(slash + 1));
      if (a.div >= 1) return a;
    }
  }
  return parse_linear(s);
}

std::string format_affine(const std::string& base, int64_t mul, int64_t add, int64_t div) {
  const bool compound = has_top_level(base, "+-");
  std::string num = mul == 1 ? base : std::to_string(mul) + "*" + (compound ? "(" + base + ")" : base);
  if (add > 0) num += "+" + std::to_string(add);
  if (add < 0) num += "-" + std::to_string(0 - static_cast<uint64_t>(add));  // (INT64_MIN has no int64 negation)
  if (div == 1) return num;
  const bool bare = num == base && !compound && !has_top_level(base, "*");
  return "floor(" + (bare ? num : "(" + num + ")") + "/" + std::to_string(div) + ")";
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
  // Compose with the expression the symbol already spells, so that chains of strides and
  // scales stay flat and canonical.
  const AffineForm f = parse_affine(d.param);
  std::string base = f.base;
  int64_t m, a, q;
  bool overflow = false;
  if (f.div == 1) {
    // mul * (f.mul * b + f.add) + add
    overflow = __builtin_mul_overflow(mul, f.mul, &m) || __builtin_mul_overflow(mul, f.add, &a) ||
               __builtin_add_overflow(a, add, &a);
    q = div;
  } else if (mul == 1) {
    // floor((floor(N / f.div) + add) / div) == floor((N + add * f.div) / (f.div * div))
    m = f.mul;
    overflow = __builtin_mul_overflow(add, f.div, &a) || __builtin_add_overflow(a, f.add, &a) ||
               __builtin_mul_overflow(f.div, div, &q);
  } else {
    base = d.param;
    m = mul;
    a = add;
    q = div;
  }
  // INT64_MIN has no negation for gcd_of or the symbol's text: an offset that large is unknown.
  if (overflow || a == std::numeric_limits<int64_t>::min() || m == std::numeric_limits<int64_t>::min()) return Dim{};
  if (q > 1) {
    const int64_t g = gcd_of(gcd_of(m, a), q);
    m /= g;
    a /= g;
    q /= g;
  }
  if (q > 1 && m % q == 0) {
    // floor((k*q*b + a) / q) = k*b + floor(a / q) for integer b.
    m /= q;
    a = floor_div(a, q);
    q = 1;
  }
  if (m == 1 && a == 0 && q == 1) {
    Dim same = Dim::symbol(base);
    if (base == d.param) same.denotation = d.denotation;
    return same;
  }
  return Dim::symbol(format_affine(base, m, a, q));
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

SliceRange slice_range(int64_t start, int64_t end, int64_t step, int64_t dim) {
  SliceRange r;
  if (dim <= 0) return r;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    if (end <= start) return r;
    const int64_t diff = end - start;
    r.first = start;
    r.count = diff / step + (diff % step != 0);
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    if (start <= end) return r;
    const int64_t diff = start - end;
    r.first = start;
    if (step == std::numeric_limits<int64_t>::min()) r.count = 1;  // -step would overflow
    else r.count = diff / -step + (diff % -step != 0);
  }
  return r;
}

/// The values of a small numeric tensor (integer or floating point) as doubles.
std::optional<std::vector<double>> tensor_numbers(const Tensor& t) {
  if (is_integer_type(t.type())) {
    auto ints = tensor_ints(t, 4096);
    if (!ints) return std::nullopt;
    return std::vector<double>(ints->begin(), ints->end());
  }
  return read_floats(t, 4096);
}

/// The values of a numeric input: propagated integers, or a constant of any numeric type.
std::optional<std::vector<double>> input_numbers(const InferenceContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  if (auto ints = ctx.input_ints(i)) return std::vector<double>(ints->begin(), ints->end());
  if (const Tensor* t = ctx.input_tensor(i)) return tensor_numbers(*t);
  return std::nullopt;
}

}  // namespace onnxtool::ir::shape
