// Tests of what a Session does around the kernels: the storage of large tensors (the buffer
// pool) and the process-wide OpenMP thread count, which a run must leave as it found it.
#include <doctest/doctest.h>

#include <omp.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "ir/bytes.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "runner/buffer_pool.h"
#include "runner/session.h"
#include "runner/tensor.h"
#include "tests/empty_model.h"

namespace onnxtool {
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

TEST_SUITE("session") {
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

  TEST_CASE("a session's run leaves the caller's OpenMP thread count as it was") {
    ir::Model m = relu_model();
    omp_set_num_threads(3);
    {
      runner::SessionOptions options;
      options.threads = 1;
      runner::Session one(m, options);
      runner::Tensor x(ir::DataType::kFloat, {5});
      for (int i = 0; i < 5; ++i) x.mutable_data<float>()[i] = static_cast<float>(i - 2);
      auto out = one.run({{"x", runner::Value::of(x)}});
      CHECK(out[0].tensor.data<float>()[0] == 0.0f);
      CHECK(out[0].tensor.data<float>()[4] == 2.0f);
      CHECK(omp_get_max_threads() == 3);
    }
    // A session made afterwards with the default (0: as many as OpenMP gives) gets them all.
    runner::Session later(m);
    CHECK(later.threads() == 3);
  }
}

}  // namespace
}  // namespace onnxtool
