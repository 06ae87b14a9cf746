// Which NCHWc block size a model was written for (ir/nchwc_layout.h).
#include "ir/nchwc_layout.h"

#include <functional>
#include <optional>
#include <vector>

#include "ir/error.h"
#include "ir/op_schema.h"

namespace onnxtool::ir {

int64_t machine_nchwc_block_size() {
#if defined(__x86_64__) || defined(__i386__)
  // MLAS also asks the OS whether it saves the AVX-512 state (XCR0); an OS that does not would
  // not report avx512f in /proc/cpuinfo either, and GCC's check reads the same CPUID bit.
  static const int64_t size = __builtin_cpu_supports("avx512f") ? 16 : 8;
  return size;
#else
  return 8;
#endif
}

namespace {

using Fits = std::function<bool(int64_t)>;

std::string str(int64_t v) { return std::to_string(v); }

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + str(dims[i]);
  return s + "]";
}

bool is_nchwc(const Node& n) { return n.domain == kNchwcDomain; }

/// The static channel count (dim 1) a value is declared with, if any.
std::optional<int64_t> declared_channels(const Value* v) {
  if (!v || v->type.kind != TypeInfo::Kind::kTensor || !v->type.shape || v->type.shape->rank() < 2) return std::nullopt;
  const Dim& d = v->type.shape->dims[1];
  if (!d.is_static()) return std::nullopt;
  return d.value;
}

/// The padded channel count of a blocked tensor where the model fixes it without the block size:
/// a blocked Conv's output has its weight's rows, pools and Upsample keep their input's; else
/// its declared channels.
std::optional<int64_t> padded_channels(const Value* v, int depth = 0) {
  if (!v) return std::nullopt;
  const Node* p = v->producer();
  if (p && is_nchwc(*p) && depth < 64) {
    if (p->op_type == "Conv") {
      const Value* w = p->input(1);
      if (w && w->initializer() && !w->initializer()->dims.empty()) return w->initializer()->dims[0];
    } else if (p->op_type != "ReorderInput" && p->op_type != "ReorderOutput") {
      if (auto c = padded_channels(p->input(0), depth + 1)) return c;
    }
  }
  return declared_channels(v);
}

/// Whether a value is in the blocked layout: produced by a com.microsoft.nchwc node other than
/// ReorderOutput.
bool is_blocked(const Value* v) {
  const Node* p = v ? v->producer() : nullptr;
  return p && is_nchwc(*p) && p->op_type != "ReorderOutput";
}

/// What one node's shapes say of the block size: a predicate and the facts it rests on ("" when
/// the node says nothing).
struct Evidence {
  Fits fits;
  std::string facts;
};

Evidence evidence(const Node& n) {
  if (n.op_type == "Conv") {
    const Value* w = n.input(1);
    if (!w || !w->initializer() || w->initializer()->dims.size() != 4) return {};
    const std::vector<int64_t> d = w->initializer()->dims;
    const int64_t m = d[0], ci = d[1], group = n.attr_int("group", 1);
    const bool blocked_input = is_blocked(n.input(0));
    const std::string facts = "weights " + dims_string(d) + ", group " + str(group) +
                              (blocked_input ? ", blocked input" : "");
    if (group > 1 && ci == 1 && group == m) return {[m](int64_t b) { return m % b == 0; }, facts};  // depthwise
    if (group > 1)
      return {[m, ci, group](int64_t b) { return m % b == 0 && ci % b == 0 && m % group == 0 && (m / group) % b == 0; },
              facts};
    // An input that is not blocked (the first convolution, reading NCHW) has fewer channels
    // than a block; a blocked one a multiple of blocks.
    return {[m, ci, blocked_input](int64_t b) { return m % b == 0 && (ci % b == 0 || (!blocked_input && ci < b)); }, facts};
  }
  if (n.op_type == "ReorderOutput") {
    const int64_t c = n.attr_int("channels", 0);
    const auto p = padded_channels(n.input(0));
    if (!p || c <= 0) return {};
    const int64_t padded = *p;
    return {[c, padded](int64_t b) { return nchwc_padded(c, b) == padded; },
            "channels " + str(c) + " of an input of " + str(padded) + " padded channels"};
  }
  if (n.op_type == "ReorderInput") {
    const bool last = n.attr_int("channels_last", 0) != 0;
    const Value* x = n.input(0);
    const auto out = declared_channels(n.output(0));
    if (!out || !x || !x->type.shape || x->type.shape->rank() < 2) return {};
    const Dim& cd = x->type.shape->dims[last ? x->type.shape->rank() - 1 : 1];
    if (!cd.is_static()) return {};
    const int64_t c = cd.value, padded = *out;
    return {[c, padded](int64_t b) { return nchwc_padded(c, b) == padded; },
            "input of " + str(c) + " channels declared to give " + str(padded)};
  }
  // The pools and Upsample read blocked tensors: whole blocks.
  const auto p = padded_channels(n.input(0));
  if (!p) return {};
  const int64_t padded = *p;
  return {[padded](int64_t b) { return padded % b == 0; }, "an input of " + str(padded) + " padded channels"};
}

}  // namespace

NchwcBlock nchwc_block_size(const Graph& graph) {
  std::vector<int64_t> fit(std::begin(kNchwcBlockSizes), std::end(kNchwcBlockSizes));
  std::string first_narrowing;  // the node that first ruled a size out
  for (const auto& owned : graph.nodes()) {
    if (!owned || !is_nchwc(*owned)) continue;
    const Node& n = *owned;
    const Evidence e = evidence(n);
    if (!e.fits) continue;
    std::vector<int64_t> kept;
    for (int64_t b : fit)
      if (e.fits(b)) kept.push_back(b);
    if (kept.empty()) {
      bool fits_any = false;
      for (int64_t b : kNchwcBlockSizes) fits_any = fits_any || e.fits(b);
      if (!fits_any)
        throw Error(ErrorKind::kFailed, n.describe() + ": its shapes (" + e.facts +
                                            ") fit no NCHWc block size (8 or 16): the model is not one onnxruntime wrote");
      throw Error(ErrorKind::kFailed, n.describe() + ": its shapes (" + e.facts + ") need another NCHWc block size than " +
                                          str(fit[0]) + ", which " + first_narrowing +
                                          " needs: the model's blocked layout contradicts itself");
    }
    if (kept.size() < fit.size() && first_narrowing.empty()) first_narrowing = n.describe() + " (" + e.facts + ")";
    fit = kept;
  }
  bool any = false;
  for (const auto& owned : graph.nodes()) any = any || (owned && is_nchwc(*owned));
  if (!any) return {};
  if (fit.size() == 1) return {fit[0], "the model: " + first_narrowing};
  const int64_t machine = machine_nchwc_block_size();
  return {machine, std::string("this machine's (") + (machine == 16 ? "AVX-512F" : "no AVX-512F") +
                       "), as the model's shapes fit either size"};
}

}  // namespace onnxtool::ir
