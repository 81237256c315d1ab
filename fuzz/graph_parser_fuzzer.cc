// Graph text: parse, verify, print, parse the printout, print it again. Any
// text either gives a status or a graph whose printout parses back to itself.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_input.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::StatusOr<tc::Graph> graph =
      tc::Parse(absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!graph.ok()) return 0;
  tc::Verify(*graph).IgnoreError();  // a status either way; only a crash is a finding
  const std::string printed = tc::ToString(*graph);
  const absl::StatusOr<tc::Graph> again = tc::Parse(printed);
  if (!again.ok()) {
    tc::fuzz::Fail(
        absl::StrCat("the printout does not parse: ", again.status().message(), "\n", printed));
  }
  if (tc::ToString(*again) != printed) {
    tc::fuzz::Fail(absl::StrCat("the printout changes when parsed and printed again:\n", printed,
                                "\nthen\n", tc::ToString(*again)));
  }
  return 0;
}
