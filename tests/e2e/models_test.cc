// Beyond the seed: the mlp, cnn and transformer reference models stage by
// stage in f32 and f64, three SGD steps through the compiled function against
// three eager steps, calls that do not match the capture, stages out of order,
// and the joint graph's text for the linear model.
#include "nn/models/models.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "autodiff/joint_graph.h"
#include "catch2/catch.hpp"
#include "nn/optim.h"
#include "pipeline/compiler_pipeline.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace tc {
namespace {

struct Pair {
  nn::ModelSpec compiled, eager;  // two copies, same parameters
};

// Two copies of a model in `dtype`, inputs and targets cut to `batch` rows.
Pair MakePair(const std::string& name, DType dtype, int64_t batch) {
  Pair p{nn::MakeModel(name, 11).value(), nn::MakeModel(name, 11).value()};
  for (nn::ModelSpec* s : {&p.compiled, &p.eager}) {
    s->module->to(dtype);
    auto cut = [&](const Tensor& t) {
      Tensor c = t.size(0) > batch ? slice(t, 0, 0, batch).clone() : t;
      return IsFloating(c.dtype()) ? c.to(dtype) : c;
    };
    s->inputs = p.compiled.inputs.Map(cut);
    s->targets = p.compiled.targets.Map(cut);
  }
  return p;
}

Function Compile(nn::ModelSpec& spec, const codegen::Compiler& compiler = codegen::interpreter()) {
  CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
  return testing::CompileStages(pipeline, partition::DefaultPartition, nullptr, compiler);
}

void CheckModel(const std::string& name, DType dtype, int64_t batch, double tol,
                const testing::NamedCompiler& compiler) {
  INFO(name << " " << DTypeName(dtype) << " " << compiler.name);
  Pair p = MakePair(name, dtype, batch);
  Function fn = Compile(p.compiled, compiler.compiler);
  const TensorTree out_c = fn(p.compiled.inputs).value();
  const TensorTree out_e = (*p.eager.module)(p.eager.inputs);
  const std::vector<Tensor> lc = Flatten(out_c).first, le = Flatten(out_e).first;
  REQUIRE(lc.size() == le.size());
  for (size_t i = 0; i < lc.size(); ++i) REQUIRE_TENSORS_CLOSE(lc[i], le[i], tol, tol);
  p.compiled.loss(out_c, p.compiled.targets).backward();
  p.eager.loss(out_e, p.eager.targets).backward();
  testing::RequireSameState(*p.compiled.module, *p.eager.module, tol, /*grads=*/true);
}

TEST_CASE("mlp, cnn and transformer stage by stage match eager, with every compiler") {
  for (const testing::NamedCompiler& compiler : testing::AllCompilers()) {
    for (const std::string name : {"mlp", "cnn", "transformer"}) {
      CheckModel(name, DType::kF64, 2, 1e-10, compiler);
      CheckModel(name, DType::kF32, 8, 2e-4, compiler);
    }
  }
}

TEST_CASE("three SGD steps through the compiled function equal three eager steps") {
  for (const std::string name : {"convbn", "cnn", "mlp"}) {
    INFO(name);
    Pair p = MakePair(name, DType::kF64, 4);
    Function fn = Compile(p.compiled);
    nn::SGD opt_c(p.compiled.module->named_parameters(), 0.1, 0.9);
    nn::SGD opt_e(p.eager.module->named_parameters(), 0.1, 0.9);
    for (int step = 0; step < 3; ++step) {
      opt_c.zero_grad();
      opt_e.zero_grad();
      p.compiled.loss(fn(p.compiled.inputs).value(), p.compiled.targets).backward();
      p.eager.loss((*p.eager.module)(p.eager.inputs), p.eager.targets).backward();
      opt_c.step();
      opt_e.step();
    }
    testing::RequireSameState(*p.compiled.module, *p.eager.module, 1e-10, /*grads=*/false);
  }
}

TEST_CASE("tc::compile runs the stages with defaults, for training and inference") {
  Pair p = MakePair("structured", DType::kF32, 4);
  Function train = compile(*p.compiled.module, p.compiled.inputs).value();
  Function infer = compile(*p.compiled.module, p.compiled.inputs, {.training = false}).value();
  const TensorTree expected = (*p.eager.module)(p.eager.inputs);
  for (const Function& fn : {train, infer}) {
    const std::vector<Tensor> got = Flatten(fn(p.compiled.inputs).value()).first;
    const std::vector<Tensor> want = Flatten(expected).first;
    for (size_t i = 0; i < got.size(); ++i) REQUIRE_TENSORS_CLOSE(got[i], want[i], 1e-6, 1e-6);
  }
}

TEST_CASE("frozen inference matches eager, reads the weights once, and is for inference only") {
  for (const std::string name : {"mlp", "cnn", "transformer"}) {
    for (const bool eval : {false, true}) {  // a training-mode cnn updates its BatchNorm stats
      INFO(name << (eval ? " eval" : " train"));
      Pair p = MakePair(name, DType::kF32, 8);
      if (eval) {
        p.compiled.module->eval();
        p.eager.module->eval();
      }
      Function fn =
          compile(*p.compiled.module, p.compiled.inputs, {.training = false, .freeze = true})
              .value();
      const std::vector<Tensor> want = Flatten((*p.eager.module)(p.eager.inputs)).first;
      const std::vector<Tensor> got = Flatten(fn(p.compiled.inputs).value()).first;
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) REQUIRE_TENSORS_CLOSE(got[i], want[i], 2e-4, 2e-4);
      testing::RequireSameState(*p.compiled.module, *p.eager.module, 2e-4, /*grads=*/false);
      // The module's weights changed after compiling: the frozen program
      // still computes with the ones it read.
      for (auto& [param_name, t] : p.compiled.module->named_parameters()) {
        std::fill_n(t.data<float>(), t.numel(), 0.0f);
      }
      const std::vector<Tensor> again = Flatten(fn(p.compiled.inputs).value()).first;
      for (size_t i = 0; i < again.size(); ++i) {
        REQUIRE_TENSORS_CLOSE(again[i], want[i], 2e-4, 2e-4);
      }
    }
  }
  Pair p = MakePair("mlp", DType::kF32, 4);
  CHECK(compile(*p.compiled.module, p.compiled.inputs, {.freeze = true}).status().message() ==
        "compile: freeze is for inference (training = false): a training step changes the "
        "weights it would freeze");
}

TEST_CASE("calls that do not match the capture return a status naming the path") {
  nn::ModelSpec spec = nn::MakeModel("structured", 1).value();
  Function fn = compile(*spec.module, spec.inputs).value();
  TensorTree wrong_shape = TensorTree::Dict(
      {{"x", TensorTree::MakeLeaf(zeros({4, 3}))}, {"y", TensorTree::MakeLeaf(zeros({4, 3}))}});
  // Not a size the model could take at any value: the call's error, and why.
  CHECK_THAT(std::string(fn(wrong_shape).status().message()),
             Catch::StartsWith("inputs[\"y\"]: expected tensor f32[4,4], got f32[4,3]; compiled "
                               "for any size of the dims that differ, it fails: linear: input "
                               "[4,s"));
  TensorTree wrong_dtype =
      TensorTree::Dict({{"x", TensorTree::MakeLeaf(zeros({4, 3}, DType::kF64))},
                        {"y", TensorTree::MakeLeaf(zeros({4, 4}))}});
  CHECK(fn(wrong_dtype).status().message() ==
        "inputs[\"x\"]: expected tensor f32[4,3], got f64[4,3]");
  absl::StatusOr<TensorTree> wrong_structure = fn(TensorTree::MakeLeaf(zeros({4, 3})));
  REQUIRE_FALSE(wrong_structure.ok());
  CHECK(wrong_structure.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(wrong_structure.status().message().find("inputs") == 0);
}

TEST_CASE("stages called out of order say which stage comes first") {
  nn::ModelSpec spec = nn::MakeModel("linear", 1).value();
  CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
  CHECK(pipeline.joint_graph().status().message() ==
        "joint_graph: call generate_ir_for_training first");
  CHECK(pipeline.inference_graph().status().message() ==
        "inference_graph: call generate_ir_for_inference first");
  CHECK(pipeline.partition(partition::DefaultPartition, JointGraph{}).status().message() ==
        "partition: call generate_ir_for_training first");
  CHECK(pipeline.fw_compile(codegen::interpreter(), {}).status().message() ==
        "fw_compile: call generate_ir_for_training first");
  CHECK(pipeline.inference_compile(codegen::interpreter(), Graph()).status().message() ==
        "inference_compile: call generate_ir_for_inference first");
  CHECK(pipeline.make_inference_function(codegen::Executable()).status().message() ==
        "make_inference_function: call generate_ir_for_inference first");
  REQUIRE(pipeline.generate_ir_for_training().ok());
  partition::PartitionResult part =
      pipeline.partition(partition::DefaultPartition, *pipeline.joint_graph().value()).value();
  CHECK(pipeline.bw_compile(codegen::interpreter(), part, CompiledForward{}).status().message() ==
        "bw_compile: call fw_compile first");
  CHECK(pipeline.make_autograd_function({}, {}, part).status().message() ==
        "make_autograd_function: call fw_compile first");
  // A compiled forward of another graph than the partition's forward.
  const CompiledForward other{codegen::Interpret(Graph()).value()};
  const int saved = part.num_fw_outs_saved_for_bw;
  CHECK(pipeline.bw_compile(codegen::interpreter(), part, other).status().message() ==
        absl::StrCat("bw_compile: the partition saves ", saved,
                     " values; the compiled forward returns 0 outputs (expected ", 1 + saved,
                     ") and the backward takes ", part.backward.placeholders().size()));
}

TEST_CASE("a shape error in the model comes back from capture as a status") {
  nn::ModelSpec spec = nn::MakeModel("mlp", 1).value();
  absl::StatusOr<CompilerPipeline> pipeline =
      CompilerPipeline::Create(*spec.module, TensorTree::MakeLeaf(zeros({2, 3})));
  REQUIRE_FALSE(pipeline.ok());
  CHECK(pipeline.status().message().find("linear: input [2,3] does not fit weight [512,784]") !=
        std::string::npos);
}

TEST_CASE("the linear model's joint graph, with its descriptors") {
  nn::ModelSpec spec = nn::MakeModel("linear", 1).value();
  TensorTree inputs = spec.inputs.Map([](const Tensor& t) {
    Tensor c = t.clone();
    c.requires_grad_();
    return c;
  });
  CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, inputs).value();
  REQUIRE(pipeline.generate_ir_for_training().ok());
  const std::string text = ToString(*pipeline.joint_graph().value());
  const std::string golden_path = "tests/e2e/testdata/linear_joint.txt";
  // `TC_UPDATE_GOLDENS=1 bazel run //tests/e2e:models_test` rewrites the file.
  const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  if (workspace != nullptr && std::getenv("TC_UPDATE_GOLDENS") != nullptr) {
    std::ofstream(std::string(workspace) + "/" + golden_path) << text;
  }
  std::ifstream golden(golden_path);
  REQUIRE(golden.good());
  std::stringstream expected;
  expected << golden.rdbuf();
  INFO(text);
  CHECK(text == expected.str());
}

}  // namespace
}  // namespace tc
