#include "tests/nn/layer_check.h"

#include <cstring>
#include <vector>

#include "autodiff/engine.h"
#include "catch2/catch.hpp"
#include "partition/min_cut.h"
#include "pipeline/compiler_pipeline.h"
#include "runtime/autograd_meta.h"
#include "tests/pipeline_util.h"
#include "tests/test_util.h"

namespace tc::testing {
namespace {

// A fresh copy of each leaf that requires grad, so two runs keep their
// gradients apart.
TensorTree FreshLeaves(const TensorTree& inputs) {
  return inputs.Map([](const Tensor& t) {
    Tensor c = t.detach().clone();
    if (t.requires_grad()) c.requires_grad_();
    return c;
  });
}

// sum(out_i * r_i) over the flattened outputs, r_i random and fixed.
Tensor Contract(const TensorTree& out) {
  Tensor total;
  uint64_t seed = 77;
  for (const Tensor& t : Flatten(out).first) {
    if (!IsFloating(t.dtype())) continue;
    const Tensor term = sum(t * Random(t.shape(), t.dtype(), seed++));
    total = total.defined() ? total + term : term;
  }
  return total;
}

double Objective(nn::Module& module, const TensorTree& inputs) {
  NoGradGuard no_grad;
  return Contract(module(inputs)).item<double>();
}

}  // namespace

TensorTree RandomInput(absl::Span<const int64_t> shape, uint64_t seed) {
  return TensorTree::MakeLeaf(Random(shape, DType::kF64, seed).requires_grad_());
}

void RequireModuleGradcheck(nn::Module& module, const TensorTree& inputs, double tol) {
  std::vector<std::pair<std::string, Tensor>> wrt = module.named_parameters();
  int index = 0;
  for (const Tensor& t : Flatten(inputs).first) {
    if (t.requires_grad()) wrt.emplace_back("input " + std::to_string(index), t);
    ++index;
  }
  TensorList tensors;
  for (const auto& [name, t] : wrt) {
    REQUIRE(t.dtype() == DType::kF64);
    REQUIRE(t.is_contiguous());
    tensors.push_back(t);
  }
  const TensorList analytic = grad({Contract(module(inputs))}, tensors).value();
  const double eps = 1e-6;
  for (size_t i = 0; i < wrt.size(); ++i) {
    double* data = static_cast<double*>(tensors[i].raw_data());
    for (int64_t e = 0; e < tensors[i].numel(); ++e) {
      const double saved = data[e];
      data[e] = saved + eps;
      const double up = Objective(module, inputs);
      data[e] = saved - eps;
      const double down = Objective(module, inputs);
      data[e] = saved;
      const double numeric = (up - down) / (2 * eps);
      const double got =
          analytic[i].defined() ? analytic[i].contiguous().to_vector<double>()[e] : 0;
      INFO(wrt[i].first << " element " << e << ": analytic " << got << ", numeric " << numeric);
      REQUIRE(std::abs(got - numeric) <= tol * (1 + std::abs(numeric)));
    }
  }
}

void RequireCompiledMatchesEager(const ModuleFactory& make, const TensorTree& inputs, double tol) {
  const struct {
    const char* name;
    partition::PartitionFn fn;
  } partitions[] = {{"default", partition::DefaultPartition},
                    {"min_cut", partition::MinCutPartition}};
  for (const auto& part : partitions) {
    for (const NamedCompiler& compiler : AllCompilers()) {
      INFO(part.name << " partition, " << compiler.name << " compiler");
      std::shared_ptr<nn::Module> eager = make(), compiled = make();
      const TensorTree in_e = FreshLeaves(inputs), in_c = FreshLeaves(inputs);
      absl::StatusOr<CompilerPipeline> pipeline = CompilerPipeline::Create(*compiled, in_c);
      INFO(pipeline.status().ToString());
      REQUIRE(pipeline.ok());
      Function fn = CompileStages(*pipeline, part.fn, nullptr, compiler.compiler);
      absl::StatusOr<TensorTree> out_c = fn(in_c);
      INFO(out_c.status().ToString());
      REQUIRE(out_c.ok());
      const TensorTree out_e = (*eager)(in_e);
      const std::vector<Tensor> lc = Flatten(*out_c).first, le = Flatten(out_e).first;
      REQUIRE(lc.size() == le.size());
      for (size_t i = 0; i < lc.size(); ++i) REQUIRE_TENSORS_CLOSE(lc[i], le[i], tol, tol);
      Contract(*out_c).backward();
      Contract(out_e).backward();
      RequireSameState(*compiled, *eager, tol, /*grads=*/true);
      const std::vector<Tensor> xc = Flatten(in_c).first, xe = Flatten(in_e).first;
      for (size_t i = 0; i < xc.size(); ++i) {
        if (xc[i].requires_grad()) REQUIRE_TENSORS_CLOSE(xc[i].grad(), xe[i].grad(), tol, tol);
      }
    }
  }
}

void CheckLayer(const ModuleFactory& make, const TensorTree& inputs) {
  std::shared_ptr<nn::Module> module = make();
  RequireModuleGradcheck(*module, inputs);
  RequireCompiledMatchesEager(make, inputs);
}

}  // namespace tc::testing
