#include "nn/layer_checks.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nn/init.h"

namespace tc::nn::internal {

void ThrowInvalid(absl::string_view message) { throw Error(absl::InvalidArgumentError(message)); }

void RequirePositive(absl::string_view layer, absl::string_view what, int64_t value) {
  if (value <= 0) ThrowInvalid(absl::StrCat(layer, ": ", what, " must be positive, got ", value));
}

void RequirePositive(absl::string_view layer, absl::string_view what, const IntPair& value) {
  if (value[0] <= 0 || value[1] <= 0) {
    ThrowInvalid(absl::StrCat(layer, ": ", what, " must be positive, got ", value.ToString()));
  }
}

void RequireNonNegative(absl::string_view layer, absl::string_view what, const IntPair& value) {
  if (value[0] < 0 || value[1] < 0) {
    ThrowInvalid(absl::StrCat(layer, ": ", what, " must be >= 0, got ", value.ToString()));
  }
}

void RequireInput(absl::string_view layer, const Tensor& x, std::initializer_list<int64_t> ranks,
                  int64_t channels, absl::string_view layout) {
  const bool rank_ok = std::find(ranks.begin(), ranks.end(), x.dim()) != ranks.end();
  if (!rank_ok || (channels >= 0 && x.size(1) != channels)) {
    ThrowInvalid(absl::StrCat(layer, ": expected input ", layout,
                              channels >= 0 ? absl::StrCat(" with C = ", channels) : "", ", got ",
                              x.type().ToString()));
  }
}

void ResetWeightAndBias(const Tensor& weight, const Tensor& bias, Generator* gen) {
  init::kaiming_uniform_(weight, std::sqrt(5.0), "fan_in", "leaky_relu", gen);
  if (bias.defined()) {
    const double bound = 1 / std::sqrt(static_cast<double>(init::calculate_fans(weight).fan_in));
    init::uniform_(bias, -bound, bound, gen);
  }
}

Tensor PerChannel(const Tensor& v, int64_t rank) {
  std::vector<int64_t> shape(rank, 1);
  shape[1] = v.size(0);
  return reshape(v, std::move(shape));
}

absl::string_view PyBool(bool value) { return value ? "True" : "False"; }

std::string PyFloat(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // The shortest round-trip digits, d.ddde[+-]x, laid out as Python does:
  // positional for exponents in [-4, 16), else scientific with two digits.
  char buf[64];
  const auto [end, ec] =
      std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  const std::string sci(buf, end);
  const size_t e = sci.find('e');
  const int exponent = std::stoi(sci.substr(e + 1));
  std::string digits = sci.substr(0, e);
  const bool negative = digits[0] == '-';
  if (negative) digits.erase(0, 1);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  std::string out;
  if (exponent < -4 || exponent >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) absl::StrAppend(&out, ".", digits.substr(1));
    absl::StrAppend(&out, "e", exponent < 0 ? "-" : "+", std::abs(exponent) < 10 ? "0" : "",
                    std::abs(exponent));
  } else if (exponent < 0) {
    out = absl::StrCat("0.", std::string(-exponent - 1, '0'), digits);
  } else {
    if (digits.size() <= static_cast<size_t>(exponent) + 1) {
      digits.append(exponent + 1 - digits.size(), '0');
      out = absl::StrCat(digits, ".0");
    } else {
      out = absl::StrCat(digits.substr(0, exponent + 1), ".", digits.substr(exponent + 1));
    }
  }
  return negative ? absl::StrCat("-", out) : out;
}

std::string PyTuple(absl::Span<const int64_t> values) {
  if (values.size() == 1) return absl::StrCat("(", values[0], ",)");
  return absl::StrCat("(", absl::StrJoin(values, ", "), ")");
}

}  // namespace tc::nn::internal
