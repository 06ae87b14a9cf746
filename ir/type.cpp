// Printing and construction of types and shapes.
#include "ir/type.h"

namespace onnxtool::ir {

std::string Dim::to_string() const {
  switch (kind) {
    case Kind::kValue:
      return std::to_string(value);
    case Kind::kParam:
      return param;
    default:
      return is_negative_value() ? std::to_string(value) : "?";  // a declared -1 shows as written
  }
}

bool Shape::is_static() const {
  for (const auto& d : dims)
    if (!d.is_static()) return false;
  return true;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i].to_string();
  }
  return s + "]";
}

TypeInfo TypeInfo::tensor(DataType type, std::optional<Shape> shape) {
  TypeInfo t;
  t.kind = Kind::kTensor;
  t.elem_type = static_cast<int32_t>(type);
  t.shape = std::move(shape);
  return t;
}

std::string TypeInfo::to_string() const {
  auto elem_name = [](int32_t e) { return std::string(data_type_name(static_cast<DataType>(e))); };
  auto shape_text = [this] { return shape ? shape->to_string() : std::string("[...]"); };
  auto inner = [this] { return elem ? elem->to_string() : std::string("?"); };
  switch (kind) {
    case Kind::kTensor:
      return elem_name(elem_type) + shape_text();
    case Kind::kSparseTensor:
      return "sparse(" + elem_name(elem_type) + shape_text() + ")";
    case Kind::kSequence:
      return "seq(" + inner() + ")";
    case Kind::kOptional:
      return "optional(" + inner() + ")";
    case Kind::kMap:
      return "map(" + elem_name(elem_type) + "," + inner() + ")";
    case Kind::kOpaque:
      return "opaque(" + opaque_domain + "." + opaque_name + ")";
    default:
      return "?";
  }
}

}  // namespace onnxtool::ir
