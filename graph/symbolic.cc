#include "graph/symbolic.h"

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"

namespace tc {
namespace {

// A product of symbols, ascending with repeats ({0, 0, 1} is s0*s0*s1); the
// empty monomial is the constant term.
using Monomial = std::vector<int64_t>;
// Monomial -> non-zero coefficient. std::map's order is the canonical one.
using Polynomial = std::map<Monomial, int64_t>;

// Every expression made in this process, interned, and every symbol's hint.
class SymbolTable {
 public:
  static SymbolTable& Get() {
    static SymbolTable* table = new SymbolTable;  // never destroyed: used until exit
    return *table;
  }

  int64_t NewSymbol(int64_t hint) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    const int64_t index = next_symbol_++;
    hints_[index] = hint;
    return InternLocked({{{index}, 1}});
  }

  int64_t Symbol(int64_t index) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    if (hints_.try_emplace(index, 1).second) next_symbol_ = std::max(next_symbol_, index + 1);
    return InternLocked({{{index}, 1}});
  }

  int64_t Hint(int64_t index) {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return hints_.at(index);
  }

  // The dim for `p`: its number when it is constant, else its handle.
  int64_t Intern(const Polynomial& p) {
    if (p.empty()) return 0;
    if (p.size() == 1 && p.begin()->first.empty()) return p.begin()->second;
    std::unique_lock<std::shared_mutex> lock(mu_);
    return InternLocked(p);
  }

  Polynomial Lookup(int64_t dim) {
    if (!IsSymbolic(dim)) return dim == 0 ? Polynomial{} : Polynomial{{{}, dim}};
    std::shared_lock<std::shared_mutex> lock(mu_);
    // Every handle comes from Intern: numbers that low are refused where
    // they enter (the parser, DimAdd's saturation).
    const uint64_t index = static_cast<uint64_t>(kSymbolicBase) - static_cast<uint64_t>(dim);
    TC_CHECK(index < polynomials_.size(), "dim ", dim, " is no symbolic dim");
    return polynomials_[index];
  }

 private:
  // With mu_ held exclusively.
  int64_t InternLocked(const Polynomial& p) {
    auto [it, inserted] = ids_.try_emplace(p, static_cast<int64_t>(polynomials_.size()));
    if (inserted) polynomials_.push_back(p);
    return kSymbolicBase - it->second;
  }

  // Guards everything below. A std::shared_mutex rather than absl::Mutex:
  // ThreadSanitizer sees Debian's uninstrumented Abseil locks as none.
  std::shared_mutex mu_;
  std::deque<Polynomial> polynomials_;
  std::map<Polynomial, int64_t> ids_;
  absl::flat_hash_map<int64_t, int64_t> hints_;  // symbol -> hint
  int64_t next_symbol_ = 0;
};

Polynomial Lookup(int64_t dim) { return SymbolTable::Get().Lookup(dim); }
int64_t Intern(const Polynomial& p) { return SymbolTable::Get().Intern(p); }

void AddTerm(Polynomial& p, const Monomial& m, int64_t coefficient) {
  int64_t& c = p[m];
  c = DimAdd(c, coefficient);
  if (c == 0) p.erase(m);
}

Polynomial Scaled(const Polynomial& p, int64_t k) {
  Polynomial out;
  for (const auto& [m, c] : p) AddTerm(out, m, DimMul(c, k));
  return out;
}

Monomial Times(const Monomial& a, const Monomial& b) {
  Monomial m(a);
  m.insert(m.end(), b.begin(), b.end());
  std::sort(m.begin(), m.end());
  return m;
}

// a / b when b's symbols are all in a (with multiplicity).
std::optional<Monomial> Over(const Monomial& a, const Monomial& b) {
  Monomial rest;
  size_t j = 0;
  for (int64_t s : a) {
    if (j < b.size() && b[j] == s) {
      ++j;
    } else {
      rest.push_back(s);
    }
  }
  if (j != b.size()) return std::nullopt;
  return rest;
}

std::string MonomialToString(const Monomial& m) {
  std::string s;
  for (int64_t symbol : m) absl::StrAppend(&s, s.empty() ? "" : "*", "s", symbol);
  return s;
}

// Reads DimToString's grammar: sum := product (('+'|'-') product)*,
// product := factor ('*' factor)*, factor := digits | 's' digits.
class DimParser {
 public:
  static constexpr int64_t kMaxFactor = int64_t{1} << 40;

  explicit DimParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<int64_t> Parse() {
    if (text_.empty()) return Error("an empty dimension");
    int64_t sum = 0;
    bool negate = false;
    if (text_[0] == '-') {
      negate = true;
      ++pos_;
    }
    while (true) {
      absl::StatusOr<int64_t> product = Product();
      if (!product.ok()) return product.status();
      sum = negate ? DimSub(sum, *product) : DimAdd(sum, *product);
      if (pos_ == text_.size()) return sum;
      if (text_[pos_] != '+' && text_[pos_] != '-') {
        return Error(absl::StrCat("unexpected '", text_.substr(pos_, 1), "' at offset ", pos_));
      }
      negate = text_[pos_++] == '-';
    }
  }

 private:
  absl::StatusOr<int64_t> Product() {
    int64_t product = 1;
    do {
      const bool symbol = pos_ < text_.size() && text_[pos_] == 's';
      if (symbol) ++pos_;
      const size_t start = pos_;
      while (pos_ < text_.size() && absl::ascii_isdigit(text_[pos_])) ++pos_;
      int64_t n;
      if (start == pos_) {
        return Error(absl::StrCat("expected ", symbol ? "a symbol number" : "a number or s<k>",
                                  " at offset ", start));
      }
      // A lone number may be any valid size or more (the shape check then
      // judges it); symbol numbers and factors of expressions stay below
      // kMaxFactor, and products saturate (DimMul).
      const bool alone = start == 0 && pos_ == text_.size();
      if (!absl::SimpleAtoi(text_.substr(start, pos_ - start), &n) || (!alone && n > kMaxFactor)) {
        return Error(absl::StrCat("number out of range at offset ", start));
      }
      product = DimMul(product, symbol ? SymbolDim(n) : n);
    } while (pos_ < text_.size() && text_[pos_] == '*' && ++pos_);
    return product;
  }

  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("bad dimension '", text_, "': ", what));
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

bool HasSymbolic(absl::Span<const int64_t> dims) {
  return std::any_of(dims.begin(), dims.end(), IsSymbolic);
}

int64_t NewSymbol(int64_t hint) { return SymbolTable::Get().NewSymbol(hint); }

int64_t SymbolDim(int64_t index) { return SymbolTable::Get().Symbol(index); }

std::optional<int64_t> SymbolIndex(int64_t dim) {
  if (!IsSymbolic(dim)) return std::nullopt;
  const Polynomial p = Lookup(dim);
  if (p.size() != 1 || p.begin()->second != 1 || p.begin()->first.size() != 1) return std::nullopt;
  return p.begin()->first[0];
}

std::vector<int64_t> SymbolsOf(int64_t dim) {
  std::vector<int64_t> symbols;
  for (const auto& [m, c] : Lookup(dim)) symbols.insert(symbols.end(), m.begin(), m.end());
  std::sort(symbols.begin(), symbols.end());
  symbols.erase(std::unique(symbols.begin(), symbols.end()), symbols.end());
  return symbols;
}

namespace symbolic_internal {

int64_t Add(int64_t a, int64_t b) {
  Polynomial p = Lookup(a);
  for (const auto& [m, c] : Lookup(b)) AddTerm(p, m, c);
  return Intern(p);
}

int64_t Sub(int64_t a, int64_t b) {
  Polynomial p = Lookup(a);
  for (const auto& [m, c] : Lookup(b)) AddTerm(p, m, -c);
  return Intern(p);
}

int64_t Mul(int64_t a, int64_t b) {
  if (!IsSymbolic(b)) return Intern(Scaled(Lookup(a), b));
  if (!IsSymbolic(a)) return Intern(Scaled(Lookup(b), a));
  Polynomial p;
  for (const auto& [ma, ca] : Lookup(a)) {
    for (const auto& [mb, cb] : Lookup(b)) AddTerm(p, Times(ma, mb), DimMul(ca, cb));
  }
  return Intern(p);
}

}  // namespace symbolic_internal

std::optional<int64_t> DimDivide(int64_t a, int64_t b) {
  if (!IsSymbolic(a) && !IsSymbolic(b)) {
    if (b == 0 || a % b != 0) return std::nullopt;
    return a / b;
  }
  // Only by one term (a constant times a monomial): each of a's terms must
  // divide by it, which proves the quotient for every value of the symbols.
  const Polynomial divisor = Lookup(b);
  if (divisor.size() != 1) return std::nullopt;
  const auto& [bm, bc] = *divisor.begin();
  Polynomial q;
  for (const auto& [m, c] : Lookup(a)) {
    std::optional<Monomial> rest = Over(m, bm);
    if (!rest || c % bc != 0) return std::nullopt;
    AddTerm(q, *rest, c / bc);
  }
  return Intern(q);
}

std::optional<int64_t> DimMinimum(int64_t dim) {
  if (!IsSymbolic(dim)) return dim;
  int64_t least = 0;
  for (const auto& [m, c] : Lookup(dim)) {
    if (!m.empty() && c < 0) return std::nullopt;
    least = DimAdd(least, c);
  }
  return least;
}

int64_t DimHint(int64_t dim) {
  if (!IsSymbolic(dim)) return dim;
  int64_t value = 0;
  for (const auto& [m, c] : Lookup(dim)) {
    int64_t term = c;
    for (int64_t s : m) term = DimMul(term, SymbolTable::Get().Hint(s));
    value = DimAdd(value, term);
  }
  return value;
}

absl::StatusOr<int64_t> EvaluateDim(int64_t dim, const SymbolValues& values) {
  if (!IsSymbolic(dim)) return dim;
  int64_t value = 0;
  for (const auto& [m, c] : Lookup(dim)) {
    int64_t term = c;
    for (int64_t s : m) {
      auto it = values.find(s);
      if (it == values.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("no size for symbol s", s, " of dimension ", DimToString(dim)));
      }
      term = DimMul(term, it->second);
    }
    value = DimAdd(value, term);
  }
  return value;
}

std::string DimToString(int64_t dim) {
  if (!IsSymbolic(dim)) return absl::StrCat(dim);
  // Terms in the reverse of the canonical order, so the constant comes last:
  // "784*s0", "s0*s1+2", "s0-1".
  const Polynomial p = Lookup(dim);
  std::string s;
  for (auto it = p.rbegin(); it != p.rend(); ++it) {
    const auto& [m, c] = *it;
    const int64_t magnitude = c < 0 ? -c : c;
    if (c < 0) {
      s += "-";
    } else if (!s.empty()) {
      s += "+";
    }
    if (m.empty()) {
      absl::StrAppend(&s, magnitude);
    } else {
      if (magnitude != 1) absl::StrAppend(&s, magnitude, "*");
      s += MonomialToString(m);
    }
  }
  return s;
}

absl::StatusOr<int64_t> ParseDim(absl::string_view text) { return DimParser(text).Parse(); }

absl::StatusOr<SymbolValues> BindSymbols(absl::Span<const ShapeToBind> shapes) {
  SymbolValues values;
  // Where each symbol took its value, for the message when another place
  // disagrees.
  absl::flat_hash_map<int64_t, std::string> origin;
  for (const ShapeToBind& s : shapes) {
    if (s.declared.size() != s.actual.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(s.where, ": expected rank ", s.declared.size(), ", got ", s.actual.size()));
    }
    for (size_t d = 0; d < s.declared.size(); ++d) {
      const std::optional<int64_t> symbol = SymbolIndex(s.declared[d]);
      if (!symbol || values.contains(*symbol)) continue;
      if (s.actual[d] < 1) {
        return absl::InvalidArgumentError(absl::StrCat(s.where, " dim ", d, " (s", *symbol,
                                                       ") must be at least 1, got ", s.actual[d]));
      }
      values[*symbol] = s.actual[d];
      origin[*symbol] = absl::StrCat(s.where, " dim ", d);
    }
  }
  for (const ShapeToBind& s : shapes) {
    for (size_t d = 0; d < s.declared.size(); ++d) {
      absl::StatusOr<int64_t> want = EvaluateDim(s.declared[d], values);
      if (!want.ok()) return want.status();
      if (*want == s.actual[d]) continue;
      std::string why;
      if (std::optional<int64_t> symbol = SymbolIndex(s.declared[d])) {
        why = absl::StrCat(", but s", *symbol, " is ", *want, " (from ", origin[*symbol], ")");
      } else if (IsSymbolic(s.declared[d])) {
        why = absl::StrCat(", expected ", DimToString(s.declared[d]), " = ", *want);
      } else {
        why = absl::StrCat(", expected ", *want);
      }
      return absl::InvalidArgumentError(
          absl::StrCat(s.where, " dim ", d, " is ", s.actual[d], why));
    }
  }
  return values;
}

}  // namespace tc
