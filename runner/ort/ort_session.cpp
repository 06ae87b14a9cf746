// The onnxruntime binding. No onnxruntime header is needed to build: the library is opened with
// dlopen, and its C API reached through the function table OrtGetApiBase hands out. That table
// is append-only and its entries never move, so each function used here is called through its
// position in it, with the signature declared below by hand.
#include "runner/ort/ort_session.h"

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

#include "ir/error.h"

namespace onnxtool::runner::ort {
namespace {

// The table version asked for: the first with every entry used here at the positions below
// (onnxruntime 1.23; newer libraries serve older versions of the table unchanged).
constexpr uint32_t kApiVersion = 23;

// Opaque onnxruntime objects: only ever handled by pointer.
using Status = void;
using Handle = void;

// Positions in the function table and the signatures of the entries at them.
enum Slot : size_t {
  kGetErrorMessage = 2,          // const char* (const Status*)
  kCreateEnv = 3,                // Status* (int logging level, const char* id, Env**)
  kCreateSessionFromArray = 8,   // Status* (const Env*, const void*, size_t, const SessionOptions*, Session**)
  kRun = 9,                      // Status* (Session*, const RunOptions*, names, const Value* const*, size_t, names, size_t, Value**)
  kCreateSessionOptions = 10,    // Status* (SessionOptions**)
  kSetOptimizationLevel = 23,    // Status* (SessionOptions*, int level)
  kSetIntraOpThreads = 24,       // Status* (SessionOptions*, int)
  kSetInterOpThreads = 25,       // Status* (SessionOptions*, int)
  kCreateTensorWithData = 49,    // Status* (const MemoryInfo*, void*, size_t bytes, const int64_t*, size_t, int type, Value**)
  kIsTensor = 50,                // Status* (const Value*, int*)
  kGetTensorMutableData = 51,    // Status* (Value*, void**)
  kGetTensorElementType = 60,    // Status* (const TypeAndShape*, int*)
  kGetDimensionsCount = 61,      // Status* (const TypeAndShape*, size_t*)
  kGetDimensions = 62,           // Status* (const TypeAndShape*, int64_t*, size_t)
  kGetTensorTypeAndShape = 65,   // Status* (const Value*, TypeAndShape**)
  kCreateCpuMemoryInfo = 69,     // Status* (int allocator type, int memory type, MemoryInfo**)
  kReleaseStatus = 93,           // void (Status*)
  kReleaseMemoryInfo = 94,       // void (MemoryInfo*)
  kReleaseSession = 95,          // void (Session*)
  kReleaseValue = 96,            // void (Value*)
  kReleaseTypeAndShape = 99,     // void (TypeAndShape*)
  kReleaseSessionOptions = 100,  // void (SessionOptions*)
  kSlotCount
};

using GetErrorMessageFn = const char* (*)(const Status*);
using CreateEnvFn = Status* (*)(int, const char*, Handle**);
using CreateSessionFromArrayFn = Status* (*)(const Handle*, const void*, size_t, const Handle*, Handle**);
using RunFn = Status* (*)(Handle*, const Handle*, const char* const*, const Handle* const*, size_t, const char* const*,
                          size_t, Handle**);
using CreateSessionOptionsFn = Status* (*)(Handle**);
using SetIntFn = Status* (*)(Handle*, int);
using CreateTensorWithDataFn = Status* (*)(const Handle*, void*, size_t, const int64_t*, size_t, int, Handle**);
using IsTensorFn = Status* (*)(const Handle*, int*);
using GetDataFn = Status* (*)(Handle*, void**);
using GetElementTypeFn = Status* (*)(const Handle*, int*);
using GetDimensionsCountFn = Status* (*)(const Handle*, size_t*);
using GetDimensionsFn = Status* (*)(const Handle*, int64_t*, size_t);
using GetTypeAndShapeFn = Status* (*)(const Handle*, Handle**);
using CreateCpuMemoryInfoFn = Status* (*)(int, int, Handle**);
using ReleaseFn = void (*)(Handle*);

// Values of onnxruntime's enums used here. Its tensor element types are ONNX's DataType numbers.
constexpr int kLogErrorsOnly = 3;    // errors reach us as statuses: its warnings would be noise
constexpr int kArenaAllocator = 1;
constexpr int kDefaultMemory = 0;

/// What OrtGetApiBase returns: the table for a version, and the library's version string.
struct ApiBase {
  const void* (*get_api)(uint32_t version);
  const char* (*version_string)();
};

/// The library and its table, opened once for the process and never closed (onnxruntime keeps
/// threads and registrations alive to the end).
struct Library {
  void* const* table = nullptr;
  std::string version;
  Handle* env = nullptr;
  Handle* cpu_memory = nullptr;

  template <class Fn>
  Fn fn(Slot slot) const {
    return reinterpret_cast<Fn>(table[slot]);
  }
  void check(Status* status, const std::string& what) const {
    if (!status) return;
    const std::string message = fn<GetErrorMessageFn>(kGetErrorMessage)(status);
    fn<ReleaseFn>(kReleaseStatus)(status);
    throw Error(ErrorKind::kInput, "onnxruntime: " + what + ": " + message);
  }
};

std::string node_package_library(const std::string& node_modules) {
#if defined(__aarch64__)
  const char* arch = "arm64";
#else
  const char* arch = "x64";
#endif
  return node_modules + "/onnxruntime-node/bin/napi-v6/linux/" + arch + "/libonnxruntime.so.1";
}

const Library& library() {
  static std::once_flag once;
  static Library lib;
  static std::string error;
  std::call_once(once, [] {
    std::string tried;
    void* handle = nullptr;
    for (const std::string& path : library_candidates()) {
      handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) break;
      const char* e = dlerror();
      // dlerror repeats the path: keep only its reason.
      std::string why = e ? e : "cannot be opened";
      if (const size_t colon = why.rfind(": "); colon != std::string::npos) why = why.substr(colon + 2);
      tried += (tried.empty() ? "" : "; ") + path + " (" + why + ")";
    }
    if (!handle) {
      const char* env = std::getenv("ONNXTOOL_ORT_LIBRARY");
      error = env && *env ? "ONNXTOOL_ORT_LIBRARY: the onnxruntime library cannot be opened: " + tried
                          : "no onnxruntime library could be opened: tried " + tried +
                                "; set ONNXTOOL_ORT_LIBRARY to the path of libonnxruntime.so";
      return;
    }
    using GetApiBaseFn = const ApiBase* (*)();
    const auto get_base = reinterpret_cast<GetApiBaseFn>(dlsym(handle, "OrtGetApiBase"));
    const ApiBase* base = get_base ? get_base() : nullptr;
    if (!base) {
      error = "the onnxruntime library opened has no OrtGetApiBase";
      return;
    }
    lib.version = base->version_string ? base->version_string() : "";
    lib.table = static_cast<void* const*>(base->get_api(kApiVersion));
    if (!lib.table) {
      error = "onnxruntime " + lib.version + " does not offer version " + std::to_string(kApiVersion) +
              " of its C API (onnxruntime 1." + std::to_string(kApiVersion) + " or newer is needed)";
      return;
    }
    try {
      lib.check(lib.fn<CreateEnvFn>(kCreateEnv)(kLogErrorsOnly, "onnxtool", &lib.env), "creating its environment");
      lib.check(lib.fn<CreateCpuMemoryInfoFn>(kCreateCpuMemoryInfo)(kArenaAllocator, kDefaultMemory, &lib.cpu_memory),
                "describing CPU memory");
    } catch (const Error& e) {
      error = e.what();
      lib.table = nullptr;
    }
  });
  if (!lib.table) throw_usage_error(error);
  return lib;
}

/// Releases an onnxruntime object at the end of a scope.
struct Owned {
  Handle* p = nullptr;
  Slot release;
  explicit Owned(Slot r) : release(r) {}
  ~Owned() {
    if (p) library().fn<ReleaseFn>(release)(p);
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
};

}  // namespace

const char* level_name(DeviceSpec::OrtLevel level) {
  switch (level) {
    case DeviceSpec::OrtLevel::kDisabled: return "disabled";
    case DeviceSpec::OrtLevel::kBasic: return "basic";
    case DeviceSpec::OrtLevel::kExtended: return "extended";
    case DeviceSpec::OrtLevel::kAll: return "all";
  }
  return "?";
}

std::vector<std::string> library_candidates() {
  // An explicit path is the only one tried: falling back elsewhere would hide a typo.
  if (const char* env = std::getenv("ONNXTOOL_ORT_LIBRARY"); env && *env) return {env};
  std::vector<std::string> out{"libonnxruntime.so.1", "libonnxruntime.so", node_package_library("./node_modules")};
  if (const char* node_path = std::getenv("NODE_PATH"); node_path && *node_path) {
    std::stringstream dirs(node_path);
    std::string dir;
    while (std::getline(dirs, dir, ':'))
      if (!dir.empty()) out.push_back(node_package_library(dir));
  }
  return out;
}

std::string library_version() { return "onnxruntime " + library().version; }

bool passes(DataType type) {
  switch (type) {
    case DataType::kFloat: case DataType::kUInt8: case DataType::kInt8: case DataType::kUInt16:
    case DataType::kInt16: case DataType::kInt32: case DataType::kInt64: case DataType::kBool:
    case DataType::kFloat16: case DataType::kDouble: case DataType::kUInt32: case DataType::kUInt64:
    case DataType::kBFloat16:
      return true;
    default:
      return false;
  }
}

struct ModelSession::Handles {
  Owned session{kReleaseSession};
};

ModelSession::ModelSession(const std::string& model, DeviceSpec::OrtLevel level, int threads)
    : h_(std::make_unique<Handles>()) {
  const Library& lib = library();
  Owned options(kReleaseSessionOptions);
  lib.check(lib.fn<CreateSessionOptionsFn>(kCreateSessionOptions)(&options.p), "creating session options");
  int ort_level = 0;
  switch (level) {
    case DeviceSpec::OrtLevel::kDisabled: ort_level = 0; break;
    case DeviceSpec::OrtLevel::kBasic: ort_level = 1; break;
    case DeviceSpec::OrtLevel::kExtended: ort_level = 2; break;
    case DeviceSpec::OrtLevel::kAll: ort_level = 99; break;
  }
  lib.check(lib.fn<SetIntFn>(kSetOptimizationLevel)(options.p, ort_level), "setting the optimization level");
  if (threads > 0) lib.check(lib.fn<SetIntFn>(kSetIntraOpThreads)(options.p, threads), "setting its threads");
  // Nodes run one after another (parallelism inside them): as the reference runner runs them.
  lib.check(lib.fn<SetIntFn>(kSetInterOpThreads)(options.p, 1), "setting its threads");
  lib.check(lib.fn<CreateSessionFromArrayFn>(kCreateSessionFromArray)(lib.env, model.data(), model.size(), options.p,
                                                                      &h_->session.p),
            "loading the model");
}

ModelSession::~ModelSession() = default;

std::vector<Tensor> ModelSession::run(const std::map<std::string, Tensor>& feeds,
                                      const std::vector<std::string>& output_names) {
  const Library& lib = library();
  std::vector<std::unique_ptr<Owned>> inputs;
  std::vector<const char*> in_names;
  std::vector<const Handle*> in_values;
  for (const auto& [name, tensor] : feeds) {
    if (!passes(tensor.dtype()))
      throw_usage_error("input '" + name + "' is " + std::string(ir::data_type_name(tensor.dtype())) +
                        ", a type this build cannot pass to onnxruntime");
    inputs.push_back(std::make_unique<Owned>(kReleaseValue));
    // onnxruntime reads the tensor where it is: it never writes a feed. An empty tensor may have
    // no storage, and onnxruntime wants an address all the same.
    static char empty = 0;
    void* data = tensor.raw() ? const_cast<void*>(tensor.raw()) : &empty;
    lib.check(lib.fn<CreateTensorWithDataFn>(kCreateTensorWithData)(
                  lib.cpu_memory, data, tensor.bytes(), tensor.shape().data(),
                  tensor.shape().size(), static_cast<int>(tensor.dtype()), &inputs.back()->p),
              "passing input '" + name + "'");
    in_names.push_back(name.c_str());
    in_values.push_back(inputs.back()->p);
  }
  std::vector<const char*> out_names;
  for (const auto& n : output_names) out_names.push_back(n.c_str());
  std::vector<Handle*> raw_outputs(output_names.size(), nullptr);
  Status* status = lib.fn<RunFn>(kRun)(h_->session.p, nullptr, in_names.data(), in_values.data(), in_names.size(),
                                       out_names.data(), out_names.size(), raw_outputs.data());
  std::vector<std::unique_ptr<Owned>> outputs;
  for (Handle* p : raw_outputs) {
    outputs.push_back(std::make_unique<Owned>(kReleaseValue));
    outputs.back()->p = p;
  }
  lib.check(status, "running the model");
  std::vector<Tensor> results;
  for (size_t i = 0; i < output_names.size(); ++i) {
    Handle* value = outputs[i]->p;
    const std::string what = "output '" + output_names[i] + "'";
    int is_tensor = 0;
    if (value) lib.check(lib.fn<IsTensorFn>(kIsTensor)(value, &is_tensor), "reading " + what);
    if (!is_tensor) throw_usage_error(what + " of onnxruntime is not a tensor (sequences, maps and optionals are not passed back)");
    Owned info(kReleaseTypeAndShape);
    lib.check(lib.fn<GetTypeAndShapeFn>(kGetTensorTypeAndShape)(value, &info.p), "reading " + what);
    int type = 0;
    size_t rank = 0;
    lib.check(lib.fn<GetElementTypeFn>(kGetTensorElementType)(info.p, &type), "reading " + what);
    lib.check(lib.fn<GetDimensionsCountFn>(kGetDimensionsCount)(info.p, &rank), "reading " + what);
    std::vector<int64_t> shape(rank);
    lib.check(lib.fn<GetDimensionsFn>(kGetDimensions)(info.p, shape.data(), rank), "reading " + what);
    const auto dtype = static_cast<DataType>(type);
    if (!passes(dtype))
      throw_usage_error(what + " is " + std::string(ir::data_type_name(dtype)) +
                        ", a type this build cannot take back from onnxruntime");
    Tensor out(dtype, shape);
    if (out.bytes()) {
      void* data = nullptr;
      lib.check(lib.fn<GetDataFn>(kGetTensorMutableData)(value, &data), "reading " + what);
      std::memcpy(out.mutable_raw(), data, out.bytes());
    }
    results.push_back(std::move(out));
  }
  return results;
}

static_assert(kSlotCount == kReleaseSessionOptions + 1, "the slots end with the last entry used");

}  // namespace onnxtool::runner::ort
