// Activations fused into a Conv's output (runner/cpu/epilogue.h).
#include "runner/cpu/epilogue.h"

#include <algorithm>
#include <limits>

#include "runner/cpu/elementwise_util.h"
#include "runner/kernel.h"

namespace onnxtool::runner {

namespace {

bool ops_fit(const std::vector<EpilogueOp>& ops, int64_t channels) {
  for (const auto& op : ops) {
    switch (op.kind) {
      case EpilogueOp::Kind::kAffine:
        if (static_cast<int64_t>(op.scale.size()) != channels || static_cast<int64_t>(op.shift.size()) != channels)
          return false;
        break;
      case EpilogueOp::Kind::kMul:
      case EpilogueOp::Kind::kAdd:
      case EpilogueOp::Kind::kSub:
      case EpilogueOp::Kind::kDiv:
        if (op.scale.size() != 1 && static_cast<int64_t>(op.scale.size()) != channels) return false;
        break;
      case EpilogueOp::Kind::kGate:
        if (!ops_fit(op.gate, channels)) return false;
        break;
      default: break;
    }
  }
  return true;
}

/// y[i] = f(y[i], c) for a binary op with a constant operand, in the node's operand order.
template <class F>
void with_constant(float* y, int64_t n, float c, bool swapped, F f) {
  if (swapped)
    for (int64_t i = 0; i < n; ++i) y[i] = f(c, y[i]);
  else
    for (int64_t i = 0; i < n; ++i) y[i] = f(y[i], c);
}

void apply_ops(const std::vector<EpilogueOp>& ops, float* y, int64_t channel, int64_t n) {
  for (const auto& op : ops) {
    switch (op.kind) {
      case EpilogueOp::Kind::kAffine: {
        // BatchNormalization's float32 loop.
        const float s = op.scale[static_cast<size_t>(channel)], t = op.shift[static_cast<size_t>(channel)];
        for (int64_t i = 0; i < n; ++i) y[i] = y[i] * s + t;
        break;
      }
      case EpilogueOp::Kind::kRelu:
        for (int64_t i = 0; i < n; ++i) y[i] = cpu::relu_value(y[i]);
        break;
      case EpilogueOp::Kind::kLeakyRelu: {
        const float alpha = op.alpha;
        for (int64_t i = 0; i < n; ++i) y[i] = cpu::leaky_relu_value(y[i], alpha);
        break;
      }
      case EpilogueOp::Kind::kSigmoid:
        cpu::sigmoid_f32(y, y, n);
        break;
      case EpilogueOp::Kind::kHardSigmoid: {
        const float a = op.alpha, b = op.beta;
        for (int64_t i = 0; i < n; ++i) y[i] = cpu::hard_sigmoid_value(y[i], a, b);
        break;
      }
      case EpilogueOp::Kind::kHardSwish:
        for (int64_t i = 0; i < n; ++i) y[i] = cpu::hard_swish_value(y[i]);
        break;
      case EpilogueOp::Kind::kClip: {
        const float lo = op.alpha, hi = op.beta;
        for (int64_t i = 0; i < n; ++i) y[i] = cpu::clip_value(y[i], lo, hi);
        break;
      }
      case EpilogueOp::Kind::kMul:
      case EpilogueOp::Kind::kAdd:
      case EpilogueOp::Kind::kSub:
      case EpilogueOp::Kind::kDiv: {
        // The float32 arithmetic of the Add, Sub, Mul and Div kernels.
        const float c = op.scale[op.scale.size() == 1 ? 0 : static_cast<size_t>(channel)];
        switch (op.kind) {
          case EpilogueOp::Kind::kMul: with_constant(y, n, c, op.swapped, [](float a, float b) { return a * b; }); break;
          case EpilogueOp::Kind::kAdd: with_constant(y, n, c, op.swapped, [](float a, float b) { return a + b; }); break;
          case EpilogueOp::Kind::kSub: with_constant(y, n, c, op.swapped, [](float a, float b) { return a - b; }); break;
          default: with_constant(y, n, c, op.swapped, [](float a, float b) { return a / b; }); break;
        }
        break;
      }
      case EpilogueOp::Kind::kGate: {
        // The chain's nodes on a copy, then the Mul's product in its operand order.
        constexpr int64_t kChunk = 1024;
        float g[kChunk];
        for (int64_t i0 = 0; i0 < n; i0 += kChunk) {
          const int64_t len = std::min(kChunk, n - i0);
          float* yc = y + i0;
          std::copy(yc, yc + len, g);
          apply_ops(op.gate, g, channel, len);
          if (op.swapped)
            for (int64_t i = 0; i < len; ++i) yc[i] = g[i] * yc[i];
          else
            for (int64_t i = 0; i < len; ++i) yc[i] = yc[i] * g[i];
        }
        break;
      }
    }
  }
}

}  // namespace

bool Epilogue::fits(int64_t channels) const { return ops_fit(ops, channels); }

void Epilogue::apply(float* y, int64_t channel, int64_t n) const { apply_ops(ops, y, channel, n); }

void Epilogue::apply_all(float* y, int64_t images, int64_t channels, int64_t inner) const {
  cpu::parallel_ranges(images * channels, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1)),
                       [&](int64_t p0, int64_t p1) {
                         for (int64_t p = p0; p < p1; ++p) apply(y + p * inner, p % channels, inner);
                       });
}

namespace {

/// A float32 constant's single value (a scalar or one element), or nullopt.
std::optional<float> float_scalar(const Tensor* t) {
  if (!t || t->dtype() != DataType::kFloat || t->size() != 1) return std::nullopt;
  return t->data<float>()[0];
}

/// A float32 constant that varies at most along the channels of an output of rank `rank` with
/// `channels` channels, and broadcasts it to no other shape: its values (1, or one per channel).
std::optional<std::vector<float>> channel_values(const Tensor* t, int64_t rank, int64_t channels) {
  if (!t || t->dtype() != DataType::kFloat || rank < 2 || t->rank() > static_cast<size_t>(rank)) return std::nullopt;
  const size_t offset = static_cast<size_t>(rank) - t->rank();  // right-aligned
  for (size_t i = 0; i < t->rank(); ++i) {
    const int64_t d = t->dim(i);
    if (d != 1 && !(offset + i == 1 && d == channels)) return std::nullopt;
  }
  return std::vector<float>(t->data<float>(), t->data<float>() + t->size());
}

}  // namespace

std::optional<EpilogueOp> epilogue_op(const ir::Node& node, int64_t opset, size_t data,
                                      const std::vector<const Tensor*>& constants, int64_t rank, int64_t channels) {
  if (!node.domain.empty() && node.domain != "ai.onnx") return std::nullopt;
  if (node.outputs().size() != 1 || !node.output(0)) return std::nullopt;
  const NodeAttributes attrs(node);
  EpilogueOp op;
  const std::string& t = node.op_type;
  const size_t inputs = node.inputs().size();
  if (t == "Relu" || t == "LeakyRelu" || t == "Sigmoid" || t == "HardSigmoid" || t == "HardSwish") {
    if (inputs != 1 || data != 0) return std::nullopt;
    op.kind = t == "Relu"          ? EpilogueOp::Kind::kRelu
              : t == "Sigmoid"     ? EpilogueOp::Kind::kSigmoid
              : t == "HardSigmoid" ? EpilogueOp::Kind::kHardSigmoid
              : t == "HardSwish"   ? EpilogueOp::Kind::kHardSwish
                                   : EpilogueOp::Kind::kLeakyRelu;
    if (t == "LeakyRelu") op.alpha = attrs.attr_float("alpha", 0.01f);
    if (t == "HardSigmoid") {
      op.alpha = attrs.attr_float("alpha", 0.2f);
      op.beta = attrs.attr_float("beta", 0.5f);
    }
    return op;
  }
  if (t == "Clip") {
    if (data != 0) return std::nullopt;
    op.kind = EpilogueOp::Kind::kClip;
    if (opset < 11) {
      if (inputs != 1) return std::nullopt;
      op.alpha = attrs.attr_float("min", std::numeric_limits<float>::lowest());
      op.beta = attrs.attr_float("max", std::numeric_limits<float>::max());
      return op;
    }
    op.alpha = -std::numeric_limits<float>::infinity();
    op.beta = std::numeric_limits<float>::infinity();
    for (size_t i = 1; i < inputs; ++i) {
      if (!node.input(i)) continue;  // omitted bound
      const auto v = float_scalar(constants[i]);
      if (!v) return std::nullopt;
      (i == 1 ? op.alpha : op.beta) = *v;
    }
    return op;
  }
  if (t == "Mul" || t == "Add" || t == "Sub" || t == "Div") {
    if (inputs != 2 || data > 1) return std::nullopt;
    auto v = channel_values(constants[1 - data], rank, channels);
    if (!v) return std::nullopt;
    op.kind = t == "Mul"   ? EpilogueOp::Kind::kMul
              : t == "Add" ? EpilogueOp::Kind::kAdd
              : t == "Sub" ? EpilogueOp::Kind::kSub
                           : EpilogueOp::Kind::kDiv;
    op.swapped = data == 1;
    op.scale = std::move(*v);
    return op;
  }
  if (t == "BatchNormalization") {
    // Inference mode only: one output, and training_mode 0 where the attribute exists.
    if (inputs != 5 || constants.size() != 5 || data != 0) return std::nullopt;
    if (opset >= 14 && attrs.attr_int("training_mode", 0) != 0) return std::nullopt;
    for (size_t i = 1; i < 5; ++i) {
      const Tensor* c = constants[i];
      if (!c || c->rank() != 1 || c->size() != constants[1]->size()) return std::nullopt;
      const DataType d = c->dtype();
      if (d != DataType::kFloat && d != DataType::kDouble && d != DataType::kFloat16 && d != DataType::kBFloat16)
        return std::nullopt;
    }
    std::vector<double> mean(static_cast<size_t>(constants[3]->size())), var(mean.size());
    for (int64_t c = 0; c < constants[3]->size(); ++c) {
      mean[static_cast<size_t>(c)] = element_as_double(*constants[3], c);
      var[static_cast<size_t>(c)] = element_as_double(*constants[4], c);
    }
    const double eps = attrs.attr_float("epsilon", 1e-5f);
    op.kind = EpilogueOp::Kind::kAffine;
    cpu::batch_norm_factors(*constants[1], *constants[2], mean, var, eps, op.scale, op.shift);
    return op;
  }
  return std::nullopt;
}

}  // namespace onnxtool::runner
