// Pass fold_constants: evaluates constant nodes with the runner's kernels into initializers.
#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <set>

#include "ir/diagnostic.h"
#include "ir/error.h"
#include "ir/graph_util.h"
#include "ir/shape_inference.h"
#include "passes/pass_list.h"
#include "runner/session.h"

namespace onnxtool::passes {

namespace {

/// Ops whose result is not a function of their inputs (or that the runner must not evaluate now).
bool is_foldable_op(const ir::Node& n) {
  static const std::set<std::string, std::less<>> nondeterministic = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial"};
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  if (nondeterministic.count(n.op_type)) return false;
  // Training-mode Dropout draws a mask; inference Dropout is left to eliminate_noops.
  if (n.op_type == "Dropout") return false;
  // A weight stored quantized behind DequantizeLinear is the model's point: folded, it is four
  // times the bytes and runtimes no longer see a QDQ group to run as an integer kernel (a
  // quantized PaddleOCR det went from 2.9 to 4.7 MB). onnxruntime leaves them alike.
  if (n.op_type == "DequantizeLinear") return false;
  return n.subgraphs().empty();
}

/// Bytes of a statically known tensor type, or -1.
int64_t static_bytes(const ir::TypeInfo& t) {
  if (!t.is_tensor() || !t.shape) return -1;
  int64_t n = 1;
  for (const ir::Dim& d : t.shape->dims) {
    if (d.kind != ir::Dim::Kind::kValue || d.value < 0) return -1;
    if (d.value != 0 && n > (int64_t{1} << 40) / d.value) return int64_t{1} << 40;
    n *= d.value;
  }
  const int64_t bits = ir::data_type_bits(t.data_type());
  return bits > 0 ? (n * bits + 7) / 8 : -1;
}

/// How long folding one node may compute.
constexpr int kFoldSeconds = 10;

/// Runs one node on constant inputs; empty when the runner cannot or takes longer than
/// kFoldSeconds (the node then stays).
std::vector<runner::Tensor> evaluate(const ir::Model& model, const ir::Node& node, const std::vector<const ir::Tensor*>& inputs) {
  ir::Model m;
  m.ir_version = model.ir_version;
  m.opset_import = model.opset_import;
  m.graph = std::make_unique<ir::Graph>();
  ir::Graph& g = *m.graph;
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      ins.push_back(nullptr);
      continue;
    }
    ir::Tensor t = *inputs[i];
    t.name = "in" + std::to_string(i);
    ins.push_back(g.add_initializer(std::move(t)));
  }
  std::vector<std::string> outs;
  for (size_t i = 0; i < node.outputs().size(); ++i)
    outs.push_back(node.output(i) && !node.output(i)->name().empty() ? "out" + std::to_string(i) : "");
  ir::Node* n = g.add_node(node.op_type, ins, outs, node.domain, node.name);
  for (const auto& a : node.attributes) n->set_attr(ir::copy_attribute(a));
  for (size_t i = 0; i < outs.size(); ++i)
    if (!outs[i].empty()) g.add_output(n->output(i), std::nullopt);
  try {
    runner::Session session(m, runner::SessionOptions{1});
    // A node that computes longer than this (a Loop of a huge constant trip count) stays a
    // node: folding must not hang the optimizer.
    session.set_deadline(std::chrono::steady_clock::now() + std::chrono::seconds(kFoldSeconds), "constant folding's bound");
    std::vector<runner::Value> values;
    try {
      values = session.run({});
    } catch (const TimeLimitReached&) {
      if (runner::time_limit_passed()) throw;  // the command's own bound: it ends the command
      return {};
    }
    std::vector<runner::Tensor> result;
    for (auto& v : values) {
      if (!v.is_tensor()) return {};
      result.push_back(v.tensor);
    }
    return result;
  } catch (const Error&) {
    return {};  // no kernel, or invalid constants: leave the node for the checker and runner
  }
}

/// Shape and Size of a value whose shape is fully static.
std::optional<runner::Tensor> fold_shape(const ir::Node& n) {
  const ir::Value* x = n.input(0);
  if (!x || !x->type.is_tensor() || !x->type.shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const ir::Dim& d : x->type.shape->dims) {
    if (d.kind != ir::Dim::Kind::kValue) return std::nullopt;
    dims.push_back(d.value);
  }
  if (n.op_type == "Size") {
    int64_t size = 1;
    for (int64_t d : dims) size *= d;
    return runner::Tensor::scalar_int64(size);
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clamp(n.attr_int("start", 0));
  const int64_t end = clamp(n.attr_int("end", rank));
  runner::Tensor t(ir::DataType::kInt64, {std::max<int64_t>(end - start, 0)});
  for (int64_t i = start; i < end; ++i) t.mutable_data<int64_t>()[i - start] = dims[static_cast<size_t>(i)];
  return t;
}

/// The dims a Shape node outputs, -1 where unknown; nullopt when the rank is unknown.
std::optional<std::vector<int64_t>> partial_shape(const ir::Value* v) {
  const ir::Node* s = v ? v->producer() : nullptr;
  if (!ir::is_op(s, "Shape") || !s->input(0) || !s->input(0)->type.is_tensor() || !s->input(0)->type.shape) return std::nullopt;
  std::vector<int64_t> dims;
  for (const ir::Dim& d : s->input(0)->type.shape->dims) dims.push_back(d.kind == ir::Dim::Kind::kValue ? d.value : -1);
  const int64_t rank = static_cast<int64_t>(dims.size());
  auto clamp = [rank](int64_t x) { return std::clamp<int64_t>(x < 0 ? x + rank : x, 0, rank); };
  const int64_t start = clamp(s->attr_int("start", 0)), end = clamp(s->attr_int("end", rank));
  return std::vector<int64_t>(dims.begin() + start, dims.begin() + std::max(start, end));
}

/// Gather or Slice of a Shape's output that picks only known dims (the batch dim may stay
/// symbolic while the others are fixed).
std::optional<runner::Tensor> fold_shape_pick(const ir::Model& model, const ir::Node& n) {
  const auto dims = partial_shape(n.input(0));
  if (!dims) return std::nullopt;
  const int64_t size = static_cast<int64_t>(dims->size());
  std::vector<int64_t> picked;
  bool scalar = false;
  if (ir::is_op(&n, "Gather")) {
    const ir::Tensor* t = ir::constant_of(model, n.input(1));
    const auto idx = ir::constant_ints(model, n.input(1));
    if (!idx || n.attr_int("axis", 0) != 0) return std::nullopt;
    scalar = t->dims.empty();
    if (t->dims.size() > 1) return std::nullopt;
    for (int64_t i : *idx) {
      if (i < 0) i += size;
      if (i < 0 || i >= size) return std::nullopt;
      picked.push_back((*dims)[static_cast<size_t>(i)]);
    }
  } else if (ir::is_op(&n, "Slice")) {
    const bool attrs = model.onnx_opset() < 10;  // Slice-1 takes starts/ends/axes as attributes
    const auto starts = ir::ints_input_or_attr(model, n, 1, attrs ? "starts" : "");
    const auto ends = ir::ints_input_or_attr(model, n, 2, attrs ? "ends" : "");
    if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
    if (n.input(3) || n.attr("axes")) {
      const auto axes = ir::ints_input_or_attr(model, n, 3, attrs ? "axes" : "");
      if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1)) return std::nullopt;
    }
    int64_t step = 1;
    if (n.input(4)) {
      const auto steps = ir::ints_input_or_attr(model, n, 4, "");
      if (!steps || steps->size() != 1) return std::nullopt;
      step = (*steps)[0];
    }
    if (step != 1) return std::nullopt;
    auto clamp = [size](int64_t x) { return std::clamp<int64_t>(x < 0 ? x + size : x, 0, size); };
    const int64_t b = clamp((*starts)[0]), e = clamp((*ends)[0]);
    for (int64_t i = b; i < e; ++i) picked.push_back((*dims)[static_cast<size_t>(i)]);
  } else {
    return std::nullopt;
  }
  for (int64_t d : picked)
    if (d < 0) return std::nullopt;
  runner::Tensor out(ir::DataType::kInt64, scalar ? std::vector<int64_t>{} : std::vector<int64_t>{static_cast<int64_t>(picked.size())});
  std::copy(picked.begin(), picked.end(), out.mutable_data<int64_t>());
  return out;
}

/// The node producing `v`, looking through Casts between integer types.
const ir::Node* through_casts(const ir::Value* v, const ir::Value** at) {
  const ir::Node* p = v ? v->producer() : nullptr;
  while (ir::is_op(p, "Cast") && p->input(0)) {
    v = p->input(0);
    p = v->producer();
  }
  *at = v;
  return p;
}

/// Reshape(x, Concat(parts)) where every part is a constant or the matching dim of Shape(x)
/// (Gather/Slice, through Casts) => Reshape(x, constant) with 0 ("copy this dim") for the picked
/// dims. Returns the constant shape, or nullopt.
std::optional<std::vector<int64_t>> reshape_target(const ir::Model& model, const ir::Node& reshape) {
  if (!ir::is_op(&reshape, "Reshape") || reshape.attr_int("allowzero", 0) != 0 || !reshape.input(1)) return std::nullopt;
  const ir::Value* shape = nullptr;
  const ir::Node* concat = through_casts(reshape.input(1), &shape);
  if (!ir::is_op(concat, "Concat")) return std::nullopt;
  const ir::Value* x = reshape.input(0);
  std::vector<int64_t> target;
  for (const ir::Value* part : concat->inputs()) {
    if (!part) return std::nullopt;
    if (ir::constant_of(model, part)) {
      const auto v = ir::constant_ints(model, part);
      if (!v) return std::nullopt;
      for (int64_t d : *v) {
        if (d == 0) return std::nullopt;  // a literal 0 would copy a dim; keep the model's meaning simple
        target.push_back(d);
      }
      continue;
    }
    const ir::Value* src = nullptr;
    const ir::Node* pick = through_casts(part, &src);
    const ir::Value* shape_value = nullptr;
    const ir::Node* shape_node = pick && pick->input(0) ? through_casts(pick->input(0), &shape_value) : nullptr;
    if (!ir::is_op(shape_node, "Shape") || shape_node->input(0) != x || shape_node->attr("start") || shape_node->attr("end"))
      return std::nullopt;
    std::optional<std::vector<int64_t>> index;
    if (ir::is_op(pick, "Gather") && pick->attr_int("axis", 0) == 0) {
      index = ir::ints_input_or_attr(model, *pick, 1, "");
    } else if (ir::is_op(pick, "Slice")) {
      const bool attrs = model.onnx_opset() < 10;
      const auto starts = ir::ints_input_or_attr(model, *pick, 1, attrs ? "starts" : "");
      const auto ends = ir::ints_input_or_attr(model, *pick, 2, attrs ? "ends" : "");
      // starts is checked first so that starts + 1 cannot overflow.
      if (pick->input(4) || !starts || !ends || starts->size() != 1 || ends->size() != 1 || (*starts)[0] < 0 ||
          (*starts)[0] == std::numeric_limits<int64_t>::max() || (*ends)[0] != (*starts)[0] + 1)
        return std::nullopt;
      index = std::vector<int64_t>{(*starts)[0]};
    }
    if (!index || index->size() != 1 || (*index)[0] != static_cast<int64_t>(target.size())) return std::nullopt;
    target.push_back(0);
  }
  if (std::count(target.begin(), target.end(), -1) > 1) return std::nullopt;
  return target;
}

/// The results of folds inside subgraphs that derive from an enclosing graph's tensor, stored as
/// initializers of that graph, once per content: sibling branches deriving the same tensor from
/// an outer weight (Silero's two LSTM branches reorder the same gates) share it instead of each
/// holding a copy (a copy per branch made Silero v5's file 42% larger).
class Hoisted {
 public:
  ir::Value* value(ir::Graph& host, const runner::Tensor& result, const std::string& base) {
    ir::Tensor t = runner::to_ir(result, base);
    std::string key;
    if (t.type() != ir::DataType::kString)
      if (const auto bytes = t.raw_bytes_if_valid()) {
        key = std::to_string(t.data_type) + ":";
        for (int64_t d : t.dims) key += std::to_string(d) + ",";
        key += ":";
        key += bytes->view();
      }
    if (!key.empty())
      if (const auto it = by_content_.find({&host, key}); it != by_content_.end()) return it->second;
    t.name = ir::unique_name(host, base + "_hoisted");
    ir::Value* v = host.add_initializer(std::move(t));
    if (!key.empty()) by_content_[{&host, key}] = v;
    return v;
  }

 private:
  std::map<std::pair<const ir::Graph*, std::string>, ir::Value*> by_content_;
};

}  // namespace

/// Replaces every node whose inputs are all constants by initializers holding its outputs,
/// computed by the runner's own kernels (Constant nodes become initializers), and Shape/Size of
/// values whose shape inference gives a fully static shape. Never folds random generators,
/// DequantizeLinear (quantized weights stay quantized) or nodes with subgraphs, nor creates a
/// tensor above OptimizeOptions::fold_max_bytes. Graph outputs keep their names (an output may
/// become an initializer). In a subgraph, what derives from an enclosing graph's tensor goes to
/// that graph (Hoisted).
PassStats fold_constants(ir::Model& model, const PassContext& context) {
  ir::DiagnosticSink sink;
  ir::infer_shapes(model, sink);
  PassStats stats;
  const int64_t cap = context.options.fold_max_bytes;
  Hoisted hoisted;
  ir::for_each_graph(model, [&](ir::Graph& g) {
    g.for_each_node([&](ir::Node* n) {
      if (!is_foldable_op(*n)) return;
      // A subgraph output that becomes an initializer is legal but trips some runtimes.
      bool too_big = false;
      if (g.parent())
        for (const ir::Value* o : n->outputs())
          if (o && o->is_graph_output()) too_big = true;
      for (const ir::Value* o : n->outputs())
        if (o && static_bytes(o->type) > cap) too_big = true;
      if (too_big) return;
      std::vector<runner::Tensor> results;
      if ((n->op_type == "Shape" || n->op_type == "Size") && n->outputs().size() == 1) {
        if (auto t = fold_shape(*n)) results.push_back(*t);
      }
      if (results.empty() && (n->op_type == "Gather" || n->op_type == "Slice")) {
        if (auto t = fold_shape_pick(model, *n)) results.push_back(*t);
      }
      if (results.empty()) {
        std::vector<const ir::Tensor*> inputs;
        bool constant = true;
        for (const ir::Value* v : n->inputs()) {
          if (!v) {
            inputs.push_back(nullptr);
            continue;
          }
          const ir::Tensor* t = ir::constant_of(model, v);
          if (!t) constant = false;
          inputs.push_back(t);
        }
        if (!constant || (n->inputs().empty() && n->op_type != "Constant")) return;
        results = evaluate(model, *n, inputs);
        if (results.empty()) return;
      }
      bool fits = true;
      for (const auto& r : results)
        if (static_cast<int64_t>(r.bytes()) > cap) fits = false;
      if (!fits) return;
      std::vector<ir::Value*> outs(n->outputs().begin(), n->outputs().end());
      // In a subgraph, a result derived from an enclosing graph's tensor (its largest input
      // lives there; small local ones such as Slice bounds do not count) goes to that graph
      // (Hoisted).
      ir::Graph* host = &g;
      uint64_t largest = 0;
      for (const ir::Value* v : n->inputs()) {
        const ir::Tensor* t = v ? ir::constant_of(model, v) : nullptr;
        const uint64_t bytes = t ? t->data_bytes() : 0;
        if (t && (bytes > largest || (bytes == largest && v->graph() == &g))) {
          largest = bytes;
          host = v->graph();
        }
      }
      if (host != &g) {
        for (size_t i = 0; i < outs.size() && i < results.size(); ++i)
          if (outs[i] && !outs[i]->name().empty()) g.replace_all_uses(outs[i], hoisted.value(*host, results[i], outs[i]->name()));
        g.remove_node(n);
        auto& vi = g.value_info;
        vi.erase(std::remove_if(vi.begin(), vi.end(),
                                [&](const ir::ValueInfo& v) { return std::find(outs.begin(), outs.end(), v.value) != outs.end(); }),
                 vi.end());
        g.prune_values();
        ++stats.folded;
        return;
      }
      g.remove_node(n);
      for (size_t i = 0; i < outs.size() && i < results.size(); ++i) {
        if (!outs[i] || outs[i]->name().empty()) continue;
        g.add_initializer(runner::to_ir(results[i], outs[i]->name()));
      }
      ++stats.folded;
    });
    for (const auto& n : g.nodes())
      if (const auto target = reshape_target(model, *n)) {
        runner::Tensor t(ir::DataType::kInt64, {static_cast<int64_t>(target->size())});
        std::copy(target->begin(), target->end(), t.mutable_data<int64_t>());
        const std::string base = n->input(1)->name();
        n->set_input(1, g.add_initializer(runner::to_ir(t, ir::unique_name(g, base + "_folded"))));
        ++stats.folded;
      }
  });
  return stats;
}

}  // namespace onnxtool::passes
