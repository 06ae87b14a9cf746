// The examples under each command's --help, in one place: they share one vocabulary of flags
// (docs/cli.md) and one model, so that they read as one story and can all be tried in turn.
// tests/cli/help_examples.sh runs every line on testdata/tiny_cnn.onnx, in the order of the table.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "cli/flags.h"

namespace onnxtool::cli {
namespace {

/// Each command's examples, in an order where each finds the files the ones above it wrote
/// (golden/, optimized.onnx, int8.onnx, renamed.onnx).
const std::vector<std::pair<std::string, std::vector<std::string>>>& examples() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> table = {
      {"inspect",
       {"onnxtool inspect model.onnx", "onnxtool inspect model.onnx --nodes --json", "onnxtool inspect model.onnx --initializers",
        "onnxtool inspect model.onnx --cost --input-shape image=1,3,32,32"}},
      {"run",
       {"onnxtool run model.onnx --random --json",
        "onnxtool run model.onnx --random --input-shape image=4,3,32,32 --output-dir golden",
        "onnxtool run model.onnx --inputs samples/s0 --outputs relu1_out,probs --threads 1"}},
      {"convert",
       {"onnxtool convert model.onnx -o fp16.onnx --to-fp16 --keep-io-types --json",
        "onnxtool convert model.onnx -o opset13.onnx --opset 13 --input-shape image=2,3,32,32",
        "onnxtool convert model.onnx -o external.onnx --external-data --size-threshold 0"}},
      {"optimize",
       {"onnxtool optimize model.onnx -o optimized.onnx --json",
        "onnxtool optimize model.onnx -o optimized.onnx --inputs samples/s0 --threads 1",
        "onnxtool optimize model.onnx -o batch1.onnx --fix-input-shape image=1,3,32,32"}},
      {"quantize",
       {"onnxtool quantize model.onnx -o int8.onnx --mode static --inputs samples --report report.md",
        "onnxtool quantize model.onnx -o dynamic.onnx --mode dynamic --input-shape image=8,3,32,32 --json"}},
      {"compare",
       {"onnxtool compare model.onnx optimized.onnx --random --samples 4 --json",
        "onnxtool compare model.onnx int8.onnx --inputs samples --min-cosine 0.99 --min-sqnr 15",
        "onnxtool compare model.onnx --expect golden --random --input-shape image=4,3,32,32"}},
      {"extract",
       {"onnxtool extract model.onnx -o head.onnx --from image --to pool1_out --json",
        "onnxtool extract model.onnx -o tail.onnx --from relu1_out --to probs",
        "onnxtool extract model.onnx -o head.onnx --from image --to relu1_out --input-shape image=2,3,32,32"}},
      {"reduce",
       {"onnxtool reduce model.onnx -o gemm.onnx --command 'cat {model}' --fails-when Gemm",
        "onnxtool reduce model.onnx -o softmax.onnx --command 'cat {model}' --fails-when Softmax --inputs-out softmax_in --json"}},
      {"edit",
       {"onnxtool edit model.onnx -o renamed.onnx --rename-input image=pixels --rename-output probs=scores",
        "onnxtool edit model.onnx -o batch1.onnx --set-input-shape image=1,3,32,32 --json",
        "onnxtool edit model.onnx -o tagged.onnx --set-metadata version=2 --producer-name me"}},
      {"check", {"onnxtool check model.onnx", "onnxtool check model.onnx optimized.onnx --strict --json"}},
      {"diff", {"onnxtool diff model.onnx optimized.onnx", "onnxtool diff model.onnx renamed.onnx --json"}},
      {"devices", {"onnxtool devices", "onnxtool devices --json"}},
  };
  return table;
}

}  // namespace

void add_examples(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    const auto it = std::find_if(examples().begin(), examples().end(), [sub](const auto& e) { return e.first == sub->get_name(); });
    if (it == examples().end()) continue;
    const std::vector<std::string>& lines = it->second;
    std::string footer =
        "Examples (model.onnx as testdata/tiny_cnn.onnx: input image float[N,3,32,32], output probs; samples/ holds "
        "one folder per sample, each with an image.npy):";
    for (const auto& line : lines) footer += "\n  " + line;
    sub->footer(footer);
  }
}

}  // namespace onnxtool::cli
