// Fuzz target: decoding a model from bytes (the wire codec, tensor validation), then encoding it.
// Beyond not crashing, what decodes must re-encode stably: encode(decode(encode(m))) equals
// encode(m) byte for byte (onnxtool never loses or changes a byte of what it keeps).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/target.h"
#include "ir/bytes.h"
#include "ir/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxtool;
  fuzz::expect_clean("model_decode", [&] {
    const ir::Bytes bytes = ir::Bytes::copy_of(data, size);
    ir::Model model = ir::parse_model(bytes, "fuzz.onnx", "");
    std::string first;
    try {
      first = ir::serialize_model(model);
    } catch (const Error&) {
      return;  // e.g. external data that was not loaded cannot be written inline: refused, fine
    }
    const std::string first_copy = first;
    ir::Model again = ir::parse_model(ir::Bytes::copy_of(first.data(), first.size()), "fuzz-reencoded.onnx", "");
    const std::string second = ir::serialize_model(again);
    if (second != first_copy) {
      std::fprintf(stderr, "fuzz model_decode: re-encoding is not stable (%zu then %zu bytes)\n", first_copy.size(),
                   second.size());
      std::abort();
    }
  });
  return 0;
}
