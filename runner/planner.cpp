// The planner: a graph as steps (a kernel per node), slots for its values, constant steps,
// the CPU plan's fusions (plan_fusions.cpp) and the slots' lifetimes.
#include <algorithm>
#include <cstring>
#include <set>
#include <string>

#include "ir/error.h"
#include "ir/op_schema.h"
#include "runner/buffer_pool.h"
#include "runner/plan.h"

namespace onnxtool::runner {

namespace {

/// A sparse initializer (COO: values and their indices, [NNZ] linear or [NNZ, rank]
/// coordinates) as the dense tensor it stands for, zeros elsewhere. Indices out of the shape
/// are an error naming the tensor (the checker reports them too).
Tensor densify(const ir::SparseTensor& sp) {
  const std::string where = "sparse initializer '" + sp.name() + "'";
  if (!sp.values || !sp.indices) throw_input_error(where + ": values or indices missing");
  const Tensor values = from_ir(*sp.values);
  const Tensor indices = from_ir(*sp.indices);
  if (values.dtype() == DataType::kString || ir::data_type_bits(values.dtype()) % 8 != 0)
    throw_input_error(where + ": " + std::string(ir::data_type_name(values.dtype())) + " values are not supported");
  if (indices.dtype() != DataType::kInt64) throw_input_error(where + ": indices must be int64");
  const int64_t nnz = values.size();
  const int64_t rank = static_cast<int64_t>(sp.dims.size());
  const bool linear = indices.shape().size() == 1;
  if (!(linear ? indices.size() == nnz : indices.shape().size() == 2 && indices.shape()[0] == nnz && indices.shape()[1] == rank))
    throw_input_error(where + ": indices of shape " + shape_string(indices.shape()) + " do not match " + std::to_string(nnz) + " values");
  Tensor out(values.dtype(), sp.dims);
  const size_t element = nnz > 0 ? values.bytes() / static_cast<size_t>(nnz) : 0;
  std::memset(out.mutable_raw(), 0, out.bytes());
  const int64_t* idx = indices.data<int64_t>();
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t at = 0;
    if (linear) {
      at = idx[k];
    } else {
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t i = idx[k * rank + d];
        if (i < 0 || i >= sp.dims[static_cast<size_t>(d)]) at = -1;
        if (at >= 0) at = at * sp.dims[static_cast<size_t>(d)] + i;
      }
    }
    if (at < 0 || at >= out.size()) throw_input_error(where + ": index " + std::to_string(k) + " is outside its shape");
    std::memcpy(static_cast<uint8_t*>(out.mutable_raw()) + static_cast<size_t>(at) * element,
                static_cast<const uint8_t*>(values.raw()) + static_cast<size_t>(k) * element, element);
  }
  return out;
}

int64_t opset_for(const ir::Model& model, const std::string& domain) {
  auto v = model.opset_version(domain);
  return v ? *v : 0;
}

class Planner {
 public:
  Planner(const ir::Model& model, const Backend* backend)
      : model_(model), kernels_(KernelRegistry::instance()), backend_(backend) {}

  std::unique_ptr<GraphPlan> plan(const ir::Graph& g, const GraphPlan* parent) {
    auto p = std::make_unique<GraphPlan>();
    p->graph = &g;
    p->parent = parent;
    auto slot_of = [&p](const ir::Value* v) {
      auto [it, fresh] = p->slots.emplace(v, p->n_slots);
      if (fresh) p->n_slots++;
      return it->second;
    };
    for (const auto& vi : g.inputs) p->input_slots.push_back(slot_of(vi.value));
    for (const auto& t : g.initializers()) {
      const ir::Value* v = g.find(t->name);
      if (!v) continue;
      const int s = slot_of(v);
      p->constants.resize(static_cast<size_t>(p->n_slots));
      if (p->constants[static_cast<size_t>(s)].kind == Value::Kind::kNone)
        p->constants[static_cast<size_t>(s)] = Value::of(from_ir(*t));
    }
    for (const auto& sp : g.sparse_initializers) {
      const ir::Value* v = g.find(sp.name());
      if (!v) continue;
      const int s = slot_of(v);
      p->constants.resize(static_cast<size_t>(p->n_slots));
      if (p->constants[static_cast<size_t>(s)].kind == Value::Kind::kNone) p->constants[static_cast<size_t>(s)] = Value::of(densify(sp));
    }
    // Node order: topological over the node list (valid models are sorted already).
    std::vector<const ir::Node*> order = sorted_nodes(g);
    for (const ir::Node* n : order) {
      Step st;
      st.node = n;
      const std::string domain(ir::canonical_domain(n->domain));
      st.opset = opset_for(model_, domain);
      st.fn = kernels_.find(domain, n->op_type, st.opset);
      if (!st.fn && ir::SchemaRegistry::instance().onnxruntime_extension(domain, n->op_type, st.opset))
        st.fn = kernels_.find(ir::kOnnxruntimeAiOnnx, n->op_type, 1);  // onnxruntime's own op (version 1)
      if (!st.fn) {
        const std::string where = n->name.empty() ? "an unnamed node" : "node '" + n->name + "'";
        throw_input_error("no kernel for " + n->qualified_op() + " (opset " + std::to_string(st.opset) +
                          ") used by " + where + "; the runner cannot execute this model");
      }
      for (const ir::Value* v : n->inputs()) st.inputs.push_back(v ? resolve(*p, v) : SlotRef{});
      for (const ir::Value* v : n->outputs()) st.outputs.push_back(v ? slot_of(v) : -1);
      for (const ir::Graph* sub : n->subgraphs()) p->subplans[sub] = plan(*sub, p.get());
      st.constant = is_cacheable(*n) && std::all_of(st.inputs.begin(), st.inputs.end(), [&](const SlotRef& r) {
        return r.slot < 0 || is_constant_slot(*p, r);
      });
      if (st.constant)
        for (int s : st.outputs)
          if (s >= 0) mark_constant(*p, s);
      // Control flow runs on the CPU (its subgraphs' nodes are placed like the main graph's).
      if (backend_ && !st.constant && n->subgraphs().empty())
        st.device_fn = backend_->find(domain, n->op_type, st.opset);
      p->steps.push_back(std::move(st));
    }
    for (const auto& vi : g.outputs) p->output_slots.push_back(resolve(*p, vi.value));
    p->constants.resize(static_cast<size_t>(p->n_slots));
    if (!backend_) {
      plan_epilogues(*p);
      plan_quantized_convs(*p);
    }
    compute_lifetimes(*p);
    return p;
  }

 private:
  /// Deterministic ops without subgraphs (their results depend on their inputs only).
  static bool is_cacheable(const ir::Node& n) {
    static const std::set<std::string, std::less<>> random = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                                              "RandomUniformLike", "Bernoulli", "Multinomial", "Dropout"};
    return (n.domain.empty() || n.domain == "ai.onnx") && !random.count(n.op_type) && n.subgraphs().empty();
  }

  static void mark_constant(GraphPlan& p, int slot) {
    if (p.constant_slot.size() <= static_cast<size_t>(slot)) p.constant_slot.resize(static_cast<size_t>(slot) + 1, false);
    p.constant_slot[static_cast<size_t>(slot)] = true;
  }

  static bool is_constant_slot(const GraphPlan& p, SlotRef r) {
    const GraphPlan* q = &p;
    for (int i = 0; i < r.up && q; ++i) q = q->parent;
    if (!q) return false;
    const auto s = static_cast<size_t>(r.slot);
    if (s < q->constants.size() && q->constants[s].kind != Value::Kind::kNone) return true;
    return s < q->constant_slot.size() && q->constant_slot[s];
  }

  SlotRef resolve(GraphPlan& p, const ir::Value* v) {
    int up = 0;
    for (const GraphPlan* q = &p; q; q = q->parent, ++up) {
      auto it = q->slots.find(v);
      if (it != q->slots.end()) return {up, it->second};
    }
    // Not defined anywhere: a value of an enclosing graph not yet planned (produced later in the
    // parent), or an undefined name; give it a local slot that a producer may fill.
    if (v->graph() == p.graph || v->is_undefined()) {
      auto [it, fresh] = p.slots.emplace(v, p.n_slots);
      if (fresh) p.n_slots++;
      return {0, it->second};
    }
    up = 0;
    for (GraphPlan* q = &p; q; q = const_cast<GraphPlan*>(q->parent), ++up) {
      if (q->graph == v->graph()) {
        auto [it, fresh] = q->slots.emplace(v, q->n_slots);
        if (fresh) q->n_slots++;
        return {up, it->second};
      }
    }
    throw_input_error("value '" + v->name() + "' is not defined in scope");
  }

  static std::vector<const ir::Node*> sorted_nodes(const ir::Graph& g) {
    std::vector<const ir::Node*> order;
    for (size_t i : g.topological_order()) order.push_back(g.nodes()[i].get());
    return order;
  }

  static void compute_lifetimes(GraphPlan& p) {
    p.keep.assign(static_cast<size_t>(p.n_slots), false);
    for (int s : p.input_slots) p.keep[static_cast<size_t>(s)] = true;
    for (const auto& r : p.output_slots)
      if (r.up == 0 && r.slot >= 0) p.keep[static_cast<size_t>(r.slot)] = true;
    for (size_t s = 0; s < p.constants.size(); ++s)
      if (p.constants[s].kind != Value::Kind::kNone) p.keep[s] = true;
    // Values used by subgraphs are read through the frame chain: keep them for the whole run.
    std::vector<bool> used_by_sub(static_cast<size_t>(p.n_slots), false);
    for (const auto& [g, sub] : p.subplans) mark_outer_uses(*sub, 1, used_by_sub);
    std::vector<int> last_use(static_cast<size_t>(p.n_slots), -1);
    for (size_t i = 0; i < p.steps.size(); ++i)
      for (const auto& r : p.steps[i].inputs)
        if (r.up == 0 && r.slot >= 0) last_use[static_cast<size_t>(r.slot)] = static_cast<int>(i);
    for (size_t s = 0; s < last_use.size(); ++s) {
      if (last_use[s] < 0 || p.keep[s] || used_by_sub[s]) continue;
      p.steps[static_cast<size_t>(last_use[s])].release_after.push_back(static_cast<int>(s));
    }
  }

  const ir::Model& model_;
  const KernelRegistry& kernels_;
  const Backend* backend_;
};

}  // namespace

/// Refuses, before anything runs, a graph with a value whose static shape (declared, or inferred
/// by the caller) needs more bytes than the machine's physical memory.
void check_static_sizes(const ir::Graph& g, uint64_t memory) {
  for (const auto& n : g.nodes()) {
    for (const ir::Value* v : n->outputs()) {
      if (!v || v->type.kind != ir::TypeInfo::Kind::kTensor || !v->type.elem_type || !v->type.shape) continue;
      const ir::Shape& shape = *v->type.shape;
      if (!shape.is_static() || ir::data_type_bits(v->type.data_type()) == 0) continue;  // strings: no fixed size
      std::vector<int64_t> dims;
      for (const auto& d : shape.dims) dims.push_back(d.value);
      // A negative size (some exporters write -1 for "unknown") says nothing about memory.
      if (std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; })) continue;
      uint64_t count = 1;
      bool overflow = false;
      for (int64_t d : dims) {
        const auto u = static_cast<uint64_t>(d);
        if (u != 0 && count > UINT64_MAX / u) overflow = true;
        else count *= u;
      }
      const std::optional<uint64_t> bytes =
          overflow ? std::nullopt : ir::storage_bytes(v->type.data_type(), count);
      if (bytes && *bytes <= memory) continue;
      throw Error(ErrorKind::kFailed,
                  n->describe() + ": output '" + v->name() + "' has the static shape " + shape_string(dims) + " of " +
                      std::string(ir::data_type_name(v->type.data_type())) + ", " +
                      (bytes ? gigabytes(*bytes) : std::string("more bytes than 64 bits count")) +
                      ", more than this machine's " + gigabytes(memory) +
                      " of physical memory; the model cannot run here");
    }
    for (const ir::Graph* sub : n->subgraphs()) check_static_sizes(*sub, memory);
  }
}

std::unique_ptr<GraphPlan> plan_graph(const ir::Model& model, const ir::Graph& g, const Backend* backend) {
  return Planner(model, backend).plan(g, nullptr);
}

void mark_outer_uses(const GraphPlan& sub, int depth, std::vector<bool>& used) {
  for (const auto& st : sub.steps)
    for (const auto& r : st.inputs)
      if (r.up == depth && r.slot >= 0 && static_cast<size_t>(r.slot) < used.size())
        used[static_cast<size_t>(r.slot)] = true;
  for (const auto& r : sub.output_slots)
    if (r.up == depth && r.slot >= 0 && static_cast<size_t>(r.slot) < used.size())
      used[static_cast<size_t>(r.slot)] = true;
  for (const auto& [g, s] : sub.subplans) mark_outer_uses(*s, depth + 1, used);
}

}  // namespace onnxtool::runner
