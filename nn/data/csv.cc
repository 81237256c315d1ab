#include "nn/data/csv.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace tc::nn {
namespace {

absl::Status Bad(absl::string_view where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

// One line's fields: commas split them, double quotes protect commas and
// write a quote as "". Each field is a view into `line`, or into `unquoted`
// for a line with quotes. False for an unterminated quote.
bool SplitFields(absl::string_view line, std::vector<std::string>& unquoted,
                 std::vector<absl::string_view>& fields) {
  fields.clear();
  if (line.find('"') == absl::string_view::npos) {  // most lines: no copy
    for (size_t start = 0;;) {
      const size_t comma = line.find(',', start);
      fields.push_back(absl::StripAsciiWhitespace(line.substr(start, comma - start)));
      if (comma == absl::string_view::npos) return true;
      start = comma + 1;
    }
  }
  unquoted.assign(1, "");
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        unquoted.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        unquoted.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      unquoted.emplace_back();
    } else {
      unquoted.back() += c;
    }
  }
  for (const std::string& field : unquoted) fields.push_back(absl::StripAsciiWhitespace(field));
  return !quoted;
}

template <typename T>
Array Make(ElementType type, std::vector<int64_t> shape, const std::vector<T>& values) {
  Array a{type, std::move(shape), std::vector<uint8_t>(values.size() * sizeof(T))};
  if (!values.empty()) std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  return a;
}

}  // namespace

absl::StatusOr<CsvData> ReadCsv(const std::string& path, const std::string& label_column,
                                const std::vector<std::string>& classes) {
  TC_RETURN_IF_ERROR(CheckRegularFile(path));
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::string line;
  std::vector<std::string> header, unquoted;
  std::vector<absl::string_view> fields;
  int64_t line_number = 0;
  auto next_line = [&]() -> bool {
    while (std::getline(in, line)) {
      ++line_number;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!absl::StripAsciiWhitespace(line).empty()) return true;
    }
    return false;
  };
  if (!next_line()) return Bad(path, "empty: expected a header line naming the columns");
  const std::string header_where = absl::StrCat(path, ":", line_number);
  if (!SplitFields(line, unquoted, fields)) return Bad(header_where, "unterminated quote");
  for (absl::string_view name : fields) header.emplace_back(name);
  const auto label_it = std::find(header.begin(), header.end(), label_column);
  if (label_it == header.end()) {
    return Bad(path, absl::StrCat("no column \"", label_column,
                                  "\" (columns: ", absl::StrJoin(header, ", "), ")"));
  }
  const size_t label_index = static_cast<size_t>(label_it - header.begin());
  if (header.size() < 2) return Bad(path, "no feature columns beside the label column");
  for (size_t c = 1; c < header.size(); ++c) {
    if (std::find(header.begin(), header.begin() + c, header[c]) != header.begin() + c) {
      return Bad(header_where, absl::StrCat("column \"", header[c], "\" is named twice"));
    }
  }

  CsvData data;
  for (size_t c = 0; c < header.size(); ++c) {
    if (c != label_index) data.feature_names.push_back(header[c]);
  }
  // The features as f32 bytes, in a buffer reserved for as many values as
  // the file could hold (each takes a character and a separator): only what
  // is written becomes resident, and the buffer never grows by copying.
  std::error_code size_error;
  const uintmax_t file_bytes = std::filesystem::file_size(path, size_error);
  std::vector<uint8_t> features;
  if (!size_error) features.reserve(static_cast<size_t>(file_bytes / 2 * sizeof(float)));
  std::vector<std::string> label_text;
  std::vector<int64_t> label_line;  // each label's line in the file
  std::vector<float> row;
  while (next_line()) {
    // Formatted only for an error: one string a row would be most of the allocations.
    auto where = [&] { return absl::StrCat(path, ":", line_number); };
    if (!SplitFields(line, unquoted, fields)) return Bad(where(), "unterminated quote");
    row.clear();
    if (fields.size() != header.size()) {
      return Bad(where(), absl::StrCat("expected ", header.size(), " fields, got ", fields.size()));
    }
    for (size_t c = 0; c < fields.size(); ++c) {
      if (c == label_index) {
        if (fields[c].empty())
          return Bad(where(), absl::StrCat("column \"", header[c], "\" is empty"));
        label_text.emplace_back(fields[c]);
        label_line.push_back(line_number);
        continue;
      }
      // One digit (sparse and one-hot data are mostly 0 and 1) skips the parser.
      const absl::string_view field = fields[c];
      const bool digit = field.size() == 1 && absl::ascii_isdigit(field[0]);
      double value = digit ? field[0] - '0' : 0;
      if (!digit && !absl::SimpleAtod(field, &value)) {
        return Bad(where(),
                   absl::StrCat("column \"", header[c], "\": \"", fields[c], "\" is not a number"));
      }
      if (!(std::abs(value) <= std::numeric_limits<float>::max())) {
        return Bad(where(), absl::StrCat("column \"", header[c], "\": ", fields[c],
                                         " is not a finite f32 value"));
      }
      row.push_back(static_cast<float>(value));
    }
    const auto* bytes = reinterpret_cast<const uint8_t*>(row.data());
    features.insert(features.end(), bytes, bytes + row.size() * sizeof(float));
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  const auto rows = static_cast<int64_t>(label_text.size());
  if (rows == 0) return Bad(path, "no rows after the header");

  // Labels are integers, or class names none of which reads as a number;
  // the first label says which.
  const std::string column = absl::StrCat("column \"", label_column, "\": ");
  std::vector<int64_t> labels(label_text.size());
  const bool integers = classes.empty() && absl::SimpleAtoi(label_text[0], &labels[0]);
  for (size_t r = 0; r < label_text.size(); ++r) {
    auto where = [&] { return absl::StrCat(path, ":", label_line[r]); };
    const std::string& text = label_text[r];
    double number = 0;
    if (integers && !absl::SimpleAtoi(text, &labels[r])) {
      return Bad(where(), absl::StrCat(column, "\"", text,
                                       "\" is not an integer class, as the first label (\"",
                                       label_text[0], "\") is"));
    }
    if (!integers && absl::SimpleAtod(text, &number)) {
      return Bad(where(),
                 classes.empty() && r == 0
                     ? absl::StrCat(column, "\"", text,
                                    "\" is a number but not an integer class: labels are integers "
                                    "or class names")
                     : absl::StrCat(column, "\"", text,
                                    "\" is a number among class names: labels are integers or "
                                    "class names"));
    }
  }
  if (!integers) {
    std::map<std::string, int64_t> index_of;
    if (classes.empty()) {
      for (const std::string& text : label_text) index_of.emplace(text, 0);
      for (auto& [name, index] : index_of) {
        index = static_cast<int64_t>(data.class_names.size());
        data.class_names.push_back(name);
      }
    } else {
      data.class_names = classes;
      for (size_t c = 0; c < classes.size(); ++c) index_of.emplace(classes[c], c);
    }
    for (size_t r = 0; r < label_text.size(); ++r) {
      const auto it = index_of.find(label_text[r]);
      if (it == index_of.end()) {
        return Bad(path,
                   absl::StrCat("label \"", label_text[r], "\" of data row ", r + 1,
                                " is not one of the classes (", absl::StrJoin(classes, ", "), ")"));
      }
      labels[r] = it->second;
    }
  }
  data.features = Array{
      ElementType::kF32, {rows, static_cast<int64_t>(header.size() - 1)}, std::move(features)};
  data.labels = Make(ElementType::kI64, {rows}, labels);
  return data;
}

}  // namespace tc::nn
