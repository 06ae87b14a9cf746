// The operator schema registry and the reader of the embedded schema files, ir/ops/*.def.
#include "ir/op_schema.h"
#include "ir/shape_inference.h"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "ir/error.h"

namespace onnxtool::ir {

// Defined in the .cpp files that ir/CMakeLists.txt generates from ir/ops/*.def.
namespace generated {
extern const char kOnnxSchemasDef[];
extern const std::size_t kOnnxSchemasDefSize;
extern const char kMicrosoftSchemasDef[];
extern const std::size_t kMicrosoftSchemasDefSize;
extern const char kOnnxruntimeSchemasDef[];
extern const std::size_t kOnnxruntimeSchemasDefSize;
extern const char kNchwcSchemasDef[];
extern const std::size_t kNchwcSchemasDefSize;
}  // namespace generated

const AttributeSpec* OpSchema::attribute(std::string_view attr_name) const {
  for (const auto& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

const TypeConstraint* OpSchema::constraint(std::string_view type_name) const {
  for (const auto& c : type_constraints)
    if (c.name == type_name) return &c;
  return nullptr;
}

const SchemaRegistry& SchemaRegistry::instance() {
  // A function-local static: built on first use, thread-safe, never from a static initializer.
  static const SchemaRegistry registry = [] {
    SchemaRegistry r;
    register_all(r);
    register_shape_functions(r);
    return r;
  }();
  return registry;
}

void SchemaRegistry::add(OpSchema schema) {
  schema.domain = std::string(canonical_domain(schema.domain));
  auto& versions = ops_[schema.domain][schema.name];
  auto pos = std::lower_bound(
      versions.begin(), versions.end(), schema.since_version,
      [](const OpSchema& s, int version) { return s.since_version < version; });
  if (pos != versions.end() && pos->since_version == schema.since_version) {
    throw Error(ErrorKind::kInternal,
                "duplicate operator schema " +
                    (schema.domain.empty() ? std::string("ai.onnx") : schema.domain) + " " +
                    schema.name + "-" + std::to_string(schema.since_version));
  }
  versions.insert(pos, std::move(schema));
}

const std::vector<OpSchema>* SchemaRegistry::versions(std::string_view domain,
                                                      std::string_view op_type) const {
  auto d = ops_.find(canonical_domain(domain));
  if (d == ops_.end()) return nullptr;
  auto op = d->second.find(op_type);
  if (op == d->second.end()) return nullptr;
  return &op->second;
}

const OpSchema* SchemaRegistry::find(std::string_view domain, std::string_view op_type,
                                     int64_t opset_version) const {
  const auto* list = versions(domain, op_type);
  if (list == nullptr) return nullptr;
  auto after = std::upper_bound(
      list->begin(), list->end(), opset_version,
      [](int64_t version, const OpSchema& s) { return version < s.since_version; });
  if (after == list->begin()) return nullptr;
  const OpSchema& newest = *std::prev(after);
  // A deprecated version removes the op from its since_version until a newer version.
  return newest.deprecated ? nullptr : &newest;
}

int SchemaRegistry::first_version(std::string_view domain, std::string_view op_type) const {
  const auto* list = versions(domain, op_type);
  if (list == nullptr || list->empty())
    throw Error(ErrorKind::kInternal, "no schema of " + std::string(op_type) + " in domain '" + std::string(domain) + "'");
  return list->front().since_version;
}

bool SchemaRegistry::has_domain(std::string_view domain) const {
  return ops_.find(canonical_domain(domain)) != ops_.end();
}

int SchemaRegistry::max_version(std::string_view domain) const {
  auto d = ops_.find(canonical_domain(domain));
  if (d == ops_.end()) return 0;
  int best = 0;
  for (const auto& [name, list] : d->second)
    if (!list.empty()) best = std::max(best, list.back().since_version);
  return best;
}

std::vector<const OpSchema*> SchemaRegistry::all() const {
  std::vector<const OpSchema*> out;
  for (const auto& [domain, ops] : ops_)
    for (const auto& [name, list] : ops)
      for (const auto& schema : list) out.push_back(&schema);
  return out;
}

void SchemaRegistry::set_shape_fn(std::string_view domain, std::string_view op_type,
                                  int from_version, int to_version, ShapeFn fn) {
  size_t updated = 0;
  auto d = ops_.find(canonical_domain(domain));
  if (d != ops_.end()) {
    auto op = d->second.find(op_type);
    if (op != d->second.end()) {
      for (auto& schema : op->second) {
        if (schema.since_version >= from_version && schema.since_version <= to_version) {
          // Two registrations of one version would leave one of them dead code.
          if (schema.infer)
            throw Error(ErrorKind::kInternal, "set_shape_fn: " + std::string(op_type) + "-" +
                                                  std::to_string(schema.since_version) + " is registered twice");
          schema.infer = fn;
          schema.family = family_;
          ++updated;
        }
      }
    }
  }
  // A typo in a registration must not silently leave an op without its shape function.
  if (updated == 0) {
    throw Error(ErrorKind::kInternal,
                "set_shape_fn: no schema of " + std::string(op_type) + " in domain '" +
                    std::string(domain) + "' with since_version in [" +
                    std::to_string(from_version) + ", " + std::to_string(to_version) + "]");
  }
}

namespace {

/// Splits one line of the .def format into space-separated words, keeping the rest of the
/// line available for free-text fields (attribute defaults).
class Words {
 public:
  explicit Words(std::string_view line) : rest_(line) { skip_spaces(); }

  bool empty() const { return rest_.empty(); }

  /// The next word, or an empty view at the end of the line.
  std::string_view next() {
    size_t end = rest_.find(' ');
    std::string_view word = rest_.substr(0, end);
    rest_ = end == std::string_view::npos ? std::string_view() : rest_.substr(end);
    skip_spaces();
    return word;
  }

  /// Everything not yet consumed, verbatim.
  std::string_view rest() const { return rest_; }

 private:
  void skip_spaces() {
    while (!rest_.empty() && rest_.front() == ' ') rest_.remove_prefix(1);
  }
  std::string_view rest_;
};

/// Reads the .def text record by record; every error names the source and the line.
class DefReader {
 public:
  DefReader(std::string_view text, std::string_view source_name)
      : text_(text), source_(source_name) {}

  void read_into(SchemaRegistry& registry) {
    std::optional<OpSchema> current;
    int declared_inputs[2] = {0, 0};
    int declared_outputs[2] = {0, 0};
    int record_line = 0;
    while (next_line()) {
      Words words(line_);
      if (words.empty() || words.rest().front() == '#') continue;
      std::string_view keyword = words.next();
      if (keyword == "op") {
        if (current) fail("'op' inside the record that starts at line " +
                          std::to_string(record_line) + " (missing 'end')");
        current.emplace();
        record_line = line_number_;
        read_op_line(words, *current, declared_inputs, declared_outputs);
        continue;
      }
      if (!current) fail("'" + std::string(keyword) + "' outside an op record");
      if (keyword == "input" || keyword == "output") {
        (keyword == "input" ? current->inputs : current->outputs).push_back(read_param(words));
      } else if (keyword == "attr") {
        current->attributes.push_back(read_attribute(words, *current));
      } else if (keyword == "type") {
        current->type_constraints.push_back(read_constraint(words, *current));
      } else if (keyword == "end") {
        expect_end_of_line(words);
        finish(*current, declared_inputs, declared_outputs);
        try {
          registry.add(std::move(*current));
        } catch (const Error& e) {
          fail(e.what());
        }
        current.reset();
      } else {
        fail("unknown keyword '" + std::string(keyword) + "'");
      }
    }
    if (current) {
      line_number_ = record_line;
      fail("record of " + current->name + " has no 'end'");
    }
  }

 private:
  bool next_line() {
    if (pos_ >= text_.size()) return false;
    size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    line_ = text_.substr(pos_, end - pos_);
    if (!line_.empty() && line_.back() == '\r') line_.remove_suffix(1);
    pos_ = end + 1;
    ++line_number_;
    return true;
  }

  [[noreturn]] void fail(const std::string& message) const {
    throw Error(ErrorKind::kInternal,
                std::string(source_) + ":" + std::to_string(line_number_) + ": " + message);
  }

  std::string_view required_word(Words& words, const char* what) {
    std::string_view word = words.next();
    if (word.empty()) fail(std::string("missing ") + what);
    return word;
  }

  void expect_end_of_line(Words& words) {
    if (!words.empty()) fail("unexpected '" + std::string(words.rest()) + "'");
  }

  int parse_int(std::string_view text, const char* what) const {
    int value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || value < 0)
      fail(std::string("bad ") + what + " '" + std::string(text) + "'");
    return value;
  }

  /// "MIN..MAX" with MAX a number or "inf".
  void parse_bounds(std::string_view text, int bounds[2], const char* what) const {
    size_t dots = text.find("..");
    if (dots == std::string_view::npos) fail(std::string("bad ") + what + " bounds");
    bounds[0] = parse_int(text.substr(0, dots), what);
    std::string_view high = text.substr(dots + 2);
    bounds[1] = high == "inf" ? INT32_MAX : parse_int(high, what);
    if (bounds[1] < bounds[0]) fail(std::string(what) + " bounds out of order");
  }

  void read_op_line(Words& words, OpSchema& schema, int inputs[2], int outputs[2]) {
    schema.domain = std::string(canonical_domain(required_word(words, "domain")));
    schema.name = std::string(required_word(words, "op name"));
    schema.since_version = parse_int(required_word(words, "since_version"), "since_version");
    if (schema.since_version < 1) fail("since_version must be at least 1");
    bool have_inputs = false, have_outputs = false;
    while (!words.empty()) {
      std::string_view word = words.next();
      if (word.substr(0, 7) == "inputs=") {
        parse_bounds(word.substr(7), inputs, "inputs");
        have_inputs = true;
      } else if (word.substr(0, 8) == "outputs=") {
        parse_bounds(word.substr(8), outputs, "outputs");
        have_outputs = true;
      } else if (word == "deprecated") {
        schema.deprecated = true;
      } else if (word == "experimental") {
        schema.experimental = true;
      } else {
        fail("unknown op flag '" + std::string(word) + "'");
      }
    }
    if (!have_inputs || !have_outputs) fail("op line needs inputs=MIN..MAX and outputs=MIN..MAX");
  }

  FormalParam read_param(Words& words) {
    FormalParam p;
    p.name = std::string(required_word(words, "parameter name"));
    p.type = std::string(required_word(words, "parameter type"));
    bool heterogeneous = false, have_arity = false;
    while (!words.empty()) {
      std::string_view word = words.next();
      if (word == "optional" && p.option == ParamOption::kSingle) {
        p.option = ParamOption::kOptional;
      } else if (word == "variadic" && p.option == ParamOption::kSingle) {
        p.option = ParamOption::kVariadic;
      } else if (word == "heterogeneous") {
        heterogeneous = true;
      } else if (word.substr(0, 10) == "min_arity=") {
        p.min_arity = parse_int(word.substr(10), "min_arity");
        have_arity = true;
      } else {
        fail("unexpected '" + std::string(word) + "' in parameter " + p.name);
      }
    }
    bool variadic = p.option == ParamOption::kVariadic;
    if ((heterogeneous || have_arity) && !variadic)
      fail("heterogeneous and min_arity apply to variadic parameters only (" + p.name + ")");
    if (variadic && !have_arity) fail("variadic parameter " + p.name + " needs min_arity=N");
    p.homogeneous = !heterogeneous;
    return p;
  }

  AttributeSpec read_attribute(Words& words, const OpSchema& schema) {
    AttributeSpec a;
    a.name = std::string(required_word(words, "attribute name"));
    if (schema.attribute(a.name) != nullptr) fail("duplicate attribute " + a.name);
    std::string_view type = required_word(words, "attribute type");
    for (int t = static_cast<int>(AttrType::kFloat); t <= static_cast<int>(AttrType::kTypeProtos);
         ++t) {
      if (attr_type_name(static_cast<AttrType>(t)) == type) a.type = static_cast<AttrType>(t);
    }
    if (a.type == AttrType::kUndefined) fail("unknown attribute type '" + std::string(type) + "'");
    if (words.empty()) return a;
    std::string_view word = words.next();
    if (word == "required") {
      a.required = true;
      expect_end_of_line(words);
    } else if (word == "default") {
      if (words.empty()) fail("attribute " + a.name + " has an empty default");
      a.default_value = std::string(words.rest());
    } else {
      fail("expected 'required' or 'default VALUE' after attribute " + a.name);
    }
    return a;
  }

  TypeConstraint read_constraint(Words& words, const OpSchema& schema) {
    TypeConstraint c;
    c.name = std::string(required_word(words, "type constraint name"));
    if (schema.constraint(c.name) != nullptr) fail("duplicate type constraint " + c.name);
    while (!words.empty()) c.allowed.emplace_back(words.next());
    if (c.allowed.empty()) fail("type constraint " + c.name + " allows no type");
    return c;
  }

  /// Checks a whole record: the declared count bounds must follow from the formal parameters
  /// (the onnx rule: min counts up to the last single parameter, a variadic parameter must be
  /// last and adds its min_arity), and every parameter type must be a constraint of the op or
  /// a type string.
  void finish(OpSchema& schema, const int inputs[2], const int outputs[2]) const {
    check_params(schema, schema.inputs, inputs, "inputs");
    check_params(schema, schema.outputs, outputs, "outputs");
    schema.min_inputs = inputs[0];
    schema.max_inputs = inputs[1];
    schema.min_outputs = outputs[0];
    schema.max_outputs = outputs[1];
  }

  void check_params(const OpSchema& schema, const std::vector<FormalParam>& params,
                    const int declared[2], const char* what) const {
    int low = 0, high = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const FormalParam& p = params[i];
      if (p.type.find('(') == std::string::npos && schema.constraint(p.type) == nullptr)
        fail(schema.name + ": " + p.name + " has type " + p.type +
             ", neither a type string nor a type constraint of the op");
      if (p.option == ParamOption::kVariadic) {
        if (i + 1 != params.size()) fail(schema.name + ": variadic " + p.name + " is not last");
        low = high + p.min_arity;
        high = INT32_MAX;
        break;
      }
      ++high;
      if (p.option == ParamOption::kSingle) low = high;
    }
    if (low != declared[0] || high != declared[1])
      fail(schema.name + ": declared " + what + " bounds disagree with its parameters");
  }

  std::string_view text_;
  std::string_view source_;
  std::string_view line_;
  size_t pos_ = 0;
  int line_number_ = 0;
};

}  // namespace

void add_schemas_from_def(SchemaRegistry& registry, std::string_view def_text,
                          std::string_view source_name) {
  DefReader(def_text, source_name).read_into(registry);
}

void register_all(SchemaRegistry& registry) {
  add_schemas_from_def(
      registry,
      std::string_view(generated::kOnnxSchemasDef, generated::kOnnxSchemasDefSize),
      "ir/ops/onnx_schemas.def");
  add_schemas_from_def(registry, std::string_view(generated::kMicrosoftSchemasDef, generated::kMicrosoftSchemasDefSize),
                       "ir/ops/microsoft_schemas.def");
  registry.set_partly_documented(kMicrosoftDomain);
  add_schemas_from_def(registry, std::string_view(generated::kOnnxruntimeSchemasDef, generated::kOnnxruntimeSchemasDefSize),
                       "ir/ops/onnxruntime_schemas.def");
  registry.set_partly_documented(kOnnxruntimeAiOnnx);  // its schemas accept unchecked attributes
  add_schemas_from_def(registry, std::string_view(generated::kNchwcSchemasDef, generated::kNchwcSchemasDefSize),
                       "ir/ops/nchwc_schemas.def");
  registry.set_partly_documented(kNchwcDomain);
}

const OpSchema* SchemaRegistry::onnxruntime_extension(std::string_view domain, std::string_view op_type,
                                                      int64_t opset) const {
  if (!canonical_domain(domain).empty() || find(domain, op_type, opset)) return nullptr;
  return find(kOnnxruntimeAiOnnx, op_type, opset);
}

}  // namespace onnxtool::ir
