// Shape functions of the ai.onnx.ml domain: classifiers, regressors, tree ensembles, encoders
// and the map/sequence adapters (ZipMap, DictVectorizer, CastMap).
#include "ir/ops/shape_util.h"

namespace onnxtool::ir {
namespace {

constexpr const char* kMl = "ai.onnx.ml";

using shape::propagate_type;
using shape::propagate_type_and_shape;

/// The batch size N of an ML input: [N, C] gives N, [C] is one example, else unknown.
Dim batch_of(const InferenceContext& ctx, size_t i) {
  const Shape* s = ctx.input_shape(i);
  if (s && s->rank() == 2) return s->dims[0];
  if (s && s->rank() == 1) return Dim::of(1);
  return Dim{};
}

Shape shape_of(std::vector<Dim> dims) {
  Shape s;
  s.dims = std::move(dims);
  return s;
}

/// How many entries a list attribute (ints or strings) has, or 0 when absent.
size_t attr_list_size(const InferenceContext& ctx, const char* name) {
  const Attribute* a = ctx.node().attr(name);
  if (!a) return 0;
  return std::max(a->ints.size(), std::max(a->strings.size(), a->floats.size()));
}

/// The label type of a classifier: string labels when classlabels_strings is set.
DataType label_type(const InferenceContext& ctx) {
  return attr_list_size(ctx, "classlabels_strings") > 0 ? DataType::kString : DataType::kInt64;
}

void infer_same_type_and_shape(InferenceContext& ctx) { propagate_type_and_shape(ctx, 0, 0); }

/// Y has X's shape and element type float (Normalizer, Scaler).
void infer_float_same_shape(InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  ctx.set_output_tensor(0, DataType::kFloat, x ? std::optional<Shape>(*x) : std::nullopt);
}

// ArrayFeatureExtractor(X, Y): selects Y's indices along X's last axis.
void infer_array_feature_extractor(InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  const Shape* y = ctx.input_shape(1);
  // A 1-D X gives [1, n] in some runtimes and [n] in others: leave the rank open.
  if (!x || x->rank() < 2) {
    propagate_type(ctx, 0, 0, std::nullopt);
    return;
  }
  Dim count;
  if (y && y->rank() == 1) count = y->dims[0];
  else if (y) {
    if (auto n = shape::static_product(ctx, y->dims)) count = Dim::of(*n);
  }
  Shape out = *x;
  out.dims.back() = count;
  propagate_type(ctx, 0, 0, std::move(out));
}

void infer_cast_map(InferenceContext& ctx) {
  const std::string to = ctx.attr_string("cast_to", "TO_FLOAT");
  DataType t = DataType::kUndefined;
  if (to == "TO_FLOAT") t = DataType::kFloat;
  else if (to == "TO_STRING") t = DataType::kString;
  else if (to == "TO_INT64") t = DataType::kInt64;
  else ctx.fail("shape.attribute", "CastMap cast_to must be TO_FLOAT, TO_STRING or TO_INT64, got '" + to + "'");
  ctx.set_output_tensor(0, t, std::nullopt);
}

// CategoryMapper: strings to int64 and back, same shape.
void infer_category_mapper(InferenceContext& ctx) {
  auto et = ctx.input_elem_type(0);
  DataType out = DataType::kUndefined;
  if (et == DataType::kString) out = DataType::kInt64;
  else if (et == DataType::kInt64) out = DataType::kString;
  const Shape* x = ctx.input_shape(0);
  ctx.set_output_tensor(0, out, x ? std::optional<Shape>(*x) : std::nullopt);
}

// DictVectorizer: map(K, V) -> tensor of V's element type.
void infer_dict_vectorizer(InferenceContext& ctx) {
  const TypeInfo* t = ctx.input_type(0);
  DataType out = DataType::kUndefined;
  if (t && t->kind == TypeInfo::Kind::kMap && t->elem) {
    const TypeInfo& v = *t->elem;
    if (v.kind == TypeInfo::Kind::kTensor) out = v.data_type();
  }
  ctx.set_output_tensor(0, out, std::nullopt);
}

// FeatureVectorizer: inputs [N, C_i] (or [C_i]) concatenated into float [N, sum(inputdimensions)].
void infer_feature_vectorizer(InferenceContext& ctx) {
  Dim n;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    Dim b = batch_of(ctx, i);
    if (b.kind != Dim::Kind::kUnknown) {
      n = b;
      break;
    }
  }
  Dim total;
  auto dims = ctx.attr_ints("inputdimensions");
  if (dims && dims->size() == ctx.input_count()) {
    int64_t sum = 0;
    for (int64_t d : *dims)
      if (__builtin_add_overflow(sum, d, &sum)) ctx.fail("shape.overflow", "inputdimensions sum overflows int64");
    total = Dim::of(sum);
  }
  ctx.set_output_tensor(0, DataType::kFloat, shape_of({n, total}));
}

// LabelEncoder: same shape; the element type follows the values_* attribute (opposite of the
// input's string/int64 type at version 1).
void infer_label_encoder(InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  std::optional<Shape> s = x ? std::optional<Shape>(*x) : std::nullopt;
  DataType out = DataType::kUndefined;
  if (ctx.opset() < 2) {
    auto et = ctx.input_elem_type(0);
    if (et == DataType::kString) out = DataType::kInt64;
    else if (et == DataType::kInt64) out = DataType::kString;
  } else if (ctx.has_attr("values_strings")) {
    out = DataType::kString;
  } else if (ctx.has_attr("values_int64s")) {
    out = DataType::kInt64;
  } else if (ctx.has_attr("values_floats")) {
    out = DataType::kFloat;
  } else if (const Tensor* t = ctx.attr_tensor("values_tensor")) {
    out = t->type();
  }
  ctx.set_output_tensor(0, out, std::move(s));
}

// LinearClassifier: Y [N] labels, Z [N, E] float scores (E known for more than two classes;
// binary models may emit one or two score columns).
void infer_linear_classifier(InferenceContext& ctx) {
  const Dim n = batch_of(ctx, 0);
  ctx.set_output_tensor(0, label_type(ctx), shape_of({n}));
  const size_t classes = std::max(attr_list_size(ctx, "classlabels_strings"), attr_list_size(ctx, "classlabels_ints"));
  const Dim e = classes > 2 ? Dim::of(static_cast<int64_t>(classes)) : Dim{};
  if (ctx.output_count() > 1) ctx.set_output_tensor(1, DataType::kFloat, shape_of({n, e}));
}

void infer_linear_regressor(InferenceContext& ctx) {
  const int64_t targets = ctx.attr_int("targets", 1);
  ctx.set_output_tensor(0, DataType::kFloat, shape_of({batch_of(ctx, 0), Dim::of(targets)}));
}

// OneHotEncoder: X's shape plus a trailing axis of one entry per category.
void infer_one_hot_encoder(InferenceContext& ctx) {
  const Shape* x = ctx.input_shape(0);
  if (!x) {
    ctx.set_output_tensor(0, DataType::kFloat, std::nullopt);
    return;
  }
  const size_t cats = std::max(attr_list_size(ctx, "cats_strings"), attr_list_size(ctx, "cats_int64s"));
  Shape out = *x;
  out.dims.push_back(cats > 0 ? Dim::of(static_cast<int64_t>(cats)) : Dim{});
  ctx.set_output_tensor(0, DataType::kFloat, std::move(out));
}

// SVMClassifier: Y [N] labels; Z [N, ?] float (one column per class or per class pair).
void infer_svm_classifier(InferenceContext& ctx) {
  const Dim n = batch_of(ctx, 0);
  ctx.set_output_tensor(0, label_type(ctx), shape_of({n}));
  if (ctx.output_count() > 1) ctx.set_output_tensor(1, DataType::kFloat, shape_of({n, Dim{}}));
}

void infer_svm_regressor(InferenceContext& ctx) {
  ctx.set_output_tensor(0, DataType::kFloat, shape_of({batch_of(ctx, 0), Dim::of(1)}));
}

// TreeEnsembleClassifier-1/3: Y [N] labels, Z [N, classes] float.
void infer_tree_classifier(InferenceContext& ctx) {
  const Dim n = batch_of(ctx, 0);
  ctx.set_output_tensor(0, label_type(ctx), shape_of({n}));
  const size_t classes = std::max(attr_list_size(ctx, "classlabels_strings"), attr_list_size(ctx, "classlabels_int64s"));
  const Dim e = classes >= 2 ? Dim::of(static_cast<int64_t>(classes)) : Dim{};
  if (ctx.output_count() > 1) ctx.set_output_tensor(1, DataType::kFloat, shape_of({n, e}));
}

// TreeEnsembleRegressor-1/3: float [N, n_targets].
void infer_tree_regressor(InferenceContext& ctx) {
  const Dim targets = ctx.has_attr("n_targets") ? Dim::of(ctx.attr_int("n_targets", 1)) : Dim{};
  ctx.set_output_tensor(0, DataType::kFloat, shape_of({batch_of(ctx, 0), targets}));
}

// TreeEnsemble-5: [N, n_targets] of X's element type.
void infer_tree_ensemble(InferenceContext& ctx) {
  const Dim targets = ctx.has_attr("n_targets") ? Dim::of(ctx.attr_int("n_targets", 1)) : Dim{};
  propagate_type(ctx, 0, 0, shape_of({batch_of(ctx, 0), targets}));
}

// ZipMap: seq(map(label, float)), one map per example.
void infer_zip_map(InferenceContext& ctx) {
  TypeInfo value = TypeInfo::tensor(DataType::kFloat);
  TypeInfo map;
  map.kind = TypeInfo::Kind::kMap;
  map.elem_type = static_cast<int32_t>(attr_list_size(ctx, "classlabels_strings") > 0 ? DataType::kString
                                                                                        : DataType::kInt64);
  map.elem = Box<TypeInfo>(std::move(value));
  TypeInfo seq;
  seq.kind = TypeInfo::Kind::kSequence;
  seq.elem = Box<TypeInfo>(std::move(map));
  ctx.set_output(0, std::move(seq));
}

}  // namespace

void register_ml_shapes(SchemaRegistry& r) {
  r.set_shape_fn(kMl, "ArrayFeatureExtractor", 1, kMaxOpset, infer_array_feature_extractor);
  r.set_shape_fn(kMl, "Binarizer", 1, kMaxOpset, infer_same_type_and_shape);
  r.set_shape_fn(kMl, "CastMap", 1, kMaxOpset, infer_cast_map);
  r.set_shape_fn(kMl, "CategoryMapper", 1, kMaxOpset, infer_category_mapper);
  r.set_shape_fn(kMl, "DictVectorizer", 1, kMaxOpset, infer_dict_vectorizer);
  r.set_shape_fn(kMl, "FeatureVectorizer", 1, kMaxOpset, infer_feature_vectorizer);
  r.set_shape_fn(kMl, "Imputer", 1, kMaxOpset, infer_same_type_and_shape);
  r.set_shape_fn(kMl, "LabelEncoder", 1, kMaxOpset, infer_label_encoder);
  r.set_shape_fn(kMl, "LinearClassifier", 1, kMaxOpset, infer_linear_classifier);
  r.set_shape_fn(kMl, "LinearRegressor", 1, kMaxOpset, infer_linear_regressor);
  r.set_shape_fn(kMl, "Normalizer", 1, kMaxOpset, infer_float_same_shape);
  r.set_shape_fn(kMl, "OneHotEncoder", 1, kMaxOpset, infer_one_hot_encoder);
  r.set_shape_fn(kMl, "Scaler", 1, kMaxOpset, infer_float_same_shape);
  r.set_shape_fn(kMl, "SVMClassifier", 1, kMaxOpset, infer_svm_classifier);
  r.set_shape_fn(kMl, "SVMRegressor", 1, kMaxOpset, infer_svm_regressor);
  // Versions 1 and 3; version 5 deprecates both in favour of TreeEnsemble.
  r.set_shape_fn(kMl, "TreeEnsembleClassifier", 1, 4, infer_tree_classifier);
  r.set_shape_fn(kMl, "TreeEnsembleRegressor", 1, 4, infer_tree_regressor);
  r.set_shape_fn(kMl, "TreeEnsemble", 5, kMaxOpset, infer_tree_ensemble);
  r.set_shape_fn(kMl, "ZipMap", 1, kMaxOpset, infer_zip_map);
}

}  // namespace onnxtool::ir
