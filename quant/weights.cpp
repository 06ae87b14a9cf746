// Weight quantization.
#include "quant/weights.h"

#include <algorithm>
#include <cmath>

#include "ir/graph_util.h"
#include "ir/tensor.h"
#include "runner/thread_pool.h"

namespace onnxtool::quant {

ir::Value* add_float(ir::Graph& graph, const std::string& base, std::vector<int64_t> dims, const std::vector<float>& values) {
  return graph.add_initializer(ir::make_tensor(ir::unique_name(graph, base), ir::DataType::kFloat, std::move(dims),
                                               values.data(), values.size() * sizeof(float)));
}

ir::Value* add_int32(ir::Graph& graph, const std::string& base, std::vector<int64_t> dims, const std::vector<int32_t>& values) {
  return graph.add_initializer(ir::make_tensor(ir::unique_name(graph, base), ir::DataType::kInt32, std::move(dims),
                                               values.data(), values.size() * sizeof(int32_t)));
}

QuantizedWeight quantize_weight(ir::Graph& graph, const std::string& base, const std::vector<double>& values,
                                const std::vector<int64_t>& dims, int64_t axis, QuantType type, const ParamOptions& options) {
  QuantizedWeight w;
  w.axis = axis;
  const int64_t channels = axis >= 0 ? dims[static_cast<size_t>(axis)] : 1;
  int64_t inner = 1;
  if (axis >= 0)
    for (size_t i = static_cast<size_t>(axis) + 1; i < dims.size(); ++i) inner *= dims[i];
  // Element i is in channel (i / inner) % channels: the values go by runs of `inner` of one
  // channel (no division per element: on a 44M-weight model they were most of quantizing); per
  // tensor, by runs of 2^16.
  const size_t run = axis >= 0 ? static_cast<size_t>(inner) : std::min(values.size(), size_t{1} << 16);
  const auto for_runs = [&](const auto& fn) {
    for (size_t start = 0, r = 0; start < values.size(); start += run, ++r)
      fn(static_cast<size_t>(axis >= 0 ? static_cast<int64_t>(r) % channels : 0), start, std::min(values.size(), start + run));
  };
  std::vector<double> lo(static_cast<size_t>(channels), 0.0), hi(static_cast<size_t>(channels), 0.0);
  for_runs([&](size_t c, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i)
      if (std::isfinite(values[i])) {
        lo[c] = std::min(lo[c], values[i]);
        hi[c] = std::max(hi[c], values[i]);
      }
  });
  ParamOptions o = options;
  o.symmetric = true;
  int32_t qmin, qmax;
  integer_range(type, o, qmin, qmax);
  std::vector<QuantParams> params;
  for (int64_t c = 0; c < channels; ++c) {
    params.push_back(compute_params(lo[static_cast<size_t>(c)], hi[static_cast<size_t>(c)], type, o));
    w.scales.push_back(params.back().scale);
    w.zero_points.push_back(params.back().zero_point);
  }
  // Each element on its own: in parallel for large weights (the same bytes whatever the split).
  std::vector<uint8_t> q(values.size());
  const auto runs = static_cast<int64_t>((values.size() + run - 1) / run);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / static_cast<int64_t>(std::max<size_t>(run, 1)));
  runner::parallel_ranges(runs, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const QuantParams& p = params[static_cast<size_t>(axis >= 0 ? r % channels : 0)];
      const size_t begin = static_cast<size_t>(r) * run, end = std::min(values.size(), begin + run);
      for (size_t i = begin; i < end; ++i) {
        const double v = std::isfinite(values[i]) ? values[i] : 0.0;
        const double x = std::clamp(round_half_even(v / p.scale) + p.zero_point, static_cast<double>(qmin), static_cast<double>(qmax));
        q[i] = type == QuantType::kInt8 ? static_cast<uint8_t>(static_cast<int8_t>(x)) : static_cast<uint8_t>(x);
      }
    }
  });
  const ir::DataType dt = data_type_of(type);
  w.data = graph.add_initializer(ir::make_tensor(ir::unique_name(graph, base + "_quantized"), dt, dims, q.data(), q.size()));
  const std::vector<int64_t> pdims = axis >= 0 ? std::vector<int64_t>{channels} : std::vector<int64_t>{};
  w.scale = add_float(graph, base + "_scale", pdims, w.scales);
  std::vector<uint8_t> zp;
  for (int32_t z : w.zero_points) zp.push_back(type == QuantType::kInt8 ? static_cast<uint8_t>(static_cast<int8_t>(z)) : static_cast<uint8_t>(z));
  w.zero_point = graph.add_initializer(ir::make_tensor(ir::unique_name(graph, base + "_zero_point"), dt, pdims, zp.data(), zp.size()));
  return w;
}

std::optional<ir::FloatConstant> quantizable_weight(const ir::Model& model, const ir::Value* v, size_t min_rank,
                                                        size_t max_rank) {
  auto w = ir::float_constant(model, v);
  if (!w || w->type != ir::DataType::kFloat || w->values.empty() || w->dims.size() < min_rank || w->dims.size() > max_rank)
    return std::nullopt;
  return w;
}

}  // namespace onnxtool::quant
