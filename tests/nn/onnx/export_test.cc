// Native modules exported as ONNX (nn/onnx/export.h): every reference and
// zoo model, traced in eval mode and written as ONNX nodes, imports back
// (through tensorcut's own importer) to a module that computes the same
// outputs; where Debian's python3-onnx is installed, ONNX's checker takes
// every file. What cannot be exported is an error that names the op.
#include "nn/onnx/export.h"

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "nn/layers.h"
#include "nn/models/models.h"
#include "nn/onnx/import.h"
#include "nn/pooling.h"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc::onnx {
namespace {

bool HasOnnxChecker() {
  static const bool has = std::system("/usr/bin/python3 -c 'import onnx' 2>/dev/null") == 0;
  return has;
}

void CheckRoundTrip(const std::string& name) {
  INFO(name);
  nn::ModelSpec spec = nn::MakeModel(name, 1).value();
  spec.module->eval();
  const absl::StatusOr<std::string> bytes = ExportToString(*spec.module, spec.inputs);
  INFO(bytes.status().message());
  REQUIRE(bytes.ok());
  auto imported = ImportFromString(*bytes, name).value();
  imported->eval();
  // The inputs by the exported names, in leaf order.
  const std::vector<Tensor> leaves = Flatten(spec.inputs).first;
  TensorTree inputs = TensorTree::MakeLeaf(leaves.at(0));
  if (leaves.size() > 1) {
    std::vector<std::pair<std::string, TensorTree>> named;
    for (size_t i = 0; i < leaves.size(); ++i) {
      named.emplace_back(absl::StrCat("input_", i), TensorTree::MakeLeaf(leaves[i]));
    }
    inputs = TensorTree::Dict(std::move(named));
  }
  const std::vector<Tensor> expected = Flatten((*spec.module)(spec.inputs)).first;
  const TensorTree got = (*imported)(inputs);
  for (size_t i = 0; i < expected.size(); ++i) {
    const Tensor actual = got.is_leaf() ? got.leaf() : got.Find(absl::StrCat("output_", i))->leaf();
    CHECK(testing::CompareTensors(actual, expected[i], 1e-5, 1e-5) == "");
  }
  if (HasOnnxChecker()) {
    const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name + ".onnx";
    std::ofstream(path, std::ios::binary) << *bytes;
    CHECK(std::system(("/usr/bin/python3 -c 'import onnx, sys; "
                       "onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)' " +
                       path)
                          .c_str()) == 0);
  }
}

TEST_CASE("every reference model exports to ONNX and imports back to its outputs") {
  if (!HasOnnxChecker()) WARN("python3-onnx is not installed: ONNX's checker is skipped");
  for (const std::string& name : nn::ModelNames()) CheckRoundTrip(name);
}

TEST_CASE("the zoo's models export to ONNX and import back to their outputs") {
  for (const std::string& name : nn::ZooModelNames()) CheckRoundTrip(name);
}

TEST_CASE("a dilated max pool exports with its dilations and imports back to its outputs") {
  nn::MaxPool2d pool({.kernel_size = 2, .stride = 1, .padding = 1, .dilation = {2, 3}});
  const Tensor x = testing::Random({2, 3, 7, 8}, DType::kF32, 1);
  const absl::StatusOr<std::string> bytes = ExportToString(pool, TensorTree::MakeLeaf(x));
  REQUIRE(bytes.ok());
  CHECK(bytes->find("dilations") != std::string::npos);
  auto imported = ImportFromString(*bytes, "pool").value();
  CHECK(testing::CompareTensors((*imported)(TensorTree::MakeLeaf(x)).leaf(), pool(x), 0, 0) == "");
}

TEST_CASE("what has no ONNX form here is an error naming it") {
  nn::ModelSpec spec = nn::MakeModel("mlp", 1).value();
  spec.module->to(DType::kBF16);
  const TensorTree bf16_inputs =
      spec.inputs.Map([](const Tensor& t) { return t.to(DType::kBF16); });
  CHECK(ExportToString(*spec.module, bf16_inputs).status().message() ==
        "export: bf16 tensors have no ONNX form here");
  nn::Embedding embedding(5, 3);
  CHECK(
      ExportToString(embedding, TensorTree::MakeLeaf(zeros({2}, DType::kI32))).status().message() ==
      "export: i32 tensors have no ONNX form here");
  nn::ModelSpec linear = nn::MakeModel("linear", 1).value();
  const std::string dir = std::getenv("TEST_TMPDIR");
  CHECK(Export(*linear.module, linear.inputs, dir).message() ==
        dir + " is a directory: a model is written only over a regular file");
}

}  // namespace
}  // namespace tc::onnx
