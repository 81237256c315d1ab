// Plan files: a step saved after some runs and loaded again trains on bit
// for bit as the step that saved it (models with buffers, dropout and
// attention; SGD and Adam; f32 and bf16 products), and every damaged or
// foreign file gives an error naming what is wrong.
#include "pipeline/plan.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "catch2/catch.hpp"
#include "codegen/fusing_compiler.h"
#include "nn/checkpoint.h"
#include "nn/models/models.h"
#include "nn/optim.h"
#include "pipeline/compiler_pipeline.h"
#include "pipeline/train_step.h"
#include "runtime/random.h"

namespace tc {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::vector<Tensor> Batch(const nn::ModelSpec& spec) {
  std::vector<Tensor> batch = Flatten(spec.inputs).first;
  for (const Tensor& t : Flatten(spec.targets).first) batch.push_back(t);
  return batch;
}

std::unique_ptr<nn::Optimizer> MakeOptimizer(const std::string& kind, nn::Module& module) {
  if (kind == "adam") return std::make_unique<nn::Adam>(module.named_parameters(), 1e-3);
  return std::make_unique<nn::SGD>(module.named_parameters(), 0.05, /*momentum=*/0.9);
}

bool SameBits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.type() == y.type() &&
         std::memcmp(x.raw_data(), y.raw_data(), x.numel() * ItemSize(x.dtype())) == 0;
}

// A saved, trained-on step of `name`, with its module and optimizer kept alive.
struct Saved {
  nn::ModelSpec spec;
  std::unique_ptr<nn::Optimizer> optimizer;
  std::unique_ptr<TrainStep> step;
};

Saved TrainAndSave(const std::string& name, const std::string& optimizer, Precision precision,
                   const std::string& path, const TrainStepOptions& base = {}) {
  Saved s{nn::MakeModel(name, 3).value()};
  s.optimizer = MakeOptimizer(optimizer, *s.spec.module);
  TrainStepOptions options = base;
  options.precision = precision;
  s.step = TrainStep::Create(*s.spec.module, s.spec.loss, s.spec.inputs, s.spec.targets,
                             *s.optimizer, options)
               .value();
  const std::vector<Tensor> batch = Batch(s.spec);
  for (int i = 0; i < 2; ++i) REQUIRE(s.step->Run(batch).ok());
  REQUIRE(SavePlan(s.step->compiled(), path).ok());
  return s;
}

void CheckContinues(const std::string& name, const std::string& optimizer, Precision precision,
                    const TrainStepOptions& options = {}) {
  INFO(name << " " << optimizer << (precision == Precision::kBF16 ? " bf16" : " f32"));
  const std::string path = TempPath(name + ".tcplan");
  Saved saved = TrainAndSave(name, optimizer, precision, path, options);
  const std::vector<Tensor> batch = Batch(saved.spec);
  const Generator at_save = DefaultGenerator();
  std::vector<double> losses;
  std::vector<std::vector<Tensor>> outputs;  // when the step returns the model's
  for (int i = 0; i < 3; ++i) {
    losses.push_back(saved.step->Run(batch).value());
    if (options.return_outputs) outputs.push_back(Flatten(saved.step->outputs().value()).first);
  }

  absl::StatusOr<std::unique_ptr<LoadedStep>> loaded = LoadPlan(path);
  REQUIRE(loaded.ok());
  if ((*loaded)->compiled().program().random.seed >= 0) {
    // The plan put the generator back where the saving step left it.
    REQUIRE(DefaultGenerator().seed() == at_save.seed());
    REQUIRE(DefaultGenerator().offset() == at_save.offset());
  }
  for (int i = 0; i < 3; ++i) {
    REQUIRE((*loaded)->Run(batch).value() == losses[i]);
    REQUIRE((*loaded)->outputs().size() == (options.return_outputs ? outputs[i].size() : 0));
    for (size_t k = 0; k < (*loaded)->outputs().size(); ++k) {
      REQUIRE(SameBits((*loaded)->outputs()[k], outputs[i][k]));
    }
  }
  const nn::NamedTensors expected = saved.spec.module->named_parameters();
  const nn::NamedTensors& got = (*loaded)->parameters();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(got[i].first);
    REQUIRE(got[i].first == expected[i].first);
    REQUIRE(SameBits(got[i].second, expected[i].second));
  }
  // Every buffer the plan holds is the module's, of the same bits (convbn's
  // BatchNorm statistics, which each run updates).
  const nn::NamedTensors expected_buffers = saved.spec.module->named_buffers();
  if (name == "convbn") REQUIRE_FALSE((*loaded)->buffers().empty());
  for (const auto& [name_got, tensor] : (*loaded)->buffers()) {
    INFO(name_got);
    const auto want =
        std::find_if(expected_buffers.begin(), expected_buffers.end(),
                     [&name_got = name_got](const auto& e) { return e.first == name_got; });
    REQUIRE(want != expected_buffers.end());
    REQUIRE(SameBits(tensor, want->second));
  }
  const nn::NamedTensors state_want = saved.optimizer->state();
  const nn::NamedTensors state_got = (*loaded)->optimizer().state();
  REQUIRE(state_got.size() == state_want.size());
  for (size_t i = 0; i < state_got.size(); ++i) {
    INFO(state_got[i].first);
    REQUIRE(state_got[i].first == state_want[i].first);
    REQUIRE(SameBits(state_got[i].second, state_want[i].second));
  }
}

TEST_CASE("a loaded plan trains on bit for bit as the step that saved it") {
  for (const std::string name : {"mlp", "cnn", "transformer", "convbn", "mlp_dropout"}) {
    CheckContinues(name, "sgd", Precision::kF32);
    CheckContinues(name, "adam", Precision::kF32);
  }
  for (const std::string name : {"mlp", "transformer"}) {
    CheckContinues(name, "adam", Precision::kBF16);
  }
  CheckContinues("mlp", "sgd", Precision::kF32, {.clip_grad_norm = 0.5});
  // The model's outputs come before convbn's updated statistics.
  CheckContinues("convbn", "sgd", Precision::kF32, {.return_outputs = true});
  // JSON has no infinity: the max-norm's type travels as text.
  CheckContinues(
      "mlp", "adam", Precision::kF32,
      {.clip_grad_norm = 0.5, .clip_norm_type = std::numeric_limits<double>::infinity()});
}

TEST_CASE("a plan carries its saver's annotations, and none under the plan's own keys") {
  const std::string path = TempPath("annotated.tcplan");
  Saved saved = TrainAndSave("linear", "sgd", Precision::kF32, path);
  REQUIRE(SavePlan(saved.step->compiled(), path, {{"app.epoch", "3"}}).ok());
  CHECK(LoadPlan(path).value()->metadata().at("app.epoch") == "3");
  for (const std::string key :
       {"tensorcut.plan", "tensorcut.plan.note", "tensorcut.version", "tensorcut.data_crc32"}) {
    CHECK(SavePlan(saved.step->compiled(), path, {{key, "x"}}).message() ==
          "saving plan " + path + ": annotation \"" + key + "\" is a key the plan writes itself");
  }
  CHECK(LoadPlan(path).value()->metadata().at("app.epoch") == "3");  // as it was
}

TEST_CASE("a loaded plan takes its batch as the saved step's trees, and gives the model's") {
  const std::string path = TempPath("trees.tcplan");
  Saved saved = TrainAndSave("mlp", "sgd", Precision::kF32, path, {.return_outputs = true});
  std::unique_ptr<LoadedStep> loaded = LoadPlan(path).value();
  const double want = saved.step->Run(Batch(saved.spec)).value();
  REQUIRE(loaded->Run(saved.spec.inputs, saved.spec.targets).value() == want);
  const TensorTree out = loaded->output_tree().value();
  REQUIRE(out.is_leaf());
  CHECK(SameBits(out.leaf(), saved.step->outputs().value().leaf()));
  CHECK(
      loaded->Run(TensorTree::Tuple({saved.spec.inputs}), saved.spec.targets).status().message() ==
      "(inputs, targets)[0]: expected a leaf, got a tuple of 1");
  // A plan of a step that returns no outputs.
  TrainAndSave("linear", "sgd", Precision::kF32, path);
  CHECK(LoadPlan(path).value()->output_tree().status().message() ==
        "this plan's step returns no model outputs");
}

TEST_CASE("a plan over a symbolic batch runs every batch size") {
  const std::string path = TempPath("dynamic.tcplan");
  Saved saved = TrainAndSave("mlp", "sgd", Precision::kF32, path,
                             {.dynamic_dims = {{"arg0", {0}}, {"arg1", {0}}}});
  std::unique_ptr<LoadedStep> loaded = LoadPlan(path).value();
  std::vector<Tensor> batch = Batch(saved.spec);
  for (Tensor& t : batch) t = t.slice(0, 0, 5).contiguous();
  const double want = saved.step->Run(batch).value();
  REQUIRE(loaded->Run(batch).value() == want);
}

// An inference plan of `name` in eval mode, over a symbolic batch when
// `dynamic`; the loaded function gives the pipeline's own function's bits.
void CheckInference(const std::string& name, bool dynamic) {
  INFO(name << (dynamic ? " over a symbolic batch" : ""));
  nn::ModelSpec spec = nn::MakeModel(name, 3).value();
  spec.module->eval();
  CaptureOptions capture;
  if (dynamic) capture.dynamic_dims = {{"arg", {0}}};
  CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs, capture).value();
  REQUIRE(pipeline.generate_ir_for_inference().ok());
  const Graph& graph = pipeline.inference_graph().value()->graph;
  const std::string path = TempPath(name + ".tcinfer");
  REQUIRE(SaveInferencePlan(graph, pipeline.captured().inputs, pipeline.inference_constants(), path)
              .ok());
  codegen::Executable exe = pipeline.inference_compile(codegen::fusing(), graph).value();
  Function own = pipeline.make_inference_function(exe).value();
  std::unique_ptr<LoadedFunction> loaded = LoadInferencePlan(path).value();
  TensorTree inputs = spec.inputs;
  if (dynamic) inputs = inputs.Map([](const Tensor& t) { return t.slice(0, 0, 1).contiguous(); });
  const std::vector<Tensor> want = Flatten(own(inputs).value()).first;
  const std::vector<Tensor> got = loaded->Run(Flatten(inputs).first).value();
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(SameBits(got[i], want[i]));
}

TEST_CASE("a loaded inference plan computes what the pipeline's function computes") {
  for (const std::string name : {"mlp", "cnn", "transformer", "convbn"})
    CheckInference(name, false);
  CheckInference("mlp", true);
}

// --- Errors -------------------------------------------------------------

// The plan at `path` rewritten by `edit` into a new file; `rechecksum`
// makes the header's checksum agree with the edit.
std::string Edited(const std::string& path, const std::string& name,
                   const std::function<void(nn::Metadata&, nn::NamedTensors&)>& edit,
                   bool rechecksum = true) {
  nn::Metadata metadata;
  nn::NamedTensors tensors = nn::LoadTensors(path, &metadata).value();
  edit(metadata, tensors);
  if (rechecksum) metadata["tensorcut.plan.crc32"] = PlanChecksum(metadata);
  const std::string out = TempPath(name);
  REQUIRE(nn::SaveTensors(tensors, out, metadata).ok());
  return out;
}

std::string LoadError(const std::string& path) {
  absl::StatusOr<std::unique_ptr<LoadedStep>> loaded = LoadPlan(path);
  REQUIRE_FALSE(loaded.ok());
  return std::string(loaded.status().message());
}

TEST_CASE("a damaged or foreign plan file is refused with what is wrong") {
  const std::string path = TempPath("good.tcplan");
  Saved saved = TrainAndSave("mlp", "adam", Precision::kF32, path);
  const std::string weight = saved.spec.module->named_parameters()[0].first;  // "0.weight"
  const std::string bias = saved.spec.module->named_parameters()[1].first;

  SECTION("a checkpoint is not a plan") {
    const std::string ckpt = TempPath("model.safetensors");
    REQUIRE(nn::save(*saved.spec.module, ckpt).ok());
    REQUIRE_THAT(LoadError(ckpt), Catch::Contains("not a tensorcut plan"));
  }
  SECTION("a truncated file") {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string cut = TempPath("cut.tcplan");
    std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    REQUIRE_THAT(LoadError(cut), Catch::Contains("cut.tcplan"));
  }
  SECTION("a graph changed without its checksum") {
    const std::string bad = Edited(
        path, "unsummed.tcplan",
        [](nn::Metadata& m, nn::NamedTensors&) {
          m["tensorcut.plan.forward"] =
              absl::StrReplaceAll(m["tensorcut.plan.forward"], {{"relu", "tanh"}});
        },
        /*rechecksum=*/false);
    const std::string error = LoadError(bad);
    REQUIRE_THAT(error, Catch::Contains("tensorcut.plan.crc32") && Catch::Contains("damaged"));
  }
  SECTION("a newer format") {
    const std::string bad = Edited(path, "newer.tcplan", [](nn::Metadata& m, nn::NamedTensors&) {
      m["tensorcut.plan.format"] = "2";
    });
    REQUIRE_THAT(LoadError(bad), Catch::Contains("format 2, newer than"));
  }
  SECTION("a graph that does not parse") {
    const std::string bad = Edited(path, "unparsed.tcplan", [](nn::Metadata& m, nn::NamedTensors&) {
      m["tensorcut.plan.backward"] = "graph(%x: f32[2]) {\n  return (%y)\n}\n";
    });
    REQUIRE_THAT(LoadError(bad), Catch::Contains("tensorcut.plan.backward"));
  }
  SECTION("a parameter of another shape") {
    const std::string bad = Edited(path, "shape.tcplan", [&](nn::Metadata&, nn::NamedTensors& t) {
      for (auto& [name, tensor] : t) {
        if (name == weight) tensor = zeros({3, 3}, DType::kF32);
      }
    });
    REQUIRE_THAT(LoadError(bad),
                 Catch::Contains(weight + " must be") && Catch::Contains("got f32[3,3]"));
  }
  SECTION("a missing parameter") {
    const std::string bad = Edited(path, "missing.tcplan", [&](nn::Metadata&, nn::NamedTensors& t) {
      t.erase(std::remove_if(t.begin(), t.end(), [&](auto& e) { return e.first == bias; }),
              t.end());
    });
    REQUIRE_THAT(LoadError(bad),
                 Catch::Contains("parameter " + bias + ", which the file does not hold"));
  }
  SECTION("a tensor no input takes") {
    const std::string bad = Edited(path, "extra.tcplan", [](nn::Metadata&, nn::NamedTensors& t) {
      t.emplace_back("stray", zeros({2}, DType::kF32));
    });
    REQUIRE_THAT(LoadError(bad), Catch::Contains("stray, which no input of the plan takes"));
  }
  SECTION("a batch structure that repeats a dict key, or holds too few leaves") {
    const auto with_spec = [&](const std::string& name, const std::string& spec) {
      return Edited(path, name, [&](nn::Metadata& m, nn::NamedTensors&) {
        m["tensorcut.plan"] = absl::StrReplaceAll(
            m["tensorcut.plan"], {{"\"batch_spec\": {", "\"batch_spec\": " + spec + ", \"_\": {"}});
      });
    };
    REQUIRE_THAT(LoadError(with_spec("repeated.tcplan", R"({"dict": [["x", "*"], ["x", "*"]]})")),
                 Catch::Contains("tensorcut.plan: batch_spec: dict key \"x\" repeated"));
    REQUIRE_THAT(LoadError(with_spec("few.tcplan", R"({"tuple": ["*"]})")),
                 Catch::Contains("the batch's structure (*,) has 1 leaves for 2 batch leaves"));
  }
  SECTION("a field of the wrong type and an unknown optimizer") {
    const std::string bad = Edited(path, "field.tcplan", [](nn::Metadata& m, nn::NamedTensors&) {
      m["tensorcut.plan"] = absl::StrReplaceAll(
          m["tensorcut.plan"], {{"\"num_saved\": ", "\"num_saved\": \"x\" ,\"_\": "}});
    });
    REQUIRE_THAT(LoadError(bad), Catch::Contains("tensorcut.plan: num_saved"));
    const std::string lion = Edited(path, "lion.tcplan", [](nn::Metadata& m, nn::NamedTensors&) {
      m["tensorcut.plan"] =
          absl::StrReplaceAll(m["tensorcut.plan"], {{"\"name\": \"Adam\"", "\"name\": \"Lion\""}});
    });
    REQUIRE_THAT(LoadError(lion), Catch::Contains("optimizer.name: unknown optimizer \"Lion\""));
  }
  SECTION("a float where an integer belongs, and random inputs that are not there") {
    const std::string huge = Edited(path, "huge.tcplan", [](nn::Metadata& m, nn::NamedTensors&) {
      m["tensorcut.plan"] = absl::StrReplaceAll(
          m["tensorcut.plan"], {{"\"num_saved\": ", "\"num_saved\": 1e300, \"_\": "}});
    });
    REQUIRE_THAT(LoadError(huge), Catch::Contains("num_saved: expected an integer, got 1e+300"));
    const std::string random =
        Edited(path, "random.tcplan", [](nn::Metadata& m, nn::NamedTensors&) {
          m["tensorcut.plan"] =
              absl::StrReplaceAll(m["tensorcut.plan"], {{"\"seed\": -1", "\"seed\": 0"}});
        });
    REQUIRE_THAT(LoadError(random), Catch::Contains("the random inputs are placeholders 0 (seed)"));
  }
  SECTION("a training plan is not an inference plan, nor the reverse") {
    REQUIRE_THAT(std::string(LoadInferencePlan(path).status().message()),
                 Catch::Contains("kind: expected \"inference\", got \"train_step\""));
    nn::ModelSpec spec = nn::MakeModel("mlp", 3).value();
    spec.module->eval();
    CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
    REQUIRE(pipeline.generate_ir_for_inference().ok());
    const std::string inference = TempPath("mlp.tcinfer");
    REQUIRE(SaveInferencePlan(pipeline.inference_graph().value()->graph, pipeline.captured().inputs,
                              pipeline.inference_constants(), inference)
                .ok());
    REQUIRE_THAT(LoadError(inference), Catch::Contains("(load it with LoadInferencePlan)"));
    const absl::StatusOr<std::vector<Tensor>> wrong =
        LoadInferencePlan(inference).value()->Run({zeros({3, 5}, DType::kF32)});
    REQUIRE_THAT(
        std::string(wrong.status().message()),
        Catch::Contains("input 0 (inputs): expected f32[") && Catch::Contains("got f32[3,5]"));
  }
  SECTION("a data-parallel step is not saved") {
    nn::ModelSpec spec = nn::MakeModel("mlp", 3).value();
    nn::SGD sgd(spec.module->named_parameters(), 0.1);
    std::unique_ptr<TrainStep> step =
        TrainStep::Create(*spec.module, spec.loss, spec.inputs, spec.targets, sgd,
                          {.reduce_gradients = [](auto, auto) { return absl::OkStatus(); }})
            .value();
    const absl::Status s = SavePlan(step->compiled(), TempPath("dp.tcplan"));
    REQUIRE(s.code() == absl::StatusCode::kFailedPrecondition);
    REQUIRE_THAT(std::string(s.message()), Catch::Contains("data-parallel"));
  }
}

}  // namespace
}  // namespace tc
