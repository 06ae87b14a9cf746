// The operator schema registry: one description per (domain, op_type, since_version) that the
// checker, shape inference, passes, quantizer and runner all read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace onnxtool::ir {

class InferenceContext;  // ir/shape_inference.h

/// The upper bound of "every later opset" in version ranges: shape functions and every device's
/// kernels.
constexpr int kMaxOpset = 1000;
using ShapeFn = void (*)(InferenceContext&);

enum class ParamOption { kSingle, kOptional, kVariadic };

/// A formal input or output of an operator.
struct FormalParam {
  std::string name;
  /// A type-constraint name ("T") or a fixed type string ("tensor(int64)", "seq(tensor(float))").
  std::string type;
  ParamOption option = ParamOption::kSingle;
  /// Variadic only: all actual values must share one type (false for e.g. Loop's state values).
  bool homogeneous = true;
  /// Variadic only: the minimum number of actual values.
  int min_arity = 1;
};

struct AttributeSpec {
  std::string name;
  AttrType type = AttrType::kUndefined;
  bool required = false;
  /// The default as written by the spec ("1", "NOTSET", "0.0001"), empty when none.
  std::string default_value;
};

/// A type variable and the type strings it may bind to ("tensor(float)", "seq(tensor(int64))",
/// "map(int64,string)": type strings never contain spaces).
struct TypeConstraint {
  std::string name;
  std::vector<std::string> allowed;
};

struct OpSchema {
  std::string domain;  ///< "" for the default domain (ai.onnx)
  std::string name;
  int since_version = 1;
  /// The spec deprecates the op from since_version on: it is unavailable at opsets where this is
  /// the newest version (find() returns nullptr). A deprecated schema lists no parameters.
  bool deprecated = false;
  /// An experimental op without versioning of its own (Upsample-1, ai.onnx.preview ops).
  bool experimental = false;
  std::vector<FormalParam> inputs;
  std::vector<FormalParam> outputs;
  /// Declared input/output count bounds (variadic: max = INT32_MAX).
  int min_inputs = 0, max_inputs = 0, min_outputs = 0, max_outputs = 0;
  std::vector<AttributeSpec> attributes;
  std::vector<TypeConstraint> type_constraints;
  /// Shape and type inference; nullptr when none is registered (see shape_inference.h).
  ShapeFn infer = nullptr;
  /// The op family whose ir/ops/<family>_shapes.cpp registered `infer` ("" when none; see
  /// ir/ops/families.h).
  std::string_view family;

  const AttributeSpec* attribute(std::string_view attr_name) const;
  const TypeConstraint* constraint(std::string_view type_name) const;
};

/// All schemas, keyed by domain and op_type, each with its versions in ascending order.
/// Normalises "ai.onnx" to "".
inline std::string_view canonical_domain(std::string_view domain) {
  return domain == "ai.onnx" ? std::string_view() : domain;
}

class SchemaRegistry {
 public:
  /// The process-wide registry with every built-in schema registered (register_all()).
  static const SchemaRegistry& instance();

  /// Adds one version of an op, keeping versions ascending. Throws Error on a duplicate
  /// (domain, name, since_version).
  void add(OpSchema schema);
  /// The newest schema with since_version <= opset_version, or nullptr. "ai.onnx" == "".
  /// Also nullptr when that newest schema is deprecated: the op is not available at that opset.
  const OpSchema* find(std::string_view domain, std::string_view op_type, int64_t opset_version) const;
  /// Every version of an op (ascending), or nullptr when the op is unknown in the domain.
  const std::vector<OpSchema>* versions(std::string_view domain, std::string_view op_type) const;
  bool has_domain(std::string_view domain) const;
  /// Whether every operator of the domain has a schema here (the ONNX domains, whose
  /// specification lists them all), or only the documented ones (com.microsoft: onnxruntime
  /// also has internal operators its documentation leaves out, and its documentation may
  /// predate the onnxruntime that wrote a model). An op or attribute a partly documented domain
  /// does not name is not known to be wrong.
  bool fully_documented(std::string_view domain) const { return has_domain(domain) && !partial_.count(canonical_domain(domain)); }
  /// The schema of onnxruntime's own operator of the ai.onnx domain that a node (`domain`,
  /// `op_type`) at `opset` is, where the ONNX specification has no op of that name at that opset
  /// (LayerNormalization below opset 17, SimplifiedLayerNormalization); nullptr otherwise. Such a
  /// node runs in onnxruntime, not in every ONNX runtime.
  const OpSchema* onnxruntime_extension(std::string_view domain, std::string_view op_type, int64_t opset) const;
  /// Marks a domain as documented in part (see fully_documented()).
  void set_partly_documented(std::string_view domain) { partial_.emplace(canonical_domain(domain)); }
  /// Highest opset version any schema of the domain was introduced at.
  int max_version(std::string_view domain) const;
  /// Every schema, sorted by (domain, name, since_version).
  std::vector<const OpSchema*> all() const;
  /// Attaches a shape function to every version of `op_type` in [from_version, to_version].
  /// Throws Error when no version falls in the range (a misspelt op or range).
  void set_shape_fn(std::string_view domain, std::string_view op_type, int from_version,
                    int to_version, ShapeFn fn);
  /// The same for every version of the ai.onnx op `op_type`.
  void set_shape_fn(std::string_view op_type, ShapeFn fn) { set_shape_fn("", op_type, 1, kMaxOpset, fn); }
  /// The first version of an op: the start of the version range of a kernel that implements them
  /// all. Throws Error for an op unknown in the domain (a misspelt registration).
  int first_version(std::string_view domain, std::string_view op_type) const;
  /// The family that the following set_shape_fn calls register for ("" to stop recording);
  /// a string that outlives the registry.
  void begin_family(std::string_view family) { family_ = family; }

 private:
  std::string_view family_;
  std::set<std::string, std::less<>> partial_;
  std::map<std::string, std::map<std::string, std::vector<OpSchema>, std::less<>>, std::less<>> ops_;
};

/// Registers every built-in schema (explicit registration, no static initializers).
void register_all(SchemaRegistry& registry);

/// Parses schemas written in the .def format of ir/ops/onnx_schemas.def (its header describes
/// the format) and adds them to `registry`. Throws Error naming `source_name` and the line on
/// malformed text or a duplicate (domain, name, since_version).
void add_schemas_from_def(SchemaRegistry& registry, std::string_view def_text,
                          std::string_view source_name);

/// onnxruntime's contrib operator domain, documented in ir/ops/microsoft_schemas.def.
inline constexpr std::string_view kMicrosoftDomain = "com.microsoft";
/// The registry's domain key for onnxruntime's own operators of the ai.onnx domain
/// (ir/ops/onnxruntime_schemas.def): not a domain a model names, a colon keeps it apart from all.
inline constexpr std::string_view kOnnxruntimeAiOnnx = "onnxruntime:ai.onnx";
/// onnxruntime's internal domain of its channel-blocked (NCHWc) layout, documented in
/// ir/ops/nchwc_schemas.def.
inline constexpr std::string_view kNchwcDomain = "com.microsoft.nchwc";

}  // namespace onnxtool::ir
