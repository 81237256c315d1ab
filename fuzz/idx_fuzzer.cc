// IDX files, plain or gzip: a status, or dims and exactly their bytes of data.
#include <cstddef>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_input.h"
#include "graph/shape.h"
#include "nn/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tc::fuzz::MemoryFile file(data, size);
  const absl::StatusOr<tc::nn::IdxArray> array = tc::nn::ReadIdx(file.path());
  if (!array.ok()) return 0;
  const int64_t count = tc::NumElements(array->dims);
  if (static_cast<int64_t>(array->data.size()) != count) {
    tc::fuzz::Fail(absl::StrCat("dims ", tc::ShapeToString(array->dims), " came with ",
                                array->data.size(), " bytes"));
  }
  return 0;
}
