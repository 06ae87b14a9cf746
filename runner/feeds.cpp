// Input preparation for `onnxtool run` and `compare`.
#include "runner/feeds.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "ir/error.h"
#include "runner/tensor_io.h"

namespace onnxtool::runner {
namespace {

// SplitMix64: a small, fixed generator, identical on every platform.
struct Rng {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
};

/// Physical memory of the machine (0 when unknown).
uint64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

std::string gigabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

/// Reads one input's file as the model declares the input (a tensor, sequence or optional);
/// errors name the input as well as the file.
Value read_input(const ir::ValueInfo& vi, const std::string& file) {
  try {
    return read_value_file(file, vi.type ? *vi.type : vi.value->type);
  } catch (const Error& e) {
    throw Error(e.kind(), "input '" + vi.value->name() + "': " + e.what());
  }
}

uint64_t hash_name(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

/// "; give it with --input", or nothing when the command has no such flag.
std::string give_with(const FeedFlags& flags) { return flags.input.empty() ? "" : "; give it with " + flags.input; }

}  // namespace

Tensor random_tensor(const ir::TypeInfo& type, const std::vector<int64_t>& shape, uint64_t seed,
                     const std::string& name, int64_t free_dim, const std::set<std::string>& batch_symbols,
                     const FeedFlags& flags) {
  if (type.kind != ir::TypeInfo::Kind::kTensor || type.elem_type == 0)
    throw_usage_error("input '" + name + "' is not a tensor of known type, so no random value can be made for it" + give_with(flags));
  std::vector<int64_t> dims;
  const size_t rank = type.shape ? type.shape->rank() : shape.size();
  const std::string shape_of = (flags.shape.empty() ? std::string("the shape") : flags.shape) + " for '" + name + "'";
  if (!shape.empty() && shape.size() != rank)
    throw_usage_error(shape_of + " has rank " + std::to_string(shape.size()) + ", the input has rank " + std::to_string(rank));
  for (size_t i = 0; i < rank; ++i) {
    const ir::Dim* d = type.shape ? &type.shape->dims[i] : nullptr;
    if (d && d->is_static()) {
      if (!shape.empty() && shape[i] != d->value)
        throw_usage_error(shape_of + " sets dim " + std::to_string(i) + " to " + std::to_string(shape[i]) +
                          " but the model fixes it to " + std::to_string(d->value));
      dims.push_back(d->value);
    } else {
      const bool batch = (i == 0 && rank > 1) || (d && !d->param.empty() && batch_symbols.count(d->param));
      dims.push_back(!shape.empty() ? shape[i] : batch ? 1 : free_dim);
    }
  }
  // Refuse sizes the machine cannot hold before allocating (--shape 100000,100000,100...).
  int64_t count = 0;
  try {
    count = shape_size(dims);
  } catch (const Error&) {
    throw_usage_error("input '" + name + "': shape " + shape_string(dims) + " has too many elements");
  }
  const auto bytes = ir::storage_bytes(type.data_type(), static_cast<uint64_t>(count));
  const uint64_t memory = physical_memory();
  if (ir::data_type_bits(type.data_type()) > 0 && (!bytes || (memory && *bytes > memory)))
    throw_usage_error("input '" + name + "': shape " + shape_string(dims) + " needs " +
                      (bytes ? gigabytes(*bytes) : std::string("more bytes than 64 bits count")) +
                      ", more than this machine's " + gigabytes(memory) + " of physical memory");
  Tensor t(type.data_type(), dims);
  Rng rng{seed ^ hash_name(name)};
  const int64_t n = t.size();
  switch (t.dtype()) {
    case DataType::kFloat: {
      float* p = t.mutable_data<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(rng.uniform() * 2 - 1);
      break;
    }
    case DataType::kDouble: {
      double* p = t.mutable_data<double>();
      for (int64_t i = 0; i < n; ++i) p[i] = rng.uniform() * 2 - 1;
      break;
    }
    case DataType::kFloat16: {
      uint16_t* p = t.mutable_data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = float_to_half(static_cast<float>(rng.uniform() * 2 - 1));
      break;
    }
    case DataType::kBFloat16: {
      uint16_t* p = t.mutable_data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = float_to_bfloat16(static_cast<float>(rng.uniform() * 2 - 1));
      break;
    }
    case DataType::kBool: {
      uint8_t* p = t.mutable_data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = rng.next() & 1;
      break;
    }
    case DataType::kInt64: {
      int64_t* p = t.mutable_data<int64_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(rng.next() % 10);
      break;
    }
    case DataType::kInt32: {
      int32_t* p = t.mutable_data<int32_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(rng.next() % 10);
      break;
    }
    case DataType::kUInt32: {
      uint32_t* p = t.mutable_data<uint32_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint32_t>(rng.next() % 10);
      break;
    }
    case DataType::kUInt64: {
      uint64_t* p = t.mutable_data<uint64_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = rng.next() % 10;
      break;
    }
    case DataType::kInt16:
    case DataType::kUInt16: {
      uint16_t* p = t.mutable_data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint16_t>(rng.next() % 10);
      break;
    }
    case DataType::kInt8:
    case DataType::kUInt8: {
      uint8_t* p = t.mutable_data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(rng.next() % 10);
      break;
    }
    default:
      throw_usage_error("random data of type " + std::string(ir::data_type_name(t.dtype())) + " for input '" + name +
                        "' is not supported" + give_with(flags));
  }
  return t;
}

std::map<std::string, Value> load_feeds(const Session& session, const FeedOptions& options) {
  std::map<std::string, Value> feeds;
  std::map<std::string, const ir::ValueInfo*> by_name;
  for (const auto* vi : session.inputs()) by_name[vi->value->name()] = vi;
  auto known = [&](const std::string& name) {
    if (by_name.count(name)) return;
    std::string list;
    for (const auto* vi : session.inputs()) list += (list.empty() ? "" : ", ") + vi->value->name();
    throw_usage_error("the model has no input '" + name + "' (inputs: " + list + ")");
  };
  for (const auto& [name, file] : options.files) {
    known(name);
    if (feeds.count(name)) throw_usage_error("input '" + name + "' is given twice");
    feeds[name] = read_input(*by_name.at(name), file);
  }
  for (const auto& [name, shape] : options.shapes) known(name);
  std::map<std::string, std::string> expected;  // the file of the folder that would hold each input
  if (!options.dir.empty()) {
    namespace fs = std::filesystem;
    if (!fs::is_directory(options.dir)) throw_usage_error(options.dir + ": not a directory");
    const bool test_set = fs::exists(fs::path(options.dir) / "input_0.pb");
    size_t k = 0;
    for (const auto* vi : session.inputs()) {
      const std::string& name = vi->value->name();
      if (feeds.count(name)) continue;
      if (test_set) {
        if (vi->value->is_initializer()) continue;
        const auto f = fs::path(options.dir) / ("input_" + std::to_string(k++) + ".pb");
        if (fs::exists(f)) feeds[name] = read_input(*vi, f.string());
        else expected[name] = f.filename().string();
        continue;
      }
      expected[name] = safe_file_name(name) + ".npy or " + safe_file_name(name) + ".pb";
      for (const char* ext : {".npy", ".pb"}) {
        const auto f = fs::path(options.dir) / (safe_file_name(name) + ext);
        if (fs::exists(f)) {
          feeds[name] = read_input(*vi, f.string());
          break;
        }
      }
    }
  }
  std::set<std::string> batch_symbols;
  for (const auto* vi : session.inputs()) {
    const ir::TypeInfo& t = vi->type ? *vi->type : vi->value->type;
    if (t.shape && t.shape->rank() > 1 && !t.shape->dims[0].param.empty()) batch_symbols.insert(t.shape->dims[0].param);
  }
  for (const auto* vi : session.inputs()) {
    const std::string& name = vi->value->name();
    if (feeds.count(name) || vi->value->is_initializer()) continue;
    if (!options.random) {
      // Only the command's own flags: quantize's calibration samples are folders and nothing else.
      const FeedFlags& f = options.flags;
      std::vector<std::string> ways;
      if (!f.input.empty()) ways.push_back(f.input + " " + name + "=FILE");
      if (!f.inputs.empty()) ways.push_back(f.inputs + " DIR");
      if (!f.random.empty()) ways.push_back(f.random);
      std::string hint;
      for (size_t i = 0; i < ways.size(); ++i) hint += (i == 0 ? " (use " : i + 1 == ways.size() ? " or " : ", ") + ways[i];
      if (!hint.empty()) hint += ")";
      else if (expected.count(name)) hint = ": " + options.dir + " has no " + expected[name];
      throw_usage_error("input '" + name + "' is not given" + hint);
    }
    auto s = options.shapes.find(name);
    const ir::TypeInfo& t = vi->type ? *vi->type : vi->value->type;
    feeds[name] = Value::of(random_tensor(t, s == options.shapes.end() ? std::vector<int64_t>{} : s->second,
                                          options.seed, name, options.free_dim, batch_symbols, options.flags));
  }
  return feeds;
}

}  // namespace onnxtool::runner
