// The per-layer part of compare_models in bounded memory: holding both models' activations for
// the matching took the sum of them all (7.7 GB on a 44M-parameter model). Instead A's tensors
// that B may match are held up to a budget (512 MiB) and beyond it go to an unnamed temporary
// file as A produces them; each is read back and compared while B runs, when B produces its
// counterpart: memory is about one model's run plus the budget and one tensor.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runner/compare.h"
#include "runner/session.h"

namespace onnxtool::runner {

/// The per-layer matching of one comparison, sample by sample. A value of A is matched in B by
/// name, or else by its producer's name and output index unless B's tensor of that node has
/// the name of one of A's (compare_models.h says why).
class LayerComparer {
 public:
  /// `b`: B's main graph (its node outputs bound what is worth keeping of A's). Throws
  /// Error(kInput) when no temporary file can be made ($TMPDIR, else /tmp).
  LayerComparer(const ir::Graph& b, double rtol, double atol);
  ~LayerComparer();
  LayerComparer(const LayerComparer&) = delete;
  LayerComparer& operator=(const LayerComparer&) = delete;

  /// Forgets the previous sample; A must run first (its observer), then B (its observer).
  void begin_sample();
  Observer observer_a();
  Observer observer_b();

  /// The sample's matches in the order A computed them: (A's value, its node, the difference).
  struct Match {
    std::string tensor;
    std::string node;
    TensorDiff diff;
  };
  std::vector<Match> end_sample();

 private:
  struct Spilled {
    DataType dtype;
    std::vector<int64_t> shape;
    uint64_t offset = 0;
    size_t bytes = 0;
    Tensor kept;  // held in memory (string tensors always: their elements are not one block)
  };
  Tensor read(const Spilled& s) const;
  void spill(const std::string& name, const Tensor& t);

  double rtol_, atol_;
  size_t budget_;  // bytes of A's tensors held in memory before spilling
  std::set<std::string> b_names_, b_keys_;  // B's node outputs: names, "node#index"
  int fd_ = -1;
  std::string dir_;
  uint64_t end_ = 0;  // bytes written for this sample
  size_t held_ = 0;   // bytes held in memory for this sample
  // This sample: A's tensors in order as (name, node#index), their names, the spilled ones.
  std::vector<std::pair<std::string, std::string>> order_;
  std::set<std::string> a_names_;
  std::map<std::string, std::vector<std::string>> a_by_key_;
  std::map<std::string, Spilled> spilled_;
  // B's side: by name, and per node key the last B tensor's name and its differences from
  // A's values of that key.
  std::set<std::string> b_seen_;
  std::map<std::string, TensorDiff> by_name_;
  struct NodeMatch {
    std::string b_name;
    std::map<std::string, TensorDiff> diffs;
  };
  std::map<std::string, NodeMatch> by_node_;
};

}  // namespace onnxtool::runner
