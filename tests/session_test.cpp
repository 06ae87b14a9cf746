// Tests of what a Session does around the kernels: the storage of large tensors (the buffer
// pool), the process-wide OpenMP thread count, which a run must leave as it found it, and the
// activations fused into convolutions, which must give the bytes the nodes give one by one.
#include <doctest/doctest.h>


#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/bytes.h"
#include "ir/error.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "runner/buffer_pool.h"
#include "runner/profile.h"
#include "runner/session.h"
#include "runner/tensor.h"
#include "runner/thread_pool.h"
#include "tests/empty_model.h"
#include "tests/model_builder.h"

namespace onnxtool::session_test {
namespace {

// One Relu over x: float[n].
ir::Model relu_model() {
  ir::Model m = testing::empty_model(17);
  ir::Graph& g = *m.graph;
  ir::Value* x = g.add_input("x", ir::TypeInfo::tensor(ir::DataType::kFloat)).value;
  ir::Node* relu = g.add_node("Relu", {x}, {"y"}, "", "relu");
  g.add_output(relu->output(0), std::nullopt);
  return m;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

/// Runs a model with activations fused into its convolutions, and again with an observer set
/// (which turns fusion off: calibration watches every tensor); returns both outputs.
std::pair<std::vector<runner::Value>, std::vector<runner::Value>> fused_and_not(ir::Model& m, const runner::Tensor& x,
                                                                                 int threads) {
  std::map<std::string, runner::Value> feeds{{"x", runner::Value::of(x)}};
  runner::Session fused(m, runner::SessionOptions{threads});
  auto a = fused.run(feeds);
  runner::Session plain(m, runner::SessionOptions{threads});
  size_t seen = 0;
  plain.set_observer([&seen](const ir::Value&, const runner::Value&) { ++seen; });
  auto b = plain.run(feeds);
  CHECK(seen > 0);
  return {std::move(a), std::move(b)};
}

/// The float tensors hold the same bits, but for NaNs, which must be NaN in both (their sign
/// and payload are the compiler's choice: it may swap a product's operands).
void check_same_bits(const std::vector<runner::Value>& a, const std::vector<runner::Value>& b) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].is_tensor());
    REQUIRE(b[i].is_tensor());
    REQUIRE(a[i].tensor.dtype() == ir::DataType::kFloat);
    REQUIRE(a[i].tensor.shape() == b[i].tensor.shape());
    const float* p = a[i].tensor.data<float>();
    const float* q = b[i].tensor.data<float>();
    int64_t differ = 0, nans = 0;
    for (int64_t k = 0; k < a[i].tensor.size(); ++k) {
      if (std::isnan(p[k]) || std::isnan(q[k])) {
        ++nans;
        differ += std::isnan(p[k]) != std::isnan(q[k]);
      } else {
        differ += std::memcmp(p + k, q + k, sizeof(float)) != 0;
      }
    }
    CHECK(differ == 0);
    CHECK(nans < a[i].tensor.size());  // the NaN spreads, but not everywhere
  }
}

TEST_SUITE("session") {
  TEST_CASE("activations fused into Conv give the same bytes as the nodes one by one") {
    using testing::attr_float;
    using testing::attr_int;
    using testing::attr_ints;
    // Images of 9x9 (the whole output at once) and 50x50 (2500 positions: blocks of output
    // positions, the activations applied per block); dense, pointwise and depthwise Convs.
    for (int64_t side : {9, 50}) {
      for (int kind = 0; kind < 3; ++kind) {
        CAPTURE(side);
        CAPTURE(kind);
        testing::ModelBuilder b(17);
        ir::Value* x = b.input("x", ir::DataType::kFloat, {1, 8, side, side});
        const int64_t group = kind == 2 ? 8 : 1, k = kind == 1 ? 1 : 3;
        auto conv = [&](const std::string& out, ir::Value* in, bool bias) {
          std::vector<ir::Value*> ins{in, b.weight(out + "_w", {8, 8 / group, k, k})};
          if (bias) ins.push_back(b.weight(out + "_b", {8}));
          return b.op("Conv", ins, out, {attr_int("group", group), attr_ints("pads", {k / 2, k / 2, k / 2, k / 2})});
        };
        // Conv -> BatchNormalization -> Relu
        ir::Value* c1 = conv("c1", x, true);
        ir::Value* bn = b.op("BatchNormalization", {c1, b.weight("g", {8}), b.weight("beta", {8}), b.weight("mu", {8}),
                                                    b.weight("var", {8}, 0.5f, 2)},
                             "bn", {attr_float("epsilon", 1e-3f)});
        ir::Value* r1 = b.op("Relu", {bn}, "r1");
        // Conv -> SiLU both ways (Mul(y, Sigmoid(y)), Mul(Sigmoid(y), y))
        ir::Value* c2 = conv("c2", r1, false);
        ir::Value* s2 = b.op("Mul", {c2, b.op("Sigmoid", {c2}, "sig2")}, "s2");
        ir::Value* c3 = conv("c3", s2, true);
        ir::Value* s3 = b.op("Mul", {b.op("Sigmoid", {c3}, "sig3"), c3}, "s3");
        // Conv -> LeakyRelu -> Sigmoid, whose Conv output is also a graph output (not fused)
        ir::Value* c4 = conv("c4", s3, true);
        ir::Value* l4 = b.op("Sigmoid", {b.op("LeakyRelu", {c4}, "lr4", {attr_float("alpha", 0.2f)})}, "sg4");
        ir::Value* c5 = conv("c5", l4, true);
        ir::Value* l5 = b.op("Sigmoid", {b.op("LeakyRelu", {c5}, "lr5", {attr_float("alpha", 0.2f)})}, "sg5");
        // Conv -> Mul by a per-channel constant -> Add of a constant scalar (the constant
        // first) -> HardSwish; Conv -> Clip (bounds as inputs) -> HardSigmoid
        ir::Value* c6 = conv("c6", l5, true);
        ir::Value* m6 = b.op("Mul", {c6, b.weight("m6_c", {8, 1, 1}, 0.5f, 2)}, "m6");
        ir::Value* h6 = b.op("HardSwish", {b.op("Add", {b.weight("a6_c", {1}), m6}, "a6o")}, "h6");
        ir::Value* c7 = conv("c7", h6, true);
        ir::Value* k7 = b.op("Clip", {c7, b.scalar("lo7", -0.25f), b.scalar("hi7", 0.75f)}, "k7");
        ir::Value* h7 = b.op("HardSigmoid", {k7}, "h7", {attr_float("alpha", 0.3f), attr_float("beta", 0.4f)});
        // HardSwish written out (PaddleOCR's export): y * Clip(y + 3, 0, 6) / 6, then the same
        // with the Mul's operands swapped, Sub and a constant divided by the value
        ir::Value* c9 = conv("c9", h7, true);
        ir::Value* g9 = b.op("Clip", {b.op("Add", {c9, b.scalar("three9", 3.0f)}, "a9"), b.scalar("lo9", 0.0f),
                                      b.scalar("hi9", 6.0f)},
                             "k9");
        ir::Value* d9 = b.op("Div", {b.op("Mul", {c9, g9}, "m9"), b.scalar("six9", 6.0f)}, "d9");
        ir::Value* c10 = conv("c10", d9, true);
        ir::Value* g10 = b.op("Div", {b.scalar("one10", 1.5f), b.op("Sub", {c10, b.weight("s10_c", {8, 1, 1}, 4.0f, 5)}, "s10")},
                              "v10");
        ir::Value* m10 = b.op("Mul", {g10, c10}, "m10");
        // A gate whose chain value is read by another node too: not fused
        ir::Value* c11 = conv("c11", m10, true);
        ir::Value* g11 = b.op("Sigmoid", {c11}, "sig11");
        ir::Value* m11 = b.op("Add", {b.op("Mul", {c11, g11}, "m11"), g11}, "e11");
        // Mul by a constant that broadcasts the output to a larger shape: not fused
        ir::Value* c8 = conv("c8", m11, true);
        ir::Value* m8 = b.op("Mul", {c8, b.weight("m8_c", {2, 1, 1, 1, 1})}, "m8");
        b.output(m8);
        b.output(c4);
        runner::Tensor input = testing::random_float({1, 8, side, side});
        // One NaN in the large image (in the small one it would spread everywhere).
        if (side == 50) input.mutable_data<float>()[3] = std::numeric_limits<float>::quiet_NaN();
        for (int threads : {1, 3}) {
          auto [fused, plain] = fused_and_not(b.m, input, threads);
          check_same_bits(fused, plain);
        }
        // The fused nodes are gone from the profile, the unfused Conv's readers are not.
        runner::Session s(b.m, runner::SessionOptions{1});
        runner::Profiler profiler;
        s.set_profiler(&profiler);
        s.run({{"x", runner::Value::of(input)}});
        std::set<std::string> timed;
        for (const auto& e : profiler.events()) timed.insert(e.node->name);
        CHECK(timed.count("c1_node"));
        CHECK(!timed.count("bn_node"));
        CHECK(!timed.count("r1_node"));
        CHECK(!timed.count("s2_node"));
        CHECK(!timed.count("sig3_node"));
        CHECK(timed.count("lr4_node"));
        CHECK(!timed.count("lr5_node"));
        for (const char* fused : {"m6_node", "a6o_node", "h6_node", "k7_node", "h7_node"}) CHECK(!timed.count(fused));
        for (const char* fused : {"a9_node", "k9_node", "m9_node", "d9_node", "s10_node", "v10_node", "m10_node"})
          CHECK(!timed.count(fused));
        CHECK(timed.count("sig11_node"));
        CHECK(timed.count("m11_node"));
        CHECK(timed.count("m8_node"));
        std::set<std::string> types;
        for (const auto& e : profiler.events()) types.insert(e.op_type);
        CHECK(types.count("Conv+BatchNormalization+Relu"));
        CHECK(types.count("Conv+Sigmoid+Mul"));
        CHECK(types.count("Conv+Mul+Add+HardSwish"));
        CHECK(types.count("Conv+Clip+HardSigmoid"));
        CHECK(types.count("Conv+Add+Clip+Mul+Div"));
        CHECK(types.count("Conv+Sub+Div+Mul"));
      }
    }
  }

  TEST_CASE("values asked for by name and watched values break fusion only where they lie") {
    using testing::attr_float;
    using testing::attr_ints;
    testing::ModelBuilder b(17);
    ir::Value* x = b.input("x", ir::DataType::kFloat, {1, 4, 12, 12});
    ir::Value* c1 = b.op("Conv", {x, b.weight("w1", {4, 4, 3, 3}), b.weight("b1", {4})}, "c1", {attr_ints("pads", {1, 1, 1, 1})});
    ir::Value* bn = b.op("BatchNormalization", {c1, b.weight("g", {4}), b.weight("beta", {4}), b.weight("mu", {4}),
                                                b.weight("var", {4}, 0.5f, 2)},
                         "bn", {attr_float("epsilon", 1e-3f)});
    ir::Value* r1 = b.op("Relu", {bn}, "r1");
    ir::Value* c2 = b.op("Conv", {r1, b.weight("w2", {4, 4, 1, 1})}, "c2");
    b.output(b.op("Relu", {c2}, "r2"));
    std::map<std::string, runner::Value> feeds{{"x", runner::Value::of(testing::random_float({1, 4, 12, 12}))}};
    // Every value, watched one by one (nothing fused).
    std::map<std::string, runner::Tensor> all;
    {
      runner::Session plain(b.m);
      plain.set_observer([&](const ir::Value& v, const runner::Value& t) { all[v.name()] = t.tensor; });
      plain.run(feeds);
    }
    // The Conv output inside the first fused chain, asked for by name: computed as it is
    // unfused; the chain's end and the second chain as well.
    runner::Session s(b.m);
    runner::Profiler profiler;
    s.set_profiler(&profiler);
    const auto got = s.run(feeds, {"c1", "r1", "r2"});
    check_same_bits({got[0]}, {runner::Value::of(all.at("c1"))});
    check_same_bits({got[1]}, {runner::Value::of(all.at("r1"))});
    check_same_bits({got[2]}, {runner::Value::of(all.at("r2"))});
    std::set<std::string> types;
    for (const auto& e : profiler.events()) types.insert(e.op_type);
    CHECK(types.count("Conv"));
    CHECK(types.count("Conv+Relu"));  // the second chain stays fused
    // An observer that wants only the chains' ends: both chains fused, their ends observed.
    runner::Session w(b.m);
    std::map<std::string, runner::Tensor> seen;
    w.set_observer([&](const ir::Value& v, const runner::Value& t) { seen[v.name()] = t.tensor; }, false,
                   [](const ir::Value& v) { return v.name() == "r1" || v.name() == "r2"; });
    runner::Profiler wp;
    w.set_profiler(&wp);
    w.run(feeds);
    CHECK(seen.size() == 2);
    check_same_bits({runner::Value::of(seen.at("r1"))}, {runner::Value::of(all.at("r1"))});
    check_same_bits({runner::Value::of(seen.at("r2"))}, {runner::Value::of(all.at("r2"))});
    std::set<std::string> wtypes;
    for (const auto& e : wp.events()) wtypes.insert(e.op_type);
    CHECK(wtypes.count("Conv+BatchNormalization+Relu"));
    CHECK(wtypes.count("Conv+Relu"));
  }

  TEST_CASE("a BatchNormalization that does not fit its Conv still fails naming itself") {
    testing::ModelBuilder b(17);
    ir::Value* x = b.input("x", ir::DataType::kFloat, {1, 2, 4, 4});
    ir::Value* c = b.op("Conv", {x, b.weight("w", {3, 2, 1, 1})}, "c");
    ir::Value* bn = b.op("BatchNormalization", {c, b.weight("g", {4}), b.weight("beta", {4}), b.weight("mu", {4}),
                                                b.weight("var", {4}, 0.5f, 2)},
                         "bn");
    b.output(b.op("Relu", {bn}, "r"));
    runner::Session s(b.m, runner::SessionOptions{1});
    try {
      s.run({{"x", runner::Value::of(testing::random_float({1, 2, 4, 4}))}});
      FAIL("the run should fail");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("bn") != std::string::npos);
      CHECK(std::string(e.what()).find("4 elements for 3 channels") != std::string::npos);
    }
  }

  TEST_CASE("large tensors reuse the storage of freed ones; small ones and releases do not keep any") {
    runner::release_pooled_buffers();
    CHECK(runner::pooled_free_bytes() == 0);
    const void* first = nullptr;
    {
      runner::Tensor t(ir::DataType::kFloat, {1 << 20});  // 4 MiB
      first = t.raw();
      CHECK(reinterpret_cast<uintptr_t>(first) % 64 == 0);
      std::memset(t.mutable_raw(), 1, t.bytes());
    }
    CHECK(runner::pooled_free_bytes() >= (size_t{4} << 20));
    {
      runner::Tensor same(ir::DataType::kFloat, {1 << 20});
      CHECK(same.raw() == first);  // the same size takes the same buffer
      CHECK(runner::pooled_free_bytes() == 0);
      if (!kSanitized) {
        // A little smaller fits it too, while it is free; under AddressSanitizer only the
        // exact size is reused (an overrun then still reaches the redzone).
        runner::Tensor other(ir::DataType::kUInt8, {1 << 20});  // 1 MiB: too small to take 4
        CHECK(other.raw() != first);
      }
    }
    if (!kSanitized) {
      runner::Tensor smaller(ir::DataType::kFloat, {(1 << 20) - 4096});
      CHECK(smaller.raw() == first);
    }
    {
      runner::Tensor small(ir::DataType::kFloat, {1000});  // from the heap, never pooled
      CHECK(reinterpret_cast<uintptr_t>(small.raw()) % 64 == 0);
    }
    runner::release_pooled_buffers();
    CHECK(runner::pooled_free_bytes() == 0);
  }

  TEST_CASE("without keep_constants, constant nodes are computed in every run, with the same results") {
    // y = x + DequantizeLinear(w): the DequantizeLinear of initializers only is a constant node.
    ir::Model m = testing::empty_model(17);
    ir::Graph& g = *m.graph;
    ir::Value* x = g.add_input("x", ir::TypeInfo::tensor(ir::DataType::kFloat)).value;
    const std::vector<int8_t> wq{-3, 0, 5, 127};
    const float scale = 0.5f;
    const int8_t zero = 1;
    ir::Value* w = g.add_initializer(ir::make_tensor("w", ir::DataType::kInt8, {4}, wq.data(), 4));
    ir::Value* sc = g.add_initializer(ir::make_tensor("s", ir::DataType::kFloat, {}, &scale, 4));
    ir::Value* zp = g.add_initializer(ir::make_tensor("z", ir::DataType::kInt8, {}, &zero, 1));
    ir::Node* dq = g.add_node("DequantizeLinear", {w, sc, zp}, {"wf"}, "", "dq");
    ir::Node* add = g.add_node("Add", {x, dq->output(0)}, {"y"}, "", "add");
    g.add_output(add->output(0), std::nullopt);
    runner::Tensor in(ir::DataType::kFloat, {4});
    for (int i = 0; i < 4; ++i) in.mutable_data<float>()[i] = static_cast<float>(i);
    for (bool keep : {true, false}) {
      CAPTURE(keep);
      runner::SessionOptions options;
      options.keep_constants = keep;
      runner::Session s(m, options);
      for (int run = 0; run < 3; ++run) {
        auto out = s.run({{"x", runner::Value::of(in)}});
        const float* y = out[0].tensor.data<float>();
        CHECK(y[0] == 0.0f + (-3 - 1) * 0.5f);
        CHECK(y[1] == 1.0f + (0 - 1) * 0.5f);
        CHECK(y[2] == 2.0f + (5 - 1) * 0.5f);
        CHECK(y[3] == 3.0f + (127 - 1) * 0.5f);
      }
    }
  }

  TEST_CASE("release_pages keeps the content of a mapped file and of heap memory") {
    const std::string path = std::filesystem::temp_directory_path() / "onnxtool_release_pages.bin";
    std::vector<uint8_t> bytes(5 * 4096 + 123);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
    {
      std::ofstream f(path, std::ios::binary);
      f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    auto file = ir::MappedFile::open(path);
    const ir::Bytes view = ir::MappedFile::view(file, 100, bytes.size() - 200);
    ir::release_pages(view.data(), view.size());
    CHECK(std::memcmp(view.data(), bytes.data() + 100, view.size()) == 0);
    std::vector<uint8_t> heap = bytes;
    ir::release_pages(heap.data() + 1, heap.size() - 1);
    CHECK(heap == bytes);
    std::filesystem::remove(path);
  }

  TEST_CASE("a session's run leaves the caller's thread count as it was") {
    ir::Model m = relu_model();
    runner::set_default_threads(3);
    {
      runner::SessionOptions options;
      options.threads = 1;
      runner::Session one(m, options);
      runner::Tensor x(ir::DataType::kFloat, {5});
      for (int i = 0; i < 5; ++i) x.mutable_data<float>()[i] = static_cast<float>(i - 2);
      auto out = one.run({{"x", runner::Value::of(x)}});
      CHECK(out[0].tensor.data<float>()[0] == 0.0f);
      CHECK(out[0].tensor.data<float>()[4] == 2.0f);
      CHECK(runner::configured_threads() == 3);
    }
    // A session made afterwards with the default (0: default_threads()) gets them all.
    runner::Session later(m);
    CHECK(later.threads() == 3);
    runner::set_default_threads(0);
  }

  TEST_CASE("the pool runs every chunk once, nested work inline, and passes an exception on") {
    const runner::ThreadScope scope(3);
    for (int64_t chunks : {int64_t{1}, int64_t{2}, int64_t{7}, int64_t{1000}, int64_t{70000}}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(chunks));
      std::atomic<int> nested_threads{0};
      runner::parallel_chunks(chunks, [&](int64_t c) {
        hits[static_cast<size_t>(c)].fetch_add(1);
        if (c == 0) nested_threads = runner::current_threads();
      });
      int64_t once = 0;
      for (const auto& h : hits) once += h.load() == 1;
      CHECK(once == chunks);
      if (chunks > 1) CHECK(nested_threads.load() == 1);
    }
    // Many small jobs back to back (a model's ops): none lost, none run twice.
    std::atomic<int64_t> sum{0};
    for (int job = 0; job < 20000; ++job)
      runner::parallel_ranges(64, 8, [&](int64_t b, int64_t e) { sum.fetch_add(e - b); });
    CHECK(sum.load() == 20000 * 64);
    CHECK_THROWS_WITH_AS(runner::parallel_chunks(16,
                                                 [](int64_t c) {
                                                   if (c == 5) throw_input_error("chunk 5 failed");
                                                 }),
                         "chunk 5 failed", Error);
    // The pool is usable after a failure.
    std::atomic<int> after{0};
    runner::parallel_chunks(8, [&](int64_t) { after.fetch_add(1); });
    CHECK(after.load() == 8);
  }
}

}  // namespace
}  // namespace onnxtool::session_test
