// Dataset files: the same bytes read as .npy, .npz, CSV (label column "y")
// and safetensors arrays each give a status or arrays, never a crash; every
// array read holds exactly its shape's bytes, and its rows gather into a
// batch tensor.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_input.h"
#include "nn/checkpoint.h"
#include "nn/data/csv.h"
#include "nn/data/npy.h"
#include "runtime/ops.h"

namespace {

// The array's bytes fit its shape; its first rows (a bounded batch) convert.
void Check(const tc::nn::Array& a, const std::string& where) {
  if (a.bytes.size() != static_cast<size_t>(a.numel()) * tc::nn::ElementSize(a.type)) {
    tc::fuzz::Fail(absl::StrCat(where, ": ", a.ToString(), " holds ", a.bytes.size(), " bytes"));
  }
  if (a.shape.empty() || a.numel() > (1 << 20)) return;
  std::vector<int64_t> rows;
  for (int64_t r = 0; r < a.rows() && r < 4; ++r) rows.push_back(r);
  std::vector<int64_t> shape = a.row_shape();
  shape.insert(shape.begin(), static_cast<int64_t>(rows.size()));
  const tc::Tensor batch = tc::empty(shape, tc::DType::kF64);
  if (!a.GatherRows(rows, batch).ok()) tc::fuzz::Fail(absl::StrCat(where, ": rows did not gather"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tc::fuzz::MemoryFile file(data, size);
  if (auto a = tc::nn::ReadNpy(file.path()); a.ok()) Check(*a, "npy");
  if (auto members = tc::nn::ReadNpz(file.path()); members.ok()) {
    for (const auto& [name, a] : *members) Check(a, absl::StrCat("npz member ", name));
  }
  if (auto arrays = tc::nn::LoadArrays(file.path()); arrays.ok()) {
    for (const auto& [name, a] : *arrays) Check(a, absl::StrCat("safetensors array ", name));
  }
  if (auto csv = tc::nn::ReadCsv(file.path(), "y"); csv.ok()) {
    Check(csv->features, "csv features");
    Check(csv->labels, "csv labels");
    if (csv->labels.rows() != csv->features.rows()) tc::fuzz::Fail("csv rows disagree");
  }
  return 0;
}
