// Writers of NumPy files for the tests that read them: an .npy file, and a
// zip archive of members (np.savez's stored form, or deflated as
// np.savez_compressed writes them).
#ifndef TENSORCUT_TESTS_NPZ_WRITER_H_
#define TENSORCUT_TESTS_NPZ_WRITER_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tc::testing {

using Bytes = std::vector<uint8_t>;

// An .npy file (version 1) with this header dict and data.
Bytes Npy(const std::string& dict, const Bytes& data);

// A zip archive of `members` (name, contents), each deflated when `deflated`.
Bytes Zip(const std::vector<std::pair<std::string, Bytes>>& members, bool deflated);

}  // namespace tc::testing

#endif  // TENSORCUT_TESTS_NPZ_WRITER_H_
