// Pass fuse_transposes: two consecutive Transposes become one (or none).
#include "ir/graph_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite.h"

namespace onnxtool::passes {

/// Transpose(Transpose(x, p1), p2) => Transpose(x, p) with p[i] = p1[p2[i]], or x itself when p
/// is the identity. The first Transpose must feed only the second; both perms must be given
/// (a missing perm reverses the dims and needs the rank, which the perm of the other supplies).
PassStats fuse_transposes(ir::Model& model, const PassContext&) {
  PassStats stats;
  ir::for_each_node(model, [&](ir::Graph& g, ir::Node* second) {
    if (!ir::is_op(second, "Transpose")) return;
    ir::Value* mid = second->input(0);
    ir::Node* first = mid ? mid->producer() : nullptr;
    if (!ir::is_op(first, "Transpose") || ir::single_consumer(mid) != second) return;
    const auto p1 = first->attr_ints("perm");
    const auto p2 = second->attr_ints("perm");
    if (p1.empty() || p1.size() != p2.size()) return;
    std::vector<int64_t> p(p1.size());
    bool valid = true, identity = true;
    for (size_t i = 0; i < p2.size(); ++i) {
      if (p2[i] < 0 || p2[i] >= static_cast<int64_t>(p1.size())) valid = false;
      else p[i] = p1[static_cast<size_t>(p2[i])];
      identity = identity && p[i] == static_cast<int64_t>(i);
    }
    if (!valid) return;
    ir::Value* x = first->input(0);
    if (identity) {
      if (!bypass_node(g, second, x)) return;
    } else {
      second->set_input(0, x);
      second->set_attr(ir::Attribute::make_ints("perm", p));
    }
    g.remove_node(first);
    ++stats.fused;
  });
  return stats;
}

}  // namespace onnxtool::passes
