// String kernels: StringConcat, StringSplit and RegexFullMatch (opset 20), and the text features
// StringNormalizer and TfIdfVectorizer.
#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "runner/cpu/elementwise_util.h"
#include "runner/cpu/kernels.h"

namespace onnxtool::runner::cpu {
namespace {

const Tensor& string_input(const KernelContext& ctx, size_t i) {
  const Tensor& t = ctx.input(i);
  if (t.dtype() != DataType::kString)
    ctx.fail(ctx.node().op_type + " takes string tensors, input " + std::to_string(i) + " is " + type_name(t.dtype()));
  return t;
}

// ---------------------------------------------------------------- StringConcat

void string_concat(KernelContext& ctx) {
  const Tensor& a = string_input(ctx, 0);
  const Tensor& b = string_input(ctx, 1);
  const BroadcastIter it(ctx, {a.shape(), b.shape()});
  Tensor& out = ctx.output(0, DataType::kString, it.shape());
  broadcast_binary(it, a.strings().data(), b.strings().data(), out.mutable_strings().data(),
                   [](const std::string& x, const std::string& y) { return x + y; });
}

// ---------------------------------------------------------------- StringSplit

/// Length of the whitespace character at s[i] (0 when it is not whitespace), as Python's
/// str.isspace sees it: ASCII \t \n \v \f \r, space, \x1c-\x1f, and the Unicode spaces in UTF-8.
size_t space_at(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
  if (c < 0x80) return 0;
  uint32_t cp = 0;
  size_t n = 0;
  if ((c & 0xe0) == 0xc0) cp = c & 0x1f, n = 2;
  else if ((c & 0xf0) == 0xe0) cp = c & 0x0f, n = 3;
  else return 0;  // 4-byte sequences hold no spaces
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (cc & 0x3f);
  }
  const bool space = cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
                     cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
  return space ? n : 0;
}

/// Python's str.split(None, maxsplit): runs of whitespace separate, ends are stripped; after
/// `maxsplit` splits the rest (leading whitespace skipped, trailing kept) is the last piece.
std::vector<std::string> split_whitespace(const std::string& s, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t i = 0;
  auto skip = [&] {
    while (i < s.size()) {
      const size_t n = space_at(s, i);
      if (n == 0) break;
      i += n;
    }
  };
  skip();
  while (i < s.size()) {
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      parts.push_back(s.substr(i));
      break;
    }
    const size_t start = i;
    while (i < s.size() && space_at(s, i) == 0) ++i;
    parts.push_back(s.substr(start, i - start));
    skip();
  }
  return parts;
}

/// Python's str.split(sep, maxsplit) for a non-empty separator: every occurrence separates.
std::vector<std::string> split_on(const std::string& s, const std::string& sep, int64_t maxsplit) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
    const size_t pos = s.find(sep, start);
    if (pos == std::string::npos) break;
    parts.push_back(s.substr(start, pos - start));
    start = pos + sep.size();
  }
  parts.push_back(s.substr(start));
  return parts;
}

void string_split(KernelContext& ctx) {
  const Tensor& x = string_input(ctx, 0);
  const std::string delimiter = ctx.attr_string("delimiter", "");
  const int64_t maxsplit = ctx.has_attr("maxsplit") ? ctx.attr_int("maxsplit", -1) : -1;
  std::vector<std::vector<std::string>> parts(static_cast<size_t>(x.size()));
  size_t widest = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    parts[i] = delimiter.empty() ? split_whitespace(x.strings()[i], maxsplit) : split_on(x.strings()[i], delimiter, maxsplit);
    widest = std::max(widest, parts[i].size());
  }
  std::vector<int64_t> shape = x.shape();
  shape.push_back(static_cast<int64_t>(widest));
  Tensor& y = ctx.output(0, DataType::kString, shape);
  Tensor& z = ctx.output(1, DataType::kInt64, x.shape());
  for (size_t i = 0; i < parts.size(); ++i) {
    z.mutable_data<int64_t>()[i] = static_cast<int64_t>(parts[i].size());
    for (size_t j = 0; j < parts[i].size(); ++j) y.mutable_strings()[i * widest + j] = std::move(parts[i][j]);
  }
}

// ---------------------------------------------------------------- RegexFullMatch

/// The spec names RE2 syntax; std::regex (ECMAScript grammar) covers its common subset:
/// literals, ., classes incl. [[:alpha:]], \d \w \s \D \W \S \b \B, anchors, groups (...) and
/// (?:...), alternation, and the quantifiers * + ? {n} {n,} {n,m} with their lazy forms. RE2
/// constructs std::regex would read differently or not at all are refused with a clear error:
/// flag groups (?i) and (?P<name>...) and any other (?x form, \p{..}/\P{..} Unicode classes,
/// \A \z \Q..\E \C, and backreferences \1..\9 (RE2 has none). Matching is byte-wise, so a
/// pattern may hold only ASCII characters ('.' then matches one byte of a non-ASCII input).
std::string unsupported_re2(const std::string& p) {
  for (size_t i = 0; i < p.size(); ++i) {
    const auto c = static_cast<unsigned char>(p[i]);
    if (c >= 0x80) return "a non-ASCII character";
    if (p[i] == '\\' && i + 1 < p.size()) {
      const char n = p[++i];
      if (n == 'p' || n == 'P') return "Unicode class \\" + std::string(1, n);
      if (n == 'A' || n == 'z' || n == 'Q' || n == 'E' || n == 'C') return "\\" + std::string(1, n);
      if (n >= '1' && n <= '9') return "backreference \\" + std::string(1, n);
      continue;
    }
    if (p[i] == '[') {
      // Skip a bracket expression: '(' inside it is literal. A ']' first is a member.
      size_t j = i + 1;
      if (j < p.size() && p[j] == '^') ++j;
      if (j < p.size() && p[j] == ']') ++j;
      while (j < p.size() && p[j] != ']') {
        if (p[j] == '\\') ++j;
        else if (p[j] == '[' && j + 1 < p.size() && p[j + 1] == ':') {
          const size_t end = p.find(":]", j + 2);
          if (end != std::string::npos) j = end + 1;
        }
        ++j;
      }
      i = j;
      continue;
    }
    if (p[i] == '(' && i + 1 < p.size() && p[i + 1] == '?' && !(i + 2 < p.size() && p[i + 2] == ':'))
      return "group syntax (?" + std::string(i + 2 < p.size() ? 1 : 0, i + 2 < p.size() ? p[i + 2] : ' ');
  }
  return "";
}

struct RegexState {
  bool ready = false;
  std::regex re;
};

void regex_full_match(KernelContext& ctx) {
  const Tensor& x = string_input(ctx, 0);
  auto& st = ctx.state<RegexState>();
  if (!st.ready) {
    if (!ctx.has_attr("pattern")) ctx.fail("RegexFullMatch needs the pattern attribute");
    const std::string pattern = ctx.attr_string("pattern", "");
    const std::string bad = unsupported_re2(pattern);
    if (!bad.empty()) ctx.fail("pattern '" + pattern + "' uses " + bad + ", which this runner's regex engine does not support");
    try {
      st.re = std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      ctx.fail("pattern '" + pattern + "' is not a valid regular expression: " + e.what());
    }
    st.ready = true;
  }
  Tensor& y = ctx.output(0, DataType::kBool, x.shape());
  uint8_t* out = y.mutable_data<uint8_t>();
  const std::regex& re = st.re;
  const std::vector<std::string>& in = x.strings();
  // Matching only reads the regex; each element is independent. std::regex_match may throw on
  // pathological inputs, which must not escape the parallel region.
  std::vector<uint8_t> failed(static_cast<size_t>(x.size()), 0);
  parallel_ranges(x.size(), 64, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      try {
        out[i] = std::regex_match(in[static_cast<size_t>(i)], re) ? 1 : 0;
      } catch (const std::regex_error&) {
        failed[static_cast<size_t>(i)] = 1;
      }
    }
  });
  for (size_t i = 0; i < failed.size(); ++i)
    if (failed[i]) ctx.fail("the regex engine gave up on element " + std::to_string(i) + " (too complex)");
}

// ---------------------------------------------------------------- StringNormalizer and TfIdfVectorizer

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

void register_string_kernels(KernelRegistry& r) {
  r.add("StringConcat", string_concat);
  r.add("StringSplit", string_split);
  r.add("RegexFullMatch", regex_full_match);
  r.add("StringNormalizer", string_normalizer);
  r.add("TfIdfVectorizer", tfidf_vectorizer);
}

}  // namespace onnxtool::runner::cpu
