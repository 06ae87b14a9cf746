// Tests of ir/model_io (load, serialize, save with external data) and ir/summary, checked
// against libprotobuf's generated classes of ir/onnx.proto as the independent oracle.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/util/message_differencer.h>

#include "ir/error.h"
#include "ir/model_io.h"
#include "ir/summary.h"
#include "onnx.pb.h"
#include "tests/test_data.h"

namespace fs = std::filesystem;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::util::MessageDifferencer;

namespace onnxtool::model_io_test {
namespace {

// ------------------------------------------------------------------ helpers

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE_MESSAGE(out.good(), "cannot write " << path);
}

/// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "onnxtool_model_io_XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

std::set<std::string> dir_entries(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

std::string join(const std::set<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

/// Where two messages differ, as libprotobuf's differencer reports it (shortened).
std::string describe_difference(const Message& a, const Message& b) {
  MessageDifferencer d;
  std::string report;
  d.ReportDifferencesToString(&report);
  d.Compare(a, b);
  if (report.size() > 1500) report = report.substr(0, 1500) + "...";
  return report;
}

/// Bits per element of a TensorProto.DataType, written from the ONNX spec (0: no fixed size).
int element_bits(int32_t data_type) {
  using T = onnx::TensorProto;
  switch (data_type) {
    case T::FLOAT: case T::INT32: case T::UINT32: return 32;
    case T::UINT8: case T::INT8: case T::BOOL: return 8;
    case T::FLOAT8E4M3FN: case T::FLOAT8E4M3FNUZ: case T::FLOAT8E5M2:
    case T::FLOAT8E5M2FNUZ: case T::FLOAT8E8M0: return 8;
    case T::UINT16: case T::INT16: case T::FLOAT16: case T::BFLOAT16: return 16;
    case T::INT64: case T::UINT64: case T::DOUBLE: case T::COMPLEX64: return 64;
    case T::COMPLEX128: return 128;
    case T::UINT4: case T::INT4: case T::FLOAT4E2M1: return 4;
    case T::UINT2: case T::INT2: return 2;
    default: return 0;  // STRING, UNDEFINED, unknown
  }
}

uint64_t element_count(const onnx::TensorProto& t) {
  uint64_t n = 1;
  for (int64_t d : t.dims()) n *= static_cast<uint64_t>(d);
  return n;
}

/// Bytes of the tensor's data in packed raw form (sub-byte types rounded up).
uint64_t tensor_bytes(const onnx::TensorProto& t) {
  return (element_count(t) * static_cast<uint64_t>(element_bits(t.data_type())) + 7) / 8;
}

/// The tensor's data as raw little-endian bytes, built from whichever field holds it
/// (TensorProto's storage rules). nullopt for strings and external data.
std::optional<std::string> raw_bytes_of(const onnx::TensorProto& t) {
  using T = onnx::TensorProto;
  if (t.data_location() == T::EXTERNAL || t.data_type() == T::STRING) return std::nullopt;
  if (t.has_raw_data()) return t.raw_data();
  std::string out;
  auto append = [&out](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  switch (t.data_type()) {
    case T::FLOAT: case T::COMPLEX64:
      for (float v : t.float_data()) append(&v, 4);
      break;
    case T::DOUBLE: case T::COMPLEX128:
      for (double v : t.double_data()) append(&v, 8);
      break;
    case T::INT64:
      for (int64_t v : t.int64_data()) append(&v, 8);
      break;
    case T::UINT64:
      for (uint64_t v : t.uint64_data()) append(&v, 8);
      break;
    case T::UINT32:
      for (uint64_t v : t.uint64_data()) {
        const auto w = static_cast<uint32_t>(v);
        append(&w, 4);
      }
      break;
    default: {
      // Everything else lives in int32_data: one element per entry, or for sub-byte types one
      // already-packed byte per entry.
      const int bits = element_bits(t.data_type());
      const size_t size = bits >= 8 ? static_cast<size_t>(bits / 8) : 1;
      for (int32_t v : t.int32_data()) {
        const auto w = static_cast<uint32_t>(v);
        append(&w, size);  // little-endian host: the low bytes first
      }
    }
  }
  return out;
}

/// Every TensorProto inside a message, found by reflection in field-number order (the same order
/// for two messages of the same structure).
void collect_tensors(Message& m, std::vector<onnx::TensorProto*>& out) {
  if (m.GetDescriptor() == onnx::TensorProto::descriptor()) {
    out.push_back(static_cast<onnx::TensorProto*>(&m));
    return;
  }
  const auto* refl = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  refl->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (f->is_repeated()) {
      for (int i = 0; i < refl->FieldSize(m, f); ++i)
        collect_tensors(*refl->MutableRepeatedMessage(&m, f, i), out);
    } else {
      collect_tensors(*refl->MutableMessage(&m, f), out);
    }
  }
}

std::vector<onnx::TensorProto*> tensors_of(onnx::ModelProto& m) {
  std::vector<onnx::TensorProto*> out;
  collect_tensors(m, out);
  return out;
}

onnx::ModelProto parse_proto(const std::string& bytes, const std::string& what) {
  onnx::ModelProto m;
  REQUIRE_MESSAGE(m.ParseFromString(bytes), "libprotobuf cannot parse " << what);
  return m;
}

int run_command(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string shell_quote(const fs::path& p) { return "'" + p.string() + "'"; }

/// Anonymous resident memory of this process in bytes (Linux), or 0 when unknown.
uint64_t anon_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8)) * 1024;
  }
  return 0;
}

std::vector<fs::path> all_models() {
  std::vector<fs::path> models = testing::backend_models();
  for (const auto& p : testing::installed_real_models()) models.push_back(p);
  return models;
}

// ------------------------------------------------------------------ round trip

TEST_SUITE("model_io") {

TEST_CASE("every backend and real model round-trips to an equal message and canonical bytes") {
  const std::vector<fs::path> models = all_models();
  REQUIRE_MESSAGE(testing::backend_models().size() > 1000,
                  "the ONNX backend suite is missing under " << testing::backend_data());
  size_t checked = 0;
  size_t byte_mismatches = 0;
  for (const auto& path : models) {
    REQUIRE_MESSAGE(fs::exists(path), "missing test model " << path);
    const std::string original = read_file(path);
    const onnx::ModelProto want = parse_proto(original, path.string());

    std::string out;
    try {
      out = ir::serialize_model(ir::load_model(path.string()).model);
    } catch (const Error& e) {
      FAIL_CHECK(path.string() << ": load/serialize threw: " << e.what());
      continue;
    }
    const onnx::ModelProto got = parse_proto(out, "the re-serialized " + path.string());
    CHECK_MESSAGE(MessageDifferencer::Equals(want, got),
                  path.string() << " differs after the round trip:\n" << describe_difference(want, got));
    // Both sides write canonical field order, so the bytes must match too; a file that ever
    // legitimately differs can be exempted here by name.
    if (out != want.SerializeAsString()) {
      ++byte_mismatches;
      FAIL_CHECK(path.string() << ": bytes differ from libprotobuf's canonical serialization");
    }
    ++checked;
  }
  MESSAGE("round trip: " << checked << " models checked, " << byte_mismatches
                         << " differ from libprotobuf's bytes");
  CHECK(checked == models.size());
}

// ------------------------------------------------------------------ unknown fields and defaults

onnx::ModelProto model_with_unknowns_and_defaults() {
  onnx::ModelProto m;
  m.set_ir_version(0);  // explicitly present with the default value
  m.set_producer_name("unit-test");
  m.set_doc_string("");
  m.set_model_version(0);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  opset->mutable_unknown_fields()->AddVarint(77, 1);
  auto* meta = m.add_metadata_props();
  meta->set_key("k");
  meta->set_value("");
  meta->mutable_unknown_fields()->AddLengthDelimited(9, "meta-extra");

  auto* um = m.mutable_unknown_fields();
  um->AddVarint(1000, 42);
  um->AddLengthDelimited(1001, std::string("model\0level", 11));
  um->AddFixed32(1002, 0xdeadbeefu);
  um->AddFixed64(1003, 0x0123456789abcdefULL);
  um->AddFixed32(1, 7);  // a known field number with the wrong wire type is unknown too
  um->AddGroup(1004)->AddVarint(1, 5);

  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("g");
  g->set_doc_string("");
  g->mutable_unknown_fields()->AddVarint(500, 3);
  g->mutable_unknown_fields()->AddLengthDelimited(501, "graph-extra");

  auto* x = g->add_input();
  x->set_name("x");
  x->set_doc_string("");
  onnx::TypeProto* xt = x->mutable_type();
  xt->mutable_unknown_fields()->AddLengthDelimited(100, "type-extra");
  auto* tt = xt->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_unknown_fields()->AddVarint(60, 9);
  auto* shape = tt->mutable_shape();
  shape->add_dim()->set_dim_value(0);  // explicit zero inside a oneof
  shape->add_dim()->set_dim_param("N");
  auto* d3 = shape->add_dim();
  d3->set_denotation("");
  d3->mutable_unknown_fields()->AddVarint(40, 1);
  shape->mutable_unknown_fields()->AddFixed32(30, 1);

  auto* w = g->add_initializer();
  w->set_name("w");
  w->add_dims(2);
  w->set_data_type(onnx::TensorProto::FLOAT);
  const float wv[2] = {1.5f, -2.0f};
  w->set_raw_data(std::string(reinterpret_cast<const char*>(wv), sizeof wv));
  w->set_doc_string("");
  w->set_data_location(onnx::TensorProto::DEFAULT);
  w->mutable_unknown_fields()->AddVarint(300, 5);
  w->mutable_segment()->set_begin(0);

  auto* n = g->add_node();
  n->add_input("x");
  n->add_input("w");
  n->add_output("y");
  n->set_name("add");
  n->set_op_type("Add");
  n->set_domain("");
  n->set_doc_string("");
  n->mutable_unknown_fields()->AddLengthDelimited(200, "node-extra");
  auto* a = n->add_attribute();
  a->set_name("zero");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(0);
  a->set_doc_string("");
  a->mutable_unknown_fields()->AddVarint(99, 2);
  auto* af = n->add_attribute();
  af->set_name("negzero");
  af->set_type(onnx::AttributeProto::FLOAT);
  af->set_f(-0.0f);

  auto* c = g->add_node();
  c->add_output("c");
  c->set_op_type("Constant");
  auto* ca = c->add_attribute();
  ca->set_name("value");
  ca->set_type(onnx::AttributeProto::TENSOR);
  auto* ct = ca->mutable_t();
  ct->set_data_type(onnx::TensorProto::INT64);
  ct->add_dims(3);
  ct->add_int64_data(1);
  ct->add_int64_data(0);
  ct->add_int64_data(-1);
  ct->mutable_unknown_fields()->AddLengthDelimited(301, "tensor-extra");

  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  y->mutable_unknown_fields()->AddVarint(70, 1);
  auto* vi = g->add_value_info();
  vi->set_name("c");
  vi->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
      onnx::TensorProto::INT64);
  vi->mutable_type()->mutable_sequence_type()->mutable_unknown_fields()->AddVarint(61, 4);
  return m;
}

TEST_CASE("unknown fields at every level and explicit defaults survive load and save") {
  const onnx::ModelProto want = model_with_unknowns_and_defaults();

  // The oracle itself must see what this test is about.
  {
    onnx::ModelProto no_unknown = want;
    no_unknown.mutable_graph()->mutable_node(0)->mutable_unknown_fields()->Clear();
    REQUIRE_FALSE(MessageDifferencer::Equals(want, no_unknown));
    onnx::ModelProto no_default = want;
    no_default.clear_doc_string();
    REQUIRE_FALSE(MessageDifferencer::Equals(want, no_default));
  }

  TempDir dir;
  const fs::path path = dir / "unknowns.onnx";
  const std::string bytes = want.SerializeAsString();
  write_file(path, bytes);

  ir::LoadedModel loaded = ir::load_model(path.string());
  const std::string out = ir::serialize_model(loaded.model);
  const onnx::ModelProto got = parse_proto(out, "the re-serialized model");
  CHECK_MESSAGE(MessageDifferencer::Equals(want, got), describe_difference(want, got));
  CHECK_MESSAGE(out == bytes, "the bytes differ from libprotobuf's serialization");

  // Through save_model too.
  const fs::path saved = dir / "saved.onnx";
  ir::save_model(loaded.model, saved.string());
  const onnx::ModelProto got2 = parse_proto(read_file(saved), saved.string());
  CHECK_MESSAGE(MessageDifferencer::Equals(want, got2), describe_difference(want, got2));
}

// ------------------------------------------------------------------ external data

/// Saves `model_path` with external data at `threshold` and checks the result with libprotobuf;
/// returns the number of tensors that went external.
size_t check_externalize(const fs::path& model_path, uint64_t threshold) {
  INFO("model " << model_path.string() << ", threshold " << threshold);
  TempDir dir;
  onnx::ModelProto original = parse_proto(read_file(model_path), model_path.string());
  std::vector<onnx::TensorProto*> orig_tensors = tensors_of(original);

  ir::LoadedModel loaded = ir::load_model(model_path.string());
  const fs::path out = dir / "model.onnx";
  ir::SaveOptions options;
  options.external = ir::ExternalData::kExternalize;
  options.size_threshold = threshold;
  const ir::SaveReport report = ir::save_model(loaded.model, out.string(), options);

  onnx::ModelProto saved = parse_proto(read_file(out), out.string());
  std::vector<onnx::TensorProto*> saved_tensors = tensors_of(saved);
  REQUIRE(saved_tensors.size() == orig_tensors.size());

  const fs::path data_path = dir / "model.onnx.data";
  const std::string side = fs::exists(data_path) ? read_file(data_path) : std::string();

  size_t expected_external = 0;
  std::vector<std::pair<uint64_t, uint64_t>> regions;
  for (size_t i = 0; i < orig_tensors.size(); ++i) {
    const onnx::TensorProto& o = *orig_tensors[i];
    const onnx::TensorProto& s = *saved_tensors[i];
    INFO("tensor '" << o.name() << "'");
    const bool goes_external = o.data_type() != onnx::TensorProto::STRING &&
                               element_bits(o.data_type()) > 0 && tensor_bytes(o) >= threshold;
    if (!goes_external) {
      CHECK_MESSAGE(MessageDifferencer::Equals(o, s), describe_difference(o, s));
      continue;
    }
    ++expected_external;
    CHECK(s.data_location() == onnx::TensorProto::EXTERNAL);
    CHECK_FALSE(s.has_raw_data());
    CHECK(s.float_data_size() + s.int32_data_size() + s.int64_data_size() + s.double_data_size() +
              s.uint64_data_size() == 0);
    std::map<std::string, std::string> kv;
    for (const auto& e : s.external_data()) kv[e.key()] = e.value();
    CHECK(kv["location"] == "model.onnx.data");
    REQUIRE(kv.count("offset"));
    REQUIRE(kv.count("length"));
    const uint64_t offset = std::stoull(kv["offset"]);
    const uint64_t length = std::stoull(kv["length"]);
    CHECK(offset % 4096 == 0);
    const std::optional<std::string> want_bytes = raw_bytes_of(o);
    REQUIRE(want_bytes);
    CHECK(length == want_bytes->size());
    CHECK(length == tensor_bytes(o));
    REQUIRE(offset + length <= side.size());
    CHECK_MESSAGE(side.compare(offset, length, *want_bytes) == 0, "side-file bytes differ");
    regions.emplace_back(offset, length);
    // Everything but the data fields is kept.
    onnx::TensorProto o_meta = o, s_meta = s;
    for (onnx::TensorProto* t : {&o_meta, &s_meta}) {
      t->clear_raw_data();
      t->clear_float_data();
      t->clear_int32_data();
      t->clear_int64_data();
      t->clear_double_data();
      t->clear_uint64_data();
      t->clear_external_data();
      t->clear_data_location();
    }
    CHECK_MESSAGE(MessageDifferencer::Equals(o_meta, s_meta), describe_difference(o_meta, s_meta));
  }
  std::sort(regions.begin(), regions.end());
  for (size_t i = 1; i < regions.size(); ++i)
    CHECK_MESSAGE(regions[i - 1].first + regions[i - 1].second <= regions[i].first, "regions overlap");
  CHECK(report.external_tensors == expected_external);
  if (expected_external > 0) {
    CHECK(report.data_path == data_path.string());
    CHECK(report.data_bytes == side.size());
  } else {
    CHECK(report.data_path.empty());
    CHECK_FALSE(fs::exists(data_path));
  }
  CHECK(report.model_bytes == fs::file_size(out));
  CHECK_FALSE(report.auto_external);

  // Back in: load the external model and write everything inline; the result is the original
  // message, with the externalized tensors now in raw_data.
  onnx::ModelProto normalized = original;
  std::vector<onnx::TensorProto*> norm_tensors = tensors_of(normalized);
  for (onnx::TensorProto* t : norm_tensors) {
    if (t->data_type() == onnx::TensorProto::STRING || element_bits(t->data_type()) == 0 ||
        tensor_bytes(*t) < threshold)
      continue;
    const std::string raw = *raw_bytes_of(*t);
    t->clear_float_data();
    t->clear_int32_data();
    t->clear_int64_data();
    t->clear_double_data();
    t->clear_uint64_data();
    t->clear_data_location();
    t->set_raw_data(raw);
  }
  ir::LoadedModel back = ir::load_model(out.string());
  const fs::path inlined = dir / "inline.onnx";
  ir::SaveOptions inline_options;
  inline_options.external = ir::ExternalData::kInline;
  const ir::SaveReport inline_report = ir::save_model(back.model, inlined.string(), inline_options);
  CHECK(inline_report.data_path.empty());
  CHECK(inline_report.external_tensors == 0);
  const onnx::ModelProto round = parse_proto(read_file(inlined), inlined.string());
  CHECK_MESSAGE(MessageDifferencer::Equals(normalized, round), describe_difference(normalized, round));

  // Nothing else (no temporary file) is left in the directory.
  std::set<std::string> want_entries{"model.onnx", "inline.onnx"};
  if (expected_external > 0) want_entries.insert("model.onnx.data");
  CHECK_MESSAGE(dir_entries(dir.path()) == want_entries, "directory holds: " << join(dir_entries(dir.path())));
  return expected_external;
}

TEST_CASE("external data: big tensors go to a 4096-aligned side file and come back intact") {
  size_t models = 0;
  for (const auto& path : testing::installed_real_models()) {
    CHECK(check_externalize(path, 1024) > 0);
    // A threshold equal to one tensor's exact size: that tensor must go external (>=).
    onnx::ModelProto m = parse_proto(read_file(path), path.string());
    uint64_t exact = 0;
    for (const onnx::TensorProto* t : tensors_of(m)) {
      const uint64_t b = tensor_bytes(*t);
      if (b > 4 && b < 4096 && b % 4 == 0 && b != 1024) exact = b;
    }
    if (exact) check_externalize(path, exact);
    ++models;
  }
  // Backend models with typed-field initializers (float_data, int64_data...).
  for (const auto& path : testing::backend_models()) {
    if (path.string().find("test_constant") == std::string::npos &&
        path.string().find("pytorch-converted/test_Conv2d") == std::string::npos)
      continue;
    check_externalize(path, 16);
    ++models;
  }
  MESSAGE("external data: " << models << " models checked");
}

TEST_CASE("convert --external-data leaves only the model and its side file") {
  const std::vector<fs::path> installed = testing::installed_real_models();
  if (installed.empty()) return;  // marked skipped by installed_real_models
  const fs::path model = installed.front();
  TempDir dir;
  const fs::path out = dir / "out.onnx";
  const std::string cmd = shell_quote(testing::onnxtool_binary()) + " convert " + shell_quote(model) + " -o " +
                          shell_quote(out) + " --external-data --size-threshold 1024 > /dev/null";
  REQUIRE(run_command(cmd) == 0);
  CHECK(dir_entries(dir.path()) == std::set<std::string>{"out.onnx", "out.onnx.data"});
  // The CLI's output loads and inlines back to the original message.
  const fs::path back = dir / "back.onnx";
  REQUIRE(run_command(shell_quote(testing::onnxtool_binary()) + " convert " + shell_quote(out) + " -o " +
                      shell_quote(back) + " --inline-external-data > /dev/null") == 0);
  CHECK(dir_entries(dir.path()) == std::set<std::string>{"out.onnx", "out.onnx.data", "back.onnx"});
  onnx::ModelProto want = parse_proto(read_file(model), model.string());
  onnx::ModelProto got = parse_proto(read_file(back), back.string());
  // Externalized tensors come back as raw_data; the real models store all big weights that way.
  for (onnx::TensorProto* t : tensors_of(want)) {
    if (tensor_bytes(*t) >= 1024 && !t->has_raw_data() && t->data_type() != onnx::TensorProto::STRING) {
      const std::string raw = *raw_bytes_of(*t);
      t->clear_float_data();
      t->clear_int32_data();
      t->clear_int64_data();
      t->clear_double_data();
      t->clear_uint64_data();
      t->set_raw_data(raw);
    }
  }
  CHECK_MESSAGE(MessageDifferencer::Equals(want, got), describe_difference(want, got));
}

// ------------------------------------------------------------------ over 2 GiB

TEST_CASE("a model over 2 GiB is saved with external data automatically, without copying weights") {
  TempDir dir;
  constexpr uint64_t kSparseSize = 2200ULL * 1024 * 1024;  // 2.2 GB, no blocks allocated
  constexpr uint64_t kChunk = 768000000ULL;                // three float tensors of this size
  const fs::path sparse = dir / "weights.bin";

  struct statvfs vfs {};
  REQUIRE(::statvfs(dir.path().c_str(), &vfs) == 0);
  const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  // The side file is really written (3 x 768 MB), so that much space must be free.
  if (free_bytes < 3 * kChunk + (512ULL << 20)) {
    testing::skip_run("over 2 GiB: only " + std::to_string(free_bytes) + " bytes free under " + dir.path().string());
    return;
  }
  {
    const int fd = ::open(sparse.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    const bool ok = ::ftruncate(fd, static_cast<off_t>(kSparseSize)) == 0;
    // A few marker bytes so that the copy to the side file can be checked at known places.
    for (uint64_t k = 0; ok && k < 3; ++k) {
      const uint8_t head[4] = {0xA0, static_cast<uint8_t>(k), 0x5A, 0x01};
      const uint8_t tail[4] = {0xB0, static_cast<uint8_t>(k), 0xA5, 0x02};
      REQUIRE(::pwrite(fd, head, 4, static_cast<off_t>(k * kChunk)) == 4);
      REQUIRE(::pwrite(fd, tail, 4, static_cast<off_t>((k + 1) * kChunk - 4)) == 4);
    }
    ::close(fd);
    if (!ok) {
      testing::skip_run("over 2 GiB: the filesystem cannot hold a sparse file of " + std::to_string(kSparseSize) +
                        " bytes");
      return;
    }
    struct stat st {};
    REQUIRE(::stat(sparse.c_str(), &st) == 0);
    if (static_cast<uint64_t>(st.st_blocks) * 512 > (64ULL << 20)) {
      testing::skip_run("over 2 GiB: the filesystem does not keep files sparse");
      return;
    }
  }
  const uint64_t rss_before = anon_rss_bytes();
  auto file = ir::MappedFile::open(sparse.string());
  REQUIRE(file->size() == kSparseSize);

  ir::Model model;
  model.ir_version = 8;
  model.set_opset_version("", 17);
  model.producer_name = "model_io_test";
  model.graph = std::make_unique<ir::Graph>();
  ir::Graph& g = *model.graph;
  g.name = "big";
  std::vector<ir::Value*> weights;
  for (uint64_t k = 0; k < 3; ++k) {
    ir::Tensor t;
    t.name = "w" + std::to_string(k);
    t.data_type = static_cast<int32_t>(ir::DataType::kFloat);
    t.dims = {static_cast<int64_t>(kChunk / 4)};
    t.raw_data = ir::MappedFile::view(file, k * kChunk, kChunk);
    weights.push_back(g.add_initializer(std::move(t)));
  }
  ir::Node* sum = g.add_node("Sum", weights, {"y"});
  g.add_output(sum->output(0), ir::TypeInfo::tensor(ir::DataType::kFloat));

  const fs::path out = dir / "big.onnx";
  const ir::SaveReport report = ir::save_model(model, out.string());  // default: keep inline
  const uint64_t rss_after = anon_rss_bytes();

  CHECK(report.auto_external);
  CHECK(report.external_tensors == 3);
  CHECK(fs::file_size(out) < 64 * 1024);
  CHECK(report.model_bytes == fs::file_size(out));
  const fs::path data = dir / "big.onnx.data";
  REQUIRE(fs::exists(data));
  CHECK(report.data_bytes == fs::file_size(data));
  CHECK(fs::file_size(data) >= 3 * kChunk);
  // AddressSanitizer keeps freed blocks in a quarantine (256 MiB by default) instead of returning
  // them, so under it the copy buffers count towards the growth.
#ifdef __SANITIZE_ADDRESS__
  constexpr uint64_t kAllowedGrowth = 256ULL << 20 << 1;
#else
  constexpr uint64_t kAllowedGrowth = 256ULL << 20;
#endif
  if (rss_before && rss_after)
    CHECK_MESSAGE(rss_after < rss_before + kAllowedGrowth,
                  "anonymous memory grew by " << (rss_after - rss_before) << " bytes while saving");

  // The small model file, read by libprotobuf: three external initializers at aligned offsets
  // whose first and last bytes are the markers.
  onnx::ModelProto saved = parse_proto(read_file(out), out.string());
  REQUIRE(saved.graph().initializer_size() == 3);
  const int dfd = ::open(data.c_str(), O_RDONLY);
  REQUIRE(dfd >= 0);
  for (int k = 0; k < 3; ++k) {
    const onnx::TensorProto& t = saved.graph().initializer(k);
    INFO("initializer " << t.name());
    CHECK(t.data_location() == onnx::TensorProto::EXTERNAL);
    std::map<std::string, std::string> kv;
    for (const auto& e : t.external_data()) kv[e.key()] = e.value();
    CHECK(kv["location"] == "big.onnx.data");
    const uint64_t offset = std::stoull(kv["offset"]);
    CHECK(offset % 4096 == 0);
    CHECK(std::stoull(kv["length"]) == kChunk);
    uint8_t head[4] = {}, tail[4] = {};
    REQUIRE(::pread(dfd, head, 4, static_cast<off_t>(offset)) == 4);
    REQUIRE(::pread(dfd, tail, 4, static_cast<off_t>(offset + kChunk - 4)) == 4);
    CHECK(head[0] == 0xA0);
    CHECK(head[1] == k);
    CHECK(tail[0] == 0xB0);
    CHECK(tail[1] == k);
  }
  ::close(dfd);

  // It loads back, with the three tensors mapped from the side file.
  ir::LoadedModel back = ir::load_model(out.string());
  REQUIRE(back.model.graph->initializers().size() == 3);
  for (const auto& t : back.model.graph->initializers()) {
    REQUIRE(t->external_bytes);
    CHECK(t->external_bytes->size() == kChunk);
  }
  CHECK(dir_entries(dir.path()) == std::set<std::string>{"weights.bin", "big.onnx", "big.onnx.data"});
}

// ------------------------------------------------------------------ inspect figures

/// What inspect should report, computed from the libprotobuf message.
struct Expected {
  size_t node_count = 0;
  size_t node_count_total = 0;
  size_t subgraph_count = 0;
  std::map<std::string, size_t> op_counts;
  size_t initializer_count = 0;
  size_t constant_tensor_count = 0;
  uint64_t parameter_count = 0;
  uint64_t parameter_bytes = 0;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

void count_graph(const onnx::GraphProto& g, Expected& e) {
  e.node_count_total += static_cast<size_t>(g.node_size());
  auto count_tensor = [&e](const onnx::TensorProto& t) {
    e.parameter_count += element_count(t);
    if (t.data_type() != onnx::TensorProto::STRING) e.parameter_bytes += tensor_bytes(t);
  };
  for (const auto& t : g.initializer()) count_tensor(t);
  for (const auto& s : g.sparse_initializer())
    if (s.has_values()) count_tensor(s.values());
  e.initializer_count += static_cast<size_t>(g.initializer_size() + g.sparse_initializer_size());
  for (const auto& n : g.node()) {
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    e.op_counts[default_domain ? n.op_type() : n.domain() + "::" + n.op_type()]++;
    // Weights kept in Constant nodes count as parameters too (summary.h).
    if (default_domain && n.op_type() == "Constant") {
      for (const auto& a : n.attribute()) {
        if (a.name() == "value" && a.has_t()) {
          ++e.constant_tensor_count;
          count_tensor(a.t());
        }
      }
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g()) {
        ++e.subgraph_count;
        count_graph(a.g(), e);
      }
      for (const auto& sub : a.graphs()) {
        ++e.subgraph_count;
        count_graph(sub, e);
      }
    }
  }
}

Expected expected_summary(const onnx::ModelProto& m) {
  Expected e;
  const onnx::GraphProto& g = m.graph();
  e.node_count = static_cast<size_t>(g.node_size());
  count_graph(g, e);
  std::set<std::string> init_names;
  for (const auto& t : g.initializer()) init_names.insert(t.name());
  for (const auto& s : g.sparse_initializer()) init_names.insert(s.values().name());
  for (const auto& i : g.input())
    if (!init_names.count(i.name())) e.inputs.push_back(i.name());
  for (const auto& o : g.output()) e.outputs.push_back(o.name());
  return e;
}

void check_summary(const fs::path& path) {
  INFO("model " << path.string());
  const onnx::ModelProto m = parse_proto(read_file(path), path.string());
  const Expected e = expected_summary(m);
  const ir::ModelSummary s = ir::summarize(ir::load_model(path.string()));
  CHECK(s.node_count == e.node_count);
  CHECK(s.node_count_total == e.node_count_total);
  CHECK(s.subgraph_count == e.subgraph_count);
  CHECK(s.op_counts == e.op_counts);
  CHECK(s.initializer_count == e.initializer_count);
  CHECK(s.constant_tensor_count == e.constant_tensor_count);
  CHECK(s.parameter_count == e.parameter_count);
  CHECK(s.parameter_bytes == e.parameter_bytes);
  std::vector<std::string> inputs, outputs;
  for (const auto& io : s.inputs) inputs.push_back(io.name);
  for (const auto& io : s.outputs) outputs.push_back(io.name);
  CHECK(inputs == e.inputs);
  CHECK(outputs == e.outputs);
  CHECK(s.ir_version == m.ir_version());
  CHECK(s.producer_name == m.producer_name());
  CHECK(s.graph_name == m.graph().name());
  CHECK(s.file_size == fs::file_size(path));
  CHECK(s.opset_import.size() == static_cast<size_t>(m.opset_import_size()));
}

TEST_CASE("inspect figures match counts computed with libprotobuf") {
  size_t checked = 0;
  for (const auto& path : testing::installed_real_models()) {
    check_summary(path);
    ++checked;
  }
  // The Silero VAD models hold If subgraphs: make sure the subgraph walk is exercised.
  if (fs::exists(testing::real_models()[4])) {  // else marked skipped above
    const onnx::ModelProto vad =
        parse_proto(read_file(testing::real_models()[4]), "silero_vad_v5");
    CHECK(expected_summary(vad).subgraph_count > 0);
  }
  for (const auto& path : testing::backend_models()) {
    check_summary(path);
    ++checked;
  }
  MESSAGE("inspect figures: " << checked << " models checked");
}

}  // TEST_SUITE

}  // namespace
}  // namespace onnxtool::model_io_test
