// IDX files, plain or gzip: a status or an array; a plain file read as its
// header and bytes say.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_input.h"
#include "graph/shape.h"
#include "nn/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tc::fuzz::MemoryFile file(data, size);
  const absl::StatusOr<tc::nn::IdxArray> array = tc::nn::ReadIdx(file.path());
  if (!array.ok()) return 0;
  const bool gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (gzip) return 0;
  // A plain file, read here independently of the reader: the dims its header
  // declares, then exactly their product of bytes.
  const size_t ndims = data[3];
  std::vector<int64_t> dims;
  for (size_t d = 0; d < ndims; ++d) {
    const uint8_t* p = data + 4 + 4 * d;
    dims.push_back(int64_t{p[0]} << 24 | int64_t{p[1]} << 16 | int64_t{p[2]} << 8 | p[3]);
  }
  const uint64_t count = static_cast<uint64_t>(tc::NumElements(dims));
  if (array->dims != dims || size != 4 + 4 * ndims + count || array->data.size() != count ||
      !std::equal(array->data.begin(), array->data.end(), data + 4 + 4 * ndims)) {
    tc::fuzz::Fail(absl::StrCat("a plain file of ", size, " bytes read as dims ",
                                tc::ShapeToString(array->dims), " with ", array->data.size(),
                                " bytes"));
  }
  return 0;
}
