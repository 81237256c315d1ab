#include "tools/flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "nn/data/idx.h"

ABSL_FLAG(std::string, data, tc::nn::kFashionMnistDir,
          "folder with the Fashion-MNIST IDX files (.gz or plain); train: or a file of your data "
          "for the mlp models, FILE.csv (numeric columns and --label-column), FILE.npz or "
          "FILE.safetensors (arrays --features and --labels; a test split as <features>_test and "
          "<labels>_test), which sizes the mlp's input and output");
ABSL_FLAG(std::string, label_column, "label", "train: the CSV column holding the class labels");
ABSL_FLAG(std::string, features, "x", "train: the .npz/safetensors array of the inputs");
ABSL_FLAG(std::string, labels, "y", "train: the .npz/safetensors array of the class labels");
ABSL_FLAG(std::string, test_data, "",
          "train: a CSV file like --data to report test accuracy on (.npz/safetensors files "
          "carry their test split)");
ABSL_FLAG(std::string, checkpoint, "",
          "where to write the trained model, a safetensors file (default: "
          "tensorcut_demo.safetensors for demo, tensorcut_<model>.safetensors for train; "
          "run: a plan file, by default --plan itself; relative paths: the current folder)");
ABSL_FLAG(std::string, plan, "",
          "export: the plan file to write; run: the plan file to train (export's, or run's "
          "checkpoint), on its model's data unless --data gives a file");
ABSL_FLAG(int, batch, 100,
          "images per training step on Fashion-MNIST (synthetic data keeps the model's example "
          "batch)");
ABSL_FLAG(bool, sync_batchnorm, false,
          "train under mpirun: BatchNorm normalises by every rank's batch together "
          "(SyncBatchNorm); false: by each rank's own, as DDP does");
ABSL_FLAG(double, collective_timeout, 300,
          "train under mpirun: seconds a rank waits in a collective for the others before the "
          "job ends, naming the ranks that did not answer");
ABSL_FLAG(bool, drop_last, false,
          "train: skip each epoch's last batch when it is smaller than --batch (by default it "
          "trains, through the same compiled step)");
ABSL_FLAG(int, save_every, 0,
          "train: also write the checkpoint every N steps (0: at each epoch's end and the last "
          "step only)");
ABSL_FLAG(bool, dynamic_batch, false,
          "graph: dim 0 of every model input a symbol (s0), as any batch size compiles");
ABSL_FLAG(bool, data_parallel, false,
          "graph --stage backward: with the gradients' all-reduce over the ranks in buckets, as "
          "mpirun ... tensorcut train compiles it");
ABSL_FLAG(double, lr, 2e-3, "learning rate (train --resume: the checkpoint's unless given)");

ABSL_FLAG(std::string, model, "mlp",
          "a reference model (linear, convbn, structured, mlp, mlp_dropout, cnn, transformer, "
          "transformer_dropout) or a zoo model (resnet18, vgg11, mobilenetv2, unet, gpt, lstm); "
          "bench and compare --sweep also take all");
ABSL_FLAG(std::string, onnx, "",
          "train: an ONNX model file (opsets 13-17; one f32 input whose dim 0 is the batch, one "
          "output of class scores) trained instead of --model");
ABSL_FLAG(std::string, loss, "cross_entropy",
          "train --onnx: the loss over the model's output: cross_entropy (scores) or nll_loss "
          "(log-probabilities)");
ABSL_FLAG(int, threads, 0, "oneDNN/OpenMP threads; 0: OpenMP's default (OMP_NUM_THREADS or all)");
ABSL_FLAG(std::string, gemm, "auto",
          "f32 matrix products on onednn, on openblas, or auto: the faster of the two, timed "
          "on the first product of each shape");
ABSL_FLAG(std::string, precision, "f32",
          "demo, train: f32, or bf16: matrix products on bf16 operands with f32 accumulation "
          "(weights, gradients and optimizer state stay f32); f32 on a CPU without bf16 "
          "instructions");
ABSL_FLAG(int, runs, 30, "ops, bench: timed runs of each measurement; the median is printed");
ABSL_FLAG(int, steps, 0,
          "train: stop at this step, counted from the start of training (0: after --epochs); "
          "compare: timed training steps per strategy (0: 5)");

ABSL_FLAG(int, epochs, 1, "epochs to train, counted from the start of training");
ABSL_FLAG(std::string, optimizer, "adam", "sgd, adam or adamw");
ABSL_FLAG(std::string, partition, "min_cut",
          "train's partition strategy: default, min_cut, budget, recompute_all or milp");
ABSL_FLAG(std::string, resume, "",
          "a checkpoint written by train: continue from its step with its parameters, buffers "
          "and optimizer state");
ABSL_FLAG(int, seed, 0, "seed of the parameters, the synthetic data and the data order");

ABSL_FLAG(std::string, strategy, "min_cut",
          "default, min_cut, budget, recompute_all, milp or peak_budget; remat: greedy, "
          "lp_rounding, milp (its default) or all");
ABSL_FLAG(std::string, budget, "0.5",
          "memory budget in [0, 1]: of saved bytes for budget and milp (1: min-cut's, 0: the "
          "least), of the compiled step's planned peak for peak_budget (1: default's, 0: the "
          "least); remat: of the peak without recomputation, or bytes with a unit (12GB, 500MiB)");
ABSL_FLAG(double, milp_seconds, 10, "the milp strategy's time limit for its solver, in seconds");
ABSL_FLAG(std::string, graph, "",
          "remat: a rematerialization graph in networkx node-link JSON (Checkmate's, MOCCASIN's)");
ABSL_FLAG(bool, json, false,
          "print JSON instead of text (partition: one object; compare --sweep: an array of rows)");
ABSL_FLAG(std::string, dot, "", "also write the graph as Graphviz DOT to this file");
ABSL_FLAG(bool, sweep, false,
          "compare: every strategy, and budget, peak_budget and milp at budgets 0, 0.25, ..., 1, "
          "each compiled and timed beside the milp optimum at its saved bytes; --model may be "
          "all or a list a,b");
ABSL_FLAG(std::string, csv, "", "compare --sweep: also write its rows as CSV to this file");
ABSL_FLAG(std::string, plot, "",
          "compare --sweep: plot planned peak against step time as SVG to this file (several "
          "models: FILE_<model>.svg each)");
ABSL_FLAG(std::string, stage, "joint", "captured, joint, forward or backward");
ABSL_FLAG(bool, decompose, false,
          "apply the default decompositions first (partition and compare always do; train never)");
ABSL_FLAG(bool, profile, false,
          "bench: instead of the table, each model's compiled training step (f32, and bf16 where "
          "the CPU has bf16 instructions) timed by lowered step: products, attention, norms, "
          "elementwise passes, copies, the optimizer, and the costliest steps");

namespace tc {

absl::StatusOr<double> BudgetFraction() {
  const std::string text = absl::GetFlag(FLAGS_budget);
  double fraction = 0;
  if (!absl::SimpleAtod(text, &fraction) || !(fraction >= 0 && fraction <= 1)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--budget \"%s\": the partition strategies take a fraction in [0, 1]", text));
  }
  return fraction;
}

}  // namespace tc
