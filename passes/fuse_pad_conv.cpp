// Pass fuse_pad_conv: a zero constant Pad of the spatial dims before Conv or AveragePool
// becomes the consumer's own pads.
#include "ir/constant.h"
#include "ir/graph_util.h"
#include "passes/pass_list.h"

namespace onnxtool::passes {

/// Pad(x, pads, 0) -> Conv | AveragePool(count_include_pad=1)  =>  the consumer with pads added,
/// when the Pad is mode constant with value 0, pads batch and channel dims by nothing, pads no
/// dim by a negative amount, uses no axes input, and feeds only that consumer, whose auto_pad
/// is NOTSET. (MaxPool is left alone: its padding is -inf, not zero.)
PassStats fuse_pad_conv(ir::Model& model, const PassContext&) {
  PassStats stats;
  ir::for_each_node(model, [&](ir::Graph& g, ir::Node* consumer) {
    const bool conv = ir::is_op(consumer, "Conv");
    if (!conv && !(ir::is_op(consumer, "AveragePool") && consumer->attr_int("count_include_pad", 0) == 1)) return;
    if (consumer->attr_string("auto_pad", "NOTSET") != "NOTSET") return;
    ir::Value* padded = consumer->input(0);
    ir::Node* pad = padded ? padded->producer() : nullptr;
    if (!ir::is_op(pad, "Pad") || ir::single_consumer(padded) != consumer) return;
    if (pad->attr_string("mode", "constant") != "constant" || pad->input(3)) return;
    if (pad->input(2)) {
      const ir::Tensor* t = ir::constant_of(model, pad->input(2));
      const auto values = t ? ir::read_values(*t) : std::nullopt;
      if (!values || values->size() != 1 || !values->all_equal(0)) return;
    } else if (pad->attr_float("value", 0.0f) != 0.0f) {
      return;
    }
    const auto pads = ir::ints_input_or_attr(model, *pad, 1, model.onnx_opset() >= 11 ? "" : "pads");
    if (!pads || pads->size() % 2 || pads->size() < 6) return;
    const size_t rank = pads->size() / 2, spatial = rank - 2;
    bool ok = (*pads)[0] == 0 && (*pads)[1] == 0 && (*pads)[rank] == 0 && (*pads)[rank + 1] == 0;
    for (int64_t p : *pads) ok = ok && p >= 0;
    if (!ok) return;
    std::vector<int64_t> merged = consumer->attr_ints("pads", std::vector<int64_t>(2 * spatial, 0));
    if (merged.size() != 2 * spatial) return;
    for (size_t i = 0; i < spatial; ++i) {
      merged[i] += (*pads)[2 + i];
      merged[spatial + i] += (*pads)[rank + 2 + i];
    }
    consumer->set_attr(ir::Attribute::make_ints("pads", merged));
    consumer->set_input(0, pad->input(0));
    g.remove_node(pad);
    ++stats.fused;
  });
  return stats;
}

}  // namespace onnxtool::passes
