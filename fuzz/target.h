// What every fuzz target shares: the outcomes that count as correct, and a private scratch
// directory for the targets that go through files as the CLI does.
//
// onnxtool's contract for bad input is a one-line onnxtool::Error (exit 1 or 2), never a crash,
// a hang or any other exception. A target therefore runs the library call inside expect_clean():
// onnxtool::Error of kind usage, input or failed is a correct refusal; anything else (kInternal,
// std::exception, bad_alloc from an unbounded allocation) aborts, and libFuzzer keeps the input.
// ASan, UBSan, libFuzzer's -timeout and -rss_limit_mb catch the rest.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>

#include "ir/error.h"

namespace onnxtool::fuzz {

template <class Fn>
void expect_clean(const char* what, Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kInternal) {
      std::fprintf(stderr, "fuzz %s: internal error: %s\n", what, e.what());
      std::abort();
    }
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "fuzz %s: bad_alloc (an allocation the input's size does not justify)\n", what);
    std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz %s: unexpected exception: %s\n", what, e.what());
    std::abort();
  }
}

/// A directory of this process's own (removed at exit), for inputs that must be files.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::string tmpl = (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string("/tmp")) +
                       "/onnxtool-fuzz-XXXXXX";
    if (!::mkdtemp(tmpl.data())) {
      std::perror("fuzz: mkdtemp");
      std::abort();
    }
    static const std::string removed = tmpl;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(removed, ec);
    });
    return tmpl;
  }();
  return dir;
}

/// Writes the bytes to `name` in the scratch directory and returns its path.
inline std::string write_scratch(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) {
    std::perror(("fuzz: write " + path).c_str());
    std::abort();
  }
  return path;
}

}  // namespace onnxtool::fuzz
