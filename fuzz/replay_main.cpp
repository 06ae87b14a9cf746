// A main() for the fuzz targets in ordinary builds (g++, no libFuzzer): runs the target once on
// every file named on the command line, and on every file under each directory named. ctest uses
// it to replay fuzz/regressions/ (every input a fuzzer ever failed on) and the seed models, in
// the Release and the ASan/UBSan builds, so a fixed failure stays fixed without clang.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

/// Runs the target on the file's bytes; with prefixes, once per prefix byte put in front (the
/// choice byte of targets such as convert, for inputs that are plain models).
void replay(const std::filesystem::path& file, const std::vector<uint8_t>& prefixes, size_t& count) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << file.string() << ": cannot open\n";
    std::exit(2);
  }
  std::vector<uint8_t> bytes(1);
  bytes.insert(bytes.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (prefixes.empty()) {
    LLVMFuzzerTestOneInput(bytes.data() + 1, bytes.size() - 1);
    ++count;
  }
  for (const uint8_t p : prefixes) {
    bytes[0] = p;
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    ++count;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // FILE or DIR: replayed. --data DIR: a directory of fetched test data (the ONNX backend suite),
  // its .onnx files replayed when present; when missing the test is skipped (exit 77), as every
  // test that needs it. --prefix B,B,...: the inputs after it are replayed once per byte B put
  // in front of them.
  size_t count = 0;
  std::vector<uint8_t> prefixes;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path arg = argv[i];
    if (arg == "--prefix" && i + 1 < argc) {
      prefixes.clear();
      std::stringstream list(argv[++i]);
      for (std::string b; std::getline(list, b, ',');) prefixes.push_back(static_cast<uint8_t>(std::stoi(b)));
      continue;
    }
    const bool fetched = arg == "--data";
    if (fetched) {
      if (++i == argc) {
        std::cerr << "replay: --data needs a directory\n";
        return 2;
      }
      arg = argv[i];
      if (!std::filesystem::is_directory(arg)) {
        std::printf("ONNXTOOL-SKIP: %s (testdata/fetch_models.sh installs it)\n", arg.c_str());
        return 77;
      }
    }
    if (std::filesystem::is_directory(arg)) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg))
        if (e.is_regular_file() && (!fetched || e.path().extension() == ".onnx")) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) replay(f, prefixes, count);
    } else {
      replay(arg, prefixes, count);
    }
  }
  std::cout << "replayed " << count << " input(s), none crashed\n";
  return count ? 0 : 1;
}
