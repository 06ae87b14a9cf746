// Tests of the attention-family kernels (runner/cpu/attention.cpp): Attention, RotaryEmbedding,
// TensorScatter, SwiGLU, CausalConvWithState and LinearAttention, each run as a one-node model
// against plain reference loops written here (explicit softmax, explicit recurrences) at odd
// sizes; one and three threads must give identical bytes; bad inputs fail naming the node.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "tests/kernel_test_util.h"

namespace onnxtool::attention_kernels_test {
namespace {

using namespace testing;  // NOLINT: the kernel-test harness

const double kInf = std::numeric_limits<double>::infinity();

double at(const Tensor& t, int64_t i) { return t.data<float>()[i]; }

// ---------------------------------------------------------------- attention reference

/// Plain attention over 4-D [B, H, S, D] arrays (K, V already hold the whole key sequence):
/// scores, softcap, additive bias, softmax with zero rows when every bias is -inf, then P*V.
struct AttnRef {
  std::vector<double> y, qk;
};

AttnRef attention_ref(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                      int64_t b_n, int64_t hq, int64_t hkv, int64_t sq, int64_t total, int64_t d, int64_t dv,
                      double scale, double softcap, int mode,
                      const std::function<double(int64_t, int64_t, int64_t, int64_t)>& bias) {
  AttnRef r;
  r.y.assign(static_cast<size_t>(b_n * hq * sq * dv), 0.0);
  r.qk.assign(static_cast<size_t>(b_n * hq * sq * total), 0.0);
  for (int64_t b = 0; b < b_n; ++b)
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t g = h / (hq / hkv);
      for (int64_t i = 0; i < sq; ++i) {
        std::vector<double> s(static_cast<size_t>(total)), bs(static_cast<size_t>(total));
        bool all_masked = true;
        for (int64_t j = 0; j < total; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e)
            dot += q[static_cast<size_t>(((b * hq + h) * sq + i) * d + e)] *
                   k[static_cast<size_t>(((b * hkv + g) * total + j) * d + e)];
          dot *= scale;
          double& out_qk = r.qk[static_cast<size_t>(((b * hq + h) * sq + i) * total + j)];
          if (mode == 0) out_qk = dot;
          if (softcap > 0) dot = softcap * std::tanh(dot / softcap);
          if (mode == 1) out_qk = dot;
          bs[static_cast<size_t>(j)] = bias(b, h, i, j);
          if (bs[static_cast<size_t>(j)] != -kInf) all_masked = false;
          s[static_cast<size_t>(j)] = dot + bs[static_cast<size_t>(j)];
          if (mode == 2) out_qk = s[static_cast<size_t>(j)];
        }
        double mx = -kInf, sum = 0;
        for (double x : s) mx = std::max(mx, x);
        for (double& x : s) sum += (x = std::exp(x - mx));
        for (int64_t j = 0; j < total; ++j) {
          const double p = all_masked ? 0.0 : s[static_cast<size_t>(j)] / sum;
          if (mode == 3) r.qk[static_cast<size_t>(((b * hq + h) * sq + i) * total + j)] = p;
          for (int64_t e = 0; e < dv; ++e)
            r.y[static_cast<size_t>(((b * hq + h) * sq + i) * dv + e)] +=
                p * v[static_cast<size_t>(((b * hkv + g) * total + j) * dv + e)];
        }
      }
    }
  return r;
}

std::vector<double> doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.size(); ++i) v.push_back(at(t, i));
  return v;
}

/// [B, S, H*D] -> [B, H, S, D].
std::vector<double> heads_of(const Tensor& t, int64_t heads) {
  const int64_t b_n = t.dim(0), s = t.dim(1), d = t.dim(2) / heads;
  std::vector<double> out(static_cast<size_t>(t.size()));
  for (int64_t b = 0; b < b_n; ++b)
    for (int64_t i = 0; i < s; ++i)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t e = 0; e < d; ++e)
          out[static_cast<size_t>(((b * heads + h) * s + i) * d + e)] = at(t, ((b * s + i) * heads + h) * d + e);
  return out;
}

/// [B, H, S, D] -> [B, S, H*D].
std::vector<double> packed_of(const std::vector<double>& x, int64_t b_n, int64_t heads, int64_t s, int64_t d) {
  std::vector<double> out(x.size());
  for (int64_t b = 0; b < b_n; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < s; ++i)
        for (int64_t e = 0; e < d; ++e)
          out[static_cast<size_t>(((b * s + i) * heads + h) * d + e)] = x[static_cast<size_t>(((b * heads + h) * s + i) * d + e)];
  return out;
}

Tensor to_half(const Tensor& f) {
  Tensor h(DataType::kFloat16, f.shape());
  for (int64_t i = 0; i < f.size(); ++i) h.mutable_data<uint16_t>()[i] = runner::float_to_half(f.data<float>()[i]);
  return h;
}

TEST_SUITE("attention_kernels") {
  TEST_CASE("Attention 4-D MHA at odd sizes, default scale, every qk_matmul_output_mode") {
    for (int mode = 0; mode < 4; ++mode) {
      const int64_t b = 2, h = 3, sq = 5, skv = 7, d = 9, dv = 5;
      const Tensor q = random_float({b, h, sq, d}, -1, 1), k = random_float({b, h, skv, d}, -1, 1),
                   v = random_float({b, h, skv, dv}, -1, 1);
      auto out = run_checked({"Attention", 23, {q, k, v}, {attr_int("qk_matmul_output_mode", mode)}, 4});
      const AttnRef r = attention_ref(doubles(q), doubles(k), doubles(v), b, h, h, sq, skv, d, dv, 1 / std::sqrt(9.0), 0,
                                      mode, [](int64_t, int64_t, int64_t, int64_t) { return 0.0; });
      REQUIRE(out[0].shape() == std::vector<int64_t>{b, h, sq, dv});
      check_close(out[0], r.y, 1e-5);
      check_same(out[1], k);
      check_same(out[2], v);
      REQUIRE(out[3].shape() == std::vector<int64_t>{b, h, sq, skv});
      check_close(out[3], r.qk, 1e-5);
    }
  }

  TEST_CASE("Attention 3-D GQA with a 2-D bool mask, scale and softcap") {
    const int64_t b = 2, hq = 6, hkv = 2, sq = 3, skv = 5, d = 4, dv = 3;
    const Tensor q = random_float({b, sq, hq * d}, -3, 3), k = random_float({b, skv, hkv * d}, -3, 3),
                 v = random_float({b, skv, hkv * dv}, -1, 1);
    Tensor mask(DataType::kBool, {sq, skv});
    for (int64_t i = 0; i < mask.size(); ++i) mask.mutable_data<uint8_t>()[i] = (i * 7 % 3) != 0;
    for (int mode : {1, 2}) {
      auto out = run_checked({"Attention",
                              23,
                              {q, k, v, mask},
                              {attr_int("q_num_heads", hq), attr_int("kv_num_heads", hkv), attr_float("scale", 0.3f),
                               attr_float("softcap", 2.0f), attr_int("qk_matmul_output_mode", mode)},
                              4});
      const AttnRef r = attention_ref(heads_of(q, hq), heads_of(k, hkv), heads_of(v, hkv), b, hq, hkv, sq, skv, d, dv,
                                      0.3, 2.0, mode, [&](int64_t, int64_t, int64_t i, int64_t j) {
                                        return mask.data<uint8_t>()[i * skv + j] ? 0.0 : -kInf;
                                      });
      REQUIRE(out[0].shape() == std::vector<int64_t>{b, sq, hq * dv});
      check_close(out[0], packed_of(r.y, b, hq, sq, dv), 1e-5);
      check_close(out[3], r.qk, 1e-5);
    }
  }

  TEST_CASE("Attention additive 3-D mask, short mask padded with -inf, fully masked row is zero") {
    const int64_t b = 1, h = 2, sq = 3, skv = 6, d = 5;
    const Tensor q = random_float({b, h, sq, d}, -1, 1), k = random_float({b, h, skv, d}, -1, 1),
                 v = random_float({b, h, skv, d}, -1, 1);
    // (h, q, 4): keys 4 and 5 are padded; row (h=1, i=2) is all -inf.
    Tensor mask = random_float({h, sq, 4}, -1, 1);
    for (int64_t j = 0; j < 4; ++j) mask.mutable_data<float>()[(1 * sq + 2) * 4 + j] = -INFINITY;
    const Tensor y = run1({"Attention", 24, {q, k, v, mask}});
    const AttnRef r = attention_ref(doubles(q), doubles(k), doubles(v), b, h, h, sq, skv, d, d, 1 / std::sqrt(5.0), 0, 0,
                                    [&](int64_t, int64_t hh, int64_t i, int64_t j) {
                                      return j < 4 ? at(mask, (hh * sq + i) * 4 + j) : -kInf;
                                    });
    check_close(y, r.y, 1e-5);
    for (int64_t e = 0; e < d; ++e) CHECK(at(y, ((1 * sq) + 2) * d + e) == 0.0);
  }

  TEST_CASE("Attention causal with past key/value (bottom-right) and present outputs") {
    const int64_t b = 2, h = 2, sq = 3, past = 4, d = 3;
    const Tensor q = random_float({b, h, sq, d}, -1, 1), k = random_float({b, h, sq, d}, -1, 1),
                 v = random_float({b, h, sq, d}, -1, 1);
    const Tensor pk = random_float({b, h, past, d}, -1, 1), pv = random_float({b, h, past, d}, -1, 1);
    auto out = run_checked({"Attention", 23, {q, k, v, Tensor(), pk, pv}, {attr_int("is_causal", 1)}, 3});
    const int64_t total = past + sq;
    std::vector<double> kk, vv;
    for (int64_t bh = 0; bh < b * h; ++bh) {
      for (int64_t j = 0; j < past * d; ++j) kk.push_back(at(pk, bh * past * d + j)), vv.push_back(at(pv, bh * past * d + j));
      for (int64_t j = 0; j < sq * d; ++j) kk.push_back(at(k, bh * sq * d + j)), vv.push_back(at(v, bh * sq * d + j));
    }
    const AttnRef r = attention_ref(doubles(q), kk, vv, b, h, h, sq, total, d, d, 1 / std::sqrt(3.0), 0, 0,
                                    [&](int64_t, int64_t, int64_t i, int64_t j) { return j <= i + past ? 0.0 : -kInf; });
    check_close(out[0], r.y, 1e-5);
    REQUIRE(out[1].shape() == std::vector<int64_t>{b, h, total, d});
    check_close(out[1], kk, 0);
    check_close(out[2], vv, 0);
  }

  TEST_CASE("Attention-24 nonpad_kv_seqlen with causal offset and Attention-25 sliding window") {
    const int64_t b = 2, h = 1, sq = 3, skv = 7, d = 4;
    const Tensor q = random_float({b, h, sq, d}, -1, 1), k = random_float({b, h, skv, d}, -1, 1),
                 v = random_float({b, h, skv, d}, -1, 1);
    const Tensor nonpad = ints({5, 2});
    const Tensor y = run1({"Attention", 24, {q, k, v, Tensor(), Tensor(), Tensor(), nonpad}, {attr_int("is_causal", 1)}});
    const int64_t np[2] = {5, 2};
    const AttnRef r = attention_ref(doubles(q), doubles(k), doubles(v), b, h, h, sq, skv, d, d, 0.5, 0, 0,
                                    [&](int64_t bb, int64_t, int64_t i, int64_t j) {
                                      const bool ok = j <= i + np[bb] - sq && j < np[bb];
                                      return ok ? 0.0 : -kInf;
                                    });
    check_close(y, r.y, 1e-5);
    // Batch 1 has offset -1: query 0 sees no key and is a zero row.
    for (int64_t e = 0; e < d; ++e) CHECK(at(y, (1 * sq + 0) * d + e) == 0.0);

    const Tensor y25 = run1({"Attention", 25, {q, k, v}, {attr_int("left_window_size", 2), attr_int("right_window_size", 1)}});
    const AttnRef r25 = attention_ref(doubles(q), doubles(k), doubles(v), b, h, h, sq, skv, d, d, 0.5, 0, 0,
                                      [&](int64_t, int64_t, int64_t i, int64_t j) {
                                        return (i - j <= 2 && j - i <= 1) ? 0.0 : -kInf;
                                      });
    check_close(y25, r25.y, 1e-5);
  }

  TEST_CASE("Attention float16 computes through float") {
    const Tensor q = random_float({1, 2, 3, 4}, -1, 1), k = random_float({1, 2, 5, 4}, -1, 1),
                 v = random_float({1, 2, 5, 4}, -1, 1);
    const Tensor y = run1({"Attention", 23, {to_half(q), to_half(k), to_half(v)}});
    REQUIRE(y.dtype() == DataType::kFloat16);
    auto hd = [](const Tensor& t) {
      std::vector<double> o;
      for (int64_t i = 0; i < t.size(); ++i) o.push_back(runner::half_to_float(runner::float_to_half(t.data<float>()[i])));
      return o;
    };
    const AttnRef r = attention_ref(hd(q), hd(k), hd(v), 1, 2, 2, 3, 5, 4, 4, 0.5, 0, 0,
                                    [](int64_t, int64_t, int64_t, int64_t) { return 0.0; });
    for (int64_t i = 0; i < y.size(); ++i)
      CHECK(std::fabs(runner::half_to_float(y.data<uint16_t>()[i]) - r.y[static_cast<size_t>(i)]) < 2e-3);
  }

  TEST_CASE("Attention rejects bad heads, lone past_key and bad mask shapes") {
    const Tensor q = random_float({1, 3, 2, 4}, -1, 1), k = random_float({1, 2, 2, 4}, -1, 1),
                 v = random_float({1, 2, 2, 4}, -1, 1);
    check_fails({"Attention", 23, {q, k, v}}, "multiple");
    const Tensor q2 = random_float({1, 2, 2, 4}, -1, 1);
    check_fails({"Attention", 23, {q2, k, v, Tensor(), random_float({1, 2, 1, 4}, -1, 1)}}, "together");
    check_fails({"Attention", 23, {q2, k, v, random_float({3, 2, 2}, -1, 1)}}, "broadcast");
    const Tensor q8 = random_float({1, 2, 8}, -1, 1), k8 = random_float({1, 2, 8}, -1, 1), v8 = random_float({1, 2, 8}, -1, 1);
    check_fails({"Attention", 23, {q8, k8, v8}}, "q_num_heads");
  }

  TEST_CASE("RotaryEmbedding 4-D without position_ids, 3-D with position_ids, interleaved and partial") {
    for (int interleaved : {0, 1})
      for (int64_t rot : {0, 4}) {
        const int64_t b = 2, h = 3, s = 5, d = 6, r = rot == 0 ? d : rot, half = r / 2, maxpos = 9;
        const Tensor x4 = random_float({b, h, s, d}, -1, 1);
        const Tensor cos3 = random_float({b, s, half}, -1, 1), sin3 = random_float({b, s, half}, -1, 1);
        const Tensor x3 = random_float({b, s, h * d}, -1, 1);
        const Tensor cos2 = random_float({maxpos, half}, -1, 1), sin2 = random_float({maxpos, half}, -1, 1);
        Tensor pos = random_ints(DataType::kInt64, {b, s}, 0, maxpos - 1);
        std::vector<Attr> attrs = {attr_int("interleaved", interleaved), attr_int("rotary_embedding_dim", rot)};
        const Tensor y4 = run1({"RotaryEmbedding", 23, {x4, cos3, sin3}, attrs});
        attrs.push_back(attr_int("num_heads", h));
        const Tensor y3 = run1({"RotaryEmbedding", 23, {x3, cos2, sin2, pos}, attrs});
        // Reference: rotate pairs (i, i + half) or (2i, 2i + 1) of each head vector.
        auto rotate = [&](const std::vector<double>& vec, const double* c, const double* sn) {
          std::vector<double> o = vec;
          for (int64_t i = 0; i < half; ++i) {
            const int64_t a = interleaved ? 2 * i : i, bb = interleaved ? 2 * i + 1 : i + half;
            o[static_cast<size_t>(a)] = c[i] * vec[static_cast<size_t>(a)] - sn[i] * vec[static_cast<size_t>(bb)];
            o[static_cast<size_t>(bb)] = sn[i] * vec[static_cast<size_t>(a)] + c[i] * vec[static_cast<size_t>(bb)];
          }
          return o;
        };
        std::vector<double> want4(static_cast<size_t>(x4.size())), want3(static_cast<size_t>(x3.size()));
        for (int64_t bb = 0; bb < b; ++bb)
          for (int64_t hh = 0; hh < h; ++hh)
            for (int64_t ss = 0; ss < s; ++ss) {
              std::vector<double> c(half), sn(half), c2(half), s2(half), v4(d), v3(d);
              const int64_t p = pos.data<int64_t>()[bb * s + ss];
              for (int64_t i = 0; i < half; ++i) {
                c[i] = at(cos3, (bb * s + ss) * half + i), sn[i] = at(sin3, (bb * s + ss) * half + i);
                c2[i] = at(cos2, p * half + i), s2[i] = at(sin2, p * half + i);
              }
              for (int64_t e = 0; e < d; ++e) {
                v4[e] = at(x4, ((bb * h + hh) * s + ss) * d + e);
                v3[e] = at(x3, ((bb * s + ss) * h + hh) * d + e);
              }
              const auto o4 = rotate(v4, c.data(), sn.data()), o3 = rotate(v3, c2.data(), s2.data());
              for (int64_t e = 0; e < d; ++e) {
                want4[static_cast<size_t>(((bb * h + hh) * s + ss) * d + e)] = o4[e];
                want3[static_cast<size_t>(((bb * s + ss) * h + hh) * d + e)] = o3[e];
              }
            }
        check_close(y4, want4, 1e-6);
        check_close(y3, want3, 1e-6);
      }
  }

  TEST_CASE("RotaryEmbedding rejects an odd rotary dim and out-of-range positions") {
    const Tensor x = random_float({1, 1, 2, 6}, -1, 1);
    check_fails({"RotaryEmbedding", 23, {x, random_float({1, 2, 3}, -1, 1), random_float({1, 2, 3}, -1, 1)},
                 {attr_int("rotary_embedding_dim", 3)}},
                "even");
    check_fails({"RotaryEmbedding", 23, {x, random_float({4, 3}, -1, 1), random_float({4, 3}, -1, 1), ints({0, 4}, {1, 2})}},
                "position id");
  }

  TEST_CASE("TensorScatter linear and circular against the spec's loop") {
    const int64_t b = 2, heads = 3, maxlen = 7, len = 3, d = 5;
    const Tensor past = random_float({b, heads, maxlen, d}, -1, 1), upd = random_float({b, heads, len, d}, -1, 1);
    for (const char* mode : {"linear", "circular"}) {
      const Tensor wi = std::string(mode) == "linear" ? ints({4, 0}) : ints({5, 13});
      const Tensor y = run1({"TensorScatter", 24, {past, upd, wi}, {attr_string("mode", mode)}});
      std::vector<double> want = doubles(past);
      for (int64_t bb = 0; bb < b; ++bb)
        for (int64_t hh = 0; hh < heads; ++hh)
          for (int64_t s = 0; s < len; ++s) {
            const int64_t dst = (wi.data<int64_t>()[bb] + s) % maxlen;
            for (int64_t e = 0; e < d; ++e)
              want[static_cast<size_t>(((bb * heads + hh) * maxlen + dst) * d + e)] = at(upd, ((bb * heads + hh) * len + s) * d + e);
          }
      check_close(y, want, 0);
    }
    // Without write_indices, along axis 1 of a 3-D cache.
    const Tensor p3 = random_float({2, 4, 3}, -1, 1), u3 = random_float({2, 2, 3}, -1, 1);
    const Tensor y3 = run1({"TensorScatter", 24, {p3, u3}, {attr_int("axis", 1)}});
    std::vector<double> want3 = doubles(p3);
    for (int64_t bb = 0; bb < 2; ++bb)
      for (int64_t s = 0; s < 2; ++s)
        for (int64_t e = 0; e < 3; ++e) want3[static_cast<size_t>((bb * 4 + s) * 3 + e)] = at(u3, (bb * 2 + s) * 3 + e);
    check_close(y3, want3, 0);
    check_fails({"TensorScatter", 24, {past, upd, ints({5, 0})}}, "exceeds");
    check_fails({"TensorScatter", 24, {past, upd}, {attr_int("axis", 0)}}, "batch");
  }

  TEST_CASE("SwiGLU against Swish(A) * B, and rejects broadcasting") {
    const Tensor a = random_float({3, 7}, -5, 5), bv = random_float({3, 7}, -5, 5);
    const Tensor y = run1({"SwiGLU", 28, {a, bv}, {attr_float("alpha", 1.5f)}});
    std::vector<double> want;
    for (int64_t i = 0; i < a.size(); ++i) want.push_back(at(a, i) / (1 + std::exp(-1.5 * at(a, i))) * at(bv, i));
    check_close(y, want, 1e-6);
    check_fails({"SwiGLU", 28, {a, random_float({1, 7}, -1, 1)}}, "same type and shape");
  }

  TEST_CASE("CausalConvWithState with and without past state, bias and silu") {
    const int64_t b = 2, c = 3, len = 5, k = 4;
    const Tensor x = random_float({b, c, len}, -1, 1), w = random_float({c, 1, k}, -1, 1),
                 bias = random_float({c}, -1, 1), past = random_float({b, c, k - 1}, -1, 1);
    for (bool with_past : {false, true})
      for (const char* act : {"none", "silu"}) {
        std::vector<Tensor> in = {x, w, bias};
        if (with_past) in.push_back(past);
        auto out = run_checked({"CausalConvWithState", 27, in, {attr_string("activation", act)}, 2});
        std::vector<double> want_y, want_s;
        for (int64_t bb = 0; bb < b; ++bb)
          for (int64_t cc = 0; cc < c; ++cc) {
            std::vector<double> seq;
            for (int64_t i = 0; i < k - 1; ++i) seq.push_back(with_past ? at(past, (bb * c + cc) * (k - 1) + i) : 0.0);
            for (int64_t i = 0; i < len; ++i) seq.push_back(at(x, (bb * c + cc) * len + i));
            for (int64_t t = 0; t < len; ++t) {
              double acc = at(bias, cc);
              for (int64_t m = 0; m < k; ++m) acc += at(w, cc * k + m) * seq[static_cast<size_t>(t + m)];
              want_y.push_back(std::string(act) == "silu" ? acc / (1 + std::exp(-acc)) : acc);
            }
            for (int64_t i = 0; i < k - 1; ++i) want_s.push_back(seq[static_cast<size_t>(len + i)]);
          }
        check_close(out[0], want_y, 1e-5);
        check_close(out[1], want_s, 0);
      }
    check_fails({"CausalConvWithState", 27, {x, random_float({c, 2, k}, -1, 1)}, {}, 2}, "weight");
  }

  TEST_CASE("LinearAttention: the four update rules with GQA, per-head and per-key decay") {
    const int64_t b = 2, t = 4, hq = 4, hkv = 2, dk = 3, dv = 5;
    const Tensor q = random_float({b, t, hq * dk}, -1, 1), k = random_float({b, t, hkv * dk}, -1, 1),
                 v = random_float({b, t, hkv * dv}, -1, 1);
    const Tensor past = random_float({b, hkv, dk, dv}, -1, 1);
    for (const char* rule : {"linear", "gated", "delta", "gated_delta"})
      for (int64_t decay_w : {hkv, hkv * dk}) {
        const std::string r = rule;
        const bool gating = r == "gated" || r == "gated_delta", delta = r == "delta" || r == "gated_delta";
        if (!gating && decay_w != hkv) continue;
        const Tensor decay = random_float({b, t, decay_w}, -0.5f, 0.0f);
        const Tensor beta = random_float({b, t, hkv}, 0.0f, 1.0f);
        std::vector<Tensor> in = {q, k, v, past, gating ? decay : Tensor(), delta ? beta : Tensor()};
        auto out = run_checked({"LinearAttention", 27, in,
                                {attr_int("q_num_heads", hq), attr_int("kv_num_heads", hkv), attr_string("update_rule", rule)},
                                2});
        // Reference: the recurrence of the spec, one token at a time.
        std::vector<double> y(static_cast<size_t>(b * t * hq * dv)), state = doubles(past);
        const double scale = 1 / std::sqrt(static_cast<double>(dk));
        for (int64_t bb = 0; bb < b; ++bb)
          for (int64_t g = 0; g < hkv; ++g) {
            double* s = state.data() + (bb * hkv + g) * dk * dv;
            for (int64_t step = 0; step < t; ++step) {
              const int64_t bt = bb * t + step;
              std::vector<double> kt(dk), vt(dv), gd(dk, 1.0);
              for (int64_t i = 0; i < dk; ++i) kt[i] = at(k, (bt * hkv + g) * dk + i);
              for (int64_t j = 0; j < dv; ++j) vt[j] = at(v, (bt * hkv + g) * dv + j);
              if (gating)
                for (int64_t i = 0; i < dk; ++i)
                  gd[i] = std::exp(decay_w == hkv ? at(decay, bt * hkv + g) : at(decay, (bt * hkv + g) * dk + i));
              const double be = at(beta, bt * hkv + g);
              std::vector<double> upd(dv);
              for (int64_t j = 0; j < dv; ++j) {
                double retrieved = 0;
                for (int64_t i = 0; i < dk; ++i) retrieved += gd[i] * s[i * dv + j] * kt[i];
                upd[j] = delta ? be * (vt[j] - retrieved) : vt[j];
              }
              for (int64_t i = 0; i < dk; ++i)
                for (int64_t j = 0; j < dv; ++j) s[i * dv + j] = gd[i] * s[i * dv + j] + kt[i] * upd[j];
              for (int64_t hh = 0; hh < hq / hkv; ++hh) {
                const int64_t h = g * (hq / hkv) + hh;
                for (int64_t j = 0; j < dv; ++j) {
                  double acc = 0;
                  for (int64_t i = 0; i < dk; ++i) acc += at(q, (bt * hq + h) * dk + i) * s[i * dv + j];
                  y[static_cast<size_t>((bt * hq + h) * dv + j)] = scale * acc;
                }
              }
            }
          }
        check_close(out[0], y, 1e-5);
        check_close(out[1], state, 1e-5);
      }
    check_fails({"LinearAttention", 27, {q, k, v}, {attr_int("q_num_heads", hq), attr_int("kv_num_heads", hkv)}, 2},
                "decay");
    check_fails({"LinearAttention", 27, {q, k, v}, {attr_int("q_num_heads", 3), attr_int("kv_num_heads", 2)}, 2},
                "multiple");
  }
}

}  // namespace
}  // namespace onnxtool::attention_kernels_test
