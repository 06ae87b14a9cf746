// Pass fuse_matmul_add: MatMul followed by Add of a bias becomes one Gemm.
#include "ir/graph_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite.h"

namespace onnxtool::passes {

namespace {

bool is_gemm_type(const ir::Value* v) {
  if (!v || !v->type.is_tensor()) return false;
  const auto t = v->type.data_type();
  return t == ir::DataType::kFloat || t == ir::DataType::kDouble || t == ir::DataType::kFloat16 ||
         t == ir::DataType::kBFloat16;
}

bool has_rank(const ir::Value* v, size_t rank) {
  return v && v->type.is_tensor() && v->type.shape && v->type.shape->rank() == rank;
}

}  // namespace

/// MatMul(A, B) -> Add(., C)  =>  Gemm(A, B, C) when A and B are 2-D (known ranks), the element
/// type is a float type, C has rank at most 2 and broadcasts to the output in one direction
/// ([N], [1, N], [M, N] or a scalar; checked against known dims), and the MatMul's output feeds
/// only the Add. Needs opset 7 (Gemm's broadcasting C). The Add's output name survives.
PassStats fuse_matmul_add(ir::Model& model, const PassContext&) {
  PassStats stats;
  if (model.onnx_opset() < 7) return stats;
  ir::for_each_node(model, [&](ir::Graph& g, ir::Node* add) {
    if (!ir::is_op(add, "Add")) return;
    for (size_t side = 0; side < 2; ++side) {
      ir::Value* y = add->input(side);
      ir::Node* mm = y ? y->producer() : nullptr;
      ir::Value* c = add->input(1 - side);
      if (!ir::is_op(mm, "MatMul") || ir::single_consumer(y) != add || !c) continue;
      ir::Value* a = mm->input(0);
      ir::Value* b = mm->input(1);
      if (!has_rank(a, 2) || !has_rank(b, 2) || !is_gemm_type(a) || !has_rank(y, 2)) continue;
      if (!c->type.is_tensor() || !c->type.shape || c->type.shape->rank() > 2 || c->type.elem_type != a->type.elem_type) continue;
      // C must not widen the output: its dims are 1 or equal to the output's (both known).
      bool ok = true;
      const auto& cd = c->type.shape->dims;
      const auto& yd = y->type.shape->dims;
      for (size_t i = 0; i < cd.size(); ++i) {
        const ir::Dim& d = cd[i];
        const ir::Dim& o = yd[yd.size() - cd.size() + i];
        if (d.kind != ir::Dim::Kind::kValue) ok = false;
        else if (d.value != 1 && !(o.kind == ir::Dim::Kind::kValue && o.value == d.value)) ok = false;
      }
      if (!ok) continue;
      const std::string out = ir::unique_name(g, y->name() + "_gemm");
      ir::Node* gemm = g.add_node("Gemm", {a, b, c}, {out}, "", mm->name, add);
      gemm->output(0)->type = add->output(0)->type;
      if (!bypass_node(g, add, gemm->output(0))) {
        g.remove_node(gemm);
        continue;
      }
      g.remove_node(mm);
      ++stats.fused;
      break;
    }
  });
  return stats;
}

}  // namespace onnxtool::passes
