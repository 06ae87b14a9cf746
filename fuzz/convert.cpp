// Fuzz target: `onnxtool convert` without verification. The first byte chooses what to do (a
// target opset from the supported range, or float16 / float32 precision); the rest is the model.
#include <cstdint>

#include "convert/precision.h"
#include "convert/version_converter.h"
#include "fuzz/target.h"
#include "ir/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxtool;
  if (size < 1) return 0;
  const uint8_t choice = data[0];
  const std::string path = fuzz::write_scratch("model.onnx", data + 1, size - 1);
  fuzz::expect_clean("convert", [&] {
    ir::LoadedModel loaded = ir::load_model(path);
    const int64_t span = convert::kMaxConvertOpset - convert::kMinConvertOpset + 1;
    switch (choice % 4) {
      case 0:
      case 1:
        convert::convert_opset(loaded.model, convert::kMinConvertOpset + (choice / 4) % span);
        break;
      case 2: {
        convert::preprocess_for_fp16(loaded.model);
        convert::Fp16Options options;
        options.keep_io_types = (choice & 4) != 0;
        convert::to_fp16(loaded.model, options);
        break;
      }
      default:
        convert::to_fp32(loaded.model);
        break;
    }
    ir::serialize_model(loaded.model);
  });
  return 0;
}
