// Input preparation for `onnxtool run` and `compare`.
#include "runner/feeds.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <utility>

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

/// The smallest and largest value of an integer type, as doubles.
std::pair<double, double> integer_bounds(DataType t) {
  switch (t) {
    case DataType::kInt8: return {-128.0, 127.0};
    case DataType::kUInt8: return {0.0, 255.0};
    case DataType::kInt16: return {-32768.0, 32767.0};
    case DataType::kUInt16: return {0.0, 65535.0};
    case DataType::kInt32: return {-2147483648.0, 2147483647.0};
    case DataType::kUInt32: return {0.0, 4294967295.0};
    case DataType::kInt64: return {-0x1p63, 0x1p63 - 1024};  // the largest double below 2^63
    default: return {0.0, 0x1p64 - 2048};                    // uint64
  }
}

template <class T, class Fn>
void fill_integers(Tensor& t, Fn draw) {
  T* p = t.mutable_data<T>();
  for (int64_t i = 0; i < t.size(); ++i) p[i] = static_cast<T>(draw());
}

/// A bound as people write it: "255", "0.5", "-1e+06".
std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

Tensor random_tensor(const ir::TypeInfo& type, const std::vector<int64_t>& shape, uint64_t seed,
                     const std::string& name, int64_t free_dim, const std::set<std::string>& batch_symbols,
                     const FeedFlags& flags, const ValueRange* range) {
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
  const DataType dt = t.dtype();
  const bool floating = dt == DataType::kFloat || dt == DataType::kDouble || dt == DataType::kFloat16 || dt == DataType::kBFloat16;
  // Floats in [lo, hi); integers over [ilo, ihi].
  const double lo = range ? range->lo : floating ? -1.0 : 0.0;
  const double hi = range ? range->hi : floating ? 1.0 : 9.0;
  const auto uniform = [&rng, lo, hi] { return lo + rng.uniform() * (hi - lo); };
  double ilo = 0, ihi = 0;
  uint64_t span = 0;  // integers in [ilo, ihi]; 0 when all 2^64 values
  if (!floating && dt != DataType::kBool) {
    ilo = std::ceil(lo);
    ihi = std::floor(hi);
    const auto [tmin, tmax] = integer_bounds(dt);
    if (ilo > ihi || ilo < tmin || ihi > tmax)
      throw_usage_error("input '" + name + "': no " + std::string(ir::data_type_name(dt)) + " value lies in [" + number_text(lo) +
                        ", " + number_text(hi) + "]" + (ilo <= ihi ? " that the type holds" : ""));
    span = static_cast<uint64_t>(ihi - ilo) + 1;
  }
  const auto integer = [&rng, ilo, span] {
    const uint64_t r = span ? rng.next() % span : rng.next();
    return ilo + static_cast<double>(r);
  };
  switch (dt) {
    case DataType::kFloat: {
      float* p = t.mutable_data<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(uniform());
      break;
    }
    case DataType::kDouble: {
      double* p = t.mutable_data<double>();
      for (int64_t i = 0; i < n; ++i) p[i] = uniform();
      break;
    }
    case DataType::kFloat16: {
      uint16_t* p = t.mutable_data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = float_to_half(static_cast<float>(uniform()));
      break;
    }
    case DataType::kBFloat16: {
      uint16_t* p = t.mutable_data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = float_to_bfloat16(static_cast<float>(uniform()));
      break;
    }
    case DataType::kBool: {
      uint8_t* p = t.mutable_data<uint8_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = rng.next() & 1;
      break;
    }
    case DataType::kInt64: fill_integers<int64_t>(t, integer); break;
    case DataType::kInt32: fill_integers<int32_t>(t, integer); break;
    case DataType::kUInt32: fill_integers<uint32_t>(t, integer); break;
    case DataType::kUInt64: fill_integers<uint64_t>(t, integer); break;
    case DataType::kInt16: fill_integers<int16_t>(t, integer); break;
    case DataType::kUInt16: fill_integers<uint16_t>(t, integer); break;
    case DataType::kInt8: fill_integers<int8_t>(t, integer); break;
    case DataType::kUInt8: fill_integers<uint8_t>(t, integer); break;
    default:
      throw_usage_error("random data of type " + std::string(ir::data_type_name(t.dtype())) + " for input '" + name +
                        "' is not supported" + give_with(flags));
  }
  return t;
}

Tensor cast_float(const Tensor& t, DataType to) {
  Tensor out(to, t.shape());
  for (int64_t i = 0; i < t.size(); ++i) set_element_from_double(out, i, element_as_double(t, i));
  return out;
}

std::map<std::string, Value> conform_float_feeds(const Session& session, const std::map<std::string, Value>& feeds,
                                                 std::vector<std::string>* cast) {
  const auto is_float = [](DataType t) {
    return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 || t == DataType::kBFloat16;
  };
  std::map<std::string, Value> out;
  for (const auto* in : session.inputs()) {
    const auto it = feeds.find(in->value->name());
    if (it == feeds.end()) continue;  // an optional override not fed
    Value v = it->second;
    const DataType want = in->type ? in->type->data_type() : DataType::kUndefined;
    if (v.is_tensor() && v.tensor.dtype() != want && is_float(v.tensor.dtype()) && is_float(want)) {
      v = Value::of(cast_float(v.tensor, want));
      if (cast) cast->push_back(in->value->name());
    }
    out.emplace(in->value->name(), std::move(v));
  }
  return out;
}

bool has_free_dims(const Session& session, const FeedOptions& options) {
  for (const auto* vi : session.inputs()) {
    const std::string& name = vi->value->name();
    if (vi->value->is_initializer() || options.shapes.count(name)) continue;
    if (std::any_of(options.files.begin(), options.files.end(), [&](const auto& f) { return f.first == name; })) continue;
    const ir::TypeInfo& t = vi->type ? *vi->type : vi->value->type;
    if (!t.shape) continue;
    for (size_t i = 1; i < t.shape->rank(); ++i)
      if (!t.shape->dims[i].is_static()) return true;
  }
  return false;
}

std::map<std::string, Value> feeds_that_run(const Session& session, FeedOptions options,
                                            const std::function<void(std::map<std::string, Value>&)>& run,
                                            int64_t* free_dim) {
  const bool ladder = options.random && has_free_dims(session, options);
  const size_t attempts = ladder ? std::size(kFreeDimLadder) : 1;
  for (size_t attempt = 0;; ++attempt) {
    if (ladder) options.free_dim = kFreeDimLadder[attempt];
    // The user's files: their errors are theirs, reported as they are.
    std::map<std::string, Value> feeds = load_feeds(session, options);
    try {
      run(feeds);
      if (free_dim) *free_dim = options.free_dim;
      return feeds;
    } catch (const Error& e) {
      const bool tool = e.kind() == ErrorKind::kInternal || e.kind() == ErrorKind::kUsage;
      if (attempt + 1 == attempts || tool) throw;
    }
  }
}

std::string random_inputs_description(const FeedOptions& options) {
  std::ostringstream s;
  s << "random (seed " << options.seed << "; ";
  const auto all = options.ranges.find("");
  // A float is drawn below HI, an integer up to it; LO = HI gives that one value.
  const auto range = [](const ValueRange& r) {
    if (r.lo == r.hi) return " = " + number_text(r.lo);
    const std::string lo = number_text(r.lo), hi = number_text(r.hi);
    return " in [" + lo + ", " + hi + ") ([" + lo + ", " + hi + "] if integers)";
  };
  if (all != options.ranges.end())
    s << "values" << (all->second.lo == all->second.hi ? "" : " uniform") << range(all->second);
  else
    s << "floats uniform in [-1, 1), integers in [0, 9]";
  for (const auto& [name, r] : options.ranges)
    if (!name.empty()) s << "; " << name << range(r);
  s << ")";
  return s.str();
}

void add_input_range(FeedOptions& options, const std::string& text, const std::string& flag) {
  const size_t eq = text.rfind('=');
  const std::string name = eq == std::string::npos ? "" : text.substr(0, eq);
  const std::string bounds = eq == std::string::npos ? text : text.substr(eq + 1);
  const size_t comma = bounds.find(',');
  const auto bad = [&](const std::string& why) {
    throw_usage_error(flag + " " + text + ": " + why + " (NAME=LO,HI, or LO,HI for every input)");
  };
  if (comma == std::string::npos || bounds.find(',', comma + 1) != std::string::npos) bad("expected two numbers");
  ValueRange r;
  for (const auto& [part, out] : {std::pair{bounds.substr(0, comma), &r.lo}, std::pair{bounds.substr(comma + 1), &r.hi}}) {
    size_t used = 0;
    try {
      *out = std::stod(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || !std::isfinite(*out)) bad("'" + part + "' is not a finite number");
  }
  if (!(r.lo <= r.hi)) bad("LO must not exceed HI");  // equal: that one value
  if (options.ranges.count(name)) bad(name.empty() ? "every input's range is given twice" : "input '" + name + "' is given twice");
  options.ranges[name] = r;
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
    auto r = options.ranges.find(name);
    if (r == options.ranges.end()) r = options.ranges.find("");
    feeds[name] = Value::of(random_tensor(t, s == options.shapes.end() ? std::vector<int64_t>{} : s->second,
                                          options.seed, name, options.free_dim, batch_symbols, options.flags,
                                          r == options.ranges.end() ? nullptr : &r->second));
  }
  return feeds;
}

}  // namespace onnxtool::runner
