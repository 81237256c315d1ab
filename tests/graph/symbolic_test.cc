// Symbolic dims: canonical interning (equal expressions are equal dims),
// arithmetic, exact division, hints, evaluation, and the text form's round
// trip and errors.
#include "graph/symbolic.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "graph/shape.h"

namespace tc {
namespace {

TEST_CASE("numbers stay numbers; expressions are interned handles") {
  CHECK(DimMul(3, 4) == 12);
  CHECK_FALSE(IsSymbolic(DimAdd(-1, 5)));
  const int64_t s = NewSymbol(128);
  CHECK(IsSymbolic(s));
  CHECK(SymbolIndex(s).has_value());
  // Equal polynomials, built two ways, are one dim.
  CHECK(DimMul(DimAdd(s, 1), 2) == DimAdd(DimMul(2, s), 2));
  CHECK(DimMul(s, 784) == DimMul(784, s));
  // Terms that cancel leave a number.
  CHECK(DimSub(DimAdd(s, 7), s) == 7);
  CHECK(DimSub(s, s) == 0);
  CHECK_FALSE(SymbolIndex(DimMul(2, s)).has_value());
}

TEST_CASE("exact division is proved for every value of the symbols or refused") {
  const int64_t a = NewSymbol(4), b = NewSymbol(6);
  const int64_t ab = DimMul(a, b);
  CHECK(DimDivide(DimMul(ab, 784), ab) == 784);
  CHECK(DimDivide(DimMul(ab, 784), 8) == DimMul(ab, 98));
  CHECK(DimDivide(DimMul(ab, 784), a) == DimMul(b, 784));
  CHECK(DimDivide(DimAdd(DimMul(a, 6), DimMul(ab, 3)), DimMul(a, 3)) == DimAdd(2, b));
  CHECK_FALSE(DimDivide(a, 2).has_value());
  CHECK_FALSE(DimDivide(DimAdd(a, 1), a).has_value());
  CHECK_FALSE(DimDivide(784, a).has_value());
  CHECK_FALSE(DimDivide(7, 2).has_value());
  CHECK(NumElements({a, 3, b}) == DimMul(ab, 3));
  CHECK(NumElements({}) == 1);
}

TEST_CASE("least values over symbols of at least 1") {
  const int64_t a = NewSymbol(4), b = NewSymbol(6);
  CHECK(DimMinimum(DimSub(a, 1)) == 0);
  CHECK(DimMinimum(DimAdd(DimMul(a, 2), 3)) == 5);
  CHECK(DimMinimum(DimMul(a, b)) == 1);
  CHECK_FALSE(DimMinimum(DimSub(b, a)).has_value());
  CHECK(DimMinimum(-3) == -3);
}

TEST_CASE("hints and evaluation") {
  const int64_t a = NewSymbol(128), b = NewSymbol(10);
  const int64_t d = DimAdd(DimMul(DimMul(a, b), 3), 2);
  CHECK(DimHint(d) == 128 * 10 * 3 + 2);
  SymbolValues values{{*SymbolIndex(a), 96}, {*SymbolIndex(b), 7}};
  CHECK(EvaluateDim(d, values).value() == 96 * 7 * 3 + 2);
  CHECK(EvaluateDim(5, {}).value() == 5);
  absl::StatusOr<int64_t> missing = EvaluateDim(d, {{*SymbolIndex(a), 96}});
  REQUIRE_FALSE(missing.ok());
  CHECK(std::string(missing.status().message()) ==
        absl::StrCat("no size for symbol s", *SymbolIndex(b), " of dimension 3*s", *SymbolIndex(a),
                     "*s", *SymbolIndex(b), "+2"));
  CHECK(SymbolsOf(d) == std::vector<int64_t>{*SymbolIndex(a), *SymbolIndex(b)});
}

TEST_CASE("binding a call's shapes gives each symbol its size, or says which dim disagrees") {
  const int64_t b = NewSymbol(128), t = NewSymbol(16);
  const int64_t ib = *SymbolIndex(b), it = *SymbolIndex(t);
  const Shape x = {b, t, 64}, y = {DimMul(b, t)}, mask = {b};
  const Shape ok_x = {96, 7, 64}, ok_y = {672}, ok_mask = {96};
  absl::StatusOr<SymbolValues> v =
      BindSymbols({{y, ok_y, "targets"}, {x, ok_x, "inputs[0]"}, {mask, ok_mask, "inputs[1]"}});
  REQUIRE(v.ok());
  CHECK(*v == SymbolValues{{ib, 96}, {it, 7}});

  auto error = [](absl::Span<const ShapeToBind> shapes) {
    absl::StatusOr<SymbolValues> v = BindSymbols(shapes);
    REQUIRE_FALSE(v.ok());
    return std::string(v.status().message());
  };
  const Shape bad_mask = {95}, bad_y = {671}, bad_x = {96, 7, 32}, empty = {0, 7, 64};
  CHECK(error({{x, ok_x, "inputs[0]"}, {mask, bad_mask, "inputs[1]"}}) ==
        absl::StrCat("inputs[1] dim 0 is 95, but s", ib, " is 96 (from inputs[0] dim 0)"));
  CHECK(error({{x, ok_x, "inputs[0]"}, {y, bad_y, "targets"}}) ==
        absl::StrCat("targets dim 0 is 671, expected s", ib, "*s", it, " = 672"));
  CHECK(error({{x, bad_x, "inputs[0]"}}) == "inputs[0] dim 2 is 32, expected 64");
  CHECK(error({{x, empty, "inputs[0]"}}) ==
        absl::StrCat("inputs[0] dim 0 (s", ib, ") must be at least 1, got 0"));
  CHECK(error({{x, ok_y, "inputs[0]"}}) == "inputs[0]: expected rank 3, got 1");
  // A symbol that appears only inside an expression has no value to take.
  CHECK(error({{y, ok_y, "targets"}}).find("no size for symbol") == 0);
}

TEST_CASE("the text form round-trips") {
  const int64_t s0 = SymbolDim(0), s1 = SymbolDim(1);
  CHECK(DimToString(s0) == "s0");
  CHECK(DimToString(DimMul(s0, 784)) == "784*s0");
  CHECK(DimToString(DimAdd(DimMul(s0, s1), 2)) == "s0*s1+2");
  CHECK(DimToString(DimSub(s0, 1)) == "s0-1");
  CHECK(DimToString(DimSub(3, s0)) == "-s0+3");
  for (int64_t d : {int64_t{0}, int64_t{784}, s0, DimMul(s0, 784), DimAdd(DimMul(s0, s1), 2),
                    DimSub(s0, 1), DimSub(3, s0), DimMul(DimMul(s0, s0), 5)}) {
    INFO(DimToString(d));
    CHECK(ParseDim(DimToString(d)).value() == d);
  }
  CHECK(ShapeToString({s0, 784}) == "[s0,784]");
}

TEST_CASE("malformed dimension text is an error that quotes it") {
  for (const char* text : {"", "s", "x", "s0*", "2+", "s0**2", "s0 ", "99999999999999999999"}) {
    INFO(text);
    absl::StatusOr<int64_t> d = ParseDim(text);
    REQUIRE_FALSE(d.ok());
    CHECK(std::string(d.status().message()).find("bad dimension") == 0);
  }
}

}  // namespace
}  // namespace tc
