// Symbolic dimensions: a dim of a graph value (or of a shape-valued
// attribute, such as reshape's `shape`) may stand for an expression in
// symbols, so that one graph serves every batch size: `f32[s0,784]`,
// `f32[784*s0]`, `f32[s0*s1,64]`.
//
// A dim stays an int64_t either way. A number is itself; an expression is an
// opaque handle (a value at or below kSymbolicBase) into a process-wide table
// of interned polynomials with integer coefficients, kept in one canonical
// form, so two dims are equal exactly when `==` says so. Arithmetic on dims
// that may be symbolic goes through DimAdd, DimMul, ... and never through `+`
// or `*`, which would compute garbage from a handle.
//
//   int64_t b = NewSymbol(/*hint=*/128);      // s0, whose example size is 128
//   int64_t n = DimMul(b, 784);               // 784*s0
//   DimToString(n);                           // "784*s0"
//   DimDivide(n, b);                          // 784
//   EvaluateDim(n, {{*SymbolIndex(b), 96}});  // 75264
//
// Each symbol carries a hint, the size it had when it was made: costs and
// byte figures of a symbolic graph are evaluated there (DimHint). Symbols
// are process-wide: a capture makes fresh ones, and text's s<k> names this
// process's k-th (made with hint 1 when the text names it first), so a
// printed graph parses back to itself in the process that printed it. A symbol is
// assumed to be at least 1, and nothing else: a rule that needs more (a
// symbolic dim broadcast against 5) is rejected with an error naming the dim.
#ifndef TENSORCUT_GRAPH_SYMBOLIC_H_
#define TENSORCUT_GRAPH_SYMBOLIC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace tc {

inline constexpr int64_t kSymbolicBase = -(int64_t{1} << 62);

inline bool IsSymbolic(int64_t dim) { return dim <= kSymbolicBase; }
bool HasSymbolic(absl::Span<const int64_t> dims);

// A fresh symbol s<k> (k one more than the last made) with example size `hint`.
int64_t NewSymbol(int64_t hint);
// The dim standing for symbol s<index>: the parser's way in. A symbol not
// made yet in this process is made with hint 1.
int64_t SymbolDim(int64_t index);
// k when `dim` is exactly the symbol s<k>.
std::optional<int64_t> SymbolIndex(int64_t dim);
// The symbols `dim` mentions, ascending.
std::vector<int64_t> SymbolsOf(int64_t dim);

namespace symbolic_internal {
int64_t Add(int64_t a, int64_t b);
int64_t Sub(int64_t a, int64_t b);
int64_t Mul(int64_t a, int64_t b);

// Numbers out of any valid size's range saturate to kOutOfRange (or its
// negation) instead of overflowing: never a handle, and always rejected by
// CheckShapeSize, so a huge size from a file stays an error.
inline constexpr int64_t kOutOfRange = int64_t{1} << 61;
inline int64_t Saturated(bool overflow, int64_t v, bool negative) {
  if (overflow) return negative ? -kOutOfRange : kOutOfRange;
  return v < -kOutOfRange ? -kOutOfRange : v;
}
}  // namespace symbolic_internal

// Inline for numbers, which kernels compute with on every call.
inline int64_t DimAdd(int64_t a, int64_t b) {
  if (IsSymbolic(a) || IsSymbolic(b)) return symbolic_internal::Add(a, b);
  int64_t v;
  const bool overflow = __builtin_add_overflow(a, b, &v);
  return symbolic_internal::Saturated(overflow, v, a < 0);
}
inline int64_t DimSub(int64_t a, int64_t b) {
  if (IsSymbolic(a) || IsSymbolic(b)) return symbolic_internal::Sub(a, b);
  int64_t v;
  const bool overflow = __builtin_sub_overflow(a, b, &v);
  return symbolic_internal::Saturated(overflow, v, a < 0);
}
inline int64_t DimMul(int64_t a, int64_t b) {
  if (IsSymbolic(a) || IsSymbolic(b)) return symbolic_internal::Mul(a, b);
  int64_t v;
  const bool overflow = __builtin_mul_overflow(a, b, &v);
  return symbolic_internal::Saturated(overflow, v, (a < 0) != (b < 0));
}
// a / b when b divides a exactly for every value of the symbols (784*s0 / s0
// is 784; s0 / 2 is not provable), nullopt otherwise; b must not be 0.
std::optional<int64_t> DimDivide(int64_t a, int64_t b);

// The least value `dim` takes over symbols >= 1 when that is provable
// (every term but the constant has a non-negative coefficient, so the least
// is at all ones): s0-1 gives 0, 2*s0+3 gives 5; s1-s0 gives nullopt.
std::optional<int64_t> DimMinimum(int64_t dim);

// The value at the symbols' hints.
int64_t DimHint(int64_t dim);
// Symbol index -> the size it takes in one call.
using SymbolValues = absl::flat_hash_map<int64_t, int64_t>;
// The value of `dim` when its symbols take `values`; an error names a symbol
// without a value.
absl::StatusOr<int64_t> EvaluateDim(int64_t dim, const SymbolValues& values);

// One argument's declared shape (a placeholder's, maybe symbolic) and the
// shape a call gave it; `where` names it in errors ("inputs[1]").
struct ShapeToBind {
  absl::Span<const int64_t> declared, actual;
  std::string where;
};
// The symbols' values in one call: each dim that is a lone symbol gives its
// symbol the actual size (at least 1; the same in every place it appears),
// then every dim must equal its actual size. Errors name the argument, the
// dim and the symbol: "inputs[1] dim 0 is 95, but s0 is 96 (from inputs[0]
// dim 0)".
absl::StatusOr<SymbolValues> BindSymbols(absl::Span<const ShapeToBind> shapes);

// "784", "s0", "784*s0", "s0*s1+2", "s0-1": what the parser reads back.
std::string DimToString(int64_t dim);
// Reads DimToString's form: sums and differences of products of integers and
// symbols s<k>. Errors say what is wrong with the text.
absl::StatusOr<int64_t> ParseDim(absl::string_view text);

}  // namespace tc

#endif  // TENSORCUT_GRAPH_SYMBOLIC_H_
