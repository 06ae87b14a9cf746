// Weight-only quantization: MatMul weights stored as int4/int8 in blocks along their reduction
// axis, behind a blocked DequantizeLinear (opset 21); the arithmetic stays float. For models
// where memory is the goal (runtimes such as onnxruntime fuse the pair into a 4-bit MatMul).
// With Format::kMatMulNBits the MatMul itself becomes onnxruntime's com.microsoft MatMulNBits,
// the weight packed as that op reads it: the form onnxruntime's own weight-only quantizer
// writes, at any ONNX opset.
#include <algorithm>
#include <cmath>

#include "ir/error.h"
#include "ir/graph_util.h"
#include "passes/pass.h"
#include "quant/accuracy.h"
#include "quant/quantize.h"
#include "quant/weights.h"

namespace onnxtool::quant {

namespace {

/// W [K, N] as `bits`-bit integers, symmetric, one scale per `block` rows of each column.
struct BlockedWeight {
  std::vector<int8_t> values;  // K * N, row-major
  std::vector<float> scales;   // ceil(K / block) * N
  double sqnr_db = 0;
};

BlockedWeight quantize_blocked(const std::vector<double>& w, int64_t k, int64_t n, int64_t block, int bits) {
  const double qmax = bits == 4 ? 7 : 127;
  const int64_t blocks = (k + block - 1) / block;
  BlockedWeight out;
  out.values.resize(static_cast<size_t>(k * n));
  out.scales.resize(static_cast<size_t>(blocks * n));
  double signal = 0, noise = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t r0 = b * block, r1 = std::min(k, r0 + block);
    for (int64_t c = 0; c < n; ++c) {
      double amax = 0;
      for (int64_t r = r0; r < r1; ++r) amax = std::max(amax, std::fabs(w[static_cast<size_t>(r * n + c)]));
      // The scale with the least squared error among the block's largest magnitude and a few
      // clipped ones (at 4 bits, clipping the largest weight of a block often costs less than
      // the coarser steps it would force on the others). A block of zeros keeps scale 1.
      float scale = 1.0f;
      if (amax > 0) {
        double best = -1;
        for (const double clip : {1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7}) {
          if (bits == 8 && clip < 1.0) break;  // 255 steps: clipping never pays
          const float s = static_cast<float>(amax * clip / qmax);
          double err = 0;
          for (int64_t r = r0; r < r1; ++r) {
            const double x = w[static_cast<size_t>(r * n + c)];
            const double q = std::clamp(round_half_even(x / s), -qmax, qmax) * s;
            err += (x - q) * (x - q);
          }
          if (best < 0 || err < best) {
            best = err;
            scale = s;
          }
        }
      }
      out.scales[static_cast<size_t>(b * n + c)] = scale;
      for (int64_t r = r0; r < r1; ++r) {
        const double x = w[static_cast<size_t>(r * n + c)];
        const double q = std::clamp(round_half_even(x / scale), -qmax, qmax);
        out.values[static_cast<size_t>(r * n + c)] = static_cast<int8_t>(q);
        signal += x * x;
        noise += (x - q * scale) * (x - q * scale);
      }
    }
  }
  out.sqnr_db = noise == 0 ? 200 : signal == 0 ? -200 : 10 * std::log10(signal / noise);
  return out;
}

/// Packs int4 values two per byte, the first in the low nibble (TensorProto's INT4 layout).
std::vector<uint8_t> pack_int4(const std::vector<int8_t>& v) {
  std::vector<uint8_t> bytes((v.size() + 1) / 2, 0);
  for (size_t i = 0; i < v.size(); ++i)
    bytes[i / 2] |= static_cast<uint8_t>((static_cast<uint8_t>(v[i]) & 0x0F) << (i % 2 ? 4 : 0));
  return bytes;
}

/// The weight in MatMulNBits' layout: for each column n and block b, the block's `block` values
/// along K as unsigned `bits`-bit numbers offset by the default zero point (8 or 128, so that no
/// zero-point input is needed for the symmetric values), 4-bit ones two per byte with the lower
/// K index in the low nibble; rows past K pad the last block with the zero point. The scales
/// go column-major, [N, blocks].
struct PackedNBits {
  std::vector<uint8_t> data;  // N * blocks * (block * bits / 8)
  std::vector<float> scales;  // N * blocks
};

PackedNBits pack_nbits(const BlockedWeight& q, int64_t k, int64_t n, int64_t block, int bits) {
  const int64_t blocks = (k + block - 1) / block, blob = block * bits / 8;
  const int zero = bits == 4 ? 8 : 128;
  PackedNBits out;
  out.data.assign(static_cast<size_t>(n * blocks * blob), 0);
  out.scales.resize(static_cast<size_t>(n * blocks));
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t b = 0; b < blocks; ++b) {
      out.scales[static_cast<size_t>(c * blocks + b)] = q.scales[static_cast<size_t>(b * n + c)];
      uint8_t* bytes = out.data.data() + (c * blocks + b) * blob;
      for (int64_t i = 0; i < block; ++i) {
        const int64_t r = b * block + i;
        const int u = (r < k ? q.values[static_cast<size_t>(r * n + c)] : 0) + zero;
        if (bits == 8) bytes[i] = static_cast<uint8_t>(u);
        else bytes[i / 2] |= static_cast<uint8_t>(u << (i % 2 ? 4 : 0));
      }
    }
  }
  return out;
}

void rewrite_weight_only(ir::Model& model, const QuantizeOptions& options, QuantizeReport& report) {
  ir::for_each_graph(*model.graph, [&](ir::Graph& g) {
    std::vector<ir::Node*> order;
    for (const auto& n : g.nodes()) order.push_back(n.get());
    for (ir::Node* n : order) {
      if (!ir::is_op(n, "MatMul")) continue;
      if (!selected(*n, options)) {
        FloatReason why = unselected_reason(*n, options);
        report.kept_float.push_back({n->name, n->op_type, n->output(0)->name(), std::move(why.text), std::move(why.options)});
        continue;
      }
      const auto w = quantizable_weight(model, n->input(1), 2, 2);
      if (!w) {
        report.kept_float.push_back({n->name, n->op_type, n->output(0)->name(),
                                     "its weight is not a constant 2-D float tensor (a product of two activations, such as "
                                     "attention scores)"});
        continue;
      }
      const bool nbits = options.format == Format::kMatMulNBits;
      const auto& a_shape = n->input(0)->type.shape;
      if (nbits && a_shape && a_shape->rank() < 2) {
        report.kept_float.push_back({n->name, n->op_type, n->output(0)->name(),
                                     "MatMulNBits multiplies an A of rank 2 or more; this A is 1-D"});
        continue;
      }
      const int64_t k = w->dims[0], cols = w->dims[1];
      // MatMulNBits' blocks have the asked size whatever K (the last one padded); the blocked
      // DequantizeLinear's block cannot exceed K.
      const int64_t block = nbits ? options.block_size : std::min<int64_t>(options.block_size, k);
      const BlockedWeight q = quantize_blocked(w->values, k, cols, block, options.bits);
      const std::string base = n->input(1)->name();
      const int64_t blocks = (k + block - 1) / block;
      if (nbits) {
        const PackedNBits packed = pack_nbits(q, k, cols, block, options.bits);
        ir::Value* b = g.add_initializer(ir::make_tensor(ir::unique_name(g, base + "_nbits"), ir::DataType::kUInt8,
                                                         {cols, blocks, block * options.bits / 8}, packed.data.data(),
                                                         packed.data.size()));
        ir::Value* scales = add_float(g, base + "_scales", {cols * blocks}, packed.scales);
        n->op_type = "MatMulNBits";
        n->domain = std::string(ir::kMicrosoftDomain);
        n->set_input(1, b);
        n->append_input(scales);
        n->set_attr(ir::Attribute::make_int("K", k));
        n->set_attr(ir::Attribute::make_int("N", cols));
        n->set_attr(ir::Attribute::make_int("bits", options.bits));
        n->set_attr(ir::Attribute::make_int("block_size", block));
        model.set_opset_version(std::string(ir::kMicrosoftDomain), 1);
      }
      ir::Value* data = nullptr;
      if (nbits) {
        // the node was rewritten in place above
      } else if (options.bits == 4) {
        const std::vector<uint8_t> packed = pack_int4(q.values);
        data = g.add_initializer(ir::make_tensor(ir::unique_name(g, base + "_int4"), ir::DataType::kInt4, {k, cols},
                                                 packed.data(), packed.size()));
      } else {
        data = g.add_initializer(ir::make_tensor(ir::unique_name(g, base + "_int8"), ir::DataType::kInt8, {k, cols},
                                                 q.values.data(), q.values.size()));
      }
      if (!nbits) {
        ir::Value* scale = add_float(g, base + "_scale", {blocks, cols}, q.scales);
        ir::Node* dq = g.add_node("DequantizeLinear", {data, scale}, {ir::unique_name(g, base + "_dequantized")}, "",
                                  ir::unique_name(g, base + "_DequantizeLinear"), n);
        dq->set_attr(ir::Attribute::make_int("axis", 0));
        dq->set_attr(ir::Attribute::make_int("block_size", block));
        dq->output(0)->type = n->input(1)->type;
        n->set_input(1, dq->output(0));
      }
      report.float_weight_bytes += stored_float_bytes(options, base, w->values.size());
      report.quantized_weight_bytes += static_cast<int64_t>((w->values.size() * static_cast<size_t>(options.bits) + 7) / 8 +
                                                            q.scales.size() * 4);
      NodeReport r;
      r.node = n->name;
      r.op_type = n->op_type;
      r.tensor = base;
      r.range_min = *std::min_element(w->values.begin(), w->values.end());
      r.range_max = *std::max_element(w->values.begin(), w->values.end());
      r.scale = *std::max_element(q.scales.begin(), q.scales.end());
      r.sqnr_db = q.sqnr_db;
      // The MatMul keeps its output: the quantized model's value stands for the float one.
      r.output = r.dequantized = n->output(0)->name();
      report.nodes.push_back(r);
      ++report.quantized_nodes;
    }
  });
  passes::OptimizeOptions cleanup;
  cleanup.only = {"eliminate_dead_code"};
  passes::optimize(model, cleanup);
}

}  // namespace

QuantizeReport quantize_weight_only(ir::Model& model, const QuantizeOptions& options, const SampleSource& samples) {
  if (options.bits != 4 && options.bits != 8) throw_usage_error({"bits", ""}, "must be 4 or 8");
  if (options.block_size < 16 || (options.block_size & (options.block_size - 1)) != 0)
    throw_usage_error({"block_size", ""}, "must be a power of two, at least 16");
  validate_selection(model, options);
  QuantizeReport report;
  // Blocked DequantizeLinear and int4 are opset 21; MatMulNBits needs no particular opset.
  if (options.format != Format::kMatMulNBits) ensure_opset(model, 21, report);
  const References references = optional_references(model, samples, options, report);
  const bool measured = references.samples() > 0;
  auto attempt = [&](const std::vector<std::string>& excluded, const ir::Progress& progress) {
    QuantizeOptions o = options;
    o.exclude_tensors.insert(o.exclude_tensors.end(), excluded.begin(), excluded.end());
    auto work = std::make_unique<ir::Model>(!measured ? std::move(model) : copy_model(model));
    QuantizeReport r = report;
    rewrite_weight_only(*work, o, r);
    if (measured) measure_errors(model, *work, references, samples, r, o.accuracy_outputs, progress);
    return std::make_pair(std::move(work), std::move(r));
  };
  // Measured (on samples, or random ones), the MatMuls whose weights do the most harm stay float
  // until the outputs reach the target, as dynamic mode's do.
  auto best = quantize_with_exclusions(options, attempt);
  if (!best.first) return best.second;  // nothing reached the target: the model stays as it was
  model = std::move(*best.first);
  return best.second;
}

}  // namespace onnxtool::quant
