// The staged pipeline on the seed's SimpleLinear: capture, joint graph,
// partition, compile, then train through the compiled function.
#include <iostream>

#include "nn/layers.h"
#include "pipeline/compiler_pipeline.h"

int main() {
  auto model = std::make_shared<tc::nn::Linear>(3, 2);
  tc::TensorTree inputs = tc::TensorTree::MakeLeaf(tc::randn({4, 3}).requires_grad_());

  auto pipeline = tc::CompilerPipeline::Create(*model, inputs).value();  // capture
  pipeline.generate_ir_for_training({.decompositions = &tc::DefaultDecompositions()}).IgnoreError();
  std::cout << tc::ToString(*pipeline.joint_graph().value()) << "\n";  // joint graph + descriptors
  auto part = pipeline.partition(tc::partition::DefaultPartition, *pipeline.joint_graph().value());
  auto fw = pipeline.fw_compile(tc::codegen::interpreter(), *part);
  auto bw = pipeline.bw_compile(tc::codegen::interpreter(), *part, *fw);
  tc::Function model_fn = pipeline.make_autograd_function(*fw, *bw, *part).value();

  tc::Tensor out = model_fn(inputs).value().leaf();  // same as (*model)(x)
  tc::sum(out).backward();                           // runs the compiled backward
  std::cout << "saved for backward: " << part->saved.size() << " values\n"
            << "weight grad: " << model->weight().grad() << "\n";
}
