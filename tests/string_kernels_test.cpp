// Tests of the string kernels (runner/cpu/strings.cpp): StringConcat, StringSplit and
// RegexFullMatch, with the spec's examples, Python str.split semantics, and failure cases.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "tests/kernel_test_util.h"

namespace onnxtool::string_kernels_test {
namespace {

using namespace testing;  // NOLINT: the kernel-test harness

Tensor strs(std::vector<std::string> v, std::vector<int64_t> shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  Tensor t(DataType::kString, shape);
  for (size_t i = 0; i < v.size(); ++i) t.mutable_strings()[i] = v[i];
  return t;
}

std::vector<bool> bools(const Tensor& t) {
  std::vector<bool> v;
  for (int64_t i = 0; i < t.size(); ++i) v.push_back(t.data<uint8_t>()[i] != 0);
  return v;
}

TEST_SUITE("string_kernels") {
  TEST_CASE("StringConcat broadcasts") {
    const Tensor y = run1({"StringConcat", 20, {strs({"a", "bc", "", "d", "e", "f"}, {2, 3}), strs({"_x"})}});
    CHECK(y.strings() == std::vector<std::string>{"a_x", "bc_x", "_x", "d_x", "e_x", "f_x"});
    const Tensor y2 = run1({"StringConcat", 20, {strs({"a", "b"}, {2, 1}), strs({"1", "2", "3"})}});
    REQUIRE(y2.shape() == std::vector<int64_t>{2, 3});
    CHECK(y2.strings() == std::vector<std::string>{"a1", "a2", "a3", "b1", "b2", "b3"});
    check_fails({"StringConcat", 20, {strs({"a", "b"}), strs({"1", "2", "3"})}}, "broadcast");
  }

  TEST_CASE("StringSplit: the spec's examples") {
    auto basic = run_checked({"StringSplit", 20, {strs({"abc.com", "def.net"})}, {attr_string("delimiter", ".")}, 2});
    REQUIRE(basic[0].shape() == std::vector<int64_t>{2, 2});
    CHECK(basic[0].strings() == std::vector<std::string>{"abc", "com", "def", "net"});
    check_same(basic[1], ints({2, 2}));

    auto ms = run_checked({"StringSplit", 20, {strs({"hello world", "def.net", "o n n x", "the quick brown fox"}, {2, 2})},
                           {attr_int("maxsplit", 2)}, 2});
    REQUIRE(ms[0].shape() == std::vector<int64_t>{2, 2, 3});
    CHECK(ms[0].strings() == std::vector<std::string>{"hello", "world", "", "def.net", "", "", "o", "n", "n x", "the",
                                                      "quick", "brown fox"});
    check_same(ms[1], ints({2, 1, 3, 3}, {2, 2}));

    auto cons = run_checked({"StringSplit", 20, {strs({"o-n-n--x-", "o-n----nx"})}, {attr_string("delimiter", "-")}, 2});
    CHECK(cons[0].strings() == std::vector<std::string>{"o", "n", "n", "", "x", "", "o", "n", "", "", "", "nx"});
    check_same(cons[1], ints({6, 6}));
  }

  TEST_CASE("StringSplit on whitespace follows str.split()") {
    auto out = run_checked({"StringSplit", 20, {strs({"  a \t b\n", "", "   ", "x"})}, {}, 2});
    REQUIRE(out[0].shape() == std::vector<int64_t>{4, 2});
    CHECK(out[0].strings() == std::vector<std::string>{"a", "b", "", "", "", "", "x", ""});
    check_same(out[1], ints({2, 0, 0, 1}));
    auto lim = run_checked({"StringSplit", 20, {strs({" a b  c "})}, {attr_int("maxsplit", 1)}, 2});
    CHECK(lim[0].strings() == std::vector<std::string>{"a", "b  c "});
    auto multi = run_checked({"StringSplit", 20, {strs({"a<>b<>", ""})}, {attr_string("delimiter", "<>")}, 2});
    CHECK(multi[0].strings() == std::vector<std::string>{"a", "b", "", "", "", ""});
    check_same(multi[1], ints({3, 1}));
  }

  TEST_CASE("RegexFullMatch: the spec's examples") {
    const Tensor y = run1({"RegexFullMatch", 20, {strs({"www.google.com", "www.facebook.com", "www.bbc.co.uk"})},
                           {attr_string("pattern", R"(www\.[\w.-]+\.\bcom\b)")}});
    CHECK(bools(y) == std::vector<bool>{true, true, false});
    const Tensor y2 = run1({"RegexFullMatch", 20,
                            {strs({"account@gmail.com", "account@hotmail.com", "not email", "account2@yahoo.com"}, {2, 2})},
                            {attr_string("pattern", R"((\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$))")}});
    CHECK(bools(y2) == std::vector<bool>{true, false, false, true});
    const Tensor empty = run1({"RegexFullMatch", 20, {Tensor(DataType::kString, {2, 0})}, {attr_string("pattern", "a")}});
    CHECK(empty.shape() == std::vector<int64_t>{2, 0});
  }

  TEST_CASE("RegexFullMatch refuses constructs outside the supported RE2 subset") {
    const Tensor x = strs({"abc"});
    check_fails({"RegexFullMatch", 20, {x}, {attr_string("pattern", "(?i)abc")}}, "does not support");
    check_fails({"RegexFullMatch", 20, {x}, {attr_string("pattern", R"((a)\1)")}}, "backreference");
    check_fails({"RegexFullMatch", 20, {x}, {attr_string("pattern", R"(\p{L}+)")}}, "Unicode");
    check_fails({"RegexFullMatch", 20, {x}, {attr_string("pattern", "a(b")}}, "not a valid");
    // '(' inside a bracket expression is a literal, not a group.
    CHECK(bools(run1({"RegexFullMatch", 20, {strs({"(?x"})}, {attr_string("pattern", "[(?]+x")}})) ==
          std::vector<bool>{true});
  }
}

}  // namespace
}  // namespace onnxtool::string_kernels_test
