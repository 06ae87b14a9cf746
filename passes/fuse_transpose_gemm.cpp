// Pass fuse_transpose_gemm: a 2-D Transpose feeding Gemm becomes its transA/transB flag.
#include "ir/graph_util.h"
#include "passes/pass_list.h"

namespace onnxtool::passes {

/// Gemm(Transpose(A, [1,0]), B) => Gemm(A, B, transA = !transA); likewise for B. The Transpose
/// must feed only the Gemm.
PassStats fuse_transpose_gemm(ir::Model& model, const PassContext&) {
  PassStats stats;
  ir::for_each_node(model, [&](ir::Graph& g, ir::Node* gemm) {
    if (!ir::is_op(gemm, "Gemm")) return;
    for (size_t i = 0; i < 2; ++i) {
      ir::Value* in = gemm->input(i);
      ir::Node* t = in ? in->producer() : nullptr;
      if (!ir::is_op(t, "Transpose") || ir::single_consumer(in) != gemm) continue;
      if (t->attr_ints("perm", {1, 0}) != std::vector<int64_t>{1, 0}) continue;
      const char* flag = i == 0 ? "transA" : "transB";
      gemm->set_input(i, t->input(0));
      gemm->set_attr(ir::Attribute::make_int(flag, gemm->attr_int(flag, 0) ? 0 : 1));
      g.remove_node(t);
      ++stats.fused;
    }
  });
  return stats;
}

}  // namespace onnxtool::passes
