// Checkpoints in the safetensors format
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON naming each tensor's dtype, shape and byte range,
// then the raw little-endian data.
//
//   absl::Status saved = nn::save(model, "ckpt.safetensors", &optimizer);
//   ...
//   absl::Status loaded = nn::load(model, "ckpt.safetensors", &optimizer);  // resumes
//   absl::StatusOr<nn::NamedTensors> raw = nn::LoadTensors("ckpt.safetensors");
//
// Saving is atomic: the file is written beside the target, flushed to disk and
// renamed over it, so a crash or a failed write never leaves a half-written
// checkpoint. The header's metadata records the data's CRC-32
// ("tensorcut.data_crc32"), which loading checks where a file has it (files
// from other writers have not), so a bit flipped on disk is found. Loading is strict: a truncated
// or corrupted file, or one that does not match the module, yields a status naming the file and the
// problem, and nothing is modified.
#ifndef TENSORCUT_NN_CHECKPOINT_H_
#define TENSORCUT_NN_CHECKPOINT_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nn/data/array.h"
#include "nn/data/data_loader.h"
#include "nn/lr_scheduler.h"
#include "nn/module.h"
#include "nn/optim.h"

namespace tc::nn {

// The header's "__metadata__": free-form string pairs.
using Metadata = std::map<std::string, std::string>;

// The metadata key of the data buffer's CRC-32 (zlib's), 8 lowercase hex
// digits, which SaveTensors writes: a bit flipped in the data after saving
// is found when loading.
inline constexpr char kDataCrcKey[] = "tensorcut.data_crc32";

// Writes `tensors` (any dtype, any layout) in order under their names, which
// must be unique, non-empty and not "__metadata__", into a temporary file
// beside `path` that then replaces it. A symbolic link's target is replaced
// (the link stays); anything but a regular file (a device such as
// /dev/null, a directory, a FIFO) is refused, and never replaced.
absl::Status SaveTensors(const NamedTensors& tensors, const std::string& path,
                         const Metadata& metadata = {});

// OK when SaveTensors could write `path`: a temporary file of the kind a save
// writes is made beside it and removed. The error names the folder ("cannot
// write in /nonexistent: No such file or directory", "... is a directory:
// ..."), so a program can check before it trains. Temporaries that killed
// saves of `path` left are removed.
absl::Status CheckWritable(const std::string& path);

// Reads every tensor of a safetensors file, in header order, into new
// contiguous tensors; `metadata`, when given, receives the header's metadata
// (without the checksum).
// Supported dtypes: F32, F64, I64, BOOL, BF16.
absl::StatusOr<NamedTensors> LoadTensors(const std::string& path, Metadata* metadata = nullptr);

// Reads every tensor of a safetensors file as arrays in their stored element
// types (a dataset's file: U8, I8, U16, I16, U32, I32, U64, I64, F32, F64,
// BOOL; nn/data/array.h), in header order, with the checks LoadTensors
// makes; errors start with the path.
absl::StatusOr<NamedArrays> LoadArrays(const std::string& path);

// What a training checkpoint holds beside the module, each when given: the
// optimizer's state under its names ("optim.fc.weight.exp_avg"), the
// learning-rate scheduler's ("optim.lr_scheduler.last_epoch") and the data
// loader's position ("data_loader.epoch", "data_loader.batch"), so that a
// resumed run sees the batches the uninterrupted one would have. save()
// only reads them.
struct TrainingState {
  Optimizer* optimizer = nullptr;
  LRScheduler* scheduler = nullptr;
  DataLoader* data = nullptr;
};

// strict = false, as PyTorch's load_state_dict(strict=False): the module's
// entries the file lacks keep their values, and entries the module lacks are
// ignored; dtypes and shapes must still match, and the training state given
// must still be there in full.
struct LoadOptions {
  bool strict = true;
};

// Saves the module's state_dict (parameters and persistent buffers, by FQN)
// and the training state given.
//   nn::save(model, "ckpt.safetensors", {.optimizer = &adam, .data = &loader});
absl::Status save(const Module& module, const std::string& path, const TrainingState& state);
absl::Status save(const Module& module, const std::string& path,
                  const Optimizer* optimizer = nullptr, const LRScheduler* scheduler = nullptr);

// Loads a checkpoint written by save() into the existing tensors (handles stay
// valid). The file must hold exactly the module's state_dict (and the states
// of the training state given; without them, their entries in the file are
// ignored) with the same dtypes and shapes; otherwise the status lists what
// is missing, unexpected and mismatched, and nothing changes (the data
// loader's position included).
absl::Status load(Module& module, const std::string& path, const TrainingState& state,
                  const LoadOptions& options = {});
absl::Status load(Module& module, const std::string& path, Optimizer* optimizer = nullptr,
                  LRScheduler* scheduler = nullptr);

}  // namespace tc::nn

#endif  // TENSORCUT_NN_CHECKPOINT_H_
