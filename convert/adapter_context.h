// What the opset adapters (convert/opset_adapters.cpp) work with, shared with the version walk
// in convert/version_converter.cpp: the conversion's model, opsets and report, reading constant
// inputs, adding initializers named after the node, and moving a node's inputs. Internal to
// convert/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "convert/version_converter.h"
#include "ir/constant.h"
#include "ir/graph.h"

namespace onnxtool::convert {

/// Raised by an adapter when the node has no equivalent at the target.
[[noreturn]] void no_equivalent(const ir::Node& n, int64_t target, const std::string& why);

std::optional<size_t> rank_of(const ir::Value* v);
std::optional<int64_t> dim_of(const ir::Value* v, size_t axis);
ir::DataType elem_type(const ir::Value* v);
/// The stem of the names given to what is added for a node: its name, else its first output's.
std::string base(const ir::Node& n);
/// The node after `n` in its graph (nullptr when last): where a node added after `n` goes.
const ir::Node* next_node(const ir::Graph& g, const ir::Node& n);

/// Sets input `index` (appending empty inputs before it as needed).
void put_input(ir::Node& n, size_t index, ir::Value* v);
/// Drops trailing omitted inputs.
void trim_inputs(ir::Node& n);

/// One conversion from opset `from` to `to`; adapters count what they add in report().
class AdapterContext {
 public:
  AdapterContext(ir::Model& model, int64_t from, int64_t to, VersionReport& report)
      : model_(model), from_(from), to_(to), report_(report), node_names_(model) {}

  int64_t from() const { return from_; }
  int64_t to() const { return to_; }
  VersionReport& report() { return report_; }

  /// The values of a constant input (a non-overridable initializer or a Constant node's output)
  /// in their own kind: integers as int64, floats as double, never one through the other.
  std::optional<ir::TypedValues> const_values(const ir::Value* v) const;
  /// A constant input the older version needs as an ints attribute; fails naming the input
  /// otherwise.
  std::vector<int64_t> required_ints(const ir::Node& n, size_t index, const std::string& what) const;
  /// A constant input the older version needs as a float attribute; fails naming the input
  /// otherwise (the older versions that take such attributes are defined for float types only).
  std::vector<double> required_floats(const ir::Node& n, size_t index, const std::string& what) const;

  ir::Value* add_ints(ir::Graph& g, const ir::Node& n, const std::string& what, const std::vector<int64_t>& v,
                      bool scalar = false);
  ir::Value* add_scalar(ir::Graph& g, const ir::Node& n, const std::string& what, ir::DataType type, double v);
  ir::Value* add_floats(ir::Graph& g, const ir::Node& n, const std::string& what, const std::vector<double>& v);

  /// A node name used nowhere in the model (value names are made unique by ir::unique_name;
  /// node names must be unique across it).
  std::string node_name(const std::string& base) { return node_names_.fresh(base); }

  /// Moves output `index` of `n` to a new name and adds `op` after `n`, reading it and writing
  /// the old name: the consumers and graph outputs of the old value now read the added node. Its
  /// input is the moved value, whose type is left unset for inference.
  ir::Node* add_after(ir::Graph& g, ir::Node& n, size_t index, const std::string& op);

  /// Adds Cast(x) to `to` before `n`; the result is typed `to` with x's shape, so that the
  /// adapters of the boundaries the node crosses next can read it.
  ir::Value* add_cast(ir::Graph& g, const ir::Node& n, ir::Value* x, ir::DataType to);

  /// Marks node `n` of `g` for removal once the walk over the graphs is done (the walk still
  /// reads the node after its adapter); nothing may read its outputs by then.
  void remove_after_walk(ir::Graph& g, ir::Node& n) { removed_.push_back({&g, &n}); }
  /// Removes the marked nodes.
  void remove_marked_nodes();

  /// Normalizes negative axes for opsets below 11, which do not accept them.
  int64_t non_negative_axis(const ir::Node& n, int64_t axis, std::optional<size_t> rank) const;

 private:
  ir::Model& model_;
  int64_t from_, to_;
  VersionReport& report_;
  ir::NameGenerator node_names_;
  std::vector<std::pair<ir::Graph*, ir::Node*>> removed_;
};

}  // namespace onnxtool::convert
