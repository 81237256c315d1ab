// A CSV file of numeric columns and one label column, as arrays
// (nn/data/array.h): the first line names the columns; fields are separated
// by commas, may be quoted ("a, b" and "" inside quotes); CRLF line ends and
// blank lines are accepted.
//
//   absl::StatusOr<nn::CsvData> data = nn::ReadCsv("iris.csv", "species");
//   // data->features: f32 [150, 4]; data->labels: i64 [150] in [0, 3)
//
// Labels that are all integers are kept as they are; labels that are all
// names (none reads as a number: not "2.5", not "nan") are classes, numbered
// in sorted order (class_names lists them). The first label says which; a
// label of the other kind, or a column named twice, is an error. Every
// error names the file and the line, and the column where it applies.
#ifndef TENSORCUT_NN_DATA_CSV_H_
#define TENSORCUT_NN_DATA_CSV_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nn/data/array.h"

namespace tc::nn {

struct CsvData {
  Array features;                          // f32 [rows, feature columns]
  Array labels;                            // i64 [rows]
  std::vector<std::string> feature_names;  // in file order
  std::vector<std::string> class_names;    // empty when the labels are integers
};

// `classes`, when given (a training file's class_names), numbers the
// labels of a file that must use only those classes (a test split).
absl::StatusOr<CsvData> ReadCsv(const std::string& path, const std::string& label_column,
                                const std::vector<std::string>& classes = {});

}  // namespace tc::nn

#endif  // TENSORCUT_NN_DATA_CSV_H_
