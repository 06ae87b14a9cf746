// String kernels of opset 20: StringConcat, StringSplit and RegexFullMatch.
#include <regex>
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

}  // namespace

void register_string_kernels(KernelRegistry& r) {
  r.add("", "StringConcat", 20, kMaxOpset, string_concat);
  r.add("", "StringSplit", 20, kMaxOpset, string_split);
  r.add("", "RegexFullMatch", 20, kMaxOpset, regex_full_match);
}

}  // namespace onnxtool::runner::cpu
