// Shape functions of the random generators: RandomNormal, RandomUniform, their *Like forms,
// Bernoulli and Multinomial (kernels: runner/cpu/random.cpp).
#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

using shape::dtype_attr;
using shape::shape_of_dims;

void infer_multinomial(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  if (in && in->rank() != 2) ctx.fail("shape.rank", "Multinomial needs a rank-2 input, got " + in->to_string());
  ctx.set_output_tensor(0, dtype_attr(ctx, "dtype", DataType::kInt32),
                        shape_of_dims({in ? in->dims[0] : Dim{}, Dim::of(ctx.attr_int("sample_size", 1))}));
}

// RandomNormal/RandomUniform: `shape` attribute and `dtype` (float by default).
void infer_random(InferenceContext& ctx) {
  auto s = ctx.attr_ints("shape");
  ctx.set_output_tensor(0, dtype_attr(ctx, "dtype", DataType::kFloat), s ? std::optional<Shape>(shape::from_ints(*s)) : std::nullopt);
}

// RandomNormalLike/RandomUniformLike/Bernoulli: the input's shape, `dtype` or the input's type.
void infer_random_like(InferenceContext& ctx) {
  const Shape* in = ctx.input_shape(0);
  const DataType et = ctx.has_attr("dtype") ? dtype_attr(ctx, "dtype", DataType::kFloat)
                                            : ctx.input_elem_type(0).value_or(DataType::kUndefined);
  ctx.set_output_tensor(0, et, in ? std::optional<Shape>(*in) : std::nullopt);
}

}  // namespace

void register_random_shapes(SchemaRegistry& r) {
  r.set_shape_fn("Multinomial", infer_multinomial);
  r.set_shape_fn("RandomNormal", infer_random);
  r.set_shape_fn("RandomUniform", infer_random);
  r.set_shape_fn("RandomNormalLike", infer_random_like);
  r.set_shape_fn("RandomUniformLike", infer_random_like);
  r.set_shape_fn("Bernoulli", infer_random_like);
}

}  // namespace onnxtool::ir
