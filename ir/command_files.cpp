#include "ir/command_files.h"

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "ir/error.h"

namespace onnxtool::ir {
namespace {

struct CommandFiles {
  std::mutex mutex;
  bool on = false;
  std::map<std::pair<uint64_t, uint64_t>, std::string> inputs;  ///< (device, inode) -> path
  std::set<std::pair<uint64_t, uint64_t>> released;              ///< inputs the command replaces
  std::map<std::string, std::string> outputs;                    ///< resolved path -> what
  std::map<std::pair<uint64_t, uint64_t>, std::string> existing_outputs;
};

CommandFiles& files() {
  static CommandFiles f;
  return f;
}

}  // namespace

void track_command_files() {
  std::lock_guard<std::mutex> lock(files().mutex);
  files().on = true;
}

void note_input_file(uint64_t device, uint64_t inode, const std::string& path) {
  CommandFiles& f = files();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (f.on && !f.released.count({device, inode})) f.inputs.emplace(std::make_pair(device, inode), path);
}

void release_input_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  CommandFiles& f = files();
  std::lock_guard<std::mutex> lock(f.mutex);
  const std::pair<uint64_t, uint64_t> id{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
  f.inputs.erase(id);
  f.released.insert(id);  // read again later (verification reloads the model): still the command's to replace
}

void check_not_read(uint64_t device, uint64_t inode, const std::string& what) {
  CommandFiles& f = files();
  std::string input;
  {
    std::lock_guard<std::mutex> lock(f.mutex);
    if (!f.on) return;
    const auto it = f.inputs.find({device, inode});
    if (it == f.inputs.end()) return;
    input = it->second;
  }
  throw_usage_error(what + ": is " + input + ", which this command reads; choose another file");
}

void claim_output(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  CommandFiles& f = files();
  std::error_code ec;
  const std::string resolved = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  std::lock_guard<std::mutex> lock(f.mutex);
  if (!f.on) return;
  auto clash = f.outputs.find(resolved);
  if (clash == f.outputs.end() && exists) {
    const auto same = f.existing_outputs.find({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)});
    if (same != f.existing_outputs.end()) clash = f.outputs.find(same->second);
  }
  if (clash != f.outputs.end())
    throw_usage_error(what + ": is the same file as " + clash->second + "; one command writes each file once");
  f.outputs.emplace(resolved, what);
  if (exists) f.existing_outputs.emplace(std::make_pair(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)), resolved);
}

}  // namespace onnxtool::ir
