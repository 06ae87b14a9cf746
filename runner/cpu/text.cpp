// CPU kernels for text features: StringNormalizer and TfIdfVectorizer.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {

namespace {

/// ASCII case mapping (the `locale` attribute is accepted; letters outside ASCII are kept as
/// they are, which is what the "en_US" tests of the suite need).
std::string ascii_case(std::string s, bool upper) {
  for (char& c : s) {
    if (upper && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (!upper && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

void string_normalizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::kString) ctx.fail("X must be a string tensor");
  if (x.rank() != 1 && !(x.rank() == 2 && x.dim(0) == 1)) ctx.fail("X must be [C] or [1, C], got " + x.describe());
  const std::string action = ctx.attr_string("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER") ctx.fail("case_change_action must be NONE, LOWER or UPPER");
  const bool sensitive = ctx.attr_int("is_case_sensitive", 0) != 0;
  std::set<std::string> stop;
  if (const ir::Attribute* a = ctx.node().attr("stopwords"))
    for (const auto& w : a->strings) stop.insert(sensitive ? w : ascii_case(w, false));
  std::vector<std::string> kept;
  for (const auto& s : x.strings()) {
    if (stop.count(sensitive ? s : ascii_case(s, false))) continue;
    kept.push_back(action == "NONE" ? s : ascii_case(s, action == "UPPER"));
  }
  // Everything filtered out: one empty string, in the input's rank.
  if (kept.empty()) kept.push_back("");
  const auto n = static_cast<int64_t>(kept.size());
  Tensor& y = ctx.output(0, DataType::kString, x.rank() == 1 ? std::vector<int64_t>{n} : std::vector<int64_t>{1, n});
  y.mutable_strings() = kept;
}

void tfidf_vectorizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool strings = x.dtype() == DataType::kString;
  if (!strings && x.dtype() != DataType::kInt32 && x.dtype() != DataType::kInt64) ctx.fail("X must be string, int32 or int64");
  if (x.rank() != 1 && x.rank() != 2) ctx.fail("X must be [C] or [N, C], got " + x.describe());
  const std::string mode = ctx.attr_string("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") ctx.fail("mode must be TF, IDF or TFIDF");
  const int64_t min_n = ctx.attr_int("min_gram_length", 0), max_n = ctx.attr_int("max_gram_length", 0);
  const int64_t max_skip = ctx.attr_int("max_skip_count", 0);
  if (min_n < 1 || max_n < min_n || max_skip < 0) ctx.fail("invalid gram lengths or skip count");
  const auto counts = ctx.attr_ints("ngram_counts");
  const auto indexes = ctx.attr_ints("ngram_indexes");
  const auto weights = ctx.attr_floats("weights");
  std::vector<std::string> pool_s;
  if (const ir::Attribute* a = ctx.node().attr("pool_strings")) pool_s = a->strings;
  const auto pool_i = ctx.attr_ints("pool_int64s");
  const int64_t pool_size = strings ? static_cast<int64_t>(pool_s.size()) : static_cast<int64_t>(pool_i.size());
  if (counts.empty() || static_cast<int64_t>(counts.size()) < max_n) ctx.fail("ngram_counts must have an entry per gram length");
  // The pool: counts[n-1] is where the n-grams start; their items are n consecutive entries.
  std::map<std::vector<std::string>, int64_t> table;  // n-gram (as strings) -> output index
  int64_t ngram_no = 0;
  for (size_t len = 1; len <= counts.size(); ++len) {
    const int64_t start = counts[len - 1];
    const int64_t end = len < counts.size() ? counts[len] : pool_size;
    if (start < 0 || end > pool_size || start > end || (end - start) % static_cast<int64_t>(len)) ctx.fail("ngram_counts do not fit the pool");
    for (int64_t p = start; p < end; p += static_cast<int64_t>(len), ++ngram_no) {
      std::vector<std::string> key;
      for (size_t k = 0; k < len; ++k)
        key.push_back(strings ? pool_s[static_cast<size_t>(p) + k] : std::to_string(pool_i[static_cast<size_t>(p) + k]));
      if (ngram_no >= static_cast<int64_t>(indexes.size())) ctx.fail("ngram_indexes is shorter than the pool");
      table[key] = indexes[static_cast<size_t>(ngram_no)];
    }
  }
  int64_t width = 0;
  for (int64_t i : indexes) {
    if (i < 0) ctx.fail("ngram_indexes must not be negative");
    width = std::max(width, i + 1);
  }
  // weights[i] belongs to the i-th n-gram of the pool, which counts into ngram_indexes[i].
  std::vector<double> out_weight(static_cast<size_t>(width), 1.0);
  for (size_t i = 0; i < weights.size() && i < indexes.size(); ++i) out_weight[static_cast<size_t>(indexes[i])] = weights[i];
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, cols = x.rank() == 2 ? x.dim(1) : x.dim(0);
  Tensor& y = ctx.output(0, DataType::kFloat, x.rank() == 2 ? std::vector<int64_t>{rows, width} : std::vector<int64_t>{width});
  float* py = y.mutable_data<float>();
  std::fill(py, py + y.size(), 0.0f);
  auto item = [&](int64_t r, int64_t c) {
    const int64_t i = r * cols + c;
    if (strings) return x.strings()[static_cast<size_t>(i)];
    return std::to_string(x.dtype() == DataType::kInt32 ? x.data<int32_t>()[i] : x.data<int64_t>()[i]);
  };
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> count(static_cast<size_t>(width), 0.0);
    for (int64_t n = min_n; n <= max_n; ++n) {
      // Unigrams have no gaps: count them once, not once per skip distance.
      const int64_t skips = n == 1 ? 0 : max_skip;
      for (int64_t skip = 0; skip <= skips; ++skip) {
        const int64_t step = skip + 1;
        for (int64_t s = 0; s + (n - 1) * step < cols; ++s) {
          std::vector<std::string> key;
          for (int64_t k = 0; k < n; ++k) key.push_back(item(r, s + k * step));
          auto it = table.find(key);
          if (it != table.end()) count[static_cast<size_t>(it->second)] += 1;
        }
      }
    }
    for (int64_t o = 0; o < width; ++o) {
      const double w = out_weight[static_cast<size_t>(o)];
      const double c = count[static_cast<size_t>(o)];
      const double v = mode == "TF" ? c : mode == "IDF" ? (c > 0 ? w : 0.0) : c * w;
      py[r * width + o] = static_cast<float>(v);
    }
  }
}

}  // namespace

void register_text_kernels(KernelRegistry& r) {
  r.add("", "StringNormalizer", 10, kMaxOpset, string_normalizer);
  r.add("", "TfIdfVectorizer", 9, kMaxOpset, tfidf_vectorizer);
}

}  // namespace onnxtool::runner::cpu
