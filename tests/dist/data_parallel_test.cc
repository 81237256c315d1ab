// Run by tests/dist/mpirun_test.sh under `mpirun -np 2` (each rank runs
// every case, in the same order, so their collectives meet): broadcast and
// weighted all-reduce across ranks, in buckets and through strides; ranks
// that pass different tensors; and data-parallel training of mlp and
// transformer in f64, averaging after the backward (TrainStep) or inside
// the compiled backward (BackwardAllReduce), which must give, after five
// SGD steps, the parameters one process gets on the whole global batch.
#include "dist/data_parallel.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "catch2/catch.hpp"
#include "codegen/fusing_compiler.h"
#include "dist/process_group.h"
#include "graph/printer.h"
#include "nn/models/models.h"
#include "nn/normalization.h"
#include "nn/optim.h"
#include "partition/min_cut.h"
#include "pipeline/compiler_pipeline.h"
#include "pipeline/train_step.h"
#include "runtime/autograd_meta.h"
#include "runtime/ops.h"
#include "tests/test_util.h"

namespace tc::dist {
namespace {

// Small buckets, so that a model's gradients span many of them.
ProcessGroup& Group() {
  static ProcessGroup* group =
      ProcessGroup::World({.timeout = absl::Seconds(60), .bucket_bytes = 4096}).value();
  return *group;
}

// Values that differ from rank to rank: r * 100 + i at flat position i.
Tensor RankValues(const Shape& shape, DType dtype, int rank) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  return add(arange(0, static_cast<double>(numel), 1, DType::kF64).reshape(shape),
             scalar(100.0 * rank, DType::kF64))
      .to(dtype);
}

TEST_CASE("the job has two ranks") {
  REQUIRE(Group().size() == 2);
  CHECK(Group().Describe() == "rank " + std::to_string(Group().rank()) + " of 2");
}

TEST_CASE("broadcast gives every rank the root's tensors, through strides") {
  const int rank = Group().rank();
  for (int root : {0, 1}) {
    INFO("root " << root);
    Tensor dense = RankValues({3, 5}, DType::kF32, rank);
    Tensor wide = RankValues({4, 6}, DType::kF64, rank);
    Tensor strided = wide.slice(1, 1, 5).transpose(0, 1);  // a view, not dense
    Tensor ints = RankValues({7}, DType::kI64, rank);
    REQUIRE(Group().Broadcast({dense, strided, ints}, root).ok());
    REQUIRE_TENSORS_CLOSE(dense, RankValues({3, 5}, DType::kF32, root), 0, 0);
    REQUIRE_TENSORS_CLOSE(
        strided, RankValues({4, 6}, DType::kF64, root).slice(1, 1, 5).transpose(0, 1), 0, 0);
    REQUIRE_TENSORS_CLOSE(ints, RankValues({7}, DType::kI64, root), 0, 0);
    // The view's neighbours in its storage are untouched.
    CHECK(wide.slice(1, 0, 1).to_vector<double>() ==
          RankValues({4, 6}, DType::kF64, rank).slice(1, 0, 1).to_vector<double>());
  }
  CHECK(Group().Broadcast({}, 2).message() == "broadcast: root 2 is not a rank of 2");
}

TEST_CASE("all-reduce sums each rank's tensors times its weight, over several buckets") {
  const int rank = Group().rank();
  // 3000 f32 and 600 f64 elements: several 4 KiB buckets, a new one per dtype.
  const auto values = [](int r) {
    return std::vector<Tensor>{RankValues({1000}, DType::kF32, r),
                               RankValues({2000}, DType::kF32, r),
                               RankValues({20, 30}, DType::kF64, r).transpose(0, 1)};
  };
  const std::vector<Tensor> r0 = values(0), r1 = values(1);
  for (int call = 0; call < 2; ++call) {  // the second reuses the buckets
    const std::vector<Tensor> tensors = values(rank);
    REQUIRE(Group().AllReduceSum(tensors, rank == 0 ? 0.25 : 0.75).ok());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor want = add(mul(r0[i].to(DType::kF64), scalar(0.25, DType::kF64)),
                              mul(r1[i].to(DType::kF64), scalar(0.75, DType::kF64)));
      REQUIRE_TENSORS_CLOSE(tensors[i], want, 1e-6, 1e-6);
    }
  }
}

TEST_CASE("ranks that pass different tensors get an error, each of them") {
  const int rank = Group().rank();
  std::vector<Tensor> tensors = {zeros({rank == 0 ? 3 : 4})};
  const absl::Status s = Group().AllReduceSum(tensors);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.message() == "all-reduce: the ranks passed different tensors; rank " +
                           std::to_string(rank) + " of 2 passed f32[" +
                           std::to_string(rank == 0 ? 3 : 4) + "]");
  CHECK(Group().AllReduceSum({zeros({2}, DType::kBool)}).message() ==
        "collectives take f32, f64, i64 or i32 tensors, got bool");
  // The group still works, in every dtype it takes.
  Tensor one = full({1}, 1.0);
  REQUIRE(Group().AllReduceSum({one}).ok());
  CHECK(one.item<float>() == 2.0f);
  Tensor counts = from_vector<int32_t>({rank + 1, -7}, {2});
  REQUIRE(Group().AllReduceSum({counts}).ok());
  CHECK(counts.to_vector<int32_t>() == std::vector<int32_t>{3, -14});
}

TEST_CASE("a compiled wait on a bucket no start began is an error") {
  const Tensor bucket = zeros({3});
  CHECK(Group().WaitAllReduce(bucket).message() ==
        "no all-reduce was started on this bucket (f32[3])");
}

// A model's example (inputs, targets) cut to rows [first, first + count),
// dense, in f64 where floating.
struct Example {
  TensorTree inputs, targets;
  std::vector<Tensor> leaves;  // a TrainStep's batch
};
Example Rows(const nn::ModelSpec& spec, int64_t first, int64_t count) {
  const auto cut = [&](const Tensor& t) {
    const Tensor rows = t.slice(0, first, first + count).contiguous();
    return IsFloating(rows.dtype()) ? rows.to(DType::kF64) : rows;
  };
  Example e{spec.inputs.Map(cut), spec.targets.Map(cut), {}};
  e.leaves = Flatten(e.inputs).first;
  for (const Tensor& t : Flatten(e.targets).first) e.leaves.push_back(t);
  return e;
}

TEST_CASE("two ranks on halves of a global batch train as one process on all of it") {
  const int rank = Group().rank();
  for (const bool in_backward : {false, true}) {
    for (const std::string name : {"mlp", "transformer"}) {
      INFO(name << (in_backward ? ", summed in the backward" : ", averaged after it"));
      constexpr int64_t kBatch = 6;
      // The reference: one process, the whole batch, in this rank.
      nn::ModelSpec whole = nn::MakeModel(name, 11).value();
      whole.module->to(DType::kF64);
      const Example batch = Rows(whole, 0, kBatch);
      // A rank's model starts elsewhere on rank 1: the broadcast must bring it to rank 0's.
      nn::ModelSpec mine = nn::MakeModel(name, 11 + rank).value();
      mine.module->to(DType::kF64);
      REQUIRE(BroadcastModule(Group(), *mine.module).ok());
      // Rank 0 takes 2 rows, rank 1 the other 4: the average weighs them so.
      const int64_t first = rank == 0 ? 0 : 2, count = rank == 0 ? 2 : 4;
      const Example share = Rows(whole, first, count);

      nn::SGD sgd_whole(whole.module->named_parameters(), 0.05, 0.9);
      nn::SGD sgd_mine(mine.module->named_parameters(), 0.05, 0.9);
      auto step_whole =
          TrainStep::Create(*whole.module, whole.loss, batch.inputs, batch.targets, sgd_whole)
              .value();
      TrainStepOptions options;
      std::shared_ptr<BackwardAllReduce> summing;
      if (in_backward) {
        summing = std::make_shared<BackwardAllReduce>(Group());
        options.backward_rewriter = summing;
      } else {
        options.reduce_gradients = AverageGradients(Group());
      }
      auto step_mine =
          TrainStep::Create(*mine.module, mine.loss, share.inputs, share.targets, sgd_mine, options)
              .value();
      for (int s = 0; s < 5; ++s) {
        REQUIRE(step_whole->Run(batch.leaves).ok());
        REQUIRE(step_mine->Run(share.leaves).ok());
      }
      if (in_backward) CHECK(summing->buckets() > 0);
      const nn::NamedTensors want = whole.module->named_parameters();
      const nn::NamedTensors got = mine.module->named_parameters();
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        INFO(got[i].first);
        REQUIRE_TENSORS_CLOSE(got[i].second, want[i].second, 1e-11, 1e-12);
      }
    }
  }
}

// Five SGD steps of `spec` on `batch` through the staged pipeline, as
// `tensorcut train` runs them: the compiled forward and backward, the loss
// eagerly; with `group`, the gradients summed in the compiled backward.
// Each rank's share is set from its batch (SetBatch), or, given
// `total_rows`, from the rows it has of that many (SetShare). `before_step`
// runs before each.
void TrainStaged(
    const nn::ModelSpec& spec, const Example& batch, ProcessGroup* group, int64_t total_rows = 0,
    const std::function<void()>& before_step = [] {}) {
  CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, batch.inputs).value();
  REQUIRE(pipeline.generate_ir_for_training().ok());
  const JointGraph& joint = **pipeline.joint_graph();
  partition::PartitionResult part = pipeline.partition(partition::MinCutPartition, joint).value();
  std::optional<BackwardAllReduce> reduce;
  if (group != nullptr) {
    reduce = BackwardAllReduce::Insert(*group, joint, part).value();
    CHECK(reduce->buckets() >= 1);
    CHECK_THAT(ToString(part.backward), Catch::Contains("all_reduce_wait"));
  }
  const CompiledForward fw = pipeline.fw_compile(codegen::fusing(), part).value();
  CompiledBackward bw = pipeline.bw_compile(codegen::fusing(), part, fw).value();
  if (reduce) bw.run = reduce->Bind(bw.run);
  const Function step = pipeline.make_autograd_function(fw, bw, part).value();
  nn::SGD sgd(spec.module->named_parameters(), 0.05, 0.9);
  for (int s = 0; s < 5; ++s) {
    before_step();
    if (reduce) {
      REQUIRE((total_rows > 0 ? reduce->SetShare(batch.leaves[0].size(0), total_rows)
                              : reduce->SetBatch(batch.leaves))
                  .ok());
    }
    const TensorTree out = step(batch.inputs).value();
    sgd.zero_grad();
    spec.loss(out, batch.targets).backward();
    sgd.step();
  }
}

void RequireSameTensors(const nn::NamedTensors& got, const nn::NamedTensors& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(got[i].first);
    REQUIRE_TENSORS_CLOSE(got[i].second, want[i].second, 1e-11, 1e-12);
  }
}

TEST_CASE("with the all-reduce in the compiled backward, two ranks train as one process") {
  const int rank = Group().rank();
  // cnn with SyncBatchNorm, on equal shares: its statistics are the whole batch's.
  for (const std::string name : {"mlp", "transformer", "cnn"}) {
    INFO(name);
    const bool sync = name == "cnn";
    nn::ModelSpec whole = nn::MakeModel(name, 11).value();
    whole.module->to(DType::kF64);
    nn::ModelSpec mine = nn::MakeModel(name, 11 + rank).value();
    mine.module->to(DType::kF64);
    if (sync) CHECK(nn::ConvertSyncBatchNorm(*mine.module, "world") > 0);
    REQUIRE(BroadcastModule(Group(), *mine.module).ok());
    TrainStaged(whole, Rows(whole, 0, 6), nullptr);
    const int64_t first = sync ? 3 * rank : (rank == 0 ? 0 : 2);
    const int64_t count = sync ? 3 : (rank == 0 ? 2 : 4);
    TrainStaged(mine, Rows(whole, first, count), &Group(), name == "transformer" ? 6 : 0);
    RequireSameTensors(mine.module->named_parameters(), whole.module->named_parameters());
    RequireSameTensors(mine.module->named_buffers(), whole.module->named_buffers());
  }
}

TEST_CASE("a share that is not part of its global batch is an error") {
  nn::ModelSpec spec = nn::MakeModel("linear", 0).value();
  CompilerPipeline pipeline = CompilerPipeline::Create(*spec.module, spec.inputs).value();
  REQUIRE(pipeline.generate_ir_for_training().ok());
  const JointGraph& joint = **pipeline.joint_graph();
  partition::PartitionResult part = pipeline.partition(partition::MinCutPartition, joint).value();
  BackwardAllReduce reduce = BackwardAllReduce::Insert(Group(), joint, part).value();
  CHECK(reduce.SetShare(2, 4).ok());
  CHECK(reduce.SetShare(5, 4).message() ==
        "backward all-reduce: a share of 5 rows of a global batch of 4; expected 0 <= rows <= "
        "total and total > 0");
  CHECK(!reduce.SetShare(0, 0).ok());
  CHECK(!reduce.SetShare(-1, 4).ok());
  // With a synchronised BatchNorm, only equal shares.
  nn::ModelSpec cnn = nn::MakeModel("cnn", 0).value();
  nn::ConvertSyncBatchNorm(*cnn.module, "world");
  CompilerPipeline synced = CompilerPipeline::Create(*cnn.module, cnn.inputs).value();
  REQUIRE(synced.generate_ir_for_training().ok());
  const JointGraph& synced_joint = **synced.joint_graph();
  partition::PartitionResult synced_part =
      synced.partition(partition::MinCutPartition, synced_joint).value();
  BackwardAllReduce synced_reduce =
      BackwardAllReduce::Insert(Group(), synced_joint, synced_part).value();
  CHECK(synced_reduce.buckets() == 1);  // the statistics' all-reduces are not buckets
  CHECK(synced_reduce.SetShare(3, 6).ok());
  const absl::Status uneven = synced_reduce.SetShare(2, 6);
  CHECK(uneven.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(uneven.message() == "backward all-reduce: rank " + std::to_string(Group().rank()) +
                                " of 2 has 2 of the global batch's 6 rows; a BatchNorm "
                                "synchronised over the ranks needs every rank to have the same "
                                "share: a batch that 2 divides");
}

TEST_CASE("with per-rank BatchNorm, each rank's running statistics are its own batch's") {
  const int rank = Group().rank();
  nn::ModelSpec mine = nn::MakeModel("cnn", 11).value();
  mine.module->to(DType::kF64);
  nn::ModelSpec alone = nn::MakeModel("cnn", 12).value();
  alone.module->to(DType::kF64);
  const Example share = Rows(mine, 3 * rank, 3);
  // Before each step, the same model on this rank's share alone, eagerly:
  // the statistics the step must leave.
  nn::NamedTensors want;
  TrainStaged(mine, share, &Group(), 0, [&] {
    for (auto [to, from] :
         {std::pair{alone.module->named_parameters(), mine.module->named_parameters()},
          std::pair{alone.module->named_buffers(), mine.module->named_buffers()}}) {
      for (size_t i = 0; i < to.size(); ++i) nn::CopyValues(to[i].second, from[i].second);
    }
    NoGradGuard no_grad;
    (*alone.module)(share.inputs);
    want.clear();
    for (const auto& [name, t] : alone.module->named_buffers()) want.emplace_back(name, t.clone());
  });
  RequireSameTensors(mine.module->named_buffers(), want);
  // The two ranks' statistics differ: each took its own rows.
  Tensor mean = mine.module->named_buffers()[0].second.clone();
  const Tensor own = mean.clone();
  REQUIRE(Group().AllReduceSum({mean}, 0.5).ok());
  CHECK_FALSE(testing::CompareTensors(own, mean, 1e-6, 1e-9).empty());
}

}  // namespace
}  // namespace tc::dist
