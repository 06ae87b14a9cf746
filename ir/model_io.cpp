// The ONNX wire codec: ModelProto bytes <-> ir::Model, lossless and zero-copy for tensor data.
//
// Decoding mirrors libprotobuf's semantics so that a load/save round trip parses (with
// libprotobuf) to a message equal to the input: unknown fields and known fields with an
// unexpected wire type are kept verbatim; a singular message field seen twice is merged; the last
// member of a oneof wins; proto2 presence of default values is recorded in explicit_defaults.
// Encoding writes fields in field-number order, as libprotobuf does.
#include "ir/model_io.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <unordered_map>

#include "ir/command_files.h"
#include "ir/error.h"
#include "ir/output_file.h"
#include "ir/wire.h"

namespace onnxtool::ir {
namespace {

using wire::Reader;
using wire::Rope;

constexpr int kMaxDepth = 100;  // message nesting, as libprotobuf's default recursion limit

inline void mark_default(uint32_t& mask, uint32_t field, bool is_default) {
  if (is_default) mask |= 1u << field;
  else mask &= ~(1u << field);
}
inline bool emit(uint32_t mask, uint32_t field, bool non_default) {
  return non_default || (mask & (1u << field));
}

// ============================================================== decoding

class Decoder {
 public:
  /// `mapped`: the source is a read-only file mapping whose pages may be dropped once copied.
  explicit Decoder(const Bytes& source, bool mapped = false) : source_(source), mapped_(mapped) {}

  void model(Reader r, Model& m);
  void link_all(Model& m);
  void tensor(Reader r, Tensor& t);

 private:
  // Node outputs and inputs are linked after the whole model is read: values may be used before
  // the node producing them (unsorted graphs) and subgraphs refer to outer values.
  struct PendingNode {
    Node* node;
    std::vector<std::string> inputs;
    std::vector<std::string> outputs;
  };
  struct PendingInfo {
    std::string name;
    ValueInfo info;
  };
  struct PendingGraph {
    std::vector<std::unique_ptr<Node>> nodes;
    std::vector<PendingNode> links;
    std::vector<PendingInfo> inputs, outputs, value_info;
    std::vector<Tensor> initializers;
    std::vector<SparseTensor> sparse;
  };

  struct Scope {
    Decoder& d;
    explicit Scope(Decoder& dec, const Reader& r) : d(dec) {
      if (++d.depth_ > kMaxDepth) r.fail("messages nested deeper than " + std::to_string(kMaxDepth));
    }
    ~Scope() { --d.depth_; }
  };

  void keep_unknown(Reader& r, const uint8_t* tag_start, uint32_t field, int wt, std::string& out) {
    r.skip(field, wt);
    out.append(reinterpret_cast<const char*>(tag_start), static_cast<size_t>(r.pos() - tag_start));
  }
  static std::string str(Reader& r) { return std::string(r.bytes()); }
  static int32_t i32(Reader& r) { return static_cast<int32_t>(r.varint()); }
  static int64_t i64(Reader& r) { return static_cast<int64_t>(r.varint()); }

  template <class T, class ReadOne>
  void repeated_scalar(Reader& r, int wt, int scalar_wt, std::vector<T>& out, ReadOne read_one) {
    if (wt == wire::kLengthDelimited) {
      Reader p = r.nested();
      // Fixed-width packed payloads say their count: allocate once.
      if (scalar_wt == wire::kFixed32) out.reserve(out.size() + p.remaining() / 4);
      if (scalar_wt == wire::kFixed64) out.reserve(out.size() + p.remaining() / 8);
      while (!p.done()) out.push_back(read_one(p));
    } else if (wt == scalar_wt) {
      out.push_back(read_one(r));
    }
  }
  static float f32(Reader& r) {
    uint32_t bits = r.fixed32();
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  static double f64(Reader& r) {
    uint64_t bits = r.fixed64();
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }

  void string_pair(Reader r, StringPair& p);
  void opset(Reader r, OpsetId& o);
  void dim(Reader r, Dim& d);
  void shape(Reader r, Shape& s);
  void type(Reader r, TypeInfo& t);
  void type_inner(Reader r, TypeInfo& t, TypeInfo::Kind kind);
  void segment(Reader r, TensorSegment& s);
  void sparse(Reader r, SparseTensor& s);
  void attribute(Reader r, Attribute& a);
  void value_info(Reader r, PendingInfo& p);
  void node(Reader r, PendingGraph& pg, Node*& node);
  void graph(Reader r, Graph& g);
  void annotation(Reader r, TensorAnnotation& a);
  void function(Reader r, Function& f);
  void link(Graph& g);

  // Typed fields (float_data...) are decoded into vectors: drop the file pages they were read
  // from, so that a model with weights in typed fields is not held twice in memory.
  void release(const uint8_t* begin, const uint8_t* end) const;

  const Bytes& source_;
  bool mapped_ = false;
  int depth_ = 0;
  std::unordered_map<Graph*, PendingGraph> pending_;
};

#define ONNXTOOL_FIELDS(r)                     \
  uint32_t field;                              \
  int wt;                                      \
  while (true) {                               \
    const uint8_t* tag_start = (r).pos();      \
    if (!(r).next(field, wt)) break;

#define ONNXTOOL_END_FIELDS }

// Field cases check the wire type; a mismatch falls through to `unknown` as libprotobuf does.
#define CASE(num, type_) if (field == (num) && wt == wire::type_)

void Decoder::string_pair(Reader r, StringPair& p) {
  Scope s(*this, r);
  ONNXTOOL_FIELDS(r)
    CASE(1, kLengthDelimited) { p.key = str(r); mark_default(p.explicit_defaults, 1, p.key.empty()); continue; }
    CASE(2, kLengthDelimited) { p.value = str(r); mark_default(p.explicit_defaults, 2, p.value.empty()); continue; }
    keep_unknown(r, tag_start, field, wt, p.unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::opset(Reader r, OpsetId& o) {
  Scope s(*this, r);
  ONNXTOOL_FIELDS(r)
    CASE(1, kLengthDelimited) { o.domain = str(r); mark_default(o.explicit_defaults, 1, o.domain.empty()); continue; }
    CASE(2, kVarint) { o.version = i64(r); mark_default(o.explicit_defaults, 2, o.version == 0); continue; }
    keep_unknown(r, tag_start, field, wt, o.unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::dim(Reader r, Dim& d) {
  Scope s(*this, r);
  ONNXTOOL_FIELDS(r)
    CASE(1, kVarint) {
      d.value = i64(r);
      d.kind = d.value < 0 ? Dim::Kind::kUnknown : Dim::Kind::kValue;  // see Dim: -1 is a free dim
      d.param.clear();
      continue;
    }
    CASE(2, kLengthDelimited) { d.kind = Dim::Kind::kParam; d.param = str(r); d.value = 0; continue; }
    CASE(3, kLengthDelimited) { d.denotation = str(r); mark_default(d.explicit_defaults, 3, d.denotation.empty()); continue; }
    keep_unknown(r, tag_start, field, wt, d.unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::shape(Reader r, Shape& sh) {
  Scope s(*this, r);
  ONNXTOOL_FIELDS(r)
    CASE(1, kLengthDelimited) { sh.dims.emplace_back(); dim(r.nested(), sh.dims.back()); continue; }
    keep_unknown(r, tag_start, field, wt, sh.unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::type_inner(Reader r, TypeInfo& t, TypeInfo::Kind kind) {
  Scope s(*this, r);
  if (t.kind != kind) {
    // Switching oneof member: the previous member's content is discarded.
    TypeInfo fresh;
    fresh.denotation = std::move(t.denotation);
    fresh.explicit_defaults = t.explicit_defaults;
    fresh.unknown = std::move(t.unknown);
    t = std::move(fresh);
    t.kind = kind;
  }
  using K = TypeInfo::Kind;
  ONNXTOOL_FIELDS(r)
    switch (kind) {
      case K::kTensor:
      case K::kSparseTensor:
        CASE(1, kVarint) { t.elem_type = i32(r); mark_default(t.inner_explicit_defaults, 1, t.elem_type == 0); continue; }
        CASE(2, kLengthDelimited) { if (!t.shape) t.shape.emplace(); shape(r.nested(), *t.shape); continue; }
        break;
      case K::kSequence:
      case K::kOptional:
        CASE(1, kLengthDelimited) { if (!t.elem) t.elem = Box<TypeInfo>(TypeInfo{}); type(r.nested(), *t.elem); continue; }
        break;
      case K::kMap:
        CASE(1, kVarint) { t.elem_type = i32(r); mark_default(t.inner_explicit_defaults, 1, t.elem_type == 0); continue; }
        CASE(2, kLengthDelimited) { if (!t.elem) t.elem = Box<TypeInfo>(TypeInfo{}); type(r.nested(), *t.elem); continue; }
        break;
      case K::kOpaque:
        CASE(1, kLengthDelimited) { t.opaque_domain = str(r); mark_default(t.inner_explicit_defaults, 1, t.opaque_domain.empty()); continue; }
        CASE(2, kLengthDelimited) { t.opaque_name = str(r); mark_default(t.inner_explicit_defaults, 2, t.opaque_name.empty()); continue; }
        break;
      default:
        break;
    }
    keep_unknown(r, tag_start, field, wt, t.inner_unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::type(Reader r, TypeInfo& t) {
  Scope s(*this, r);
  using K = TypeInfo::Kind;
  ONNXTOOL_FIELDS(r)
    CASE(1, kLengthDelimited) { type_inner(r.nested(), t, K::kTensor); continue; }
    CASE(4, kLengthDelimited) { type_inner(r.nested(), t, K::kSequence); continue; }
    CASE(5, kLengthDelimited) { type_inner(r.nested(), t, K::kMap); continue; }
    CASE(6, kLengthDelimited) { t.denotation = str(r); mark_default(t.explicit_defaults, 6, t.denotation.empty()); continue; }
    CASE(7, kLengthDelimited) { type_inner(r.nested(), t, K::kOpaque); continue; }
    CASE(8, kLengthDelimited) { type_inner(r.nested(), t, K::kSparseTensor); continue; }
    CASE(9, kLengthDelimited) { type_inner(r.nested(), t, K::kOptional); continue; }
    keep_unknown(r, tag_start, field, wt, t.unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::segment(Reader r, TensorSegment& sg) {
  Scope s(*this, r);
  ONNXTOOL_FIELDS(r)
    CASE(1, kVarint) { sg.begin = i64(r); mark_default(sg.explicit_defaults, 1, sg.begin == 0); continue; }
    CASE(2, kVarint) { sg.end = i64(r); mark_default(sg.explicit_defaults, 2, sg.end == 0); continue; }
    keep_unknown(r, tag_start, field, wt, sg.unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::release(const uint8_t* begin, const uint8_t* end) const {
  constexpr uintptr_t kPage = 4096;
  if (!mapped_ || end - begin < static_cast<std::ptrdiff_t>(1 << 20)) return;
  const uintptr_t a = (reinterpret_cast<uintptr_t>(begin) + kPage - 1) & ~(kPage - 1);
  const uintptr_t b = reinterpret_cast<uintptr_t>(end) & ~(kPage - 1);
  // MAP_PRIVATE, never written: the pages are clean copies of the file and are re-read on access.
  if (b > a) ::madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
}

void Decoder::tensor(Reader r, Tensor& t) {
  Scope s(*this, r);
  ONNXTOOL_FIELDS(r)
    if (wt == wire::kLengthDelimited && (field == 4 || field == 5 || field == 7 || field == 10 || field == 11)) {
      // A packed typed field: decode it, then let its file pages go.
      Reader probe = r;
      const std::string_view payload = probe.bytes();
      const auto* begin = reinterpret_cast<const uint8_t*>(payload.data());
      switch (field) {
        case 4: repeated_scalar(r, wt, wire::kFixed32, t.float_data, f32); break;
        case 5: repeated_scalar(r, wt, wire::kVarint, t.int32_data, i32); break;
        case 7: repeated_scalar(r, wt, wire::kVarint, t.int64_data, i64); break;
        case 10: repeated_scalar(r, wt, wire::kFixed64, t.double_data, f64); break;
        default: repeated_scalar(r, wt, wire::kVarint, t.uint64_data, [](Reader& x) { return x.varint(); }); break;
      }
      release(begin, begin + payload.size());
      continue;
    }
    if (field == 1 && (wt == wire::kVarint || wt == wire::kLengthDelimited)) { repeated_scalar(r, wt, wire::kVarint, t.dims, i64); continue; }
    CASE(2, kVarint) { t.data_type = i32(r); mark_default(t.explicit_defaults, 2, t.data_type == 0); continue; }
    CASE(3, kLengthDelimited) { if (!t.segment) t.segment.emplace(); segment(r.nested(), *t.segment); continue; }
    if (field == 4 && (wt == wire::kFixed32 || wt == wire::kLengthDelimited)) { repeated_scalar(r, wt, wire::kFixed32, t.float_data, f32); continue; }
    if (field == 5 && (wt == wire::kVarint || wt == wire::kLengthDelimited)) { repeated_scalar(r, wt, wire::kVarint, t.int32_data, i32); continue; }
    CASE(6, kLengthDelimited) { t.string_data.push_back(str(r)); continue; }
    if (field == 7 && (wt == wire::kVarint || wt == wire::kLengthDelimited)) { repeated_scalar(r, wt, wire::kVarint, t.int64_data, i64); continue; }
    CASE(8, kLengthDelimited) { t.name = str(r); mark_default(t.explicit_defaults, 8, t.name.empty()); continue; }
    CASE(9, kLengthDelimited) {
      std::string_view b = r.bytes();
      const size_t offset = static_cast<size_t>(reinterpret_cast<const uint8_t*>(b.data()) - source_.data());
      t.raw_data = source_.slice(offset, b.size());
      continue;
    }
    if (field == 10 && (wt == wire::kFixed64 || wt == wire::kLengthDelimited)) { repeated_scalar(r, wt, wire::kFixed64, t.double_data, f64); continue; }
    if (field == 11 && (wt == wire::kVarint || wt == wire::kLengthDelimited)) { repeated_scalar(r, wt, wire::kVarint, t.uint64_data, [](Reader& x) { return x.varint(); }); continue; }
    CASE(12, kLengthDelimited) { t.doc_string = str(r); mark_default(t.explicit_defaults, 12, t.doc_string.empty()); continue; }
    CASE(13, kLengthDelimited) { t.external_data.emplace_back(); string_pair(r.nested(), t.external_data.back()); continue; }
    if (field == 14 && wt == wire::kVarint) {
      const uint64_t v = r.varint();
      if (v <= 1) {
        t.data_location = static_cast<int32_t>(v);
        mark_default(t.explicit_defaults, 14, v == 0);
      } else {
        // Not a DataLocation value: proto2 keeps it as an unknown field.
        t.unknown.append(reinterpret_cast<const char*>(tag_start), static_cast<size_t>(r.pos() - tag_start));
      }
      continue;
    }
    CASE(16, kLengthDelimited) { t.metadata_props.emplace_back(); string_pair(r.nested(), t.metadata_props.back()); continue; }
    keep_unknown(r, tag_start, field, wt, t.unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::sparse(Reader r, SparseTensor& sp) {
  Scope s(*this, r);
  ONNXTOOL_FIELDS(r)
    CASE(1, kLengthDelimited) { if (!sp.values) sp.values.emplace(); tensor(r.nested(), *sp.values); continue; }
    CASE(2, kLengthDelimited) { if (!sp.indices) sp.indices.emplace(); tensor(r.nested(), *sp.indices); continue; }
    if (field == 3 && (wt == wire::kVarint || wt == wire::kLengthDelimited)) { repeated_scalar(r, wt, wire::kVarint, sp.dims, i64); continue; }
    keep_unknown(r, tag_start, field, wt, sp.unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::attribute(Reader r, Attribute& a) {
  Scope s(*this, r);
  auto new_graph = [this](Reader sub, std::unique_ptr<Graph>& slot) {
    if (!slot) slot = std::make_unique<Graph>();
    graph(sub, *slot);
  };
  ONNXTOOL_FIELDS(r)
    CASE(1, kLengthDelimited) { a.name = str(r); mark_default(a.explicit_defaults, 1, a.name.empty()); continue; }
    CASE(2, kFixed32) { a.f = f32(r); mark_default(a.explicit_defaults, 2, a.f == 0 && !std::signbit(a.f)); continue; }
    CASE(3, kVarint) { a.i = i64(r); mark_default(a.explicit_defaults, 3, a.i == 0); continue; }
    CASE(4, kLengthDelimited) { a.s = str(r); mark_default(a.explicit_defaults, 4, a.s.empty()); continue; }
    CASE(5, kLengthDelimited) { if (!a.t) a.t = Box<Tensor>(Tensor{}); tensor(r.nested(), *a.t); continue; }
    CASE(6, kLengthDelimited) { new_graph(r.nested(), a.g); continue; }
    if (field == 7 && (wt == wire::kFixed32 || wt == wire::kLengthDelimited)) { repeated_scalar(r, wt, wire::kFixed32, a.floats, f32); continue; }
    if (field == 8 && (wt == wire::kVarint || wt == wire::kLengthDelimited)) { repeated_scalar(r, wt, wire::kVarint, a.ints, i64); continue; }
    CASE(9, kLengthDelimited) { a.strings.push_back(str(r)); continue; }
    CASE(10, kLengthDelimited) { a.tensors.emplace_back(); tensor(r.nested(), a.tensors.back()); continue; }
    CASE(11, kLengthDelimited) { a.graphs.emplace_back(); new_graph(r.nested(), a.graphs.back()); continue; }
    CASE(13, kLengthDelimited) { a.doc_string = str(r); mark_default(a.explicit_defaults, 13, a.doc_string.empty()); continue; }
    CASE(14, kLengthDelimited) { if (!a.tp) a.tp = Box<TypeInfo>(TypeInfo{}); type(r.nested(), *a.tp); continue; }
    CASE(15, kLengthDelimited) { a.type_protos.emplace_back(); type(r.nested(), a.type_protos.back()); continue; }
    if (field == 20 && wt == wire::kVarint) {
      const uint64_t v = r.varint();
      if (v <= 14) {
        a.type = static_cast<int32_t>(v);
        mark_default(a.explicit_defaults, 20, v == 0);
      } else {
        a.unknown.append(reinterpret_cast<const char*>(tag_start), static_cast<size_t>(r.pos() - tag_start));
      }
      continue;
    }
    CASE(21, kLengthDelimited) { a.ref_attr_name = str(r); mark_default(a.explicit_defaults, 21, a.ref_attr_name.empty()); continue; }
    CASE(22, kLengthDelimited) { if (!a.sparse_tensor) a.sparse_tensor = Box<SparseTensor>(SparseTensor{}); sparse(r.nested(), *a.sparse_tensor); continue; }
    CASE(23, kLengthDelimited) { a.sparse_tensors.emplace_back(); sparse(r.nested(), a.sparse_tensors.back()); continue; }
    keep_unknown(r, tag_start, field, wt, a.unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::value_info(Reader r, PendingInfo& p) {
  Scope s(*this, r);
  ValueInfo& v = p.info;
  ONNXTOOL_FIELDS(r)
    CASE(1, kLengthDelimited) { p.name = str(r); mark_default(v.explicit_defaults, 1, p.name.empty()); continue; }
    CASE(2, kLengthDelimited) { if (!v.type) v.type.emplace(); type(r.nested(), *v.type); continue; }
    CASE(3, kLengthDelimited) { v.doc_string = str(r); mark_default(v.explicit_defaults, 3, v.doc_string.empty()); continue; }
    CASE(4, kLengthDelimited) { v.metadata_props.emplace_back(); string_pair(r.nested(), v.metadata_props.back()); continue; }
    keep_unknown(r, tag_start, field, wt, v.unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::node(Reader r, PendingGraph& pg, Node*& n) {
  Scope s(*this, r);
  if (!n) {
    pg.nodes.push_back(std::make_unique<Node>());
    n = pg.nodes.back().get();
    pg.links.push_back({n, {}, {}});
  }
  PendingNode* link = nullptr;
  for (auto it = pg.links.rbegin(); it != pg.links.rend(); ++it)
    if (it->node == n) { link = &*it; break; }
  ONNXTOOL_FIELDS(r)
    CASE(1, kLengthDelimited) { link->inputs.push_back(str(r)); continue; }
    CASE(2, kLengthDelimited) { link->outputs.push_back(str(r)); continue; }
    CASE(3, kLengthDelimited) { n->name = str(r); mark_default(n->explicit_defaults, 3, n->name.empty()); continue; }
    CASE(4, kLengthDelimited) { n->op_type = str(r); mark_default(n->explicit_defaults, 4, n->op_type.empty()); continue; }
    CASE(5, kLengthDelimited) { n->attributes.emplace_back(); attribute(r.nested(), n->attributes.back()); continue; }
    CASE(6, kLengthDelimited) { n->doc_string = str(r); mark_default(n->explicit_defaults, 6, n->doc_string.empty()); continue; }
    CASE(7, kLengthDelimited) { n->domain = str(r); mark_default(n->explicit_defaults, 7, n->domain.empty()); continue; }
    CASE(8, kLengthDelimited) { n->overload = str(r); mark_default(n->explicit_defaults, 8, n->overload.empty()); continue; }
    CASE(9, kLengthDelimited) { n->metadata_props.emplace_back(); string_pair(r.nested(), n->metadata_props.back()); continue; }
    CASE(10, kLengthDelimited) { n->device_configurations.push_back(str(r)); continue; }
    keep_unknown(r, tag_start, field, wt, n->unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::annotation(Reader r, TensorAnnotation& a) {
  Scope s(*this, r);
  ONNXTOOL_FIELDS(r)
    CASE(1, kLengthDelimited) { a.tensor_name = str(r); mark_default(a.explicit_defaults, 1, a.tensor_name.empty()); continue; }
    CASE(2, kLengthDelimited) { a.quant_parameter_tensor_names.emplace_back(); string_pair(r.nested(), a.quant_parameter_tensor_names.back()); continue; }
    keep_unknown(r, tag_start, field, wt, a.unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::graph(Reader r, Graph& g) {
  Scope s(*this, r);
  PendingGraph& pg = pending_[&g];
  ONNXTOOL_FIELDS(r)
    CASE(1, kLengthDelimited) { Node* n = nullptr; node(r.nested(), pg, n); continue; }
    CASE(2, kLengthDelimited) { g.name = str(r); mark_default(g.explicit_defaults, 2, g.name.empty()); continue; }
    CASE(5, kLengthDelimited) { pg.initializers.emplace_back(); tensor(r.nested(), pg.initializers.back()); continue; }
    CASE(10, kLengthDelimited) { g.doc_string = str(r); mark_default(g.explicit_defaults, 10, g.doc_string.empty()); continue; }
    CASE(11, kLengthDelimited) { pg.inputs.emplace_back(); value_info(r.nested(), pg.inputs.back()); continue; }
    CASE(12, kLengthDelimited) { pg.outputs.emplace_back(); value_info(r.nested(), pg.outputs.back()); continue; }
    CASE(13, kLengthDelimited) { pg.value_info.emplace_back(); value_info(r.nested(), pg.value_info.back()); continue; }
    CASE(14, kLengthDelimited) { g.quantization_annotation.emplace_back(); annotation(r.nested(), g.quantization_annotation.back()); continue; }
    CASE(15, kLengthDelimited) { pg.sparse.emplace_back(); sparse(r.nested(), pg.sparse.back()); continue; }
    CASE(16, kLengthDelimited) { g.metadata_props.emplace_back(); string_pair(r.nested(), g.metadata_props.back()); continue; }
    keep_unknown(r, tag_start, field, wt, g.unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::function(Reader r, Function& f) {
  Scope s(*this, r);
  PendingGraph& pg = pending_[f.body.get()];
  auto formal = [](std::string name) {
    PendingInfo p;
    p.name = std::move(name);
    return p;
  };
  ONNXTOOL_FIELDS(r)
    CASE(1, kLengthDelimited) { f.name = str(r); mark_default(f.explicit_defaults, 1, f.name.empty()); continue; }
    CASE(4, kLengthDelimited) { pg.inputs.push_back(formal(str(r))); continue; }
    CASE(5, kLengthDelimited) { pg.outputs.push_back(formal(str(r))); continue; }
    CASE(6, kLengthDelimited) { f.attribute.push_back(str(r)); continue; }
    CASE(7, kLengthDelimited) { Node* n = nullptr; node(r.nested(), pg, n); continue; }
    CASE(8, kLengthDelimited) { f.doc_string = str(r); mark_default(f.explicit_defaults, 8, f.doc_string.empty()); continue; }
    CASE(9, kLengthDelimited) { f.opset_import.emplace_back(); opset(r.nested(), f.opset_import.back()); continue; }
    CASE(10, kLengthDelimited) { f.domain = str(r); mark_default(f.explicit_defaults, 10, f.domain.empty()); continue; }
    CASE(11, kLengthDelimited) { f.attribute_proto.emplace_back(); attribute(r.nested(), f.attribute_proto.back()); continue; }
    CASE(12, kLengthDelimited) { pg.value_info.emplace_back(); value_info(r.nested(), pg.value_info.back()); continue; }
    CASE(13, kLengthDelimited) { f.overload = str(r); mark_default(f.explicit_defaults, 13, f.overload.empty()); continue; }
    CASE(14, kLengthDelimited) { f.metadata_props.emplace_back(); string_pair(r.nested(), f.metadata_props.back()); continue; }
    keep_unknown(r, tag_start, field, wt, f.unknown);
  ONNXTOOL_END_FIELDS
}

void Decoder::model(Reader r, Model& m) {
  Scope s(*this, r);
  ONNXTOOL_FIELDS(r)
    CASE(1, kVarint) { m.ir_version = i64(r); mark_default(m.explicit_defaults, 1, m.ir_version == 0); continue; }
    CASE(2, kLengthDelimited) { m.producer_name = str(r); mark_default(m.explicit_defaults, 2, m.producer_name.empty()); continue; }
    CASE(3, kLengthDelimited) { m.producer_version = str(r); mark_default(m.explicit_defaults, 3, m.producer_version.empty()); continue; }
    CASE(4, kLengthDelimited) { m.domain = str(r); mark_default(m.explicit_defaults, 4, m.domain.empty()); continue; }
    CASE(5, kVarint) { m.model_version = i64(r); mark_default(m.explicit_defaults, 5, m.model_version == 0); continue; }
    CASE(6, kLengthDelimited) { m.doc_string = str(r); mark_default(m.explicit_defaults, 6, m.doc_string.empty()); continue; }
    CASE(7, kLengthDelimited) { if (!m.graph) m.graph = std::make_unique<Graph>(); graph(r.nested(), *m.graph); continue; }
    CASE(8, kLengthDelimited) { m.opset_import.emplace_back(); opset(r.nested(), m.opset_import.back()); continue; }
    CASE(14, kLengthDelimited) { m.metadata_props.emplace_back(); string_pair(r.nested(), m.metadata_props.back()); continue; }
    CASE(20, kLengthDelimited) { m.training_info.push_back(str(r)); continue; }
    CASE(25, kLengthDelimited) { m.functions.emplace_back(); function(r.nested(), m.functions.back()); continue; }
    CASE(26, kLengthDelimited) { m.configuration.push_back(str(r)); continue; }
    keep_unknown(r, tag_start, field, wt, m.unknown);
  ONNXTOOL_END_FIELDS
}

#undef CASE
#undef ONNXTOOL_FIELDS
#undef ONNXTOOL_END_FIELDS

void Decoder::link(Graph& g) {
  auto it = pending_.find(&g);
  if (it == pending_.end()) return;
  PendingGraph pg = std::move(it->second);
  pending_.erase(it);

  // Definitions first (inputs, initializers, node outputs), then uses, so that forward references
  // of unsorted graphs link to their producers.
  for (auto& p : pg.inputs) {
    ValueInfo& vi = g.add_input(p.name, p.info.type);
    p.info.value = vi.value;
    vi = std::move(p.info);
  }
  for (auto& t : pg.initializers) g.add_initializer(std::move(t));
  for (auto& sp : pg.sparse) g.add_sparse_initializer(std::move(sp));
  for (size_t i = 0; i < pg.nodes.size(); ++i) {
    Node* n = g.append_node(std::move(pg.nodes[i]));
    for (auto& a : n->attributes) {
      if (a.g) a.g->set_parent(&g);
      for (auto& sub : a.graphs)
        if (sub) sub->set_parent(&g);
    }
    for (const auto& out : pg.links[i].outputs) g.add_node_output(n, out);
  }
  for (auto& l : pg.links)
    for (const auto& in : l.inputs) l.node->append_input(in.empty() ? nullptr : g.resolve(in));
  for (auto& p : pg.outputs) {
    ValueInfo& vi = g.add_output(g.resolve(p.name), p.info.type);
    p.info.value = vi.value;
    vi = std::move(p.info);
  }
  for (auto& p : pg.value_info) {
    Value* v = g.resolve(p.name);
    if (p.info.type && v->type.kind == TypeInfo::Kind::kUnset) v->type = *p.info.type;
    p.info.value = v;
    g.value_info.push_back(std::move(p.info));
  }
}

void Decoder::link_all(Model& m) {
  // Parents are linked before their subgraphs (for_each_graph visits parents first), so that
  // outer-scope names resolve to the enclosing graph's values.
  auto link_one = [this](Graph& g) { link(g); };
  if (m.graph) for_each_graph(*m.graph, link_one);
  for (auto& f : m.functions) {
    for (auto& a : f.attribute_proto) {
      if (a.g) for_each_graph(*a.g, link_one);
      for (auto& sub : a.graphs) for_each_graph(*sub, link_one);
    }
    for_each_graph(*f.body, link_one);
  }
  // Graphs only reachable through tensor-less places (none today) would stay pending: link them
  // so no node is lost.
  while (!pending_.empty()) for_each_graph(*pending_.begin()->first, link_one);
}

// ============================================================== external data

bool is_safe_relative(const std::string& location) {
  if (location.empty() || location[0] == '/') return false;
  std::filesystem::path p(location);
  for (const auto& part : p)
    if (part == ".." || part.string().empty()) return false;
  return true;
}

class ExternalResolver {
 public:
  ExternalResolver(std::string base_dir, LoadInfo* info) : base_(std::move(base_dir)), info_(info) {}

  void resolve(Tensor& t, const std::string& where) {
    const std::string label = where + ": tensor '" + t.name + "'";
    std::string location;
    uint64_t offset = 0;
    std::optional<uint64_t> length;
    for (const auto& kv : t.external_data) {
      if (kv.key == "location") location = kv.value;
      else if (kv.key == "offset") offset = parse_number(kv.value, label, "offset");
      else if (kv.key == "length") length = parse_number(kv.value, label, "length");
    }
    if (location.empty()) throw_input_error(label + ": external data has no location");
    if (!is_safe_relative(location))
      throw_input_error(label + ": external data location '" + location +
                        "' must be a relative path inside the model's directory");
    if (info_) {
      bool seen = false;
      for (const auto& f : info_->external_files) seen = seen || f == location;
      if (!seen) info_->external_files.push_back(location);
    }
    if (base_.empty()) return;
    auto file = open(location, label);
    if (offset > file->size())
      throw_input_error(label + ": external data offset " + std::to_string(offset) +
                        " is past the end of '" + location + "' (" + std::to_string(file->size()) +
                        " bytes)");
    const uint64_t available = file->size() - offset;
    const uint64_t n = length.value_or(available);
    if (n > available)
      throw_input_error(label + ": external data [" + std::to_string(offset) + ", +" +
                        std::to_string(n) + ") runs past the end of '" + location + "' (" +
                        std::to_string(file->size()) + " bytes)");
    t.external_bytes = MappedFile::view(file, static_cast<size_t>(offset), static_cast<size_t>(n));
  }

 private:
  static uint64_t parse_number(const std::string& s, const std::string& label, const char* key) {
    if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos)
      throw_input_error(label + ": external data " + key + " '" + s + "' is not a number");
    return std::stoull(s);
  }

  std::shared_ptr<MappedFile> open(const std::string& location, const std::string& label) {
    auto it = files_.find(location);
    if (it != files_.end()) return it->second;
    // Walked with openat and O_NOFOLLOW, component by component, and checked on the descriptor
    // finally mapped: a symlink swapped in between a check and the open cannot be followed.
    const auto fail = [&](const std::string& what) { throw_input_error(label + ": external data " + what); };
    int dir = ::open(base_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) fail("directory '" + base_ + "' cannot be opened: " + std::strerror(errno));
    const std::filesystem::path relative(location);
    const std::vector<std::filesystem::path> parts(relative.begin(), relative.end());
    int fd = -1;
    for (size_t i = 0; i < parts.size(); ++i) {
      const bool last = i + 1 == parts.size();
      const int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK | O_NOCTTY : O_DIRECTORY);
      const int next = ::openat(dir, parts[i].c_str(), flags);
      const int err = errno;
      ::close(dir);
      dir = -1;
      if (next < 0) {
        if (err == ENOENT) fail("file '" + location + "' not found");
        if (err == ELOOP || (err == ENOTDIR && !last)) fail("path '" + location + "' goes through a symlink or a non-directory");
        fail("file '" + location + "' cannot be opened: " + std::strerror(err));
      }
      if (last) fd = next;
      else dir = next;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      fail("'" + location + "' is not a regular file");
    }
    if (st.st_nlink > 1) {
      ::close(fd);
      fail("'" + location + "' has more than one hard link");
    }
    const std::filesystem::path p = std::filesystem::path(base_) / location;
    auto file = MappedFile::adopt(fd, p.string());
    files_[location] = file;
    return file;
  }

  std::string base_;
  LoadInfo* info_;
  std::map<std::string, std::shared_ptr<MappedFile>> files_;
};

// ============================================================== encoding

struct ExternalSlot {
  std::string location;
  uint64_t offset;
  uint64_t length;
};

class Encoder {
 public:
  // `plan` maps the tensors written to external data; `inline_external` writes tensors that are
  // external in the IR but not in the plan inline.
  Encoder(const std::unordered_map<const Tensor*, ExternalSlot>* plan, bool inline_external)
      : plan_(plan), inline_external_(inline_external) {}

  Rope model(const Model& m);
  Rope tensor(const Tensor& t);

 private:
  Rope string_pair(const StringPair& p);
  Rope opset(const OpsetId& o);
  Rope dim(const Dim& d);
  Rope shape(const Shape& s);
  Rope type(const TypeInfo& t);
  Rope sparse(const SparseTensor& s);
  Rope attribute(const Attribute& a);
  Rope value_info(const ValueInfo& v);
  Rope node(const Node& n);
  Rope graph(const Graph& g);
  Rope annotation(const TensorAnnotation& a);
  Rope function(const Function& f);

  void pairs(Rope& r, uint32_t field, const std::vector<StringPair>& v) {
    for (const auto& p : v) r.put_message(field, string_pair(p));
  }
  static void tail(Rope& r, const std::string& unknown) { r.raw(unknown.data(), unknown.size()); }

  const std::unordered_map<const Tensor*, ExternalSlot>* plan_;
  bool inline_external_;
  std::vector<Bytes> keep_alive_;
};

Rope Encoder::string_pair(const StringPair& p) {
  Rope r;
  if (emit(p.explicit_defaults, 1, !p.key.empty())) r.put_string(1, p.key);
  if (emit(p.explicit_defaults, 2, !p.value.empty())) r.put_string(2, p.value);
  tail(r, p.unknown);
  return r;
}

Rope Encoder::opset(const OpsetId& o) {
  Rope r;
  if (emit(o.explicit_defaults, 1, !o.domain.empty())) r.put_string(1, o.domain);
  if (emit(o.explicit_defaults, 2, o.version != 0)) r.put_int64(2, o.version);
  tail(r, o.unknown);
  return r;
}

Rope Encoder::dim(const Dim& d) {
  Rope r;
  if (d.kind == Dim::Kind::kValue || d.is_negative_value()) r.put_int64(1, d.value);
  if (d.kind == Dim::Kind::kParam) r.put_string(2, d.param);
  if (emit(d.explicit_defaults, 3, !d.denotation.empty())) r.put_string(3, d.denotation);
  tail(r, d.unknown);
  return r;
}

Rope Encoder::shape(const Shape& s) {
  Rope r;
  for (const auto& d : s.dims) r.put_message(1, dim(d));
  tail(r, s.unknown);
  return r;
}

Rope Encoder::type(const TypeInfo& t) {
  using K = TypeInfo::Kind;
  Rope inner;
  const uint32_t m = t.inner_explicit_defaults;
  switch (t.kind) {
    case K::kTensor:
    case K::kSparseTensor:
      if (emit(m, 1, t.elem_type != 0)) inner.put_int32(1, t.elem_type);
      if (t.shape) inner.put_message(2, shape(*t.shape));
      break;
    case K::kSequence:
    case K::kOptional:
      if (t.elem) inner.put_message(1, type(*t.elem));
      break;
    case K::kMap:
      if (emit(m, 1, t.elem_type != 0)) inner.put_int32(1, t.elem_type);
      if (t.elem) inner.put_message(2, type(*t.elem));
      break;
    case K::kOpaque:
      if (emit(m, 1, !t.opaque_domain.empty())) inner.put_string(1, t.opaque_domain);
      if (emit(m, 2, !t.opaque_name.empty())) inner.put_string(2, t.opaque_name);
      break;
    default:
      break;
  }
  tail(inner, t.inner_unknown);
  Rope r;
  switch (t.kind) {
    case K::kTensor: r.put_message(1, std::move(inner)); break;
    case K::kSequence: r.put_message(4, std::move(inner)); break;
    case K::kMap: r.put_message(5, std::move(inner)); break;
    default: break;
  }
  if (emit(t.explicit_defaults, 6, !t.denotation.empty())) r.put_string(6, t.denotation);
  switch (t.kind) {
    case K::kOpaque: r.put_message(7, std::move(inner)); break;
    case K::kSparseTensor: r.put_message(8, std::move(inner)); break;
    case K::kOptional: r.put_message(9, std::move(inner)); break;
    default: break;
  }
  tail(r, t.unknown);
  return r;
}

Rope Encoder::tensor(const Tensor& t) {
  Rope r;
  const ExternalSlot* slot = nullptr;
  if (plan_) {
    auto it = plan_->find(&t);
    if (it != plan_->end()) slot = &it->second;
  }
  const bool write_inline_from_external = !slot && t.is_external() && inline_external_;
  const bool typed = !slot && !write_inline_from_external;

  for (int64_t d : t.dims) r.put_int64(1, d);
  if (emit(t.explicit_defaults, 2, t.data_type != 0)) r.put_int32(2, t.data_type);
  if (t.segment) {
    Rope s;
    if (emit(t.segment->explicit_defaults, 1, t.segment->begin != 0)) s.put_int64(1, t.segment->begin);
    if (emit(t.segment->explicit_defaults, 2, t.segment->end != 0)) s.put_int64(2, t.segment->end);
    tail(s, t.segment->unknown);
    r.put_message(3, std::move(s));
  }
  if (typed) {
    r.put_packed(4, t.float_data, [](Rope& o, float v) { o.raw(&v, 4); });
    r.put_packed(5, t.int32_data, [](Rope& o, int32_t v) { o.varint(static_cast<uint64_t>(static_cast<int64_t>(v))); });
    for (const auto& s : t.string_data) r.put_string(6, s);
    r.put_packed(7, t.int64_data, [](Rope& o, int64_t v) { o.varint(static_cast<uint64_t>(v)); });
  }
  if (emit(t.explicit_defaults, 8, !t.name.empty())) r.put_string(8, t.name);
  if (typed && t.raw_data) r.put_bytes_ref(9, t.raw_data->data(), t.raw_data->size());
  if (write_inline_from_external) {
    Bytes b = t.raw_bytes();
    keep_alive_.push_back(b);
    r.put_bytes_ref(9, b.data(), b.size());
  }
  if (typed) {
    r.put_packed(10, t.double_data, [](Rope& o, double v) { o.raw(&v, 8); });
    r.put_packed(11, t.uint64_data, [](Rope& o, uint64_t v) { o.varint(v); });
  }
  if (emit(t.explicit_defaults, 12, !t.doc_string.empty())) r.put_string(12, t.doc_string);
  if (slot) {
    auto entry = [](std::string key, std::string value) {
      StringPair p;
      p.key = std::move(key);
      p.value = std::move(value);
      return p;
    };
    r.put_message(13, string_pair(entry("location", slot->location)));
    r.put_message(13, string_pair(entry("offset", std::to_string(slot->offset))));
    r.put_message(13, string_pair(entry("length", std::to_string(slot->length))));
    for (const auto& kv : t.external_data)
      if (kv.key != "location" && kv.key != "offset" && kv.key != "length")
        r.put_message(13, string_pair(kv));
    r.put_varint(14, 1);
  } else if (typed) {
    pairs(r, 13, t.external_data);
    if (emit(t.explicit_defaults, 14, t.data_location != 0)) r.put_varint(14, static_cast<uint64_t>(t.data_location));
  }
  pairs(r, 16, t.metadata_props);
  tail(r, t.unknown);
  return r;
}

Rope Encoder::sparse(const SparseTensor& s) {
  Rope r;
  if (s.values) r.put_message(1, tensor(*s.values));
  if (s.indices) r.put_message(2, tensor(*s.indices));
  for (int64_t d : s.dims) r.put_int64(3, d);
  tail(r, s.unknown);
  return r;
}

Rope Encoder::attribute(const Attribute& a) {
  Rope r;
  const uint32_t m = a.explicit_defaults;
  if (emit(m, 1, !a.name.empty())) r.put_string(1, a.name);
  if (emit(m, 2, a.f != 0 || std::signbit(a.f))) r.put_float(2, a.f);
  if (emit(m, 3, a.i != 0)) r.put_int64(3, a.i);
  if (emit(m, 4, !a.s.empty())) r.put_string(4, a.s);
  if (a.t) r.put_message(5, tensor(*a.t));
  if (a.g) r.put_message(6, graph(*a.g));
  for (float f : a.floats) r.put_float(7, f);
  for (int64_t i : a.ints) r.put_int64(8, i);
  for (const auto& s : a.strings) r.put_string(9, s);
  for (const auto& t : a.tensors) r.put_message(10, tensor(t));
  for (const auto& g : a.graphs) r.put_message(11, graph(*g));
  if (emit(m, 13, !a.doc_string.empty())) r.put_string(13, a.doc_string);
  if (a.tp) r.put_message(14, type(*a.tp));
  for (const auto& t : a.type_protos) r.put_message(15, type(t));
  if (emit(m, 20, a.type != 0)) r.put_varint(20, static_cast<uint64_t>(a.type));
  if (emit(m, 21, !a.ref_attr_name.empty())) r.put_string(21, a.ref_attr_name);
  if (a.sparse_tensor) r.put_message(22, sparse(*a.sparse_tensor));
  for (const auto& s : a.sparse_tensors) r.put_message(23, sparse(s));
  tail(r, a.unknown);
  return r;
}

Rope Encoder::value_info(const ValueInfo& v) {
  Rope r;
  const std::string& name = v.value->name();
  if (emit(v.explicit_defaults, 1, !name.empty())) r.put_string(1, name);
  if (v.type) r.put_message(2, type(*v.type));
  if (emit(v.explicit_defaults, 3, !v.doc_string.empty())) r.put_string(3, v.doc_string);
  pairs(r, 4, v.metadata_props);
  tail(r, v.unknown);
  return r;
}

Rope Encoder::node(const Node& n) {
  Rope r;
  const uint32_t m = n.explicit_defaults;
  for (const Value* v : n.inputs()) r.put_string(1, v ? v->name() : std::string());
  for (const Value* v : n.outputs()) r.put_string(2, v ? v->name() : std::string());
  if (emit(m, 3, !n.name.empty())) r.put_string(3, n.name);
  if (emit(m, 4, !n.op_type.empty())) r.put_string(4, n.op_type);
  for (const auto& a : n.attributes) r.put_message(5, attribute(a));
  if (emit(m, 6, !n.doc_string.empty())) r.put_string(6, n.doc_string);
  if (emit(m, 7, !n.domain.empty())) r.put_string(7, n.domain);
  if (emit(m, 8, !n.overload.empty())) r.put_string(8, n.overload);
  pairs(r, 9, n.metadata_props);
  for (const auto& d : n.device_configurations) r.put_string(10, d);
  tail(r, n.unknown);
  return r;
}

Rope Encoder::annotation(const TensorAnnotation& a) {
  Rope r;
  if (emit(a.explicit_defaults, 1, !a.tensor_name.empty())) r.put_string(1, a.tensor_name);
  pairs(r, 2, a.quant_parameter_tensor_names);
  tail(r, a.unknown);
  return r;
}

Rope Encoder::graph(const Graph& g) {
  Rope r;
  const uint32_t m = g.explicit_defaults;
  for (const auto& n : g.nodes()) r.put_message(1, node(*n));
  if (emit(m, 2, !g.name.empty())) r.put_string(2, g.name);
  for (const auto& t : g.initializers()) r.put_message(5, tensor(*t));
  if (emit(m, 10, !g.doc_string.empty())) r.put_string(10, g.doc_string);
  for (const auto& v : g.inputs) r.put_message(11, value_info(v));
  for (const auto& v : g.outputs) r.put_message(12, value_info(v));
  for (const auto& v : g.value_info) r.put_message(13, value_info(v));
  for (const auto& a : g.quantization_annotation) r.put_message(14, annotation(a));
  for (const auto& s : g.sparse_initializers) r.put_message(15, sparse(s));
  pairs(r, 16, g.metadata_props);
  tail(r, g.unknown);
  return r;
}

Rope Encoder::function(const Function& f) {
  Rope r;
  const uint32_t m = f.explicit_defaults;
  if (emit(m, 1, !f.name.empty())) r.put_string(1, f.name);
  for (const auto& v : f.body->inputs) r.put_string(4, v.value->name());
  for (const auto& v : f.body->outputs) r.put_string(5, v.value->name());
  for (const auto& a : f.attribute) r.put_string(6, a);
  for (const auto& n : f.body->nodes()) r.put_message(7, node(*n));
  if (emit(m, 8, !f.doc_string.empty())) r.put_string(8, f.doc_string);
  for (const auto& o : f.opset_import) r.put_message(9, opset(o));
  if (emit(m, 10, !f.domain.empty())) r.put_string(10, f.domain);
  for (const auto& a : f.attribute_proto) r.put_message(11, attribute(a));
  for (const auto& v : f.body->value_info) r.put_message(12, value_info(v));
  if (emit(m, 13, !f.overload.empty())) r.put_string(13, f.overload);
  pairs(r, 14, f.metadata_props);
  tail(r, f.unknown);
  return r;
}

Rope Encoder::model(const Model& mo) {
  Rope r;
  const uint32_t m = mo.explicit_defaults;
  if (emit(m, 1, mo.ir_version != 0)) r.put_int64(1, mo.ir_version);
  if (emit(m, 2, !mo.producer_name.empty())) r.put_string(2, mo.producer_name);
  if (emit(m, 3, !mo.producer_version.empty())) r.put_string(3, mo.producer_version);
  if (emit(m, 4, !mo.domain.empty())) r.put_string(4, mo.domain);
  if (emit(m, 5, mo.model_version != 0)) r.put_int64(5, mo.model_version);
  if (emit(m, 6, !mo.doc_string.empty())) r.put_string(6, mo.doc_string);
  if (mo.graph) r.put_message(7, graph(*mo.graph));
  for (const auto& o : mo.opset_import) r.put_message(8, opset(o));
  pairs(r, 14, mo.metadata_props);
  for (const auto& t : mo.training_info) r.put_string(20, t);
  for (const auto& f : mo.functions) r.put_message(25, function(f));
  for (const auto& c : mo.configuration) r.put_string(26, c);
  tail(r, mo.unknown);
  return r;
}

// ============================================================== files

std::string dir_of(const std::string& path) {
  std::filesystem::path p(path);
  auto parent = p.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

}  // namespace

// ============================================================== public API

namespace {

/// An advisory lock (flock) on the directory of a model: a writer of a model and its external
/// data holds it exclusively from the first byte to the last rename, a loader shared while it
/// opens the model and its data files. Concurrent writers of one pair serialize, and a reader
/// sees the old pair or the new one, never one file of each. Best effort: a directory that
/// cannot be opened (no read permission) is not locked.
class DirectoryLock {
 public:
  DirectoryLock(const std::string& dir, bool exclusive) : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ < 0) return;
    while (::flock(fd_, exclusive ? LOCK_EX : LOCK_SH) != 0 && errno == EINTR) {
    }
  }
  ~DirectoryLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_;
};

/// The side file must be a file of its own inside the model's directory: not the model itself
/// (committed first, it would be renamed over), not reached through a symlinked directory that
/// leads elsewhere (the name is checked lexically; its directories are resolved here).
void check_data_path(const std::string& model_path, const std::string& data_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path model_dir = fs::weakly_canonical(fs::absolute(dir_of(model_path)), ec);
  const fs::path data = fs::weakly_canonical(fs::absolute(data_path), ec);
  const fs::path model = fs::weakly_canonical(fs::absolute(model_path), ec);
  if (data == model || same_file(model_path, data_path))
    throw Error(ErrorKind::kUsage, data_path + ": the external data file would be the model file itself; choose another",
                Parameter{}, {"data_file"});
  const auto rel = data.lexically_relative(model_dir);
  if (rel.empty() || *rel.begin() == "..")
    throw_usage_error(data_path + ": the external data file resolves to " + data.string() +
                      ", outside the model's directory " + model_dir.string());
}

}  // namespace

namespace {

Model parse_model_from(const Bytes& data, bool mapped, const std::string& label,
                       const std::string& base_dir, const LoadOptions& options, LoadInfo* info) {
  Model m;
  Decoder dec(data, mapped);
  try {
    dec.model(Reader(data.data(), data.data() + data.size(), data.data()), m);
    dec.link_all(m);
  } catch (const wire::ParseError& e) {
    throw_input_error(label + ": not a valid ONNX model: protobuf parse error at byte " +
                      std::to_string(e.offset) + ": " + e.message);
  }
  if (!m.graph) throw_input_error(label + ": not an ONNX model (the file holds no graph)");

  ExternalResolver resolver(options.load_external_data ? base_dir : std::string(), info);
  for_each_tensor(m, [&](Tensor& t, const std::string& where) {
    try {
      if (t.is_external()) resolver.resolve(t, label + ": " + where);
      if (options.validate_tensors) t.validate_data(label + ": " + where);
    } catch (const Error& e) {
      if (!options.on_tensor_error) throw;
      options.on_tensor_error(t, e.what());
    }
  });
  return m;
}

}  // namespace

Model parse_model(const Bytes& data, const std::string& label, const std::string& base_dir,
                  const LoadOptions& options, LoadInfo* info) {
  return parse_model_from(data, false, label, base_dir, options, info);
}

LoadedModel load_model(const std::string& path, const LoadOptions& options) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw_input_error(path + ": " + (errno == ENOENT ? std::string("no such file")
                                                     : std::string(std::strerror(errno))));
  if (S_ISDIR(st.st_mode)) throw_input_error(path + ": is a directory, not a model file");
  if (!S_ISREG(st.st_mode)) throw_input_error(path + ": not a regular file");
  if (st.st_size == 0) throw_input_error(path + ": empty file, not an ONNX model");
  if (static_cast<uint64_t>(st.st_size) > kMaxProtoBytes)
    throw_input_error(path + ": " + std::to_string(st.st_size) +
                      " bytes is over the 2 GB protobuf limit; store the weights as external data");
  // Shared while the model and its data files are opened (mapped files keep what they had when
  // opened), so that a writer replacing the pair is seen before or after, not halfway.
  std::optional<DirectoryLock> lock;
  if (options.load_external_data) lock.emplace(dir_of(path), /*exclusive=*/false);
  auto file = MappedFile::open(path);
  LoadedModel out;
  out.info.path = path;
  out.info.base_dir = dir_of(path);
  out.info.file_size = file->size();
  Bytes all = MappedFile::view(file, 0, file->size());
  // Parsing reads headers scattered between tensor payloads: without read-ahead the payload
  // pages a model never needs stay out of memory. Bulk reads later (convert, run) get it back.
  file->advise_random(true);
  out.model = parse_model_from(all, true, path, out.info.base_dir, options, &out.info);
  lock.reset();
  file->advise_random(false);
  return out;
}

std::string serialize_model(const Model& model) {
  Encoder enc(nullptr, true);
  return enc.model(model).flatten();
}

std::string serialize_tensor(const Tensor& tensor) {
  Encoder enc(nullptr, true);
  return enc.tensor(tensor).flatten();
}

namespace {

/// Which tensors go to the side file, at which offsets (4096-aligned, in model order).
struct ExternalPlan {
  std::unordered_map<const Tensor*, ExternalSlot> slots;
  std::vector<const Tensor*> order;
};

ExternalPlan plan_external(const Model& model, const std::string& data_name, ExternalData mode, uint64_t threshold) {
  ExternalPlan p;
  uint64_t offset = 0;
  auto add = [&](const Tensor& t) {
    Bytes b = t.raw_bytes();
    p.slots.emplace(&t, ExternalSlot{data_name, offset, b.size()});
    p.order.push_back(&t);
    offset += b.size();
    offset = (offset + 4095) / 4096 * 4096;
  };
  Model& m = const_cast<Model&>(model);  // for_each_tensor visits mutably; nothing is changed
  for_each_tensor(m, [&](Tensor& t, const std::string&) {
    if (t.type() == DataType::kString) return;
    if (mode == ExternalData::kKeep && t.is_external()) add(t);
    if (mode == ExternalData::kExternalize && (t.is_external() || t.data_bytes() >= threshold)) add(t);
  });
  return p;
}

void write_external_data(OutputFile& f, const ExternalPlan& p) {
  for (const Tensor* t : p.order) {
    Bytes b = t->raw_bytes();
    f.pad_to(p.slots.at(t).offset);
    f.write(b.data(), b.size());
  }
  f.sync();
}

}  // namespace

SaveReport save_model(const Model& model, const std::string& path, const SaveOptions& options) {
  SaveReport report;
  const std::string data_name =
      options.data_file.empty() ? std::filesystem::path(path).filename().string() + ".data"
                                : options.data_file;
  if (!is_safe_relative(data_name))
    throw_usage_error(data_name + ": the external data file must be a relative path");

  ExternalPlan external = plan_external(model, data_name, options.external, options.size_threshold);
  Rope rope;
  {
    Encoder enc(&external.slots, true);
    rope = enc.model(model);
  }
  if (rope.size() > kMaxProtoBytes) {
    external = plan_external(model, data_name, ExternalData::kExternalize, options.size_threshold);
    Encoder enc(&external.slots, true);
    rope = enc.model(model);
    report.auto_external = true;
    if (rope.size() > kMaxProtoBytes)
      throw Error(ErrorKind::kFailed, path + ": the model is over 2 GB even with its weights as external data");
  }
  const auto& plan = external.slots;
  const auto& order = external.order;
  // A model with a side file is a pair: written under the directory's lock, so that two
  // writers of one path do not leave one's model with the other's data.
  std::optional<DirectoryLock> lock;
  if (!order.empty()) lock.emplace(dir_of(path), /*exclusive=*/true);
  // The model's file is opened first: a target that cannot take it (a directory) is refused
  // before any side file exists.
  OutputFile out(path);
  std::unique_ptr<OutputFile> data_file;
  // Beside the path given, as loading resolves locations against the directory of the path it
  // is given.
  const std::string data_path = (std::filesystem::path(dir_of(path)) / data_name).string();
  if (!order.empty()) {
    if (out.is_stream())
      throw_usage_error(path + ": is not a regular file, so no external data file can go beside it; "
                        "write the weights inline or choose a file");
    check_data_path(path, data_path);
    // Named by onnxtool (or --data-file) and read back by a loader that refuses symlinked data
    // paths: a link found there was not asked for, and following it would write anywhere.
    data_file = std::make_unique<OutputFile>(data_path, data_path + " (the external data file)", AtSymlink::kRefuse);
    if (data_file->is_stream()) throw_usage_error(data_path + ": the external data file must be a regular file");
    write_external_data(*data_file, external);
    report.data_bytes = data_file->written();
    report.data_path = data_path;
    report.external_tensors = order.size();
  }
  rope.for_each_segment([&out](const void* d, size_t n) { out.write(d, n); });
  out.sync();
  report.model_bytes = out.written();
  // The new data's side name while a model on disk may read it (below); removed when the
  // final model is in place, or when nothing came to read it.
  struct SideName {
    std::string path;
    bool read_by_model_on_disk = false;
    ~SideName() {
      if (!path.empty() && !read_by_model_on_disk) ::unlink(path.c_str());
    }
  } side;
  if (data_file && !out.is_stream() && std::filesystem::exists(out.target()) && std::filesystem::exists(data_path)) {
    // The model and its data file replace a pair that may refer to each other (--in-place, or
    // writing over an earlier result): renaming one and then the other would leave, to a
    // process killed in between, the old model reading the new data at the old offsets.
    // Instead a copy of the new data goes under a side name first, a model reading that name
    // replaces the old model, then the data and the final model go in place: at every moment
    // the model on disk reads data written for it (a process killed midway leaves the side
    // file behind). The copy, not a second hard link: loaders refuse external data files with
    // more than one link.
    OutputFile side_file(data_file->target());
    write_external_data(side_file, external);
    side.path = side_file.keep_beside();
    const std::string side_location =
        std::filesystem::path(side.path).lexically_relative(std::filesystem::path(dir_of(path))).generic_string();
    if (is_safe_relative(side_location)) {
      auto side_plan = plan;
      for (auto& entry : side_plan) entry.second.location = side_location;
      Encoder enc(&side_plan, true);
      const Rope side_rope = enc.model(model);
      OutputFile first(path);
      side_rope.for_each_segment([&first](const void* d, size_t n) { first.write(d, n); });
      first.commit();
      side.read_by_model_on_disk = true;
    }
  }
  if (data_file) data_file->commit();
  out.commit();
  side.read_by_model_on_disk = false;  // the final model reads the data's own name
  return report;
}

Tensor parse_tensor(const Bytes& data, const std::string& label) {
  Tensor t;
  Decoder dec(data);
  try {
    dec.tensor(Reader(data.data(), data.data() + data.size(), data.data()), t);
  } catch (const wire::ParseError& e) {
    throw_input_error(label + ": not a valid TensorProto: protobuf parse error at byte " +
                      std::to_string(e.offset) + ": " + e.message);
  }
  if (t.is_external()) throw_input_error(label + ": tensor '" + t.name + "' refers to external data");
  // Two data fields: which one holds the tensor is ambiguous (runtimes differ); refused, as the
  // checker's tensor.data-fields refuses it in a model.
  const int stores = static_cast<int>(t.raw_data.has_value()) + !t.float_data.empty() + !t.int32_data.empty() +
                     !t.string_data.empty() + !t.int64_data.empty() + !t.double_data.empty() + !t.uint64_data.empty();
  if (stores > 1)
    throw_input_error(label + ": tensor '" + t.name + "' holds its data in more than one field (raw_data and typed fields)");
  t.validate_data(label);
  return t;
}

void check_not_input(const LoadInfo& input, const std::string& path, const std::string& what) {
  if (same_file(path, input.path)) throw_usage_error(what + ": is the input model " + input.path + "; choose another file");
  for (const auto& f : input.external_files) {
    if (same_file(path, (std::filesystem::path(input.base_dir) / f).string()))
      throw_usage_error(what + ": is the input's external data file " + f + "; choose another file");
  }
}

void check_output_paths(const LoadInfo& input, const std::string& output, const std::string& data_file, bool in_place) {
  if (in_place) {  // replaced on purpose: the model and its data files may be written
    release_input_file(input.path);
    for (const auto& f : input.external_files) release_input_file((std::filesystem::path(input.base_dir) / f).string());
  }
  if (!in_place && same_file(output, input.path))
    throw_usage_error(output + ": is the input model itself; choose another output");
  for (const auto& f : input.external_files) {
    if (same_file(output, (std::filesystem::path(input.base_dir) / f).string()))
      throw_usage_error(output + ": is the input's external data file " + f + "; choose another output");
  }
  const std::string data_name =
      data_file.empty() ? std::filesystem::path(output).filename().string() + ".data" : data_file;
  const std::string data_path = (std::filesystem::path(dir_of(output)) / data_name).string();
  if (same_file(data_path, input.path))
    throw Error(ErrorKind::kUsage, data_path + ": the output's external data file would replace the input model; choose another",
                Parameter{}, {data_file.empty() ? "output" : "data_file"});
  if (!in_place) {
    for (const auto& f : input.external_files) {
      if (same_file(data_path, (std::filesystem::path(input.base_dir) / f).string()))
        throw Error(ErrorKind::kUsage,
                    data_path + ": the output's external data file would replace the input's external data file " + f +
                        "; choose another",
                    Parameter{}, {data_file.empty() ? "output" : "data_file"});
    }
  }
  check_data_path(output, data_path);  // as save_model will, before any work
  // Claimed now, before any work: a report or trace of the same command may not land on them.
  claim_output(output, output);
  claim_output(data_path, (std::filesystem::path(output).parent_path() / data_name).string() + " (the external data file of " + output + ")");
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace onnxtool::ir
