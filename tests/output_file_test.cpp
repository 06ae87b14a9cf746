// The safe writer (ir/output_file.h) and the .npy writer on top of it: atomic replacement,
// nothing left behind on failure, streams written in place, .npy headers past 64 KiB.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ir/error.h"
#include "ir/output_file.h"
#include "runner/tensor_io.h"

namespace onnxtool::output_file_test {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "onnxtool_output_file.XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t entries(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST_SUITE("output_file") {
  TEST_CASE("replaces the target only at commit, and leaves nothing behind otherwise") {
    TempDir d;
    const fs::path target = d.path / "out.bin";
    ir::write_file(target.string(), "old");
    {
      ir::OutputFile f(target.string());
      f.write("new bytes");
      CHECK(read_text(target) == "old");  // not yet
      CHECK(entries(d.path) == 1);        // the temporary has no name
    }
    CHECK(read_text(target) == "old");  // destroyed without commit
    CHECK(entries(d.path) == 1);
    ir::write_file(target.string(), "new");
    CHECK(read_text(target) == "new");
    CHECK(entries(d.path) == 1);
  }

  TEST_CASE("a symlink is followed, a directory refused, a character device written in place") {
    TempDir d;
    ir::write_file((d.path / "real").string(), "1");
    fs::create_symlink("real", d.path / "link");
    ir::write_file((d.path / "link").string(), "2");
    CHECK(fs::is_symlink(d.path / "link"));
    CHECK(read_text(d.path / "real") == "2");
    CHECK_THROWS_WITH_AS(ir::OutputFile(d.path.string()), doctest::Contains("is a directory"), Error);
    ir::write_file("/dev/null", "discarded");  // not replaced: it is still a character device
    struct stat st {};
    REQUIRE(::stat("/dev/null", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    fs::create_symlink("missing", d.path / "dangling");
    CHECK_THROWS_WITH_AS(ir::OutputFile((d.path / "dangling").string()), doctest::Contains("symlink to a missing file"), Error);
  }

  TEST_CASE("a folder is pinned once opened: swapping it for a link sends no file elsewhere") {
    TempDir d;
    fs::create_directory(d.path / "elsewhere");
    {
      const ir::OutputDir out((d.path / "made" / "out").string(), "--output-dir");
      CHECK(out.made());
      ir::OutputFile first(out, "a.npy");
      first.write("a");
      first.commit();
      // Swapped while the command runs: the folder moved away, a link to another put in its place.
      fs::rename(d.path / "made" / "out", d.path / "made" / "moved");
      fs::create_directory_symlink(d.path / "elsewhere", d.path / "made" / "out");
      ir::OutputFile second(out, "b.npy");
      second.write("b");
      second.commit();
      ir::OutputFile third(out, "c.npy");  // the temporary of a file never committed
      third.write("c");
      CHECK(read_text(d.path / "made" / "moved" / "b.npy") == "b");
      CHECK(entries(d.path / "elsewhere") == 0);
      // Cleanup removes only the folder this made, not the link now at its name.
      out.remove("a.npy");
      out.remove("b.npy");
      out.remove_if_made_and_empty();
      CHECK(fs::is_symlink(d.path / "made" / "out"));
    }
    CHECK(entries(d.path / "made" / "moved") == 0);
    CHECK(entries(d.path / "elsewhere") == 0);
    // A file name, never a path; and a link at a name inside is refused, not followed.
    const ir::OutputDir moved((d.path / "made" / "moved").string(), "--dump-dir");
    CHECK_FALSE(moved.made());
    CHECK_THROWS_WITH_AS(ir::OutputFile(moved, "../x"), doctest::Contains("not a file name"), Error);
    fs::create_symlink(d.path / "elsewhere" / "target", d.path / "made" / "moved" / "y.npy");
    CHECK_THROWS_WITH_AS(ir::OutputFile(moved, "y.npy"), doctest::Contains("is a symlink"), Error);
    CHECK(entries(d.path / "elsewhere") == 0);
    // A file where the folder should be.
    ir::write_file((d.path / "plain").string(), "x");
    CHECK_THROWS_WITH_AS(ir::OutputDir((d.path / "plain").string(), "--output-dir plain"),
                         doctest::Contains("exists and is not a directory"), Error);
  }

  TEST_CASE(".npy headers longer than 64 KiB are written as version 2.0 and read back") {
    TempDir d;
    // 40,000 dims of 1: a header of about 80 KB ("1," per dim) plus the dict.
    std::vector<int64_t> shape(40000, 1);
    runner::Tensor t(ir::DataType::kFloat, shape);
    t.mutable_data<float>()[0] = 4.5f;
    const std::string path = (d.path / "wide.npy").string();
    runner::write_npy(path, t);
    const std::string bytes = read_text(path);
    REQUIRE(bytes.size() > 12);
    CHECK(bytes[6] == 2);  // major version
    const uint32_t header = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8 |
                            static_cast<uint32_t>(static_cast<uint8_t>(bytes[10])) << 16 |
                            static_cast<uint32_t>(static_cast<uint8_t>(bytes[11])) << 24;
    CHECK(header > 0xffff);
    CHECK((12 + header) % 64 == 0);
    CHECK(bytes.size() == 12 + header + sizeof(float));
    const runner::Tensor back = runner::read_npy(path);
    CHECK(back.shape() == shape);
    CHECK(back.data<float>()[0] == 4.5f);
    // A short shape stays version 1.0.
    runner::write_npy(path, runner::Tensor(ir::DataType::kFloat, {2, 3}));
    CHECK(read_text(path)[6] == 1);
  }
}

}  // namespace
}  // namespace onnxtool::output_file_test
