// The opset adapters: one row per operator and version boundary whose change the generic rule of
// convert/version_converter.cpp does not cover (an attribute that became an input, a semantic
// change, a renamed op). Each adapter rewrites the node in place and may add initializers and
// nodes named after it.
#include "convert/opset_adapters.h"

#include <algorithm>
#include <limits>

#include "convert/adapter_context.h"
#include "ir/error.h"
#include "ir/graph_util.h"

namespace onnxtool::convert {

namespace {

using ir::Attribute;
using ir::DataType;
using ir::Graph;
using ir::Node;
using ir::Value;

/// Refuses an `axis` attribute outside [-rank, rank) when the rank is known (the model is
/// invalid: converting it would hide that or index past the input's dims).
void check_axis(const Node& n, int64_t axis, std::optional<size_t> rank) {
  if (!rank) return;
  const auto r = static_cast<int64_t>(*rank);
  if (axis < -r || axis >= r)
    throw Error(ErrorKind::kInput, n.describe() + ": axis " + std::to_string(axis) +
                                       " is out of range for an input of rank " + std::to_string(r));
}

/// Drops every input but the data input, once the older version's attributes hold the rest.
void keep_first_input(Node& n) {
  while (n.inputs().size() > 1) n.remove_input(n.inputs().size() - 1);
}

/// The input type of a scalar that takes an attribute's place (float when unknown).
DataType scalar_type(const Node& n) {
  return elem_type(n.input(0)) == DataType::kUndefined ? DataType::kFloat : elem_type(n.input(0));
}

/// Going up: the ints attribute `name` becomes input 1 of the same name.
void ints_attr_to_input(AdapterContext& cx, Graph& g, Node& n, const char* name) {
  if (const Attribute* a = n.attr(name)) {
    put_input(n, 1, cx.add_ints(g, n, name, a->ints));
    n.remove_attr(name);
  }
}

/// Going down: input 1 becomes the ints attribute `name` again.
void input_to_ints_attr(AdapterContext& cx, Node& n, const char* name) {
  if (n.input(1)) n.set_attr(Attribute::make_ints(name, cx.required_ints(n, 1, name)));
  keep_first_input(n);
}

void axes_up(AdapterContext& cx, Graph& g, Node& n, int) { ints_attr_to_input(cx, g, n, "axes"); }
void axes_down(AdapterContext& cx, Graph&, Node& n, int) { input_to_ints_attr(cx, n, "axes"); }

// ---- rows, by operator

void upsample_up_9(AdapterContext& cx, Graph& g, Node& n, int) {
  if (const Attribute* a = n.attr("scales")) {
    std::vector<double> s(a->floats.begin(), a->floats.end());
    n.remove_attr("scales");
    put_input(n, 1, cx.add_floats(g, n, "scales", s));
  }
}
void upsample_down_9(AdapterContext& cx, Graph&, Node& n, int) {
  const auto s = cx.required_floats(n, 1, "scales");
  n.set_attr(Attribute::make_floats("scales", std::vector<float>(s.begin(), s.end())));
  n.remove_input(1);
}

void upsample_up_10(AdapterContext&, Graph&, Node& n, int) { n.op_type = "Resize"; }
/// Upsample only enlarges: a Resize-10 that shrinks (a scale below 1) has no Upsample-9.
void resize_down_10(AdapterContext& cx, Graph&, Node& n, int) {
  if (const auto scales = cx.const_values(n.input(1)); scales && scales->floats)
    for (double s : *scales->floats)
      if (s < 1) no_equivalent(n, 9, "Upsample-9 scales must be >= 1; downsampling needs Resize-10");
  n.op_type = "Upsample";
}

/// Resize-10 samples like Upsample: asymmetric coordinates, nearest rounds down.
void resize_up_11(AdapterContext& cx, Graph& g, Node& n, int) {
  Value* scales = n.input(1);
  put_input(n, 1, cx.add_floats(g, n, "roi", {}));
  put_input(n, 2, scales);
  n.set_attr(Attribute::make_string("coordinate_transformation_mode", "asymmetric"));
  if (n.attr_string("mode", "nearest") == "nearest") n.set_attr(Attribute::make_string("nearest_mode", "floor"));
}
/// Resize-11 -> Resize-10: only the asymmetric sampling of Resize-10 has an equivalent.
void resize_down_11(AdapterContext& cx, Graph& g, Node& n, int) {
  const std::string mode = n.attr_string("mode", "nearest");
  if (mode == "cubic") no_equivalent(n, cx.to(), "cubic mode needs opset 11");
  if (n.attr_string("coordinate_transformation_mode", "half_pixel") != "asymmetric")
    no_equivalent(n, cx.to(), "Resize-10 samples with asymmetric coordinates only");
  if (mode == "nearest" && n.attr_string("nearest_mode", "round_prefer_floor") != "floor")
    no_equivalent(n, cx.to(), "Resize-10 rounds nearest down (nearest_mode floor) only");
  if (n.attr_int("exclude_outside", 0) != 0) no_equivalent(n, cx.to(), "exclude_outside needs opset 11");
  std::vector<double> scales;
  if (n.input(2) && !cx.required_floats(n, 2, "scales").empty()) {
    scales = cx.required_floats(n, 2, "scales");
  } else {
    const auto sizes = cx.required_ints(n, 3, "sizes");
    for (size_t i = 0; i < sizes.size(); ++i) {
      const auto d = dim_of(n.input(0), i);
      if (!d || *d == 0) no_equivalent(n, cx.to(), "sizes given and the input shape is unknown");
      scales.push_back(static_cast<double>(sizes[i]) / static_cast<double>(*d));
    }
  }
  for (const char* a : {"coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                        "extrapolation_value"})
    n.remove_attr(a);
  Value* x = n.input(0);
  keep_first_input(n);
  n.set_input(0, x);
  put_input(n, 1, cx.add_floats(g, n, "scales", scales));
}

/// roi and scales are required inputs of Resize-11 (they may be empty tensors).
void resize_down_13(AdapterContext& cx, Graph& g, Node& n, int) {
  if (!n.input(1)) put_input(n, 1, cx.add_floats(g, n, "roi", {}));
  if (!n.input(2)) put_input(n, 2, cx.add_floats(g, n, "scales", {}));
}

void resize_down_19(AdapterContext& cx, Graph&, Node& n, int) {
  if (n.attr_string("coordinate_transformation_mode", "") == "half_pixel_symmetric")
    no_equivalent(n, cx.to(), "coordinate_transformation_mode half_pixel_symmetric was added in opset 19");
}

void slice_up_10(AdapterContext& cx, Graph& g, Node& n, int) {
  const auto starts = n.attr_ints("starts"), ends = n.attr_ints("ends");
  const Attribute* axes = n.attr("axes");
  put_input(n, 1, cx.add_ints(g, n, "starts", starts));
  put_input(n, 2, cx.add_ints(g, n, "ends", ends));
  if (axes) put_input(n, 3, cx.add_ints(g, n, "axes", axes->ints));
  n.remove_attr("starts");
  n.remove_attr("ends");
  n.remove_attr("axes");
}
void slice_down_10(AdapterContext& cx, Graph&, Node& n, int) {
  if (n.input(4)) {
    for (int64_t s : cx.required_ints(n, 4, "steps"))
      if (s != 1) no_equivalent(n, cx.to(), "steps other than 1 need opset 10");
  }
  n.set_attr(Attribute::make_ints("starts", cx.required_ints(n, 1, "starts")));
  n.set_attr(Attribute::make_ints("ends", cx.required_ints(n, 2, "ends")));
  if (n.input(3)) {
    auto axes = cx.required_ints(n, 3, "axes");
    for (int64_t& x : axes) x = cx.non_negative_axis(n, x, rank_of(n.input(0)));
    n.set_attr(Attribute::make_ints("axes", axes));
  }
  keep_first_input(n);
}

void topk_up_10(AdapterContext& cx, Graph& g, Node& n, int) {
  put_input(n, 1, cx.add_ints(g, n, "k", {n.attr_int("k", 0)}));
  n.remove_attr("k");
}
void topk_down_10(AdapterContext& cx, Graph&, Node& n, int) {
  const auto k = cx.required_ints(n, 1, "K");
  if (k.size() != 1) no_equivalent(n, cx.to(), "K must hold one value");
  n.set_attr(Attribute::make_int("k", k[0]));
  n.remove_input(1);
}

void clip_up_11(AdapterContext& cx, Graph& g, Node& n, int) {
  const DataType t = scalar_type(n);
  const Attribute* lo = n.attr("min");
  const Attribute* hi = n.attr("max");
  if (lo) put_input(n, 1, cx.add_scalar(g, n, "min", t, lo->f));
  if (hi) put_input(n, 2, cx.add_scalar(g, n, "max", t, hi->f));
  n.remove_attr("min");
  n.remove_attr("max");
}
void clip_down_11(AdapterContext& cx, Graph&, Node& n, int) {
  if (n.input(1)) n.set_attr(Attribute::make_float("min", static_cast<float>(cx.required_floats(n, 1, "min").at(0))));
  if (n.input(2)) n.set_attr(Attribute::make_float("max", static_cast<float>(cx.required_floats(n, 2, "max").at(0))));
  keep_first_input(n);
}

void pad_up_11(AdapterContext& cx, Graph& g, Node& n, int) {
  put_input(n, 1, cx.add_ints(g, n, "pads", n.attr_ints("pads")));
  if (const Attribute* v = n.attr("value"); v && v->f != 0.0f)
    put_input(n, 2, cx.add_scalar(g, n, "constant_value", scalar_type(n), v->f));
  n.remove_attr("pads");
  n.remove_attr("value");
}
void pad_down_11(AdapterContext& cx, Graph&, Node& n, int) {
  n.set_attr(Attribute::make_ints("pads", cx.required_ints(n, 1, "pads")));
  if (n.input(2)) {
    const auto v = cx.required_floats(n, 2, "constant_value");
    if (!v.empty() && v[0] != 0) n.set_attr(Attribute::make_float("value", static_cast<float>(v[0])));
  }
  keep_first_input(n);
}

/// Pad-18's axes input folded into a full pads list.
void pad_down_18(AdapterContext& cx, Graph& g, Node& n, int) {
  if (!n.input(3)) return;
  const auto r = rank_of(n.input(0));
  if (!r) no_equivalent(n, cx.to(), "the axes input needs a known input rank");
  auto axes = cx.required_ints(n, 3, "axes");
  const auto pads = cx.required_ints(n, 1, "pads");
  if (pads.size() != 2 * axes.size()) no_equivalent(n, cx.to(), "pads does not match axes");
  std::vector<int64_t> full(2 * *r, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    check_axis(n, axes[i], r);
    const int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(*r) : axes[i];
    full[static_cast<size_t>(a)] = pads[i];
    full[static_cast<size_t>(a) + *r] = pads[i + axes.size()];
  }
  n.set_input(1, cx.add_ints(g, n, "pads", full));
  n.remove_input(3);
  trim_inputs(n);
}

void pad_down_19(AdapterContext& cx, Graph&, Node& n, int) {
  if (n.attr_string("mode", "constant") == "wrap") no_equivalent(n, cx.to(), "mode 'wrap' was added in opset 19");
}

void reduce_down(AdapterContext& cx, Graph&, Node& n, int) {
  const bool noop = n.attr_int("noop_with_empty_axes", 0) != 0;
  std::vector<int64_t> axes;
  if (n.input(1)) axes = cx.required_ints(n, 1, "axes");
  if (noop && axes.empty()) no_equivalent(n, cx.to(), "noop_with_empty_axes=1 with no axes");
  n.remove_attr("noop_with_empty_axes");
  if (!axes.empty()) n.set_attr(Attribute::make_ints("axes", axes));
  keep_first_input(n);
}

void split_up_13(AdapterContext& cx, Graph& g, Node& n, int) { ints_attr_to_input(cx, g, n, "split"); }
void split_down_13(AdapterContext& cx, Graph&, Node& n, int) { input_to_ints_attr(cx, n, "split"); }

/// Split-18 needs either the split input or num_outputs.
void split_up_18(AdapterContext&, Graph&, Node& n, int) {
  if (!n.input(1)) n.set_attr(Attribute::make_int("num_outputs", static_cast<int64_t>(n.outputs().size())));
}
void split_down_18(AdapterContext& cx, Graph& g, Node& n, int) {
  const Attribute* a = n.attr("num_outputs");
  if (!a) return;
  const int64_t parts = a->i;
  n.remove_attr("num_outputs");
  const auto r = rank_of(n.input(0));
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0 && r) axis += static_cast<int64_t>(*r);
  const auto d = axis >= 0 ? dim_of(n.input(0), static_cast<size_t>(axis)) : std::nullopt;
  if (d && *d % parts == 0) return;  // equal parts: Split-13 without split does the same
  if (!d) no_equivalent(n, cx.to(), "num_outputs with an unknown split dimension");
  // Uneven: every part ceil(d / parts), the last one what remains.
  const int64_t chunk = (*d + parts - 1) / parts;
  std::vector<int64_t> split;
  for (int64_t left = *d; left > 0; left -= chunk) split.push_back(std::min(chunk, left));
  put_input(n, 1, cx.add_ints(g, n, "split", split));
}

/// The mask output is T before 10 and bool from 10 on: refused when read (or a graph output);
/// otherwise it loses its inferred type, which inference gives it again at the target.
void retype_unread_mask(AdapterContext& cx, Node& n) {
  Value* mask = n.outputs().size() > 1 ? n.output(1) : nullptr;
  if (!mask) return;
  if (!mask->uses().empty() || mask->is_graph_output())
    no_equivalent(n, cx.to(), "its mask output changes type between T and bool at opset 10 and is used");
  mask->type = ir::TypeInfo{};
}
void dropout_up_10(AdapterContext& cx, Graph&, Node& n, int) { retype_unread_mask(cx, n); }
void dropout_down_10(AdapterContext& cx, Graph&, Node& n, int) { retype_unread_mask(cx, n); }

/// Inference: ratio does not matter; without training_mode Dropout-12 is the identity too.
void dropout_up_12(AdapterContext&, Graph&, Node& n, int) { n.remove_attr("ratio"); }
void dropout_down_12(AdapterContext& cx, Graph&, Node& n, int) {
  if (n.input(2)) {
    const auto t = cx.const_values(n.input(2));
    if (!t || (t->size() > 0 && !t->all_equal(0))) no_equivalent(n, cx.to(), "training_mode must be a constant false");
  }
  if (n.input(1)) {
    const auto r = cx.required_floats(n, 1, "ratio");
    if (!r.empty()) n.set_attr(Attribute::make_float("ratio", static_cast<float>(r[0])));
  }
  keep_first_input(n);
  n.remove_attr("seed");  // random dropout only happens in training mode, which is not allowed here
  // From 12 on the inference-mode mask is all true; before, runtimes differ on what it holds.
  if (n.outputs().size() > 1 && n.output(1) && (!n.output(1)->uses().empty() || n.output(1)->is_graph_output()))
    no_equivalent(n, cx.to(),
                  "its mask output is used, and before opset 12 its inference-mode value is not defined as all true");
}

void batch_norm_up_9(AdapterContext& cx, Graph&, Node& n, int) {
  if (n.attr_int("spatial", 1) != 1)
    no_equivalent(n, cx.to(), "spatial=0 (per-activation statistics) was removed in opset 9");
  n.remove_attr("spatial");
}
void batch_norm_up_14(AdapterContext& cx, Graph&, Node& n, int) {
  for (size_t i = 1; i < n.outputs().size(); ++i)
    if (n.output(i) && !n.output(i)->uses().empty())
      no_equivalent(n, cx.to(), "its training outputs (mean, var, saved_mean, saved_var) are used");
}
void batch_norm_down_14(AdapterContext& cx, Graph&, Node& n, int) {
  if (n.attr_int("training_mode", 0) != 0) no_equivalent(n, cx.to(), "training_mode=1");
}

/// Softmax before 13 flattens the input to 2-D at `axis`; from 13 on it works along one axis.
void softmax_up(AdapterContext& cx, Graph& g, Node& n, int) {
  const auto r = rank_of(n.input(0));
  int64_t axis = n.attr_int("axis", 1);
  check_axis(n, axis, r);
  if (r && axis < 0) axis += static_cast<int64_t>(*r);
  if (r && axis == static_cast<int64_t>(*r) - 1) {
    n.set_attr(Attribute::make_int("axis", -1));
    return;
  }
  // Flatten to [outer, inner], normalize the last axis, reshape back to the input's shape.
  Value* x = n.input(0);
  Value* y = n.output(0);
  const std::string name = y->name();
  const std::string b = base(n);
  Node* shape =
      g.add_node("Shape", {x}, {ir::unique_name(g, b + "_shape")}, "", cx.node_name(b + "_Shape"), &n);
  Node* flat =
      g.add_node("Flatten", {x}, {ir::unique_name(g, b + "_flat")}, "", cx.node_name(b + "_Flatten"), &n);
  flat->set_attr(Attribute::make_int("axis", n.attr_int("axis", 1)));
  n.set_input(0, flat->output(0));
  n.set_attr(Attribute::make_int("axis", -1));
  g.rename(y, ir::unique_name(g, name + "_2d"));
  y->type = ir::TypeInfo{};  // now the 2-D result; inference sets its type
  Node* reshape = g.add_node("Reshape", {y, shape->output(0)}, {name}, "", cx.node_name(b + "_Reshape"),
                             next_node(g, n));
  for (size_t i = 0; i < g.outputs.size(); ++i)
    if (g.outputs[i].value == y) g.set_output_value(i, reshape->output(0));
  g.replace_all_uses(y, reshape->output(0));
  reshape->set_input(0, y);
  cx.report().added_nodes += 3;
}

/// Softmax-13 along one axis: the last axis is the same before 13; another axis is moved last.
void softmax_down(AdapterContext& cx, Graph& g, Node& n, int) {
  const auto r = rank_of(n.input(0));
  int64_t axis = n.attr_int("axis", -1);
  check_axis(n, axis, r);
  if (axis < 0 && r) axis += static_cast<int64_t>(*r);
  if (axis < 0) {
    // axis -1 of unknown rank: coercing at -1 to 2-D is the same as the last axis (opset 11+).
    if (cx.to() >= 11) {
      n.set_attr(Attribute::make_int("axis", -1));
      return;
    }
    no_equivalent(n, cx.to(), "a negative axis needs opset 11 and the input rank is unknown");
  }
  if (!r) no_equivalent(n, cx.to(), "axis " + std::to_string(axis) + " with an unknown input rank");
  const int64_t last = static_cast<int64_t>(*r) - 1;
  n.set_attr(Attribute::make_int("axis", last));
  if (axis == last) return;
  std::vector<int64_t> perm(*r);
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[static_cast<size_t>(axis)], perm[static_cast<size_t>(last)]);
  const std::string b = base(n);
  Node* t1 = g.add_node("Transpose", {n.input(0)}, {ir::unique_name(g, b + "_moved")}, "",
                        cx.node_name(b + "_Transpose"), &n);
  t1->set_attr(Attribute::make_ints("perm", perm));
  n.set_input(0, t1->output(0));
  Value* y = n.output(0);
  const std::string name = y->name();
  g.rename(y, ir::unique_name(g, name + "_moved"));
  y->type = ir::TypeInfo{};  // now the transposed result
  Node* t2 = g.add_node("Transpose", {y}, {name}, "", cx.node_name(b + "_Transpose_back"), next_node(g, n));
  t2->set_attr(Attribute::make_ints("perm", perm));
  for (size_t i = 0; i < g.outputs.size(); ++i)
    if (g.outputs[i].value == y) g.set_output_value(i, t2->output(0));
  g.replace_all_uses(y, t2->output(0));
  t2->set_input(0, y);
  cx.report().added_nodes += 2;
}

/// Negative axes do not exist below 11.
void negative_axes_down(AdapterContext& cx, Graph&, Node& n, int) {
  const auto in_rank = rank_of(n.input(0));
  if (Attribute* a = n.attr("axis"); a && a->i < 0) a->i = cx.non_negative_axis(n, a->i, in_rank);
  if (Attribute* a = n.attr("axes")) {
    std::optional<size_t> r = in_rank;
    if (n.op_type == "Unsqueeze") r = rank_of(n.output(0));
    for (int64_t& x : a->ints) x = cx.non_negative_axis(n, x, r);
  }
}

void scatter_up_11(AdapterContext&, Graph&, Node& n, int) { n.op_type = "ScatterElements"; }
void scatter_elements_down_11(AdapterContext&, Graph&, Node& n, int) { n.op_type = "Scatter"; }

void scan_up_9(AdapterContext& cx, Graph&, Node& n, int) {
  no_equivalent(n, cx.to(), "Scan-8 (batched, with sequence_lens) has no direct Scan-9 form");
}
void scan_down_9(AdapterContext& cx, Graph&, Node& n, int) {
  no_equivalent(n, cx.to(), "Scan-9 has no Scan-8 form (batched, with sequence_lens)");
}

/// Before 16 RoiAlign did not shift by half a pixel; 16's default does.
void roi_align_up_16(AdapterContext&, Graph&, Node& n, int) {
  n.set_attr(Attribute::make_string("coordinate_transformation_mode", "output_half_pixel"));
}
void roi_align_down_16(AdapterContext& cx, Graph&, Node& n, int) {
  if (n.attr_string("coordinate_transformation_mode", "half_pixel") != "output_half_pixel")
    no_equivalent(n, cx.to(), "coordinate_transformation_mode half_pixel needs opset 16");
  n.remove_attr("coordinate_transformation_mode");
}

void grid_sample_up_20(AdapterContext&, Graph&, Node& n, int) {
  if (const Attribute* a = n.attr("mode")) {
    if (a->s == "bilinear") n.set_attr(Attribute::make_string("mode", "linear"));
    if (a->s == "bicubic") n.set_attr(Attribute::make_string("mode", "cubic"));
  }
}
void grid_sample_down_20(AdapterContext& cx, Graph&, Node& n, int) {
  if (rank_of(n.input(0)).value_or(4) != 4) no_equivalent(n, cx.to(), "GridSample below opset 20 is 2-D only");
  const std::string mode = n.attr_string("mode", "linear");
  if (mode == "linear") n.set_attr(Attribute::make_string("mode", "bilinear"));
  if (mode == "cubic") n.set_attr(Attribute::make_string("mode", "bicubic"));
}

void dft_up_20(AdapterContext& cx, Graph& g, Node& n, int) {
  const int64_t axis = n.attr_int("axis", 1);
  if (!n.input(1)) put_input(n, 1, nullptr);
  put_input(n, 2, cx.add_ints(g, n, "axis", {axis}, true));
  n.remove_attr("axis");
}
void dft_down_20(AdapterContext& cx, Graph&, Node& n, int) {
  if (n.input(2)) {
    const auto axis = cx.required_ints(n, 2, "axis");
    if (axis.size() != 1) no_equivalent(n, cx.to(), "axis must hold one value");
    int64_t a = axis[0];
    if (a < 0) {
      const auto r = rank_of(n.input(0));
      if (!r) no_equivalent(n, cx.to(), "a negative axis needs a known input rank");
      a += static_cast<int64_t>(*r);
    }
    n.set_attr(Attribute::make_int("axis", a));
    n.remove_input(2);
  } else {
    n.set_attr(Attribute::make_int("axis", -2 + static_cast<int64_t>(rank_of(n.input(0)).value_or(3))));
  }
}

void gemm_down_11(AdapterContext& cx, Graph& g, Node& n, int) {
  if (!n.input(2)) put_input(n, 2, cx.add_scalar(g, n, "C", scalar_type(n), 0));
}

/// Constant-12's value_* attributes as a value tensor.
void constant_down_12(AdapterContext& cx, Graph&, Node& n, int) {
  if (n.attributes.size() != 1) return;
  const Attribute& a = n.attributes[0];
  ir::Tensor t;
  if (a.name == "value_float") {
    t = ir::make_tensor("", DataType::kFloat, {}, &a.f, sizeof(float));
  } else if (a.name == "value_floats") {
    t = ir::make_tensor("", DataType::kFloat, {static_cast<int64_t>(a.floats.size())}, a.floats.data(),
                        a.floats.size() * sizeof(float));
  } else if (a.name == "value_int") {
    t = ir::make_tensor("", DataType::kInt64, {}, &a.i, sizeof(int64_t));
  } else if (a.name == "value_ints") {
    t = ir::make_tensor("", DataType::kInt64, {static_cast<int64_t>(a.ints.size())}, a.ints.data(),
                        a.ints.size() * sizeof(int64_t));
  } else if (a.name == "value_string" || a.name == "value_strings") {
    no_equivalent(n, cx.to(), "string constants need opset 12");
  } else {
    return;
  }
  n.attributes.clear();  // `a` dangles from here on
  n.set_attr(Attribute::make_tensor("value", std::move(t)));
}

/// Shape-15's start/end as a Slice of the full shape.
void shape_down_15(AdapterContext& cx, Graph& g, Node& n, int) {
  const Attribute* s = n.attr("start");
  const Attribute* e = n.attr("end");
  if (!s && !e) return;
  const int64_t start = s ? s->i : 0;
  const int64_t end = e ? e->i : std::numeric_limits<int64_t>::max();
  n.remove_attr("start");
  n.remove_attr("end");
  Value* out = n.output(0);
  const std::string name = out->name();
  g.rename(out, ir::unique_name(g, name + "_full"));
  out->type = ir::TypeInfo{};  // now the full shape
  const Node* next = next_node(g, n);
  std::vector<Value*> inputs = {out};
  Node* slice = nullptr;
  if (cx.to() >= 10) {
    inputs.push_back(cx.add_ints(g, n, "start", {start}));
    inputs.push_back(cx.add_ints(g, n, "end", {end}));
    inputs.push_back(cx.add_ints(g, n, "axes", {0}));
    slice = g.add_node("Slice", inputs, {name}, "", cx.node_name(base(n) + "_Slice"), next);
  } else {
    if (start < 0 || end < 0) no_equivalent(n, cx.to(), "negative start/end need Slice with inputs (opset 10)");
    slice = g.add_node("Slice", inputs, {name}, "", cx.node_name(base(n) + "_Slice"), next);
    slice->set_attr(Attribute::make_ints("starts", {start}));
    slice->set_attr(Attribute::make_ints("ends", {end}));
    slice->set_attr(Attribute::make_ints("axes", {0}));
  }
  // The graph output (if any) follows the name.
  for (size_t i = 0; i < g.outputs.size(); ++i)
    if (g.outputs[i].value == out) g.set_output_value(i, slice->output(0));
  g.replace_all_uses(out, slice->output(0));
  slice->set_input(0, out);
  ++cx.report().added_nodes;
}

void quantize_linear_down_13(AdapterContext& cx, Graph&, Node& n, int) {
  const Value* scale = n.input(1);
  if (scale && scale->type.shape && !scale->type.shape->dims.empty())
    no_equivalent(n, cx.to(), "per-axis scales need opset 13");
}

void optional_has_element_down_18(AdapterContext& cx, Graph&, Node& n, int) {
  if (!n.input(0)) no_equivalent(n, cx.to(), "an omitted input needs opset 18");
}

// ---- broadcasting before opset 8

/// Two dims known to be equal: the same number or the same symbol.
bool same_dim(const ir::Dim& a, const ir::Dim& b) {
  if (a.is_static() && b.is_static()) return a.value == b.value;
  return a.kind == ir::Dim::Kind::kParam && b.kind == ir::Dim::Kind::kParam && a.param == b.param;
}

/// Whether `v` has exactly the dims `dims` (same rank, each dim known equal).
bool has_dims(const Value* v, const std::vector<ir::Dim>& dims) {
  if (!rank_of(v) || *rank_of(v) != dims.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!same_dim(v->type.shape->dims[i], dims[i])) return false;
  return true;
}

/// Input `index` of `n` broadcast to the dims `out` without Expand (opset 8): Unsqueeze to the
/// output's rank, then Tile. The repeats are a constant when every dim they stretch is static;
/// otherwise `full`, an input of the output's shape, gives them at run time as Shape(full)
/// divided by the input's dims, which must then be static.
Value* broadcast_by_tile(AdapterContext& cx, Graph& g, Node& n, size_t index, const std::vector<ir::Dim>& out,
                         Value* full) {
  Value* x = n.input(index);
  const std::string which = "input " + std::to_string(index);
  const auto rank = rank_of(x);
  if (!rank) no_equivalent(n, cx.to(), which + " has an unknown rank, so its broadcast cannot be written out");
  if (*rank > out.size())
    no_equivalent(n, cx.to(), which + " has " + std::to_string(*rank) + " dims, more than the output's declared " +
                                std::to_string(out.size()) + ", so its broadcast cannot be written out");
  const size_t lead = out.size() - *rank;
  std::vector<ir::Dim> dims(lead, ir::Dim::of(1));
  dims.insert(dims.end(), x->type.shape->dims.begin(), x->type.shape->dims.end());
  std::vector<int64_t> repeats;
  bool at_run_time = false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (same_dim(dims[i], out[i])) {
      repeats.push_back(1);
    } else if (dims[i].is_static() && dims[i].value == 1 && out[i].is_static()) {
      repeats.push_back(out[i].value);
    } else if (dims[i].is_static() && dims[i].value == 1) {
      repeats.push_back(0);  // set at run time
      at_run_time = true;
    } else {
      no_equivalent(n, cx.to(), which + " dim " + std::to_string(i) + " (" + dims[i].to_string() +
                                  ") is not known to match the output's (" + out[i].to_string() + ")");
    }
  }
  const std::string stem = base(n) + "_" + which.substr(6);
  if (lead > 0) {
    std::vector<int64_t> axes(lead);
    for (size_t i = 0; i < lead; ++i) axes[i] = static_cast<int64_t>(i);
    Node* u = g.add_node("Unsqueeze", {x}, {ir::unique_name(g, stem + "_unsqueezed")}, "",
                         cx.node_name(stem + "_Unsqueeze"), &n);
    u->set_attr(Attribute::make_ints("axes", axes));
    u->output(0)->type = ir::TypeInfo::tensor(elem_type(x), ir::Shape{dims});
    x = u->output(0);
    ++cx.report().added_nodes;
  }
  Value* times = nullptr;
  if (!at_run_time && std::all_of(repeats.begin(), repeats.end(), [](int64_t r) { return r == 1; })) {
    return x;  // only a rank to add
  } else if (!at_run_time) {
    times = cx.add_ints(g, n, "repeats", repeats);
  } else {
    if (!full)
      no_equivalent(n, cx.to(), "no input has the output's shape " + ir::Shape{out}.to_string() +
                                  ", which is not static: the broadcast of " + which + " cannot be written out");
    std::vector<int64_t> divisors;
    for (const ir::Dim& d : dims) {
      if (!d.is_static())
        no_equivalent(n, cx.to(), which + " " + ir::Shape{dims}.to_string() +
                                    " is broadcast to a shape that is not static and is not static itself");
      divisors.push_back(std::max<int64_t>(d.value, 1));  // a 0 dim meets a 0 dim: 0 / 1 copies
    }
    Node* shape = g.add_node("Shape", {full}, {ir::unique_name(g, stem + "_full_shape")}, "",
                             cx.node_name(stem + "_Shape"), &n);
    Node* div = g.add_node("Div", {shape->output(0), cx.add_ints(g, n, "dims", divisors)},
                           {ir::unique_name(g, stem + "_repeats")}, "", cx.node_name(stem + "_Div"), &n);
    times = div->output(0);
    cx.report().added_nodes += 2;
  }
  Node* tile = g.add_node("Tile", {x, times}, {ir::unique_name(g, stem + "_broadcast")}, "",
                          cx.node_name(stem + "_Tile"), &n);
  tile->output(0)->type = ir::TypeInfo::tensor(elem_type(x), ir::Shape{out});
  ++cx.report().added_nodes;
  return tile->output(0);
}

/// Whether input `x` reaches the dims `out` by repeats known now: each of its dims (with leading
/// 1s to `out`'s rank) is known equal to out's, or a static 1 where out's is static.
bool static_repeats(const Value* x, const std::vector<ir::Dim>& out) {
  const auto rank = rank_of(x);
  if (!rank || *rank > out.size()) return false;
  const size_t lead = out.size() - *rank;
  for (size_t i = 0; i < out.size(); ++i) {
    const ir::Dim d = i < lead ? ir::Dim::of(1) : x->type.shape->dims[i - lead];
    if (!same_dim(d, out[i]) && !(d.is_static() && d.value == 1 && out[i].is_static())) return false;
  }
  return true;
}

/// Max, Min, Sum and Mean take inputs of one shape before opset 8: every input that is not of the
/// output's shape is broadcast explicitly. Those whose repeats are known go first, so that one of
/// them (an input that only lacked leading 1s) can give the others their repeats at run time.
void variadic_down_8(AdapterContext& cx, Graph& g, Node& n, int) {
  const Value* y = n.output(0);
  if (!rank_of(y)) no_equivalent(n, cx.to(), "its output rank is unknown, so its inputs' broadcast cannot be written out");
  const std::vector<ir::Dim> out = y->type.shape->dims;
  for (size_t i = 0; i < n.inputs().size(); ++i)
    if (n.input(i) && !has_dims(n.input(i), out) && static_repeats(n.input(i), out))
      n.set_input(i, broadcast_by_tile(cx, g, n, i, out, nullptr));
  Value* full = nullptr;
  for (Value* x : n.inputs())
    if (x && has_dims(x, out)) full = x;
  for (size_t i = 0; i < n.inputs().size(); ++i)
    if (n.input(i) && !has_dims(n.input(i), out)) n.set_input(i, broadcast_by_tile(cx, g, n, i, out, full));
}

// ---- types added to an op: the older version computes in a type that holds the values exactly

/// The type that holds every value of `t` exactly among the floating-point types the older
/// versions of the comparisons, Max, Min, Clip and Relu accept: double for integers of up to 32
/// bits; none for 64-bit integers.
std::optional<DataType> exact_in_double(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kUInt8:
    case DataType::kUInt16:
    case DataType::kUInt32: return DataType::kDouble;
    default: return std::nullopt;
  }
}

/// Runs `n` on its inputs cast to `wide`; output 0 is cast back to the inputs' type unless the op
/// gives bool. Constant scalars are written in `wide` instead of cast (Clip below 11 needs its
/// bounds as constants).
void compute_in(AdapterContext& cx, Graph& g, Node& n, DataType type, DataType wide) {
  for (size_t i = 0; i < n.inputs().size(); ++i) {
    Value* x = n.input(i);
    if (!x) continue;
    const auto values = cx.const_values(x);
    if (values && values->ints && values->ints->size() == 1 && rank_of(x) == size_t{0})
      n.set_input(i, cx.add_scalar(g, n, "input" + std::to_string(i), wide, static_cast<double>(values->ints->front())));
    else
      n.set_input(i, cx.add_cast(g, n, x, wide));
  }
  Value* y = n.output(0);
  if (elem_type(y) == DataType::kBool) return;
  const ir::TypeInfo narrow = y->type;
  Node* back = cx.add_after(g, n, 0, "Cast");
  back->set_attr(Attribute::make_int("to", static_cast<int64_t>(type)));
  back->output(0)->type = narrow;
  y->type = ir::TypeInfo::tensor(wide, narrow.is_tensor() ? narrow.shape : std::nullopt);
  ++cx.report().added_nodes;
}

/// An op that gained the integer types at `b`: integers of up to 32 bits go through double
/// (exact: double holds them all, and Max, Min, Clip, Relu and the comparisons of exact values
/// are exact); 64-bit integers have no such type below `b`.
void integers_through_double(AdapterContext& cx, Graph& g, Node& n, int b) {
  const DataType t = elem_type(n.input(0));
  if (!ir::is_integer_type(t)) return;  // allowed below b, or unknown (the checker judges the result)
  const auto wide = exact_in_double(t);
  if (!wide)
    no_equivalent(n, cx.to(), std::string(ir::data_type_name(t)) + " inputs need opset " + std::to_string(b) +
                                ": no type it accepts before holds every " + std::string(ir::data_type_name(t)) +
                                " value exactly");
  compute_in(cx, g, n, t, *wide);
}

/// Equal before 11 compares bool, int32 and int64 only: smaller integers go through int32,
/// uint32 through int64 (exact); floating-point inputs have no exact form (a comparison through
/// Less and Greater treats NaN as equal).
void equal_down_11(AdapterContext& cx, Graph& g, Node& n, int b) {
  const DataType t = elem_type(n.input(0));
  switch (t) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kUInt8:
    case DataType::kUInt16: compute_in(cx, g, n, t, DataType::kInt32); return;
    case DataType::kUInt32: compute_in(cx, g, n, t, DataType::kInt64); return;
    case DataType::kUndefined:
    case DataType::kBool:
    case DataType::kInt32:
    case DataType::kInt64: return;
    default:
      no_equivalent(n, cx.to(), "Equal on " + std::string(ir::data_type_name(t)) + " inputs needs opset " +
                                  std::to_string(b) + ": before it Equal compares bool and integers only");
  }
}

/// Constant before 9 holds floating-point tensors only: another tensor becomes an initializer of
/// the output's name (which the adapters of its readers then see as a constant), the node goes.
void constant_down_9(AdapterContext& cx, Graph& g, Node& n, int) {
  const Attribute* a = n.attr("value");
  if (!a || !a->t) return;
  const DataType t = a->t->type();
  if (t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kDouble) return;
  Value* out = n.output(0);
  ir::Tensor value = *a->t;
  value.name = out->name();
  g.rename(out, ir::unique_name(g, value.name + "_replaced"));
  Value* init = g.add_initializer(std::move(value));
  for (size_t i = 0; i < g.outputs.size(); ++i)
    if (g.outputs[i].value == out) g.set_output_value(i, init);
  g.replace_all_uses(out, init);
  cx.remove_after_walk(g, n);
  ++cx.report().added_nodes;
}

std::vector<OpsetAdapter> make_table() {
  std::vector<OpsetAdapter> rows = {
      {"BatchNormalization", 9, batch_norm_up_9, nullptr, "attribute spatial removed (spatial=1 kept its meaning)"},
      {"BatchNormalization", 14, batch_norm_up_14, batch_norm_down_14,
       "training_mode added; outputs other than Y are training-only (saved_mean/saved_var removed)"},
      {"Clip", 11, clip_up_11, clip_down_11, "min/max moved from float attributes to optional inputs"},
      {"Clip", 12, nullptr, integers_through_double, "integer types added"},
      {"Constant", 9, nullptr, constant_down_9, "integer and bool tensors added (before: floating-point only)"},
      {"Constant", 12, nullptr, constant_down_12, "value_float(s)/value_int(s)/value_string(s) attributes added"},
      {"DFT", 20, dft_up_20, dft_down_20, "axis moved from an attribute to an optional input"},
      {"DequantizeLinear", 13, nullptr, quantize_linear_down_13, "per-axis scales (and attribute axis) added"},
      {"Dropout", 10, dropout_up_10, dropout_down_10, "the mask output became bool"},
      {"Dropout", 12, dropout_up_12, dropout_down_12, "ratio moved to an input; training_mode input and seed added"},
      {"Equal", 11, nullptr, equal_down_11, "floating-point and the smaller integer types added"},
      {"Gemm", 11, nullptr, gemm_down_11, "C became optional"},
      {"Greater", 9, nullptr, integers_through_double, "integer types added (before: floating-point only)"},
      {"GridSample", 20, grid_sample_up_20, grid_sample_down_20,
       "N-D inputs; modes bilinear/bicubic renamed linear/cubic"},
      {"Less", 9, nullptr, integers_through_double, "integer types added (before: floating-point only)"},
      {"OptionalHasElement", 18, nullptr, optional_has_element_down_18, "the input became optional"},
      {"Pad", 11, pad_up_11, pad_down_11, "pads and value moved from attributes to inputs"},
      {"Pad", 18, nullptr, pad_down_18, "optional axes input added"},
      {"Pad", 19, nullptr, pad_down_19, "mode 'wrap' added"},
      {"QuantizeLinear", 13, nullptr, quantize_linear_down_13, "per-axis scales (and attribute axis) added"},
      {"Relu", 14, nullptr, integers_through_double, "signed integer types added"},
      {"Resize", 10, nullptr, resize_down_10, "Resize-10 is Upsample-9 under a new name"},
      {"Resize", 11, resize_up_11, resize_down_11,
       "roi input and coordinate_transformation_mode, nearest_mode, cubic mode added"},
      {"Resize", 13, nullptr, resize_down_13, "roi and scales became optional"},
      {"Resize", 19, nullptr, resize_down_19, "coordinate_transformation_mode half_pixel_symmetric added"},
      {"RoiAlign", 16, roi_align_up_16, roi_align_down_16,
       "coordinate_transformation_mode added, defaulting to a half-pixel shift"},
      {"Scan", 9, scan_up_9, scan_down_9, "batch axis and sequence_lens removed; scan axes and directions added"},
      {"Scatter", 11, scatter_up_11, nullptr, "renamed ScatterElements"},
      {"ScatterElements", 11, nullptr, scatter_elements_down_11, "the new name of Scatter"},
      {"Shape", 15, nullptr, shape_down_15, "start/end attributes added"},
      {"Slice", 10, slice_up_10, slice_down_10, "starts/ends/axes moved from attributes to inputs; steps added"},
      {"Split", 13, split_up_13, split_down_13, "split moved from an attribute to an optional input"},
      {"Split", 18, split_up_18, split_down_18, "num_outputs added (required when split is omitted)"},
      {"Squeeze", 13, axes_up, axes_down, "axes moved from an attribute to an optional input"},
      {"TopK", 10, topk_up_10, topk_down_10, "k moved from an attribute to the K input"},
      {"Unsqueeze", 13, axes_up, axes_down, "axes moved from an attribute to an input"},
      {"Upsample", 9, upsample_up_9, upsample_down_9, "scales moved from an attribute to an input"},
      {"Upsample", 10, upsample_up_10, nullptr, "deprecated: renamed Resize"},
  };
  // ReduceSum took its axes as an input at 13, the other Reduce ops at 18.
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
                         "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"})
    rows.push_back({op, std::string_view(op) == "ReduceSum" ? 13 : 18, axes_up, reduce_down,
                    "axes moved from an attribute to an optional input; noop_with_empty_axes added"});
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
    rows.push_back({op, 13, softmax_up, softmax_down, "works along one axis instead of on the input flattened to 2-D"});
  for (const char* op : {"Max", "Min", "Sum", "Mean"})
    rows.push_back({op, 8, nullptr, variadic_down_8, "multidirectional broadcasting (before: inputs of one shape)"});
  for (const char* op : {"Max", "Min"}) rows.push_back({op, 12, nullptr, integers_through_double, "integer types added"});
  // The ops whose axis attributes may be negative only from opset 11 on.
  for (const char* op : {"ArgMax", "ArgMin", "Concat", "Flatten", "Gather", "Softmax", "LogSoftmax", "Hardmax",
                         "Split", "Squeeze", "Unsqueeze", "Compress", "OneHot", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd",
                         "ReduceSum", "ReduceSumSquare"})
    rows.push_back({op, 11, nullptr, negative_axes_down, "negative axes allowed"});
  return rows;
}

}  // namespace

const std::vector<OpsetAdapter>& opset_adapters() {
  static const std::vector<OpsetAdapter> table = make_table();
  return table;
}

const OpsetAdapter* find_opset_adapter(std::string_view op, int boundary) {
  const auto& rows = opset_adapters();
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [&](const OpsetAdapter& r) { return r.op == op && r.boundary == boundary; });
  return it == rows.end() ? nullptr : &*it;
}

}  // namespace onnxtool::convert
