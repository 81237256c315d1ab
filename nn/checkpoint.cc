#include "nn/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "nn/named_tensors.h"

namespace tc::nn {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; this code copies it as is");

// The specification's bound on the header, so a corrupted length cannot make
// us allocate gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DTypeCode {
  DType dtype;
  absl::string_view code;
};
constexpr DTypeCode kDTypeCodes[] = {{DType::kF32, "F32"},
                                     {DType::kF64, "F64"},
                                     {DType::kI64, "I64"},
                                     {DType::kBool, "BOOL"},
                                     {DType::kBF16, "BF16"}};

absl::string_view CodeOf(DType dtype) {
  for (const DTypeCode& c : kDTypeCodes) {
    if (c.dtype == dtype) return c.code;
  }
  return "";
}

absl::Status ErrnoStatus(int error, absl::string_view what) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(error));
  if (error == ENOENT) return absl::NotFoundError(message);
  if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
  return absl::InternalError(message);
}

// ---- Writing ----------------------------------------------------------------

void AppendJsonString(absl::string_view s, std::string& out) {
  out += '"';
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += c;
    }
  }
  out += '"';
}

// The JSON header, padded with spaces so that the data starts 8-byte aligned.
std::string MakeHeader(const NamedTensors& tensors, const Metadata& metadata) {
  std::string json = "{";
  if (!metadata.empty()) {
    json += "\"__metadata__\":{";
    for (const auto& [key, value] : metadata) {
      if (json.back() != '{') json += ',';
      AppendJsonString(key, json);
      json += ':';
      AppendJsonString(value, json);
    }
    json += '}';
  }
  int64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (json.size() > 1) json += ',';
    AppendJsonString(name, json);
    absl::StrAppend(&json, ":{\"dtype\":\"", CodeOf(t.dtype()), "\",\"shape\":[");
    for (size_t d = 0; d < t.shape().size(); ++d) {
      absl::StrAppend(&json, d == 0 ? "" : ",", t.shape()[d]);
    }
    absl::StrAppend(&json, "],\"data_offsets\":[", offset, ",", offset + t.bytes(), "]}");
    offset += t.bytes();
  }
  json += '}';
  json.resize((json.size() + 7) / 8 * 8, ' ');
  return json;
}

absl::Status WriteAll(int fd, const void* data, size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("cannot write checkpoint ", path));
    p += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

std::string DirName(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Writes the whole file to `fd` and flushes it to disk.
absl::Status WriteFile(int fd, const NamedTensors& tensors, const Metadata& metadata,
                       const std::string& path) {
  const std::string header = MakeHeader(tensors, metadata);
  const uint64_t length = header.size();
  absl::Status status = WriteAll(fd, &length, sizeof(length), path);
  if (status.ok()) status = WriteAll(fd, header.data(), header.size(), path);
  for (size_t i = 0; status.ok() && i < tensors.size(); ++i) {
    const Tensor data = tensors[i].second.contiguous();
    if (data.bytes() > 0) status = WriteAll(fd, data.raw_data(), data.bytes(), path);
  }
  if (status.ok() && ::fsync(fd) != 0) {
    status = ErrnoStatus(errno, absl::StrCat("cannot flush checkpoint ", path));
  }
  return status;
}

absl::Status CheckSavable(const NamedTensors& tensors) {
  absl::flat_hash_set<absl::string_view> seen;
  for (const auto& [name, t] : tensors) {
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

// Whether `s` is well-formed UTF-8: no stray continuation bytes, no
// overlong forms, no surrogates, nothing past U+10FFFF.
bool IsValidUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int extra;
    uint32_t code;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1, code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, code = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= s.size()) return false;  // truncated
    for (int k = 1; k <= extra; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      code = code << 6 | (d & 0x3F);
    }
    constexpr uint32_t kLeast[] = {0, 0x80, 0x800, 0x10000};
    if (code < kLeast[extra] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

// A strict reader for the JSON subset of a safetensors header: objects,
// strings, arrays of non-negative integers, non-negative integers.
class JsonReader {
 public:
  explicit JsonReader(absl::string_view text) : text_(text) {}

  absl::Status Error(absl::string_view what) const {
    return absl::DataLossError(absl::StrCat("invalid header JSON at byte ", pos_, ": ", what));
  }

  // Skips whitespace; consumes `c` if it comes next.
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  absl::Status Expect(char c) {
    return Consume(c) ? absl::OkStatus()
                      : Error(absl::StrCat("expected '", std::string(1, c), "'"));
  }

  // Only whitespace may follow the top-level object.
  absl::Status End() {
    SkipSpace();
    return pos_ == text_.size() ? absl::OkStatus() : Error("unexpected text after the object");
  }

  absl::StatusOr<std::string> String() {
    if (!Consume('"')) return Error("expected a string");
    std::string out;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') {
        // The format's header is UTF-8 JSON; a name or value that is not
        // would come back from a save as other text than was written.
        if (!IsValidUtf8(out)) return Error("a string is not valid UTF-8");
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20) return Error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ == text_.size()) break;
      const char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          TC_RETURN_IF_ERROR(UnicodeEscape(out));
          break;
        }
        default:
          return Error(absl::StrCat("invalid escape \\", std::string(1, e)));
      }
    }
    return Error("unterminated string");
  }

  // A non-negative integer that fits in int64 (no sign, fraction or exponent).
  absl::StatusOr<int64_t> Integer() {
    SkipSpace();
    const size_t start = pos_;
    uint64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const uint64_t digit = static_cast<uint64_t>(text_[pos_++] - '0');
      // Checked before the multiply, which would wrap mod 2^64 first.
      if (value > (static_cast<uint64_t>(INT64_MAX) - digit) / 10) {
        return Error("integer out of range");
      }
      value = value * 10 + digit;
    }
    if (pos_ == start) return Error("expected a non-negative integer");
    if (text_[start] == '0' && pos_ - start > 1) return Error("integer with a leading zero");
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E')) {
      return Error("expected an integer");
    }
    return static_cast<int64_t>(value);
  }

  absl::StatusOr<std::vector<int64_t>> IntegerArray() {
    absl::Status status = Expect('[');
    if (!status.ok()) return status;
    std::vector<int64_t> out;
    if (Consume(']')) return out;
    do {
      TC_ASSIGN_OR_RETURN(int64_t value, Integer());
      out.push_back(value);
    } while (Consume(','));
    status = Expect(']');
    if (!status.ok()) return status;
    return out;
  }

  // Parses an object, calling `member(key)` after each key and its ':'; the
  // callback parses the value.
  absl::Status Object(const std::function<absl::Status(const std::string&)>& member) {
    absl::Status status = Expect('{');
    if (!status.ok() || Consume('}')) return status;
    do {
      TC_ASSIGN_OR_RETURN(std::string key, String());
      status = Expect(':');
      if (status.ok()) status = member(key);
      if (!status.ok()) return status;
    } while (Consume(','));
    return Expect('}');
  }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() &&
           absl::string_view(" \t\n\r").find(text_[pos_]) != absl::string_view::npos) {
      ++pos_;
    }
  }

  absl::StatusOr<uint32_t> Hex4() {
    if (text_.size() - pos_ < 4) return Error("truncated \\u escape");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      const int digit = c >= '0' && c <= '9'   ? c - '0'
                        : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                               : -1;
      if (digit < 0) return Error("invalid \\u escape");
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    return value;
  }

  // After "\u": one code point (a surrogate pair counts as one), as UTF-8.
  absl::Status UnicodeEscape(std::string& out) {
    TC_ASSIGN_OR_RETURN(uint32_t code, Hex4());
    if (code >= 0xDC00 && code <= 0xDFFF) return Error("unpaired surrogate in a \\u escape");
    if (code >= 0xD800 && code <= 0xDBFF) {
      if (text_.substr(pos_, 2) != "\\u") return Error("unpaired surrogate in a \\u escape");
      pos_ += 2;
      TC_ASSIGN_OR_RETURN(uint32_t low, Hex4());
      if (low < 0xDC00 || low > 0xDFFF) return Error("unpaired surrogate in a \\u escape");
      code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
    }
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
    return absl::OkStatus();
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

// One tensor of the header.
struct Entry {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  int64_t begin = 0, end = 0;
};

absl::Status ParseTensor(JsonReader& json, const std::string& name, Entry& entry) {
  entry.name = name;
  bool has_dtype = false, has_shape = false, has_offsets = false;
  TC_RETURN_IF_ERROR(json.Object([&](const std::string& key) -> absl::Status {
    bool* seen = key == "dtype"          ? &has_dtype
                 : key == "shape"        ? &has_shape
                 : key == "data_offsets" ? &has_offsets
                                         : nullptr;
    if (seen == nullptr) return json.Error(absl::StrCat(name, ": unknown field \"", key, "\""));
    if (*seen) return json.Error(absl::StrCat(name, ": duplicate field \"", key, "\""));
    *seen = true;
    if (key == "dtype") {
      TC_ASSIGN_OR_RETURN(std::string code, json.String());
      for (const DTypeCode& c : kDTypeCodes) {
        if (c.code == code) {
          entry.dtype = c.dtype;
          return absl::OkStatus();
        }
      }
      return json.Error(absl::StrCat(name, ": unsupported dtype \"", code, "\""));
    }
    TC_ASSIGN_OR_RETURN(std::vector<int64_t> values, json.IntegerArray());
    if (key == "shape") {
      if (absl::Status s = CheckShapeSize(values); !s.ok()) {
        return json.Error(absl::StrCat(name, ": ", s.message()));
      }
      entry.shape = std::move(values);
      return absl::OkStatus();
    }
    if (values.size() != 2) return json.Error(absl::StrCat(name, ": data_offsets needs 2 values"));
    entry.begin = values[0];
    entry.end = values[1];
    return absl::OkStatus();
  }));
  for (const auto& [seen, field] : {std::pair<bool, const char*>{has_dtype, "dtype"},
                                    {has_shape, "shape"},
                                    {has_offsets, "data_offsets"}}) {
    if (!seen) return json.Error(absl::StrCat(name, ": missing field \"", field, "\""));
  }
  return absl::OkStatus();
}

// Parses the header into its entries (in header order) and metadata.
absl::StatusOr<std::vector<Entry>> ParseHeader(absl::string_view text, Metadata& metadata) {
  metadata.clear();
  JsonReader json(text);
  std::vector<Entry> entries;
  absl::flat_hash_set<std::string> names;
  bool has_metadata = false;
  absl::Status status = json.Object([&](const std::string& name) -> absl::Status {
    if (!names.insert(name).second) return json.Error(absl::StrCat("duplicate entry ", name));
    if (name == "__metadata__") {
      has_metadata = true;
      return json.Object([&](const std::string& key) -> absl::Status {
        if (metadata.count(key) != 0) return json.Error(absl::StrCat("duplicate metadata ", key));
        TC_ASSIGN_OR_RETURN(metadata[key], json.String());
        return absl::OkStatus();
      });
    }
    return ParseTensor(json, name, entries.emplace_back());
  });
  if (status.ok()) status = json.End();
  if (!status.ok()) return status;
  return entries;
}

// Checks each entry's fields, that its byte range holds exactly its elements,
// and that the ranges tile the data buffer with no gap or overlap.
absl::Status CheckEntries(const std::vector<Entry>& entries, int64_t data_bytes) {
  for (const Entry& e : entries) {
    if (e.begin > e.end) {
      return absl::DataLossError(
          absl::StrCat(e.name, ": data_offsets [", e.begin, ", ", e.end, "] are reversed"));
    }
    int64_t bytes = ItemSize(e.dtype);
    for (const int64_t d : e.shape) {
      if (__builtin_mul_overflow(bytes, d, &bytes)) {
        return absl::DataLossError(
            absl::StrCat(e.name, ": shape ", ShapeToString(e.shape), " is too large"));
      }
    }
    if (bytes != e.end - e.begin) {
      return absl::DataLossError(absl::StrCat(e.name, ": ", TensorType{e.dtype, e.shape}.ToString(),
                                              " needs ", bytes, " bytes but data_offsets [",
                                              e.begin, ", ", e.end, "] hold ", e.end - e.begin));
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

absl::Status CheckBools(const Tensor& t, absl::string_view name) {
  const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (bytes[i] > 1) {
      return absl::DataLossError(absl::StrCat(name, ": element ", i, " is ",
                                              static_cast<int>(bytes[i]), ", not a BOOL (0 or 1)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<NamedTensors> ReadTensors(int fd, Metadata& metadata) {
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
  TC_ASSIGN_OR_RETURN(std::vector<Entry> entries, ParseHeader(header, metadata));
  const int64_t data_start = 8 + static_cast<int64_t>(header_bytes);
  status = CheckEntries(entries, file_bytes - data_start);
  if (!status.ok()) return status;
  NamedTensors out;
  for (const Entry& e : entries) {
    Tensor t = Tensor::Empty(e.shape, e.dtype);
    if (t.bytes() > 0) status = ReadAt(fd, t.raw_data(), t.bytes(), data_start + e.begin);
    if (status.ok() && e.dtype == DType::kBool) status = CheckBools(t, e.name);
    if (!status.ok()) return status;
    out.emplace_back(e.name, std::move(t));
  }
  return out;
}

absl::Status WithPath(const absl::Status& status, const std::string& path) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("checkpoint ", path, ": ", status.message()));
}

// Parameters, then buffers, then optimizer state.
NamedTensors CheckpointTensors(const Module& module, const Optimizer* optimizer) {
  NamedTensors out = module.named_parameters();
  for (auto& entry : module.named_buffers()) out.push_back(std::move(entry));
  if (optimizer != nullptr) {
    for (auto& entry : optimizer->state()) out.push_back(std::move(entry));
  }
  return out;
}

// Removes what saves of `path` killed mid-write left (`path`.tmp-XXXXXX).
// Failing to remove one costs only its disk space.
void RemoveStaleTemporaries(const std::string& path) {
  const std::string prefix = absl::StrCat(std::filesystem::path(path).filename().string(), ".tmp-");
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(DirName(path), error)) {
    const std::string name = entry.path().filename().string();
    if (absl::StartsWith(name, prefix) && name.size() == prefix.size() + 6) {
      std::filesystem::remove(entry.path(), error);
    }
  }
}

}  // namespace

absl::Status SaveTensors(const NamedTensors& tensors, const std::string& path,
                         const Metadata& metadata) {
  absl::Status status = CheckSavable(tensors);
  if (!status.ok()) return WithPath(status, path);
  std::string temp = absl::StrCat(path, ".tmp-XXXXXX");
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot create checkpoint ", path));
  status = WriteFile(fd, tensors, metadata, path);
  if (status.ok() && ::fchmod(fd, 0644) != 0) {
    status = ErrnoStatus(errno, absl::StrCat("cannot set permissions of checkpoint ", path));
  }
  if (::close(fd) != 0 && status.ok()) {
    status = ErrnoStatus(errno, absl::StrCat("cannot close checkpoint ", path));
  }
  if (status.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    status = ErrnoStatus(errno, absl::StrCat("cannot rename ", temp, " to ", path));
  }
  if (!status.ok()) {
    ::unlink(temp.c_str());
    return status;
  }
  RemoveStaleTemporaries(path);
  // Persist the rename itself; the data is already on disk, so a failure here
  // only risks the old file reappearing after a crash.
  const int dir = ::open(DirName(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return absl::OkStatus();
}

absl::StatusOr<NamedTensors> LoadTensors(const std::string& path, Metadata* metadata) {
  // Non-blocking, so that opening a FIFO returns at once; only a regular file
  // is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot open checkpoint ", path));
  struct stat info;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", path, " is not a regular file"));
  }
  Metadata ignored;
  absl::StatusOr<NamedTensors> tensors = ReadTensors(fd, metadata ? *metadata : ignored);
  ::close(fd);
  if (!tensors.ok()) return WithPath(tensors.status(), path);
  return tensors;
}

absl::Status save(const Module& module, const std::string& path, const Optimizer* optimizer) {
  return SaveTensors(CheckpointTensors(module, optimizer), path);
}

absl::Status load(Module& module, const std::string& path, Optimizer* optimizer) {
  TC_ASSIGN_OR_RETURN(NamedTensors file, LoadTensors(path));
  const NamedTensors module_tensors = CheckpointTensors(module, nullptr);
  const NamedTensors state = optimizer ? optimizer->state() : NamedTensors();
  NamedTensors expected = module_tensors;
  expected.insert(expected.end(), state.begin(), state.end());
  absl::flat_hash_set<absl::string_view> expected_names, state_names;
  for (const auto& [name, t] : expected) expected_names.insert(name);
  for (const auto& [name, t] : state) state_names.insert(name);
  NamedTensors relevant, state_part;
  for (const auto& [name, t] : file) {
    // Without an optimizer, a training checkpoint's optimizer state is skipped.
    if (optimizer == nullptr && !expected_names.contains(name) &&
        absl::StartsWith(name, kOptimizerStatePrefix)) {
      continue;
    }
    relevant.emplace_back(name, t);
    if (state_names.contains(name)) state_part.emplace_back(name, t);
  }
  const std::string mismatch = DescribeMismatch(expected, relevant, "file has");
  if (!mismatch.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint ", path, " does not match the module: ", mismatch));
  }
  // The optimizer checks its step counts before changing anything; after that
  // nothing can fail.
  if (optimizer != nullptr) {
    absl::Status status = optimizer->load_state(state_part);
    if (!status.ok()) return WithPath(status, path);
  }
  absl::flat_hash_map<absl::string_view, const Tensor*> by_name;
  for (const auto& [name, t] : relevant) by_name.emplace(name, &t);
  for (const auto& [name, t] : module_tensors) CopyValues(t, *by_name.at(name));
  return absl::OkStatus();
}

}  // namespace tc::nn
