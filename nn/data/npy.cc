#include "nn/data/npy.h"

#include <zlib.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"

namespace tc::nn {
namespace {

absl::Status Bad(absl::string_view where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what));
}

// The whole file, in one buffer of its size.
absl::StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) {
  TC_RETURN_IF_ERROR(CheckRegularFile(path));
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  const std::streamoff size = in.tellg();
  if (size < 0) return absl::DataLossError(absl::StrCat("cannot read ", path));
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), size);
  if (in.gcount() != size) {
    return absl::DataLossError(absl::StrCat("cannot read ", path, ": it changed while read"));
  }
  return bytes;
}

uint64_t Little(absl::Span<const uint8_t> bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | bytes[at + i];
  return v;
}

// NumPy's dtype string ("<f4", "|u1", "|b1") as an element type.
absl::StatusOr<ElementType> TypeOf(absl::string_view descr, absl::string_view where) {
  if (descr.size() < 3) return Bad(where, absl::StrCat("dtype '", descr, "' is not supported"));
  const char order = descr[0];
  const absl::string_view kind = descr.substr(1);
  struct Entry {
    const char* kind;
    ElementType type;
  };
  static constexpr Entry kTypes[] = {
      {"b1", ElementType::kBool}, {"u1", ElementType::kU8},  {"i1", ElementType::kI8},
      {"u2", ElementType::kU16},  {"i2", ElementType::kI16}, {"u4", ElementType::kU32},
      {"i4", ElementType::kI32},  {"u8", ElementType::kU64}, {"i8", ElementType::kI64},
      {"f4", ElementType::kF32},  {"f8", ElementType::kF64}};
  for (const Entry& e : kTypes) {
    if (kind != e.kind) continue;
    const bool one_byte = ElementSize(e.type) == 1;
    // '=' is the writer's native order: little-endian on every machine
    // tensorcut runs on.
    if (order == '<' || order == '|' || order == '=' || (order == '>' && one_byte)) {
      return e.type;
    }
    return Bad(where, absl::StrCat("dtype '", descr,
                                   "' is big-endian; only little-endian arrays are read"));
  }
  return Bad(where,
             absl::StrCat("dtype '", descr, "' is not supported (bool, u1-u8, i1-i8, f4, f8 are)"));
}

// The value of `key` in NumPy's header dict, as its text: "'<f4'", "False",
// "(3, 4)". NumPy writes the three keys in a fixed form; this reads any
// order and spacing.
absl::StatusOr<std::string> HeaderValue(absl::string_view padded, absl::string_view key,
                                        absl::string_view where) {
  const absl::string_view header = absl::StripAsciiWhitespace(padded);
  const std::string quoted = absl::StrCat("'", key, "'");
  const size_t at = header.find(quoted);
  if (at == absl::string_view::npos) {
    return Bad(where, absl::StrCat("the header has no ", quoted, ": ", header));
  }
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(header.substr(at + quoted.size()));
  if (!absl::ConsumePrefix(&rest, ":")) return Bad(where, absl::StrCat("bad header: ", header));
  rest = absl::StripLeadingAsciiWhitespace(rest);
  size_t end = 0;
  if (!rest.empty() && rest[0] == '(') {
    end = rest.find(')');
    if (end == absl::string_view::npos) return Bad(where, absl::StrCat("bad header: ", header));
    ++end;
  } else if (!rest.empty() && rest[0] == '\'') {
    end = rest.find('\'', 1);
    if (end == absl::string_view::npos) return Bad(where, absl::StrCat("bad header: ", header));
    ++end;
  } else {
    end = rest.find_first_of(",}");
    if (end == absl::string_view::npos) return Bad(where, absl::StrCat("bad header: ", header));
  }
  return std::string(absl::StripAsciiWhitespace(rest.substr(0, end)));
}

// C order from Fortran order: element (i0, ..., ik) is at
// sum_j i_j * prod_{l<j} d_l in `column_major`.
std::vector<uint8_t> ToRowMajor(const std::vector<uint8_t>& column_major,
                                const std::vector<int64_t>& shape, size_t element) {
  std::vector<uint8_t> out(column_major.size());
  const size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  const int64_t n = static_cast<int64_t>(column_major.size() / element);
  for (int64_t r = 0; r < n; ++r) {
    int64_t offset = 0, stride = 1;
    for (size_t d = 0; d < rank; ++d) {
      offset += index[d] * stride;
      stride *= shape[d];
    }
    std::memcpy(&out[r * element], &column_major[offset * element], element);
    for (size_t d = rank; d-- > 0;) {  // the next row-major index
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<Array> ParseNpy(absl::Span<const uint8_t> file, const std::string& where) {
  return ParseNpy(std::vector<uint8_t>(file.begin(), file.end()), where);
}

absl::StatusOr<Array> ParseNpy(std::vector<uint8_t> contents, const std::string& where) {
  const absl::Span<const uint8_t> file(contents);
  static constexpr uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (file.size() < 10 || std::memcmp(file.data(), kMagic, 6) != 0) {
    return Bad(where, "not an .npy file (no \\x93NUMPY magic)");
  }
  const int major = file[6];
  if (major < 1 || major > 3)
    return Bad(where, absl::StrCat(".npy version ", major, " is unknown"));
  const size_t length_bytes = major == 1 ? 2 : 4;
  if (file.size() < 8 + length_bytes) return Bad(where, "truncated header");
  const uint64_t header_length = Little(file, 8, static_cast<int>(length_bytes));
  const size_t data_start = 8 + length_bytes + header_length;
  if (file.size() < data_start) return Bad(where, "truncated header");
  const absl::string_view header(reinterpret_cast<const char*>(file.data()) + 8 + length_bytes,
                                 header_length);

  TC_ASSIGN_OR_RETURN(std::string descr, HeaderValue(header, "descr", where));
  if (descr.size() < 2 || descr.front() != '\'' || descr.back() != '\'') {
    return Bad(where, absl::StrCat("dtype ", descr, " is not supported (structured or object)"));
  }
  Array array;
  TC_ASSIGN_OR_RETURN(array.type, TypeOf(descr.substr(1, descr.size() - 2), where));
  TC_ASSIGN_OR_RETURN(std::string fortran, HeaderValue(header, "fortran_order", where));
  if (fortran != "True" && fortran != "False") {
    return Bad(where, absl::StrCat("fortran_order is ", fortran, ", not True or False"));
  }
  TC_ASSIGN_OR_RETURN(std::string shape_text, HeaderValue(header, "shape", where));
  absl::string_view dims(shape_text);
  if (!absl::ConsumePrefix(&dims, "(") || !absl::ConsumeSuffix(&dims, ")")) {
    return Bad(where, absl::StrCat("shape ", shape_text, " is not a tuple"));
  }
  uint64_t count = 1;
  for (absl::string_view d : absl::StrSplit(dims, ',', absl::SkipWhitespace())) {
    int64_t dim = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(d), &dim) || dim < 0) {
      return Bad(where, absl::StrCat("shape ", shape_text, " has a bad dim '", d, "'"));
    }
    if (dim != 0 &&
        count > std::numeric_limits<uint64_t>::max() / 16 / static_cast<uint64_t>(dim)) {
      return Bad(where, absl::StrCat("shape ", shape_text, " is too large"));
    }
    count *= static_cast<uint64_t>(dim);
    array.shape.push_back(dim);
  }
  const uint64_t want = count * ElementSize(array.type);
  if (file.size() - data_start != want) {
    return Bad(where, absl::StrCat("the data is ", file.size() - data_start, " bytes; ",
                                   array.ToString(), " needs ", want));
  }
  // The data stays in the buffer it came in: an array costs its size once.
  contents.erase(contents.begin(), contents.begin() + static_cast<std::ptrdiff_t>(data_start));
  array.bytes = std::move(contents);
  if (array.type == ElementType::kBool) {
    for (size_t i = 0; i < array.bytes.size(); ++i) {
      if (array.bytes[i] > 1) {
        return Bad(where,
                   absl::StrCat("bool element ", i, " is ", int{array.bytes[i]}, ", not 0 or 1"));
      }
    }
  }
  if (fortran == "True" && array.shape.size() > 1) {
    array.bytes = ToRowMajor(array.bytes, array.shape, ElementSize(array.type));
  }
  return array;
}

absl::StatusOr<Array> ReadNpy(const std::string& path) {
  TC_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ReadFile(path));
  return ParseNpy(std::move(bytes), path);
}

absl::StatusOr<NamedArrays> ReadNpz(const std::string& path) {
  TC_ASSIGN_OR_RETURN(std::vector<uint8_t> zip, ReadFile(path));
  absl::Span<const uint8_t> bytes(zip);
  // The end-of-central-directory record: the last 22 bytes, or earlier by
  // the length of a trailing comment.
  constexpr uint32_t kEnd = 0x06054b50, kCentral = 0x02014b50, kLocal = 0x04034b50;
  if (bytes.size() < 22) return Bad(path, "not a zip archive (too short for an .npz)");
  size_t end = bytes.size() - 22;
  const size_t lowest = bytes.size() > 22 + 0xffff ? bytes.size() - 22 - 0xffff : 0;
  while (Little(bytes, end, 4) != kEnd) {
    if (end == lowest) return Bad(path, "not a zip archive (no end of central directory)");
    --end;
  }
  const uint64_t entries = Little(bytes, end + 10, 2);
  const uint64_t directory = Little(bytes, end + 16, 4);
  if (directory == 0xffffffff || entries == 0xffff) {
    return Bad(path, "a zip64 archive (over 4 GB or 65535 members) is not supported");
  }
  NamedArrays out;
  absl::flat_hash_set<uint64_t> claimed;  // local header offsets
  uint64_t total = 0;                     // declared member sizes
  size_t at = directory;
  for (uint64_t i = 0; i < entries; ++i) {
    if (at + 46 > bytes.size() || Little(bytes, at, 4) != kCentral) {
      return Bad(path, "corrupt zip central directory");
    }
    const uint64_t method = Little(bytes, at + 10, 2), crc = Little(bytes, at + 16, 4);
    const uint64_t packed = Little(bytes, at + 20, 4), size = Little(bytes, at + 24, 4);
    const uint64_t name_length = Little(bytes, at + 28, 2);
    const uint64_t skip = Little(bytes, at + 30, 2) + Little(bytes, at + 32, 2);
    const uint64_t local = Little(bytes, at + 42, 4);
    if (at + 46 + name_length > bytes.size()) return Bad(path, "corrupt zip central directory");
    const std::string name(reinterpret_cast<const char*>(bytes.data() + at + 46), name_length);
    at += 46 + name_length + skip;
    const std::string where = absl::StrCat(path, ": member ", name);
    if (packed == 0xffffffff || size == 0xffffffff) {
      return Bad(where, "a zip64 member (over 4 GB) is not supported");
    }
    if (local + 30 > bytes.size() || Little(bytes, local, 4) != kLocal) {
      return Bad(where, "corrupt local header");
    }
    const size_t data = local + 30 + Little(bytes, local + 26, 2) + Little(bytes, local + 28, 2);
    if (data + packed > bytes.size()) return Bad(where, "truncated");
    // Each member's data is its own: entries sharing data (a zip bomb's
    // trick) and arrays larger in sum than deflate can make of the file are
    // refused before anything is allocated.
    if (!claimed.insert(local).second) {
      return Bad(where, "shares its data with another member");
    }
    total += size;
    if (total > static_cast<uint64_t>(bytes.size()) * 1032 + 1024) {
      return Bad(where, absl::StrCat("the members declare ", total, " bytes, more than ",
                                     bytes.size(), " bytes of deflate data can hold"));
    }
    // Deflate expands at most about 1032 times: a larger declared size is a
    // corrupt (or hostile) archive, refused before it is allocated.
    if (method == 8 && size > packed * 1032 + 1024) {
      return Bad(where, absl::StrCat("declares ", size, " bytes from ", packed,
                                     " deflated ones, more than deflate can produce"));
    }
    std::vector<uint8_t> member(size);
    if (method == 0) {
      if (packed != size) return Bad(where, "stored member sizes disagree");
      if (size > 0) std::memcpy(member.data(), bytes.data() + data, size);
    } else if (method == 8) {
      z_stream stream{};
      if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) return Bad(where, "cannot start inflate");
      stream.next_in = const_cast<Bytef*>(bytes.data() + data);
      stream.avail_in = static_cast<uInt>(packed);
      stream.next_out = member.data();
      stream.avail_out = static_cast<uInt>(size);
      const int result = inflate(&stream, Z_FINISH);
      const bool complete = result == Z_STREAM_END && stream.total_out == size;
      inflateEnd(&stream);
      if (!complete) return Bad(where, "corrupt deflate data");
    } else {
      return Bad(where, absl::StrCat("compression method ", method,
                                     " is not supported (stored and deflate are)"));
    }
    if (crc32_z(0, member.data(), member.size()) != crc) {
      return Bad(where, "CRC mismatch: the archive is corrupt");
    }
    TC_ASSIGN_OR_RETURN(Array array, ParseNpy(std::move(member), where));
    out.emplace_back(std::string(absl::StripSuffix(name, ".npy")), std::move(array));
  }
  return out;
}

}  // namespace tc::nn
