// tensorcut's public API in one include, for programs that embed the library:
//
//   #include "tensorcut/tensorcut.h"
//
// with Bazel through `@tensorcut//:tensorcut`, or installed (tools/install.sh)
// through pkg-config (`pkg-config --cflags --libs tensorcut`) or CMake
// (`find_package(tensorcut CONFIG REQUIRED)`, target `tensorcut::tensorcut`).
// It brings in tensors and eager ops, the nn API (modules, layers, losses,
// optimizers, schedulers, data loading, checkpoints, the reference models),
// the IR, the partitioners, the compilers (and bf16 mixed precision), the
// staged pipeline, TrainStep and plan files.
// The headers it includes may also be included one by one, but their paths
// differ by route: installed, "tensorcut/nn/layers.h"; from Bazel, rooted at
// the source tree, "nn/layers.h". Code that builds both ways includes this
// header only.
#ifndef TENSORCUT_TENSORCUT_H_
#define TENSORCUT_TENSORCUT_H_

#include "autodiff/engine.h"
#include "autodiff/gradcheck.h"
#include "base/version.h"
#include "codegen/autocast.h"
#include "codegen/executable.h"
#include "graph/ir.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "nn/checkpoint.h"
#include "nn/clip_grad.h"
#include "nn/data/array.h"
#include "nn/data/csv.h"
#include "nn/data/data_loader.h"
#include "nn/data/idx.h"
#include "nn/data/npy.h"
#include "nn/data/transforms.h"
#include "nn/init.h"
#include "nn/layers.h"
#include "nn/loss_modules.h"
#include "nn/losses.h"
#include "nn/lr_scheduler.h"
#include "nn/models/models.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "nn/summary.h"
#include "partition/min_cut.h"
#include "partition/partition.h"
#include "partition/report.h"
#include "partition/strategies.h"
#include "pipeline/compiled_function.h"
#include "pipeline/compiler_pipeline.h"
#include "pipeline/plan.h"
#include "pipeline/train_step.h"
#include "runtime/bf16.h"
#include "runtime/build_info.h"
#include "runtime/error.h"
#include "runtime/ops.h"
#include "runtime/random.h"
#include "runtime/tensor.h"
#include "runtime/threads.h"

#endif  // TENSORCUT_TENSORCUT_H_
