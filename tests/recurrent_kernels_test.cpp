// Tests of the recurrent kernels (RNN, GRU, LSTM): each run as a one-node model against a plain
// double-precision reference of the ONNX equations, forward, reverse and bidirectional, with
// sequence_lens, initial states, peepholes, linear_before_reset, activation lists and layout 1;
// one thread and several threads must give identical bytes; invalid inputs must fail with an
// Error naming the node.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/kernel_test_util.h"

namespace onnxtool::recurrent_kernels_test {
namespace {

using namespace testing;  // NOLINT: the kernel-test harness

enum class Kind { kRnn, kGru, kLstm };

/// Inputs, weights and states: small, so that the gates' sums stay off the flat ends of their
/// activations, where a wrong sum would go unseen.
Tensor small_random(std::vector<int64_t> shape) { return random_float(std::move(shape), -0.6f, 0.6f); }

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

/// The inputs of one recurrent node (layout 0) and its options.
struct RecCase {
  Kind kind = Kind::kRnn;
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  std::string direction = "forward";
  bool bias = true, lens = false, init = false, peep = false, lbr = false;
  Tensor x, w, r, b, sl, h0, c0, p;
};

RecCase make_case(Kind kind, int64_t seq, int64_t batch, int64_t input, int64_t hidden, const std::string& direction) {
  RecCase c;
  c.kind = kind;
  c.seq = seq, c.batch = batch, c.input = input, c.hidden = hidden;
  c.dirs = direction == "bidirectional" ? 2 : 1;
  c.direction = direction;
  const int64_t gates = kind == Kind::kLstm ? 4 : kind == Kind::kGru ? 3 : 1;
  c.x = small_random({seq, batch, input});
  c.w = small_random({c.dirs, gates * hidden, input});
  c.r = small_random({c.dirs, gates * hidden, hidden});
  c.b = small_random({c.dirs, 2 * gates * hidden});
  std::vector<int64_t> lens;
  for (int64_t i = 0; i < batch; ++i) lens.push_back(i % 2 == 0 ? seq : std::max<int64_t>(1, seq - 1 - i % 3));
  c.sl = Tensor(DataType::kInt32, {batch});
  for (int64_t i = 0; i < batch; ++i) c.sl.mutable_data<int32_t>()[i] = static_cast<int32_t>(lens[static_cast<size_t>(i)]);
  c.h0 = small_random({c.dirs, batch, hidden});
  c.c0 = small_random({c.dirs, batch, hidden});
  c.p = small_random({c.dirs, 3 * hidden});
  return c;
}

/// Y [seq, dirs, batch, hidden], Y_h and Y_c [dirs, batch, hidden] from the ONNX equations.
std::vector<std::vector<double>> reference(const RecCase& c) {
  const int64_t H = c.hidden, gates = c.kind == Kind::kLstm ? 4 : c.kind == Kind::kGru ? 3 : 1;
  std::vector<double> y(static_cast<size_t>(c.seq * c.dirs * c.batch * H), 0.0), yh(static_cast<size_t>(c.dirs * c.batch * H)),
      yc(yh.size());
  auto f = [&](const Tensor& t, int64_t i) { return static_cast<double>(t.data<float>()[i]); };
  for (int64_t d = 0; d < c.dirs; ++d) {
    const bool reverse = c.direction == "reverse" || d == 1;
    for (int64_t b = 0; b < c.batch; ++b) {
      const int64_t len = c.lens ? c.sl.data<int32_t>()[b] : c.seq;
      std::vector<double> h(static_cast<size_t>(H), 0.0), cell(static_cast<size_t>(H), 0.0);
      if (c.init)
        for (int64_t j = 0; j < H; ++j) {
          h[static_cast<size_t>(j)] = f(c.h0, (d * c.batch + b) * H + j);
          cell[static_cast<size_t>(j)] = f(c.c0, (d * c.batch + b) * H + j);
        }
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = reverse ? len - 1 - step : step;
        // xw[g*H+j] = X W^T + Wb, hr[g*H+j] = H R^T + Rb.
        std::vector<double> xw(static_cast<size_t>(gates * H)), hr(xw.size());
        for (int64_t g = 0; g < gates * H; ++g) {
          double a = c.bias ? f(c.b, d * 2 * gates * H + g) : 0, q = c.bias ? f(c.b, d * 2 * gates * H + gates * H + g) : 0;
          for (int64_t k = 0; k < c.input; ++k) a += f(c.x, (t * c.batch + b) * c.input + k) * f(c.w, (d * gates * H + g) * c.input + k);
          for (int64_t k = 0; k < H; ++k) q += h[static_cast<size_t>(k)] * f(c.r, (d * gates * H + g) * H + k);
          xw[static_cast<size_t>(g)] = a;
          hr[static_cast<size_t>(g)] = q;
        }
        std::vector<double> nh(static_cast<size_t>(H));
        for (int64_t j = 0; j < H; ++j) {
          auto at = [&](const std::vector<double>& v, int64_t g) { return v[static_cast<size_t>(g * H + j)]; };
          const double hp = h[static_cast<size_t>(j)];
          if (c.kind == Kind::kRnn) {
            nh[static_cast<size_t>(j)] = std::tanh(at(xw, 0) + at(hr, 0));
          } else if (c.kind == Kind::kGru) {
            const double z = sigmoid(at(xw, 0) + at(hr, 0)), rg = sigmoid(at(xw, 1) + at(hr, 1));
            double hh;
            if (c.lbr) {
              hh = std::tanh(at(xw, 2) + rg * at(hr, 2));
            } else {
              double q = c.bias ? f(c.b, d * 2 * gates * H + gates * H + 2 * H + j) : 0;
              for (int64_t k = 0; k < H; ++k) {
                // r is needed for every k: recompute it per k.
                double rk = (c.bias ? f(c.b, d * 2 * gates * H + H + k) + f(c.b, d * 2 * gates * H + gates * H + H + k) : 0);
                for (int64_t m = 0; m < c.input; ++m) rk += f(c.x, (t * c.batch + b) * c.input + m) * f(c.w, (d * gates * H + H + k) * c.input + m);
                for (int64_t m = 0; m < H; ++m) rk += h[static_cast<size_t>(m)] * f(c.r, (d * gates * H + H + k) * H + m);
                q += sigmoid(rk) * h[static_cast<size_t>(k)] * f(c.r, (d * gates * H + 2 * H + j) * H + k);
              }
              hh = std::tanh(at(xw, 2) + q);
            }
            nh[static_cast<size_t>(j)] = (1 - z) * hh + z * hp;
          } else {
            const double cp = cell[static_cast<size_t>(j)];
            const double pi = c.peep ? f(c.p, d * 3 * H + j) : 0, po = c.peep ? f(c.p, d * 3 * H + H + j) : 0,
                         pf = c.peep ? f(c.p, d * 3 * H + 2 * H + j) : 0;
            const double i = sigmoid(at(xw, 0) + at(hr, 0) + pi * cp);
            const double fg = sigmoid(at(xw, 2) + at(hr, 2) + pf * cp);
            const double cc = std::tanh(at(xw, 3) + at(hr, 3));
            const double cn = fg * cp + i * cc;
            const double o = sigmoid(at(xw, 1) + at(hr, 1) + po * cn);
            cell[static_cast<size_t>(j)] = cn;
            nh[static_cast<size_t>(j)] = o * std::tanh(cn);
          }
        }
        h = nh;
        for (int64_t j = 0; j < H; ++j) y[static_cast<size_t>(((t * c.dirs + d) * c.batch + b) * H + j)] = h[static_cast<size_t>(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        yh[static_cast<size_t>((d * c.batch + b) * H + j)] = h[static_cast<size_t>(j)];
        yc[static_cast<size_t>((d * c.batch + b) * H + j)] = cell[static_cast<size_t>(j)];
      }
    }
  }
  return {y, yh, yc};
}

/// run_checked with an `activations` strings attribute added.
std::vector<Tensor> run_with_activations(NodeCase c, const std::vector<std::string>& names) {
  c.attrs.push_back(attr_strings("activations", names));
  return run_checked(c);
}

const char* op_name(Kind k) { return k == Kind::kLstm ? "LSTM" : k == Kind::kGru ? "GRU" : "RNN"; }

std::vector<Tensor> run_case(const RecCase& c, int64_t opset, std::vector<Attr> extra = {}) {
  std::vector<Tensor> in{c.x, c.w, c.r, c.bias ? c.b : Tensor(), c.lens ? c.sl : Tensor(), c.init ? c.h0 : Tensor()};
  if (c.kind == Kind::kLstm) {
    in.push_back(c.init ? c.c0 : Tensor());
    in.push_back(c.peep ? c.p : Tensor());
  }
  std::vector<Attr> attrs{attr_string("direction", c.direction), attr_int("hidden_size", c.hidden)};
  if (c.kind == Kind::kGru) attrs.push_back(attr_int("linear_before_reset", c.lbr));
  attrs.insert(attrs.end(), extra.begin(), extra.end());
  return run_checked({op_name(c.kind), opset, in, attrs, c.kind == Kind::kLstm ? size_t{3} : size_t{2}});
}

void check_case(const RecCase& c, int64_t opset) {
  const auto got = run_case(c, opset);
  const auto want = reference(c);
  REQUIRE(got[0].shape() == std::vector<int64_t>{c.seq, c.dirs, c.batch, c.hidden});
  check_close(got[0], want[0], 1e-4);
  check_close(got[1], want[1], 1e-4);
  if (c.kind == Kind::kLstm) check_close(got[2], want[2], 1e-4);
}

TEST_SUITE("recurrent_kernels") {
  TEST_CASE("RNN, GRU and LSTM match the ONNX equations in every direction at odd sizes") {
    for (Kind kind : {Kind::kRnn, Kind::kGru, Kind::kLstm})
      for (const char* dir : {"forward", "reverse", "bidirectional"})
        for (int64_t hidden : {1, 7, 13}) {
          CAPTURE(op_name(kind));
          CAPTURE(dir);
          CAPTURE(hidden);
          RecCase c = make_case(kind, 5, 3, 7, hidden, dir);
          check_case(c, 14);
          c.lens = c.init = true;
          c.peep = kind == Kind::kLstm;
          c.lbr = kind == Kind::kGru;
          check_case(c, 7);
          c.bias = false;
          c.lbr = false;
          check_case(c, 22);
        }
  }

  TEST_CASE("recurrence weights of 1 MB and more: rows shared among threads, zig-zag order") {
    // hidden 260: R is 4 x 260 x 260 floats per direction (1.08 MB), past the size where each
    // step's product is split among the threads (run_checked compares 1 and 3 threads' bytes),
    // with a last block of rows shorter than the others.
    for (Kind kind : {Kind::kLstm, Kind::kGru})
      for (const char* dir : {"forward", "bidirectional"}) {
        CAPTURE(op_name(kind));
        CAPTURE(dir);
        RecCase c = make_case(kind, 4, 2, 9, kind == Kind::kLstm ? 260 : 300, dir);
        c.init = true;
        check_case(c, 14);
      }
  }

  TEST_CASE("layout 1 transposes the batch and sequence dims of X and the outputs") {
    RecCase c = make_case(Kind::kLstm, 4, 3, 5, 6, "bidirectional");
    c.init = true;
    const auto base = run_case(c, 14);
    RecCase t = c;
    // X [batch, seq, input]; initial states [batch, dirs, hidden].
    t.x = Tensor(DataType::kFloat, {c.batch, c.seq, c.input});
    for (int64_t s = 0; s < c.seq; ++s)
      for (int64_t b = 0; b < c.batch; ++b)
        for (int64_t k = 0; k < c.input; ++k)
          t.x.mutable_data<float>()[(b * c.seq + s) * c.input + k] = c.x.data<float>()[(s * c.batch + b) * c.input + k];
    auto swap01 = [&](const Tensor& in) {
      Tensor out(DataType::kFloat, {in.dim(1), in.dim(0), in.dim(2)});
      for (int64_t i = 0; i < in.dim(0); ++i)
        for (int64_t j = 0; j < in.dim(1); ++j)
          for (int64_t k = 0; k < in.dim(2); ++k)
            out.mutable_data<float>()[(j * in.dim(0) + i) * in.dim(2) + k] = in.data<float>()[(i * in.dim(1) + j) * in.dim(2) + k];
      return out;
    };
    t.h0 = swap01(c.h0);
    t.c0 = swap01(c.c0);
    const auto got = run_case(t, 14, {attr_int("layout", 1)});
    REQUIRE(got[0].shape() == std::vector<int64_t>{c.batch, c.seq, c.dirs, c.hidden});
    for (int64_t s = 0; s < c.seq; ++s)
      for (int64_t d = 0; d < c.dirs; ++d)
        for (int64_t b = 0; b < c.batch; ++b)
          for (int64_t j = 0; j < c.hidden; ++j)
            CHECK(got[0].data<float>()[((b * c.seq + s) * c.dirs + d) * c.hidden + j] ==
                  base[0].data<float>()[((s * c.dirs + d) * c.batch + b) * c.hidden + j]);
    const Tensor yh = swap01(got[1]), yc = swap01(got[2]);
    CHECK(std::memcmp(yh.raw(), base[1].raw(), yh.bytes()) == 0);
    CHECK(std::memcmp(yc.raw(), base[2].raw(), yc.bytes()) == 0);
  }

  TEST_CASE("activation lists with alpha and beta, and clip") {
    RecCase c = make_case(Kind::kRnn, 3, 2, 4, 5, "forward");
    c.bias = false;
    // LeakyRelu(alpha 0.1) instead of Tanh.
    auto got = run_with_activations({"RNN", 14, {c.x, c.w, c.r}, {attr_floats("activation_alpha", {0.1f})}, 2}, {"LeakyRelu"});
    std::vector<double> h(5, 0.0), want;
    for (int64_t t = 0; t < 3; ++t) {
      std::vector<double> nh(5);
      for (int64_t j = 0; j < 5; ++j) {
        double a = 0;
        for (int64_t k = 0; k < 4; ++k) a += c.x.data<float>()[(t * 2) * 4 + k] * c.w.data<float>()[j * 4 + k];
        for (int64_t k = 0; k < 5; ++k) a += h[static_cast<size_t>(k)] * c.r.data<float>()[j * 5 + k];
        nh[static_cast<size_t>(j)] = a >= 0 ? a : 0.1 * a;
      }
      h = nh;
    }
    for (int64_t j = 0; j < 5; ++j) want.push_back(h[static_cast<size_t>(j)]);
    Tensor yh0(DataType::kFloat, {5});
    std::copy(got[1].data<float>(), got[1].data<float>() + 5, yh0.mutable_data<float>());
    check_close(yh0, want, 1e-4);
    // A tiny clip bounds every pre-activation, hence |H| <= tanh(clip).
    got = run_case(c, 14, {attr_float("clip", 0.01f)});
    for (int64_t i = 0; i < got[0].size(); ++i) CHECK(std::fabs(got[0].data<float>()[i]) <= std::tanh(0.01f) + 1e-7);
  }

  TEST_CASE("recurrent nodes reject mismatched shapes and unknown activations") {
    RecCase c = make_case(Kind::kLstm, 3, 2, 4, 5, "forward");
    check_fails({"LSTM", 14, {c.x, small_random({1, 20, 3}), c.r}}, "W");
    check_fails({"GRU", 14, {c.x, small_random({1, 15, 4}), small_random({1, 15, 5})}, {attr_string("direction", "bidirectional")}},
                "direction");
    try {
      run_with_activations({"RNN", 14, {c.x, small_random({1, 5, 4}), small_random({1, 5, 5})}, {}, 2}, {"Cosh"});
      FAIL_CHECK("an unknown activation did not fail");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("activation") != std::string::npos);
    }
  }
}

}  // namespace
}  // namespace onnxtool::recurrent_kernels_test
