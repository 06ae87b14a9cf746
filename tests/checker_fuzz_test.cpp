// Robustness of load + check against damaged files: each real model truncated at 64 evenly
// spaced points, and 1,000 seeded random byte flips spread over the real models. A damaged file
// must end either as a model (valid or with diagnostics) or as onnxtool::Error; nothing may
// crash, hang or throw anything else. Run under ASan/UBSan too (ONNXTOOL_SANITIZE=ON).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "checker/checker.h"
#include "ir/error.h"
#include "ir/model_io.h"
#include "tests/test_data.h"

#if defined(__SANITIZE_ADDRESS__)
#define ONNXTOOL_FUZZ_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ONNXTOOL_FUZZ_SANITIZED 1
#endif
#endif

namespace onnxtool::checker_fuzz_test {
namespace {

namespace fs = std::filesystem;

constexpr size_t kTruncationPoints = 64;
// The ASan/UBSan build runs all of them too, in about 20 s (the whole suite in about 30 s).
constexpr size_t kTotalFlipSamples = 1000;
constexpr uint64_t kSeed = 0x6f6e6e78746f6f6cULL;  // "onnxtool"

/// Knuth's MMIX linear congruential generator. Only the high 32 bits of the state are used: the
/// low bits of a power-of-two-modulus LCG have short periods.
class Lcg {
 public:
  explicit Lcg(uint64_t seed) : state_(seed) {}
  uint32_t next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state_ >> 32);
  }
  /// Uniform enough in [0, n) for n far below 2^64.
  uint64_t below(uint64_t n) { return ((static_cast<uint64_t>(next()) << 32) | next()) % n; }

 private:
  uint64_t state_;
};

/// A model file's bytes in a buffer that samples damage in place and then repair.
struct Buffer {
  std::shared_ptr<std::vector<uint8_t>> data;
  ir::Bytes view(size_t length) const { return ir::Bytes(data, data->data(), length); }
};

Buffer read_buffer(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  auto data = std::make_shared<std::vector<uint8_t>>(std::istreambuf_iterator<char>(in),
                                                     std::istreambuf_iterator<char>());
  return Buffer{data};
}

struct Tally {
  size_t samples = 0;
  size_t valid = 0;       ///< loaded, no error
  size_t diagnosed = 0;   ///< loaded, with errors
  size_t unreadable = 0;  ///< refused with onnxtool::Error
  double slowest_seconds = 0;
  std::string slowest;
};

/// Loads and checks one damaged model in process, as check_file does (tensor data problems
/// become diagnostics), and files the outcome.
void load_and_check(const ir::Bytes& bytes, const std::string& what, Tally& tally) {
  const auto start = std::chrono::steady_clock::now();
  try {
    ir::DiagnosticSink sink;
    ir::LoadOptions load;
    load.on_tensor_error = [&sink](const ir::Tensor& t, const std::string& message) {
      ir::Diagnostic d;
      d.rule = t.is_external() ? "tensor.external-data" : "tensor.data-size";
      d.tensor = t.name;
      d.message = message;
      sink.add(std::move(d));
    };
    ir::Model model = ir::parse_model(bytes, what, "", load);
    checker::check_model(model, sink);
    (sink.error_count() ? tally.diagnosed : tally.valid)++;
  } catch (const Error&) {
    tally.unreadable++;  // the expected way to refuse unreadable input
  } catch (const std::exception& e) {
    FAIL_CHECK(what << ": unexpected exception (not onnxtool::Error): " << e.what());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  tally.samples++;
  if (seconds > tally.slowest_seconds) {
    tally.slowest_seconds = seconds;
    tally.slowest = what;
  }
}

void report(const char* kind, const Tally& t) {
  std::cout << "checker fuzz, " << kind << ": " << t.samples << " samples: " << t.valid << " valid, "
            << t.diagnosed << " with errors, " << t.unreadable << " refused as unreadable; slowest "
            << t.slowest_seconds << " s (" << t.slowest << ")\n";
}

// A sample slower than this is treated as a hang (the sanitizer build is several times slower).
#ifdef ONNXTOOL_FUZZ_SANITIZED
constexpr double kSlowSampleSeconds = 30;
#else
constexpr double kSlowSampleSeconds = 5;
#endif

}  // namespace

TEST_SUITE("checker_fuzz") {
  TEST_CASE("real models truncated at 64 points load or fail with onnxtool::Error") {
    const auto models = testing::installed_real_models();
    if (models.empty()) {
      return;  // installed_real_models marked the run skipped
    }
    Tally tally;
    for (const auto& path : models) {
      const Buffer buffer = read_buffer(path);
      const size_t size = buffer.data->size();
      for (size_t k = 0; k < kTruncationPoints; ++k) {
        const size_t length = size * k / kTruncationPoints;  // 0 (empty) up to just short of whole
        load_and_check(buffer.view(length), path.filename().string() + " cut at " + std::to_string(length),
                       tally);
      }
    }
    report("truncations", tally);
    CHECK(tally.samples == models.size() * kTruncationPoints);
    CHECK(tally.slowest_seconds < kSlowSampleSeconds);
  }

  TEST_CASE("seeded random byte flips in the real models load or fail with onnxtool::Error") {
    const auto models = testing::installed_real_models();
    if (models.empty()) {
      return;  // installed_real_models marked the run skipped
    }
    Lcg rng(kSeed);
    Tally tally;
    for (size_t m = 0; m < models.size(); ++m) {
      Buffer buffer = read_buffer(models[m]);
      std::vector<uint8_t>& bytes = *buffer.data;
      // The samples are shared out evenly; the first models take the remainder.
      const size_t samples =
          kTotalFlipSamples / models.size() + (m < kTotalFlipSamples % models.size() ? 1 : 0);
      for (size_t s = 0; s < samples; ++s) {
        const size_t flips = 1 + rng.below(4);
        std::vector<std::pair<size_t, uint8_t>> saved;
        std::string what = models[m].filename().string() + " flip sample " + std::to_string(s) + " at";
        for (size_t f = 0; f < flips; ++f) {
          const size_t at = rng.below(bytes.size());
          const uint8_t mask = static_cast<uint8_t>(1 + rng.below(255));  // never 0: a real change
          saved.emplace_back(at, bytes[at]);
          bytes[at] ^= mask;
          what += " " + std::to_string(at);
        }
        load_and_check(buffer.view(bytes.size()), what, tally);
        // Undo in reverse order (two flips may hit the same byte). The model of the sample, the
        // only holder of views into the buffer, is gone by now.
        for (auto it = saved.rbegin(); it != saved.rend(); ++it) bytes[it->first] = it->second;
      }
    }
    report("byte flips", tally);
    CHECK(tally.samples == kTotalFlipSamples);
    CHECK(tally.slowest_seconds < kSlowSampleSeconds);
  }

  TEST_CASE("the undamaged real models load and check cleanly in process and from their files") {
    for (const auto& path : testing::installed_real_models()) {
      const Buffer buffer = read_buffer(path);
      Tally tally;
      load_and_check(buffer.view(buffer.data->size()), path.filename().string(), tally);
      CHECK_MESSAGE(tally.valid == 1, path.filename().string() << " is not valid in process");
      const checker::CheckResult r = checker::check_file(path.string());
      CHECK_MESSAGE(r.errors == 0, path.filename().string() << " has errors from check_file");
    }
  }
}

}  // namespace onnxtool::checker_fuzz_test
