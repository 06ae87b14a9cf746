// Tests of what a Session does around the kernels: the storage of large tensors (the buffer
// pool) and the process-wide OpenMP thread count, which a run must leave as it found it.
#include <doctest/doctest.h>

#include <omp.h>

#include <cstring>

#include "ir/graph.h"
#include "runner/buffer_pool.h"
#include "runner/session.h"
#include "runner/tensor.h"

namespace onnxtool {
namespace {

// One Relu over x: float[n].
ir::Model relu_model() {
  ir::Model m;
  m.ir_version = 9;
  m.set_opset_version("", 17);
  m.graph = std::make_unique<ir::Graph>();
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
