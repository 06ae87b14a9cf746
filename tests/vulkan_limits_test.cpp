// The Vulkan kernels at sizes past a driver's loop limit, against the CPU runner. Mesa's
// llvmpipe (behind lavapipe) ends every loop of a shader invocation once it has run 65,535 loop
// iterations in all and goes on with a partial result, so a kernel that loops once per element
// of a long row or window gives wrong numbers and exits 0. kMaxLoopIterations
// (runner/vulkan/backend.h) bounds the iterations of every invocation: each case below loops
// well past 65,536 times in an unsplit kernel, and must agree with the CPU either because the
// kernel split its work into bounded pieces (it ran on the device) or because it declined the
// node with a reason naming the loop bound (the node ran on the CPU).
#include <doctest/doctest.h>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "tests/kernel_test_util.h"
#include "tests/random_feed.h"
#include "tests/vulkan_test_util.h"

namespace onnxtool::vulkan_limits_test {
namespace {

using ir::DataType;
using runner::Tensor;
using testing::Attr;
using testing::run_on_both;
using testing::vulkan_available;

Attr i(const char* name, int64_t v) { return testing::attr_int(name, v); }
Attr is(const char* name, std::vector<int64_t> v) { return testing::attr_ints(name, std::move(v)); }

/// 2^23 elements: 32,768 per invocation of a 256-wide row workgroup, and two or three loops over
/// them (or a few iterations per element) in the unsplit row kernels.
constexpr int64_t kLong = int64_t{1} << 23;

/// Uniform values in [lo, hi), from one stream through the file's cases.
Tensor rand_t(std::vector<int64_t> shape, double lo, double hi, DataType type = DataType::kFloat) {
  static testing::Rng rng(11);
  return testing::uniform_tensor(rng, std::move(shape), lo, hi, type);
}

Tensor full_t(std::vector<int64_t> shape, float v) {
  Tensor t(DataType::kFloat, std::move(shape));
  float* p = t.mutable_data<float>();
  for (int64_t k = 0; k < t.size(); ++k) p[k] = v;
  return t;
}

/// Where a case must run: split on the device, or declined to the CPU for the loop bound.
enum class Where { kDevice, kCpu };

/// One node with fed inputs, run on the CPU and the device and compared.
struct Case {
  ir::Model m;
  std::map<std::string, runner::Value> feeds;
  std::vector<ir::Value*> ins;

  explicit Case(int64_t opset) : m(testing::empty_model(opset)) {}
  Case& in(const Tensor& t) {
    const std::string name = "in" + std::to_string(ins.size());
    ins.push_back(m.graph->add_input(name, ir::TypeInfo::tensor(t.dtype())).value);
    feeds[name] = runner::Value::of(t);
    return *this;
  }
  Case& constant(const Tensor& t) {
    const std::string name = "c" + std::to_string(ins.size());
    ins.push_back(m.graph->add_initializer(ir::make_tensor(name, t.dtype(), t.shape(), t.raw(), t.bytes())));
    return *this;
  }
  void check(const std::string& op, const std::vector<Attr>& attrs, Where where, size_t outputs = 1,
             double rtol = 1e-4) {
    std::vector<std::string> outs;
    for (size_t k = 0; k < outputs; ++k) outs.push_back("out" + std::to_string(k));
    ir::Node* n = m.graph->add_node(op, ins, outs, "", "n0");
    for (const auto& a : attrs) n->set_attr(a.make());
    for (size_t k = 0; k < outputs; ++k) m.graph->add_output(n->output(k), std::nullopt);
    testing::DeviceTolerance tol;
    tol.f32 = rtol;
    const auto r = run_on_both(m, feeds, tol);
    INFO(op << " opset " << m.onnx_opset());
    CHECK_MESSAGE(r.mismatch.empty(), r.mismatch);
    const std::string reason = r.placement.cpu_nodes.empty() ? "" : r.placement.cpu_nodes[0].reason;
    if (where == Where::kDevice) {
      CHECK_MESSAGE(r.placement.device_nodes == 1, reason);
    } else {
      CHECK(r.placement.device_nodes == 0);
      CHECK_MESSAGE(reason.find("loop") != std::string::npos, reason);
    }
  }
};

TEST_SUITE("vulkan_limits") {
TEST_CASE("MatMul and Gemm with K past the loop limit: split along K, partial products summed") {
  if (!vulkan_available()) return;
  // [1, K] x [K, 1] of ones: exactly K.
  Case(13).in(full_t({1, 70000}, 1)).in(full_t({70000, 1}, 1)).check("MatMul", {}, Where::kDevice);
  // Random, batched, K of no round size.
  Case(13).in(rand_t({2, 3, 70001}, -1, 1)).in(rand_t({2, 70001, 5}, -1, 1)).check("MatMul", {}, Where::kDevice);
  // Gemm with transposes, alpha, beta and C: the bias joins once, not once per piece of K.
  Case(13)
      .in(rand_t({66000, 4}, -1, 1))
      .in(rand_t({3, 66000}, -1, 1))
      .in(rand_t({4, 3}, -1, 1))
      .check("Gemm", {i("transA", 1), i("transB", 1), testing::attr_float("alpha", 0.5f), testing::attr_float("beta", 2.0f)},
             Where::kDevice);
}

TEST_CASE("Conv and ConvTranspose with windows and channel counts past the loop limit") {
  if (!vulkan_available()) return;
  // Conv1d over 100,000 ones with a window as long: exactly 100,000.
  Case(13).in(full_t({1, 1, 100000}, 1)).in(full_t({1, 1, 100000}, 1)).check("Conv", {}, Where::kDevice);
  // Many input channels of a 3x3 window, a bias, two output channels.
  Case(13)
      .in(rand_t({1, 9000, 4, 4}, -1, 1))
      .in(rand_t({2, 9000, 3, 3}, -1, 1))
      .in(rand_t({2}, -1, 1))
      .check("Conv", {is("pads", {1, 1, 1, 1})}, Where::kDevice);
  // A 2-D window of 300 x 300 over a 302 x 302 image (9 outputs).
  Case(13).in(rand_t({1, 1, 302, 302}, 0, 1)).in(rand_t({1, 1, 300, 300}, 0, 1)).check("Conv", {}, Where::kDevice);
  // ConvTranspose gathering from 70,000 input channels.
  Case(13).in(rand_t({1, 70000, 2}, -1, 1)).in(rand_t({70000, 1, 2}, -1, 1)).check("ConvTranspose", {}, Where::kCpu);
}

TEST_CASE("MaxPool and AveragePool with a 400 x 400 window") {
  if (!vulkan_available()) return;
  Case(12).in(rand_t({1, 2, 400, 400}, -1, 1)).check("MaxPool", {is("kernel_shape", {400, 400})}, Where::kCpu);
  Case(12).in(rand_t({1, 2, 400, 400}, 0, 1)).check("AveragePool", {is("kernel_shape", {400, 400})}, Where::kCpu);
}

TEST_CASE("Reduce* and global pooling over 2^23 elements: a reduction of partial reductions") {
  if (!vulkan_available()) return;
  const Tensor positive = rand_t({1, kLong}, 0, 1);
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
                         "ReduceLogSumExp", "ReduceMax", "ReduceMin"})
    Case(13).in(positive).check(op, {i("keepdims", 0)}, Where::kDevice);
  // ReduceProd: ones with a few twos, an exact power of two.
  Tensor prod = full_t({1, kLong}, 1);
  for (int64_t k = 0; k < 20; ++k) prod.mutable_data<float>()[k * 400000] = 2;
  Case(13).in(prod).check("ReduceProd", {}, Where::kDevice);
  // A strided reduction: axis 0 of [2^22, 2], and LogSumExp over values where exp overflows
  // without the shift by the maximum.
  Case(13).in(rand_t({kLong / 2, 2}, -3, 3)).check("ReduceSum", {is("axes", {0})}, Where::kDevice);
  Case(13).in(rand_t({2, kLong / 2}, 80, 100)).check("ReduceLogSumExp", {is("axes", {1})}, Where::kDevice);
  Case(13).in(rand_t({1, 1, kLong}, 0, 1)).check("GlobalAveragePool", {}, Where::kDevice);
  Case(13).in(rand_t({1, 1, 4096, 2048}, -1, 1)).check("GlobalMaxPool", {}, Where::kDevice);
}

TEST_CASE("Softmax, LogSoftmax, Hardmax and LpNormalization over 2^23 elements") {
  if (!vulkan_available()) return;
  const Tensor x = rand_t({1, kLong}, -3, 3);
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) Case(13).in(x).check(op, {}, Where::kCpu);
  for (int64_t p : {1, 2}) Case(13).in(x).check("LpNormalization", {i("p", p)}, Where::kCpu);
}

TEST_CASE("LayerNormalization and InstanceNormalization over rows of 2^23 elements") {
  if (!vulkan_available()) return;
  Case(17)
      .in(rand_t({1, kLong}, -3, 3))
      .in(rand_t({kLong}, 0.5, 1.5))
      .in(rand_t({kLong}, -1, 1))
      .check("LayerNormalization", {}, Where::kCpu);
  Case(13)
      .in(rand_t({1, 1, kLong}, -3, 3))
      .in(rand_t({1}, 0.5, 1.5))
      .in(rand_t({1}, -1, 1))
      .check("InstanceNormalization", {}, Where::kCpu);
}

TEST_CASE("RNN, GRU and LSTM with 70,000 inputs per step") {
  if (!vulkan_available()) return;
  struct Cell {
    const char* op;
    int64_t gates;
    size_t outputs;
  };
  for (const Cell& c : {Cell{"RNN", 1, 2}, Cell{"GRU", 3, 2}, Cell{"LSTM", 4, 3}})
    Case(13)
        .in(rand_t({2, 1, 70000}, 0, 1))
        .constant(rand_t({1, c.gates * 2, 70000}, -0.01, 0.01))
        .constant(rand_t({1, c.gates * 2, 2}, -1, 1))
        .check(c.op, {i("hidden_size", 2)}, Where::kCpu, c.outputs);
}
}

}  // namespace
}  // namespace onnxtool::vulkan_limits_test
