// Shape functions of the string ops: the text features StringNormalizer and TfIdfVectorizer,
// and RegexFullMatch, StringConcat, StringSplit (kernels: runner/cpu/strings.cpp).
#include <algorithm>
#include <limits>

#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

using shape::shape_of_dims;
using shape::vector_shape;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// StringNormalizer: [C] or [1, C]; removing stopwords makes C data-dependent.
void infer_string_normalizer(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  if (!in) {
    ctx.set_output_tensor(0, DataType::kString, std::nullopt);
    return;
  }
  if (in->rank() != 1 && in->rank() != 2)
    ctx.fail("shape.rank", "StringNormalizer takes [C] or [1, C], got " + in->to_string());
  Shape out = *in;
  const Attribute* stop = ctx.node().attr("stopwords");
  if (stop && !stop->strings.empty()) out.dims.back() = Dim{};
  ctx.set_output_tensor(0, DataType::kString, std::move(out));
}

// TfIdfVectorizer: [C] -> [max(ngram_indexes)+1], [N, C] -> [N, max(ngram_indexes)+1].
void infer_tfidf_vectorizer(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  auto idx = ctx.attr_ints("ngram_indexes");
  Dim width;
  if (idx) {
    int64_t m = -1;
    for (int64_t i : *idx) {
      if (i < 0) ctx.fail("shape.attribute", "ngram_indexes has the negative value " + std::to_string(i));
      m = std::max(m, i);
    }
    if (m < kInt64Max) width = Dim::of(m + 1);
  }
  if (!in) {
    ctx.set_output_tensor(0, DataType::kFloat, std::nullopt);
    return;
  }
  if (in->rank() == 1) ctx.set_output_tensor(0, DataType::kFloat, vector_shape(width));
  else if (in->rank() == 2) ctx.set_output_tensor(0, DataType::kFloat, shape_of_dims({in->dims[0], width}));
  else ctx.fail("shape.rank", "TfIdfVectorizer takes a rank-1 or rank-2 input, got " + in->to_string());
}

void infer_regex_full_match(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  ctx.set_output_tensor(0, DataType::kBool, in ? std::optional<Shape>(*in) : std::nullopt);
}

void infer_string_concat(InferenceContext& ctx) {
  const Shape* a = ctx.input_shape(0);
  const Shape* b = ctx.input_shape(1);
  ctx.set_output_tensor(0, DataType::kString, a && b ? std::optional<Shape>(shape::broadcast(ctx, {a, b})) : std::nullopt);
}

// StringSplit: Y = X's shape plus one data-dependent dim, Z (counts) = X's shape.
void infer_string_split(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  std::optional<Shape> y, z;
  if (in) {
    z = *in;
    y = *in;
    y->dims.push_back(Dim{});
  }
  ctx.set_output_tensor(0, DataType::kString, y);
  ctx.set_output_tensor(1, DataType::kInt64, z);
}

}  // namespace

void register_string_shapes(SchemaRegistry& r) {
  r.set_shape_fn("StringNormalizer", infer_string_normalizer);
  r.set_shape_fn("TfIdfVectorizer", infer_tfidf_vectorizer);
  r.set_shape_fn("RegexFullMatch", infer_regex_full_match);
  r.set_shape_fn("StringConcat", infer_string_concat);
  r.set_shape_fn("StringSplit", infer_string_split);
}

}  // namespace onnxtool::ir
