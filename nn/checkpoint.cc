#include "nn/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/atomic_file.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"
#include "nn/named_tensors.h"

namespace tc::nn {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; this code copies it as is");

// The specification's bound on the header, so a corrupted length cannot make
// us allocate gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// The element types a file may hold: tensorcut's dtypes (checkpoints and
// LoadTensors) and those datasets store (LoadArrays).
struct DTypeCode {
  absl::string_view code;
  std::optional<DType> dtype;
  std::optional<ElementType> element;
  int64_t size;
  absl::string_view name;  // in type strings: "f32[2,3]"
};
constexpr DTypeCode kDTypeCodes[] = {{"F32", DType::kF32, ElementType::kF32, 4, "f32"},
                                     {"F64", DType::kF64, ElementType::kF64, 8, "f64"},
                                     {"I64", DType::kI64, ElementType::kI64, 8, "i64"},
                                     {"BOOL", DType::kBool, ElementType::kBool, 1, "bool"},
                                     {"BF16", DType::kBF16, std::nullopt, 2, "bf16"},
                                     {"U8", std::nullopt, ElementType::kU8, 1, "u8"},
                                     {"I8", std::nullopt, ElementType::kI8, 1, "i8"},
                                     {"U16", std::nullopt, ElementType::kU16, 2, "u16"},
                                     {"I16", std::nullopt, ElementType::kI16, 2, "i16"},
                                     {"U32", std::nullopt, ElementType::kU32, 4, "u32"},
                                     {"I32", DType::kI32, ElementType::kI32, 4, "i32"},
                                     {"U64", std::nullopt, ElementType::kU64, 8, "u64"}};

absl::string_view CodeOf(DType dtype) {
  for (const DTypeCode& c : kDTypeCodes) {
    if (c.dtype == dtype) return c.code;
  }
  return "";
}

// ---- Writing ----------------------------------------------------------------

// CRC-32 of pieces of the data buffer, given in file order.
uint32_t DataCrc(const std::vector<absl::string_view>& pieces) {
  uLong crc = crc32_z(0, nullptr, 0);
  for (absl::string_view piece : pieces) {
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(piece.data()), piece.size());
  }
  return static_cast<uint32_t>(crc);
}

std::string CrcText(uint32_t crc) { return absl::StrFormat("%08x", crc); }

absl::string_view BytesOf(const Tensor& t) {
  return absl::string_view(static_cast<const char*>(t.raw_data()), static_cast<size_t>(t.bytes()));
}

// The JSON header, padded with spaces so that the data starts 8-byte aligned.
// Names and metadata are valid UTF-8 (CheckSavable), so dump() cannot throw.
std::string MakeHeader(const NamedTensors& tensors, const Metadata& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  int64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    header[name] = {{"dtype", std::string(CodeOf(t.dtype()))},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  std::string json = header.dump();
  json.resize((json.size() + 7) / 8 * 8, ' ');
  return json;
}

// Writes the whole file to `fd`.
absl::Status WriteFile(int fd, const NamedTensors& tensors, const Metadata& metadata,
                       const std::string& path) {
  std::vector<Tensor> data;
  std::vector<absl::string_view> pieces;
  for (const auto& [name, t] : tensors) {
    data.push_back(t.contiguous());
    pieces.push_back(BytesOf(data.back()));
  }
  Metadata with_crc = metadata;
  with_crc[kDataCrcKey] = CrcText(DataCrc(pieces));
  const std::string header = MakeHeader(tensors, with_crc);
  const uint64_t length = header.size();
  absl::Status status = WriteAll(fd, &length, sizeof(length), path, "checkpoint");
  if (status.ok()) status = WriteAll(fd, header.data(), header.size(), path, "checkpoint");
  for (size_t i = 0; status.ok() && i < pieces.size(); ++i) {
    if (!pieces[i].empty())
      status = WriteAll(fd, pieces[i].data(), pieces[i].size(), path, "checkpoint");
  }
  return status;
}

// Whether `s` is valid UTF-8, which the format requires of every string.
bool IsUtf8(const std::string& s) {
  try {
    nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

absl::Status CheckSavable(const NamedTensors& tensors, const Metadata& metadata) {
  for (const auto& [key, value] : metadata) {
    if (!IsUtf8(key) || !IsUtf8(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot save metadata \"", absl::CHexEscape(key), "\": its ",
                       IsUtf8(key) ? "value" : "key", " is not valid UTF-8"));
    }
  }
  absl::flat_hash_set<absl::string_view> seen;
  for (const auto& [name, t] : tensors) {
    if (!IsUtf8(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot save a tensor named \"", absl::CHexEscape(name), "\": not valid UTF-8"));
    }
    if (name.empty() || name == "__metadata__") {
      return absl::InvalidArgumentError(absl::StrCat("cannot save a tensor named \"", name, "\""));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("cannot save two tensors named ", name));
    }
    if (!t.defined()) {
      return absl::InvalidArgumentError(absl::StrCat("cannot save undefined tensor ", name));
    }
  }
  return absl::OkStatus();
}

// ---- Reading ----------------------------------------------------------------

// One tensor of the header.
struct Entry {
  std::string name;
  const DTypeCode* code = &kDTypeCodes[0];
  Shape shape;
  int64_t begin = 0, end = 0;

  std::string TypeString() const { return absl::StrCat(code->name, ShapeToString(shape)); }
};

// Reads a header from the JSON parser's events: an object of tensor entries,
// each {"dtype": code, "shape": [dims], "data_offsets": [begin, end]}, and an
// optional "__metadata__" object of strings. The parser checks the syntax and
// that strings are UTF-8; this checks the structure, that keys are unique
// (JSON allows duplicates, last wins), and that integers fit in int64. The
// first problem stops the parse; it is in `status`.
class HeaderReader final : public nlohmann::json_sax<nlohmann::json> {
 public:
  // arrays: the element types datasets store; else tensorcut's dtypes.
  explicit HeaderReader(bool arrays) : arrays_(arrays) {}

  std::vector<Entry> entries;
  Metadata metadata;
  absl::Status status;

  bool start_object(std::size_t) override {
    if (depth_ == 2 || depth_ == 3) return Unexpected("an object");
    if (depth_ == 1) {
      if (!InMetadata()) entries.push_back({.name = name_});
      fields_.clear();
    }
    ++depth_;
    return true;
  }
  bool key(std::string& key) override {
    if (depth_ == 1) {
      name_ = key;
      // A save refuses an empty name, so a load does too.
      if (key.empty()) return Fail("an entry with an empty name");
      return names_.insert(key).second || Fail(absl::StrCat("duplicate entry ", key));
    }
    field_ = key;
    if (!fields_.insert(key).second) {
      return Fail(InMetadata() ? absl::StrCat("duplicate metadata ", key)
                               : absl::StrCat(name_, ": duplicate field \"", key, "\""));
    }
    if (InMetadata() || key == "dtype" || key == "shape" || key == "data_offsets") return true;
    return Fail(absl::StrCat(name_, ": unknown field \"", key, "\""));
  }
  bool end_object() override {
    if (--depth_ != 1 || InMetadata()) return true;
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      if (!fields_.contains(field)) {
        return Fail(absl::StrCat(name_, ": missing field \"", field, "\""));
      }
    }
    return true;
  }
  bool string(std::string& value) override {
    if (depth_ != 2 || (!InMetadata() && field_ != "dtype")) return Unexpected("a string");
    if (InMetadata()) {
      metadata[field_] = std::move(value);
      return true;
    }
    for (const DTypeCode& c : kDTypeCodes) {
      if (c.code == value && (arrays_ ? c.element.has_value() : c.dtype.has_value())) {
        entries.back().code = &c;
        return true;
      }
    }
    return Fail(absl::StrCat(name_, ": unsupported dtype \"", value, "\""));
  }
  bool start_array(std::size_t) override {
    if (depth_ != 2 || InMetadata() || field_ == "dtype") return Unexpected("an array");
    ++depth_;
    values_.clear();
    return true;
  }
  bool number_unsigned(std::uint64_t value) override {
    if (depth_ != 3 || value > static_cast<uint64_t>(INT64_MAX)) {
      return Unexpected(absl::StrCat(value));
    }
    // Stopped at once, so that a huge array costs nothing.
    const size_t most = field_ == "data_offsets" ? 2 : kMaxRank;
    if (values_.size() == most) {
      return Fail(absl::StrCat(Place(), " has more than ", most, " values"));
    }
    values_.push_back(static_cast<int64_t>(value));
    return true;
  }
  bool end_array() override {
    --depth_;
    Entry& entry = entries.back();
    if (field_ == "data_offsets") {
      if (values_.size() != 2) return Fail(absl::StrCat(Place(), " needs 2 values"));
      entry.begin = values_[0];
      entry.end = values_[1];
      return true;
    }
    if (absl::Status s = CheckShapeSize(values_); !s.ok()) {
      return Fail(absl::StrCat(name_, ": ", s.message()));
    }
    entry.shape = std::move(values_);
    return true;
  }
  // Only numbers written with a minus sign come here.
  bool number_integer(std::int64_t value) override {
    return Unexpected(value == 0 ? "-0" : absl::StrCat(value));
  }
  bool number_float(double, const std::string& text) override { return Unexpected(text); }
  bool null() override { return Unexpected("null"); }
  bool boolean(bool value) override { return Unexpected(value ? "true" : "false"); }
  bool binary(binary_t&) override { return Unexpected("binary data"); }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception& error) override {
    // what() starts with the exception's id, "[json.exception.parse_error.101] ".
    // Its "last read" quotes the input as is; bytes past ASCII are escaped
    // so that the message is valid text.
    absl::string_view what = error.what();
    what.remove_prefix(std::min(what.size(), what.find("] ") + 2));
    std::string text;
    for (const char c : what) {
      if (static_cast<unsigned char>(c) < 0x80) {
        text += c;
      } else {
        absl::StrAppend(&text, "\\x", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
      }
    }
    return Fail(text);
  }

 private:
  bool InMetadata() const { return name_ == "__metadata__"; }

  // Where the parser is, for a message: "fc.weight.shape", "__metadata__.step".
  std::string Place() const {
    if (depth_ == 0) return "the header";
    if (depth_ == 1) return name_;
    return absl::StrCat(name_, ".", field_);
  }

  // What the format allows where the parser is.
  std::string Expected() const {
    if (depth_ <= 1) return "an object";
    if (InMetadata()) return "a string";
    if (depth_ == 3) return "a non-negative integer below 2^63";
    return field_ == "dtype" ? "a string" : "an array";
  }

  bool Unexpected(absl::string_view got) {
    return Fail(absl::StrCat(Place(), " must be ", Expected(), ", got ", got));
  }

  bool Fail(absl::string_view what) {
    status = absl::DataLossError(absl::StrCat("invalid header: ", what));
    return false;
  }

  bool arrays_;
  int depth_ = 0;  // 1 in the header, 2 in an entry, 3 in an entry's array
  std::string name_, field_;
  absl::flat_hash_set<std::string> names_, fields_;
  std::vector<int64_t> values_;
};

// Parses the header into its entries (in header order) and metadata.
absl::StatusOr<std::vector<Entry>> ParseHeader(absl::string_view text, Metadata& metadata,
                                               bool arrays) {
  // The parser skips a byte-order mark, which the format does not allow.
  if (absl::StartsWith(text, "\xEF\xBB\xBF")) {
    return absl::DataLossError("invalid header: it starts with a byte-order mark");
  }
  HeaderReader reader(arrays);
  // Its result is in reader.status: every way the parse stops goes through Fail.
  nlohmann::json::sax_parse(text.begin(), text.end(), &reader);
  if (!reader.status.ok()) return reader.status;
  metadata = std::move(reader.metadata);
  return std::move(reader.entries);
}

// Checks each entry's fields, that its byte range holds exactly its elements,
// and that the ranges tile the data buffer with no gap or overlap.
absl::Status CheckEntries(const std::vector<Entry>& entries, int64_t data_bytes) {
  for (const Entry& e : entries) {
    if (e.begin > e.end) {
      return absl::DataLossError(
          absl::StrCat(e.name, ": data_offsets [", e.begin, ", ", e.end, "] are reversed"));
    }
    int64_t bytes = e.code->size;
    for (const int64_t d : e.shape) {
      if (__builtin_mul_overflow(bytes, d, &bytes)) {
        return absl::DataLossError(
            absl::StrCat(e.name, ": shape ", ShapeToString(e.shape), " is too large"));
      }
    }
    if (bytes != e.end - e.begin) {
      return absl::DataLossError(absl::StrCat(e.name, ": ", e.TypeString(), " needs ", bytes,
                                              " bytes but data_offsets [", e.begin, ", ", e.end,
                                              "] hold ", e.end - e.begin));
    }
  }
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::stable_sort(by_offset.begin(), by_offset.end(),
                   [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  int64_t covered = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != covered) {
      return absl::DataLossError(absl::StrCat(
          e->name, ": data_offsets [", e->begin, ", ", e->end, "] ",
          e->begin < covered ? "overlap the previous tensor" : "leave a gap after byte ",
          e->begin < covered ? "" : absl::StrCat(covered)));
    }
    covered = e->end;
  }
  if (covered != data_bytes) {
    return absl::DataLossError(
        absl::StrCat("the tensors cover ", covered, " bytes but the data buffer has ", data_bytes));
  }
  return absl::OkStatus();
}

// Reads exactly `size` bytes at `offset`.
absl::Status ReadAt(int fd, void* data, size_t size, int64_t offset) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, "read failed");
    if (n == 0) return absl::DataLossError("file shrank while being read");
    p += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return absl::OkStatus();
}

absl::Status CheckBools(const void* data, int64_t n, absl::string_view name) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (int64_t i = 0; i < n; ++i) {
    if (bytes[i] > 1) {
      return absl::DataLossError(absl::StrCat(name, ": element ", i, " is ",
                                              static_cast<int>(bytes[i]), ", not a BOOL (0 or 1)"));
    }
  }
  return absl::OkStatus();
}

// A file's header, checked against its size: the entries, and where their
// data starts.
struct Layout {
  std::vector<Entry> entries;
  int64_t data_start = 0;
};

absl::StatusOr<Layout> ReadLayout(int fd, Metadata& metadata, bool arrays) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, "cannot stat");
  const int64_t file_bytes = st.st_size;
  if (file_bytes < 8) {
    return absl::DataLossError(
        absl::StrCat("truncated: ", file_bytes, " bytes, too short for the 8-byte header length"));
  }
  uint64_t header_bytes = 0;
  absl::Status status = ReadAt(fd, &header_bytes, 8, 0);
  if (!status.ok()) return status;
  if (header_bytes > static_cast<uint64_t>(file_bytes - 8) || header_bytes > kMaxHeaderBytes) {
    return absl::DataLossError(absl::StrCat("header length ", header_bytes,
                                            " exceeds the file size (", file_bytes,
                                            " bytes) or the 100000000-byte limit"));
  }
  std::string header(header_bytes, '\0');
  status = ReadAt(fd, header.data(), header.size(), 8);
  if (!status.ok()) return status;
  Layout layout;
  TC_ASSIGN_OR_RETURN(layout.entries, ParseHeader(header, metadata, arrays));
  layout.data_start = 8 + static_cast<int64_t>(header_bytes);
  status = CheckEntries(layout.entries, file_bytes - layout.data_start);
  if (!status.ok()) return status;
  return layout;
}

// Checks the data against the CRC-32 its header records (files tensorcut
// wrote; others, without one, are read as they are). `pieces[i]` holds
// entries[i]'s bytes.
absl::Status CheckDataCrc(const Metadata& metadata, const std::vector<Entry>& entries,
                          const std::vector<absl::string_view>& pieces) {
  auto recorded = metadata.find(kDataCrcKey);
  if (recorded == metadata.end()) return absl::OkStatus();
  std::vector<size_t> order(entries.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  absl::c_stable_sort(order,
                      [&](size_t a, size_t b) { return entries[a].begin < entries[b].begin; });
  std::vector<absl::string_view> in_file_order;
  for (const size_t i : order) in_file_order.push_back(pieces[i]);
  const std::string actual = CrcText(DataCrc(in_file_order));
  if (recorded->second == actual) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat("the data does not match its checksum (metadata \"", kDataCrcKey, "\" is \"",
                   absl::CHexEscape(recorded->second), "\", the data's CRC-32 is ", actual,
                   "): the file was damaged after it was written"));
}

absl::StatusOr<NamedTensors> ReadTensors(int fd, Metadata& metadata) {
  TC_ASSIGN_OR_RETURN(const Layout layout, ReadLayout(fd, metadata, /*arrays=*/false));
  NamedTensors out;
  for (const Entry& e : layout.entries) {
    Tensor t = Tensor::Empty(e.shape, *e.code->dtype);
    absl::Status status;
    if (t.bytes() > 0) status = ReadAt(fd, t.raw_data(), t.bytes(), layout.data_start + e.begin);
    if (status.ok() && t.dtype() == DType::kBool)
      status = CheckBools(t.raw_data(), t.numel(), e.name);
    if (!status.ok()) return status;
    out.emplace_back(e.name, std::move(t));
  }
  std::vector<absl::string_view> pieces;
  for (const auto& [name, t] : out) pieces.push_back(BytesOf(t));
  TC_RETURN_IF_ERROR(CheckDataCrc(metadata, layout.entries, pieces));
  metadata.erase(kDataCrcKey);  // the format's own, not the caller's
  return out;
}

absl::StatusOr<NamedArrays> ReadArrays(int fd) {
  Metadata metadata;
  TC_ASSIGN_OR_RETURN(const Layout layout, ReadLayout(fd, metadata, /*arrays=*/true));
  NamedArrays out;
  for (const Entry& e : layout.entries) {
    Array a{*e.code->element, e.shape, std::vector<uint8_t>(static_cast<size_t>(e.end - e.begin))};
    absl::Status status;
    if (!a.bytes.empty())
      status = ReadAt(fd, a.bytes.data(), a.bytes.size(), layout.data_start + e.begin);
    if (status.ok() && a.type == ElementType::kBool)
      status = CheckBools(a.bytes.data(), a.numel(), e.name);
    if (!status.ok()) return status;
    out.emplace_back(e.name, std::move(a));
  }
  std::vector<absl::string_view> pieces;
  for (const auto& [name, a] : out) {
    pieces.emplace_back(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
  }
  TC_RETURN_IF_ERROR(CheckDataCrc(metadata, layout.entries, pieces));
  return out;
}

// Opens `path` for reading if it is a regular file; `what` names it in errors.
absl::StatusOr<int> OpenRegular(const std::string& path, absl::string_view what) {
  // Non-blocking, so that opening a FIFO returns at once; only a regular file
  // is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot open ", what, " ", path));
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(what, " ", path, " is not a regular file"));
  }
  return fd;
}

absl::Status WithPath(const absl::Status& status, const std::string& path) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("checkpoint ", path, ": ", status.message()));
}

// The module's state_dict, then the optimizer's, the scheduler's and the
// data loader's states.
NamedTensors CheckpointTensors(const Module& module, const TrainingState& state) {
  NamedTensors out = module.state_dict();
  for (const NamedTensors& part : {state.optimizer ? state.optimizer->state() : NamedTensors(),
                                   state.scheduler ? state.scheduler->state() : NamedTensors(),
                                   state.data ? state.data->state() : NamedTensors()}) {
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

}  // namespace

absl::Status SaveTensors(const NamedTensors& tensors, const std::string& path,
                         const Metadata& metadata) {
  absl::Status status = CheckSavable(tensors, metadata);
  if (!status.ok()) return WithPath(status, path);
  return WriteAtomically(path, "checkpoint",
                         [&](int fd) { return WriteFile(fd, tensors, metadata, path); });
}

absl::Status CheckWritable(const std::string& path) {
  return tc::CheckWritable(path, "checkpoint");
}

absl::StatusOr<NamedTensors> LoadTensors(const std::string& path, Metadata* metadata) {
  TC_ASSIGN_OR_RETURN(const int fd, OpenRegular(path, "checkpoint"));
  Metadata read;
  absl::StatusOr<NamedTensors> tensors = ReadTensors(fd, read);
  ::close(fd);
  if (!tensors.ok()) return WithPath(tensors.status(), path);
  if (metadata != nullptr) *metadata = std::move(read);
  return tensors;
}

absl::StatusOr<NamedArrays> LoadArrays(const std::string& path) {
  TC_ASSIGN_OR_RETURN(const int fd, OpenRegular(path, "safetensors file"));
  absl::StatusOr<NamedArrays> arrays = ReadArrays(fd);
  ::close(fd);
  if (!arrays.ok()) {
    return absl::Status(arrays.status().code(),
                        absl::StrCat(path, ": ", arrays.status().message()));
  }
  return arrays;
}

absl::Status save(const Module& module, const std::string& path, const Optimizer* optimizer,
                  const LRScheduler* scheduler) {
  return save(module, path,
              TrainingState{.optimizer = const_cast<Optimizer*>(optimizer),
                            .scheduler = const_cast<LRScheduler*>(scheduler)});
}

absl::Status save(const Module& module, const std::string& path, const TrainingState& state) {
  return SaveTensors(CheckpointTensors(module, state), path);
}

absl::Status load(Module& module, const std::string& path, Optimizer* optimizer,
                  LRScheduler* scheduler) {
  return load(module, path, {.optimizer = optimizer, .scheduler = scheduler});
}

absl::Status load(Module& module, const std::string& path, const TrainingState& training,
                  const LoadOptions& options) {
  TC_ASSIGN_OR_RETURN(NamedTensors file, LoadTensors(path));
  absl::flat_hash_set<absl::string_view> in_file;
  for (const auto& [name, t] : file) in_file.insert(name);
  // Not strict: the module's entries the file lacks keep their values.
  NamedTensors module_tensors;
  for (auto& entry : module.state_dict()) {
    if (options.strict || in_file.contains(entry.first)) module_tensors.push_back(std::move(entry));
  }
  Optimizer* optimizer = training.optimizer;
  LRScheduler* scheduler = training.scheduler;
  DataLoader* data = training.data;
  const NamedTensors state = optimizer == nullptr ? NamedTensors() : optimizer->state_for(file);
  const NamedTensors schedule = scheduler ? scheduler->state() : NamedTensors();
  const NamedTensors position = data ? data->state() : NamedTensors();
  NamedTensors expected = module_tensors;
  for (const NamedTensors* part : {&state, &schedule, &position}) {
    expected.insert(expected.end(), part->begin(), part->end());
  }
  absl::flat_hash_set<absl::string_view> expected_names, state_names, schedule_names,
      position_names;
  for (const auto& [name, t] : expected) expected_names.insert(name);
  for (const auto& [name, t] : state) state_names.insert(name);
  for (const auto& [name, t] : schedule) schedule_names.insert(name);
  for (const auto& [name, t] : position) position_names.insert(name);
  NamedTensors relevant, state_part, schedule_part, position_part;
  for (const auto& [name, t] : file) {
    // Without an optimizer (a scheduler, a data loader), a training
    // checkpoint's state for it is skipped; not strict, any name the
    // module lacks.
    const bool skipped = !options.strict                                  ? true
                         : absl::StartsWith(name, kSchedulerStatePrefix)  ? scheduler == nullptr
                         : absl::StartsWith(name, kOptimizerStatePrefix)  ? optimizer == nullptr
                         : absl::StartsWith(name, kDataLoaderStatePrefix) ? data == nullptr
                                                                          : false;
    if (skipped && !expected_names.contains(name)) continue;
    relevant.emplace_back(name, t);
    if (state_names.contains(name)) state_part.emplace_back(name, t);
    if (schedule_names.contains(name)) schedule_part.emplace_back(name, t);
    if (position_names.contains(name)) position_part.emplace_back(name, t);
  }
  const std::string mismatch = DescribeMismatch(expected, relevant, "file has");
  if (!mismatch.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint ", path, " does not match the module: ", mismatch));
  }
  // The data loader's position is set first and put back if anything after
  // it fails; the scheduler and the optimizer check their states before
  // changing anything; after that nothing can fail.
  std::optional<DataLoader::Position> before;
  if (data != nullptr) {
    before = data->position();
    absl::Status status = data->load_state(position_part);
    if (!status.ok()) return WithPath(status, path);
  }
  auto failed = [&](const absl::Status& status) {
    if (before.has_value()) data->set_position(*before).IgnoreError();
    return WithPath(status, path);
  };
  if (scheduler != nullptr) {
    absl::Status status = scheduler->CheckState(schedule_part);
    if (!status.ok()) return failed(status);
  }
  if (optimizer != nullptr) {
    absl::Status status = optimizer->load_state(state_part);
    if (!status.ok()) return failed(status);
  }
  if (scheduler != nullptr) {
    absl::Status status = scheduler->load_state(schedule_part);
    if (!status.ok()) return failed(status);
  }
  absl::flat_hash_map<absl::string_view, const Tensor*> by_name;
  for (const auto& [name, t] : relevant) by_name.emplace(name, &t);
  NamedTensors module_part;
  for (const auto& [name, t] : module_tensors) module_part.emplace_back(name, *by_name.at(name));
  return module.load_state_dict(module_part, options.strict).status();
}

}  // namespace tc::nn
