// Inputs for a run: from .npy/.pb files, a folder, or deterministic random data.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runner/session.h"

namespace onnxtool::runner {

/// The flags of the command reading the feeds, as its hints name them ("" where it has none, and
/// the hint names no flag): `run` has --input, --inputs, --random and --shape; a verification
/// --input, --inputs and --input-shape; quantize's calibration folders none.
struct FeedFlags {
  std::string input;   ///< NAME=FILE
  std::string inputs;  ///< a folder
  std::string random;  ///< fill the rest with random data
  std::string shape;   ///< NAME=D1,D2,... of random inputs
};

/// The interval random values of an input are drawn from (`--input-range NAME=LO,HI`): floats
/// uniform in [lo, hi), integers uniform over the integers in [lo, hi]. Without one: floats in
/// [-1, 1), integers in [0, 9], bools 0 or 1.
struct ValueRange {
  double lo = 0;
  double hi = 0;
};

struct FeedOptions {
  /// NAME=FILE pairs.
  std::vector<std::pair<std::string, std::string>> files;
  /// A folder of <safe name>.npy/.pb files, or an ONNX test_data_set_N folder of input_K.pb
  /// (each .pb a TensorProto, SequenceProto or OptionalProto, as the model declares the input).
  std::string dir;
  /// Fill inputs not given with deterministic random data.
  bool random = false;
  uint64_t seed = 0;
  /// Sizes for symbolic or unknown dims of random inputs (else 1), by input name.
  std::map<std::string, std::vector<int64_t>> shapes;
  /// Size of the symbolic dims of random inputs that `shapes` does not set, except batch dims,
  /// which stay 1: a leading dim, and any dim named like some input's leading dim.
  int64_t free_dim = 1;
  /// The interval of each random input's values, by input name; the key "" sets the interval of
  /// every input without its own.
  std::map<std::string, ValueRange> ranges;
  /// What the hints of errors call the options above.
  FeedFlags flags;
};

/// Builds the feeds of a session's required inputs. Throws Error(kUsage/kInput) naming the input
/// or file on any problem (unknown name, unreadable file, missing input).
std::map<std::string, Value> load_feeds(const Session& session, const FeedOptions& options);

/// A float tensor in another float type (float32, float16, bfloat16, double), through double:
/// float16 -> float32 is exact.
Tensor cast_float(const Tensor& t, ir::DataType to);

/// The feeds `session` takes: each of its inputs that `feeds` holds, float tensors converted to
/// the input's float type (float32 files for a float16 model, or the other way round); `cast`,
/// when given, receives the names of the inputs converted.
std::map<std::string, Value> conform_float_feeds(const Session& session, const std::map<std::string, Value>& feeds,
                                                 std::vector<std::string>* cast = nullptr);

/// The sizes the free dims of random inputs take in turn (feeds_that_run): 1, then 64 and 512 for
/// a model that cannot take 1 (an STFT frame longer than one sample, a pooling window).
inline constexpr int64_t kFreeDimLadder[] = {1, 64, 512};

/// Whether some random input of `session` (not given by a file or options.shapes) has a symbolic
/// dim past its first, which options.free_dim sizes.
bool has_free_dims(const Session& session, const FeedOptions& options);

/// Loads the feeds (load_feeds, with options.free_dim) and calls `run` on them (it may convert
/// them in place). When options.random, the random inputs have free dims and `run` throws a
/// model's error (not kInternal or kUsage), tries again with the next size of kFreeDimLadder.
/// Returns the feeds `run` took; rethrows the last attempt's error. `free_dim`, when given,
/// receives the size that ran.
std::map<std::string, Value> feeds_that_run(const Session& session, FeedOptions options,
                                            const std::function<void(std::map<std::string, Value>&)>& run,
                                            int64_t* free_dim = nullptr);

/// A deterministic random tensor for a declared input type, its values in `range` (null: the
/// defaults of ValueRange); symbolic dims take `shape` when given, else `free_dim`, except a
/// leading dim or one named in `batch_symbols` (1). Errors name `flags`; a range an integer type
/// cannot hold is Error(kUsage).
Tensor random_tensor(const ir::TypeInfo& type, const std::vector<int64_t>& shape, uint64_t seed,
                     const std::string& name, int64_t free_dim = 1, const std::set<std::string>& batch_symbols = {},
                     const FeedFlags& flags = {}, const ValueRange* range = nullptr);

/// How random inputs of `options` are drawn, in words, for every report that says what a run
/// or a verification was made on: "random (seed 0; floats uniform in [-1, 1), integers in
/// [0, 9])", with each --input-range named ("x in [0, 255]").
std::string random_inputs_description(const FeedOptions& options);

/// Parses "NAME=LO,HI" or "LO,HI" (every input) into options.ranges; `flag` names the option
/// in errors (LO < HI, both finite).
void add_input_range(FeedOptions& options, const std::string& text, const std::string& flag);

}  // namespace onnxtool::runner
