// LayerComparer: A's tensors spilled to a temporary file, compared as B produces their matches.
#include "runner/layer_compare.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "ir/env.h"
#include "ir/error.h"

namespace onnxtool::runner {
namespace {

// A's tensors are held in memory up to this many bytes per sample, and only the rest spilled:
// most models' activations fit, and those compare without any file traffic.
// ONNXTOOL_PER_LAYER_MEMORY=BYTES sets another budget (0: spill everything, as the tests do).
constexpr size_t kMemoryBudget = size_t{512} << 20;

size_t memory_budget() {
  const char* text = std::getenv("ONNXTOOL_PER_LAYER_MEMORY");
  if (!text || !*text) return kMemoryBudget;
  return static_cast<size_t>(ir::env_bytes("ONNXTOOL_PER_LAYER_MEMORY", text));
}

std::string node_key(const ir::Value& v) {
  return v.producer() ? v.producer()->name + "#" + std::to_string(v.producer_output()) : "";
}

}  // namespace

LayerComparer::LayerComparer(const ir::Graph& b, double rtol, double atol)
    : rtol_(rtol), atol_(atol), budget_(memory_budget()) {
  for (const auto& n : b.nodes()) {
    if (!n) continue;
    for (const ir::Value* out : n->outputs()) {
      if (!out) continue;
      b_names_.insert(out->name());
      if (!n->name.empty()) b_keys_.insert(node_key(*out));
    }
  }
  const char* tmp = std::getenv("TMPDIR");
  dir_ = tmp && *tmp ? tmp : "/tmp";
  // O_TMPFILE: the file has no name, so nothing is left behind whatever happens to the process.
  fd_ = ::open(dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    std::string name = dir_ + "/onnxtool-layers-XXXXXX";
    fd_ = ::mkstemp(name.data());
    if (fd_ >= 0) ::unlink(name.c_str());
  }
  if (fd_ < 0)
    throw Error(ErrorKind::kInput, "per-layer comparison: cannot create a temporary file in " + dir_ + " (" +
                                       std::strerror(errno) + "; set TMPDIR to a writable folder)");
}

LayerComparer::~LayerComparer() {
  if (fd_ >= 0) ::close(fd_);
}

void LayerComparer::begin_sample() {
  order_.clear();
  a_names_.clear();
  a_by_key_.clear();
  spilled_.clear();
  b_seen_.clear();
  by_name_.clear();
  by_node_.clear();
  end_ = 0;
  held_ = 0;
  // The previous sample's bytes are not needed any more: the disk space goes back (a failure
  // only costs that space; the file is written from its start again).
  [[maybe_unused]] const int shrunk = ::ftruncate(fd_, 0);
}

void LayerComparer::spill(const std::string& name, const Tensor& t) {
  Spilled s{t.dtype(), t.shape(), end_, t.bytes(), {}};
  if (t.dtype() == DataType::kString || held_ + t.bytes() <= budget_) {
    s.kept = t;  // shares the runner's storage: nothing is copied
    held_ += t.bytes();
  } else {
    const auto* p = static_cast<const char*>(t.raw());
    size_t left = t.bytes();
    off_t at = static_cast<off_t>(end_);
    while (left > 0) {
      const ssize_t k = ::pwrite(fd_, p, left, at);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0)
        throw Error(ErrorKind::kInput, "per-layer comparison: cannot write tensor '" + name + "' of A to a temporary file in " +
                                           dir_ + " (" + std::strerror(k < 0 ? errno : ENOSPC) +
                                           "; set TMPDIR to a folder with room for A's activations)");
      p += k;
      at += k;
      left -= static_cast<size_t>(k);
    }
    end_ += t.bytes();
  }
  spilled_[name] = std::move(s);
}

Tensor LayerComparer::read(const Spilled& s) const {
  if (s.kept.valid()) return s.kept;
  Tensor t(s.dtype, s.shape);
  auto* p = static_cast<char*>(t.mutable_raw());
  size_t left = s.bytes;
  off_t at = static_cast<off_t>(s.offset);
  while (left > 0) {
    const ssize_t k = ::pread(fd_, p, left, at);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0)
      throw Error(ErrorKind::kInput, "per-layer comparison: cannot read back a tensor of A from the temporary file in " + dir_ +
                                         " (" + (k < 0 ? std::strerror(errno) : "short read") + ")");
    p += k;
    at += k;
    left -= static_cast<size_t>(k);
  }
  return t;
}

Observer LayerComparer::observer_a() {
  return [this](const ir::Value& v, const Value& produced) {
    if (!produced.is_tensor()) return;
    const std::string key = node_key(v);
    order_.push_back({v.name(), key});
    a_names_.insert(v.name());
    if (!key.empty() && key[0] != '#') a_by_key_[key].push_back(v.name());
    // Only what one of B's node outputs can match is kept.
    if (b_names_.count(v.name()) || b_keys_.count(key)) spill(v.name(), produced.tensor);
  };
}

Observer LayerComparer::observer_b() {
  return [this](const ir::Value& v, const Value& produced) {
    if (!produced.is_tensor()) return;
    const std::string& name = v.name();
    b_seen_.insert(name);
    if (auto it = spilled_.find(name); it != spilled_.end())
      by_name_[name] = compare_tensors(read(it->second), produced.tensor, rtol_, atol_);
    if (!v.producer() || v.producer()->name.empty()) return;
    const std::string key = node_key(v);
    const auto k = a_by_key_.find(key);
    if (k == a_by_key_.end()) return;
    // The last of B's tensors of this node is the one A's values of the node are matched with
    // (as a map by node would keep it), and not when its name is one of A's own.
    NodeMatch& m = by_node_[key];
    m.b_name = name;
    m.diffs.clear();
    if (a_names_.count(name)) return;
    for (const std::string& a_name : k->second) {
      // A value that B has by name is matched by name: no need to compare it here.
      if (a_name == name || b_names_.count(a_name)) continue;
      if (auto it = spilled_.find(a_name); it != spilled_.end())
        m.diffs[a_name] = compare_tensors(read(it->second), produced.tensor, rtol_, atol_);
    }
  };
}

std::vector<LayerComparer::Match> LayerComparer::end_sample() {
  std::vector<Match> matches;
  for (const auto& [name, key] : order_) {
    const TensorDiff* d = nullptr;
    if (auto it = by_name_.find(name); it != by_name_.end()) {
      d = &it->second;
    } else if (auto jt = by_node_.find(key); !b_seen_.count(name) && jt != by_node_.end() && !a_names_.count(jt->second.b_name)) {
      if (auto dt = jt->second.diffs.find(name); dt != jt->second.diffs.end()) d = &dt->second;
    }
    if (d) matches.push_back({name, key.substr(0, key.rfind('#')), *d});
  }
  begin_sample();
  return matches;
}

}  // namespace onnxtool::runner
