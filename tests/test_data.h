// Where the tests find their data: the ONNX backend suite and the fetched real models.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace onnxtool::testing {

inline std::filesystem::path source_dir() { return ONNXTOOL_SOURCE_DIR; }
inline std::filesystem::path backend_data() { return ONNXTOOL_BACKEND_DATA; }
inline std::filesystem::path cache_dir() { return ONNXTOOL_CACHE_DIR; }
inline std::string onnxtool_binary() { return ONNXTOOL_BINARY; }

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
/// real), sorted.
inline std::vector<std::filesystem::path> backend_models() {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::exists(backend_data())) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(backend_data()))
    if (e.is_regular_file() && e.path().extension() == ".onnx") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace onnxtool::testing
