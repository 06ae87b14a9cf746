// Where the tests find their data: the ONNX backend suite and the fetched real models.
#pragma once

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace onnxtool::testing {

inline std::filesystem::path source_dir() { return ONNXTOOL_SOURCE_DIR; }
inline std::filesystem::path backend_data() { return ONNXTOOL_BACKEND_DATA; }
inline std::filesystem::path cache_dir() { return ONNXTOOL_CACHE_DIR; }
inline std::string onnxtool_binary() { return ONNXTOOL_BINARY; }

/// The exit code ctest reads as "skipped" (SKIP_RETURN_CODE in tests/CMakeLists.txt).
inline constexpr int kSkipExitCode = 77;

/// Whether a test of this run gave up for want of something the machine lacks.
inline bool& run_skipped() {
  static bool skipped = false;
  return skipped;
}

/// Marks this run as skipped: prints "ONNXTOOL-SKIP: <why>" and makes the test binary exit with
/// kSkipExitCode when nothing failed, so that ctest reports the suite as skipped rather than
/// passed (and scripts/test.sh fails under CI). The caller returns from its test case.
inline void skip_run(const std::string& why) {
  run_skipped() = true;
  std::printf("ONNXTOOL-SKIP: %s\n", why.c_str());
  std::fflush(stdout);
}

/// skip_run for data that testdata/fetch_models.sh provides.
inline void skip_missing_data(const std::string& what) {
  skip_run(what + " (testdata/fetch_models.sh installs it)");
}

/// The real models fetched by testdata/fetch_models.sh (PaddleOCR det/rec/cls, Silero VAD).
inline std::vector<std::filesystem::path> real_models() {
  std::vector<std::filesystem::path> out;
  const auto dir = cache_dir() / "models";
  for (const char* name : {"ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx",
                           "ch_ppocr_mobile_v2.0_cls_infer.onnx", "silero_vad_legacy.onnx",
                           "silero_vad_v5.onnx", "silero_vad_v6.onnx"})
    out.push_back(dir / name);
  return out;
}

/// Every model.onnx of the backend suite (node, pytorch-converted, pytorch-operator, simple,
/// real), sorted. A missing suite marks the run skipped.
inline std::vector<std::filesystem::path> backend_models() {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::exists(backend_data())) {
    skip_missing_data("the ONNX backend suite (libonnx-testdata) at " + backend_data().string());
    return out;
  }
  for (const auto& e : std::filesystem::recursive_directory_iterator(backend_data()))
    if (e.is_regular_file() && e.path().extension() == ".onnx") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

/// The fetched real models that exist; a missing one marks the run skipped.
inline std::vector<std::filesystem::path> installed_real_models() {
  std::vector<std::filesystem::path> out;
  for (const auto& p : real_models()) {
    if (std::filesystem::exists(p))
      out.push_back(p);
    else
      skip_missing_data("real model " + p.string());
  }
  return out;
}

}  // namespace onnxtool::testing
