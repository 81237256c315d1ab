#include "tests/npz_writer.h"

#include <zlib.h>

#include "catch2/catch.hpp"

namespace tc::testing {
namespace {

void Put(Bytes& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

}  // namespace

// An .npy file (version 1) with this header dict and data.
Bytes Npy(const std::string& dict, const Bytes& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  Bytes out = {0x93,
               'N',
               'U',
               'M',
               'P',
               'Y',
               1,
               0,
               static_cast<uint8_t>(header.size() & 0xff),
               static_cast<uint8_t>(header.size() >> 8)};
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// A zip archive of `members`, each deflated when `deflated`.
Bytes Zip(const std::vector<std::pair<std::string, Bytes>>& members, bool deflated) {
  Bytes out, directory;
  for (const auto& [name, data] : members) {
    Bytes packed = data;
    if (deflated) {
      packed.assign(compressBound(static_cast<uLong>(data.size())) + 64, 0);
      z_stream s{};
      REQUIRE(deflateInit2(&s, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
      s.next_in = const_cast<Bytef*>(data.data());
      s.avail_in = static_cast<uInt>(data.size());
      s.next_out = packed.data();
      s.avail_out = static_cast<uInt>(packed.size());
      REQUIRE(::deflate(&s, Z_FINISH) == Z_STREAM_END);
      packed.resize(s.total_out);
      deflateEnd(&s);
    }
    const uint64_t crc = crc32(0, data.data(), static_cast<uInt>(data.size()));
    const uint64_t offset = out.size();
    auto header = [&, &name = name, &data = data](Bytes& b, bool central) {
      Put(b, central ? 0x02014b50 : 0x04034b50, 4);
      if (central) Put(b, 20, 2);  // made by
      Put(b, 20, 2);               // needed
      Put(b, 0, 2);                // flags
      Put(b, deflated ? 8 : 0, 2);
      Put(b, 0, 4);  // time, date
      Put(b, crc, 4);
      Put(b, packed.size(), 4);
      Put(b, data.size(), 4);
      Put(b, name.size(), 2);
      Put(b, 0, 2);  // extra
      if (central) {
        Put(b, 0, 2);  // comment
        Put(b, 0, 4);  // disk, internal attributes
        Put(b, 0, 4);  // external attributes
        Put(b, offset, 4);
      }
      b.insert(b.end(), name.begin(), name.end());
    };
    header(out, false);
    out.insert(out.end(), packed.begin(), packed.end());
    header(directory, true);
  }
  const uint64_t start = out.size();
  out.insert(out.end(), directory.begin(), directory.end());
  Put(out, 0x06054b50, 4);
  Put(out, 0, 4);
  Put(out, members.size(), 2);
  Put(out, members.size(), 2);
  Put(out, directory.size(), 4);
  Put(out, start, 4);
  Put(out, 0, 2);
  return out;
}

}  // namespace tc::testing
