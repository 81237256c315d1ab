// Checkpoints: bitwise round trips, the file checked as safetensors by an
// independent reading of its header, every kind of corruption and mismatch
// giving its status with the module untouched, and atomic saves.
#include "nn/checkpoint.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "catch2/catch.hpp"
#include "nn/attention.h"
#include "nn/data/data_loader.h"
#include "nn/init.h"
#include "nn/layers.h"
#include "nn/models/models.h"
#include "tests/test_util.h"

namespace tc::nn {
namespace {

class Inner : public Module {
 public:
  Inner(DType dtype, uint64_t seed) {
    weight = register_parameter("weight", testing::Random({2, 3}, dtype, seed));
    bias = register_parameter("bias", testing::Random({3}, dtype, seed + 1));
  }
  Tensor weight, bias;
};

// fc.weight [2,3], fc.bias [3], scale [] and an i64 buffer "count" [2].
class Net : public Module {
 public:
  Net(DType dtype, uint64_t seed) {
    fc = register_module("fc", std::make_shared<Inner>(dtype, seed));
    scale = register_parameter("scale", testing::Random({}, dtype, seed + 2));
    count = register_buffer("count", testing::Random({2}, DType::kI64, seed + 3));
  }
  std::shared_ptr<Inner> fc;
  Tensor scale, count;
};

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string Bytes(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw_data()), t.bytes());
}

// Every parameter and buffer's bytes, to compare a module before and after.
std::vector<std::string> Snapshot(const Module& m) {
  std::vector<std::string> out;
  for (const auto& list : {m.named_parameters(), m.named_buffers()}) {
    for (const auto& [name, t] : list) out.push_back(name + "=" + t.type().ToString() + Bytes(t));
  }
  return out;
}

uint64_t HeaderLength(const std::string& file) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(file[i]);
  return n;
}

TEST_CASE("a module round-trips bitwise in f32 and f64") {
  for (DType dtype : {DType::kF32, DType::kF64}) {
    INFO(DTypeName(dtype));
    const std::string path = TempPath("roundtrip.safetensors");
    Net saved(dtype, 1);
    REQUIRE(save(saved, path).ok());
    Net loaded(dtype, 100);
    const Tensor handle = loaded.fc->weight;
    const void* storage = handle.raw_data();
    REQUIRE(Snapshot(loaded) != Snapshot(saved));
    const absl::Status status = load(loaded, path);
    REQUIRE(status.ok());
    CHECK(Snapshot(loaded) == Snapshot(saved));
    CHECK(handle.raw_data() == storage);  // copied into the existing storage
    CHECK(Bytes(handle) == Bytes(saved.fc->weight));
  }
}

TEST_CASE("every reference model round-trips exactly") {
  for (const std::string& name : nn::ModelNames()) {
    INFO(name);
    nn::ModelSpec saved = nn::MakeModel(name, 1).value();
    nn::ModelSpec loaded = nn::MakeModel(name, 2).value();  // different values
    const std::string path = TempPath(name + ".safetensors");
    REQUIRE(nn::save(*saved.module, path).ok());
    REQUIRE(nn::load(*loaded.module, path).ok());
    for (const auto& [a, b] :
         {std::pair{saved.module->named_parameters(), loaded.module->named_parameters()},
          std::pair{saved.module->named_buffers(), loaded.module->named_buffers()}}) {
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        INFO(a[i].first);
        CHECK(a[i].first == b[i].first);
        REQUIRE_TENSORS_CLOSE(b[i].second, a[i].second, 0, 0);
      }
    }
  }
}

TEST_CASE("the file is valid safetensors") {
  const std::string path = TempPath("format.safetensors");
  Net net(DType::kF32, 1);
  REQUIRE(save(net, path).ok());
  const std::string file = ReadFile(path);
  const uint64_t n = HeaderLength(file);
  REQUIRE(8 + n <= file.size());
  CHECK((8 + n) % 8 == 0);
  const std::string header = file.substr(8, n);
  CHECK(header.front() == '{');
  CHECK(header.find_last_not_of(' ') == header.rfind('}'));
  // In state_dict() order (a module's parameters, then its buffers, then
  // its children's, as PyTorch); offsets in bytes.
  CHECK(header.find(R"("scale":{"dtype":"F32","shape":[],"data_offsets":[0,4]})") !=
        std::string::npos);
  CHECK(header.find(R"("count":{"dtype":"I64","shape":[2],"data_offsets":[4,20]})") !=
        std::string::npos);
  CHECK(header.find(R"("fc.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[20,44]})") !=
        std::string::npos);
  CHECK(header.find(R"("fc.bias":{"dtype":"F32","shape":[3],"data_offsets":[44,56]})") !=
        std::string::npos);
  CHECK(file.size() == 8 + n + 56);
  const std::string data = file.substr(8 + n);
  CHECK(data.substr(0, 4) == Bytes(net.scale));
  CHECK(data.substr(4, 16) == Bytes(net.count));
  CHECK(data.substr(20, 24) == Bytes(net.fc->weight));
}

TEST_CASE("SaveTensors and LoadTensors keep names, order, dtypes, metadata") {
  const std::string path = TempPath("tensors.safetensors");
  Tensor bf16 = Tensor::Empty({3}, DType::kBF16);
  static_cast<uint16_t*>(bf16.raw_data())[1] = 0x3f80;  // 1.0 in bf16
  const NamedTensors tensors = {
      {"z \"quoted\"\n", testing::Random({2, 2}, DType::kF64, 1)},
      {"a.transposed", testing::NonContiguous(testing::Random({3, 2}, DType::kF32, 2))},
      {"mask", from_vector(std::vector<bool>{true, false, true}, {3})},
      {"half", bf16},
      {"counts", from_vector<int32_t>({-5, 7, INT32_MAX}, {3})},
      {"empty", zeros({0, 4})}};
  REQUIRE(SaveTensors(tensors, path, {{"format", "pt"}, {"note", "é\t"}}).ok());
  Metadata metadata;
  absl::StatusOr<NamedTensors> loaded = LoadTensors(path, &metadata);
  REQUIRE(loaded.ok());
  CHECK(metadata == Metadata{{"format", "pt"}, {"note", "é\t"}});
  REQUIRE(loaded->size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    CHECK((*loaded)[i].first == tensors[i].first);
    CHECK((*loaded)[i].second.type() == tensors[i].second.type());
    CHECK(Bytes((*loaded)[i].second) == Bytes(tensors[i].second.contiguous()));
  }
  CHECK(SaveTensors({{"a", zeros({1})}, {"a", zeros({1})}}, path).message() ==
        "checkpoint " + path + ": cannot save two tensors named a");
}

TEST_CASE("a save, or the check before it, removes the temporaries killed saves left") {
  const std::string path = TempPath("stale.safetensors");
  for (const char* leftover : {".tmp-a1B2c3", ".tmp-XyZ789"}) {
    std::ofstream(path + leftover) << "half a checkpoint";
  }
  std::ofstream(path + ".tmp-keep") << "not a save's temporary";
  std::ofstream(TempPath("other.safetensors.tmp-a1B2c3")) << "another path's";
  // Training checks its checkpoint's folder when it starts: a run killed
  // mid-save leaves nothing behind past the next start.
  REQUIRE(CheckWritable(path).ok());
  CHECK_FALSE(std::filesystem::exists(path + ".tmp-a1B2c3"));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp-XyZ789"));
  CHECK(std::filesystem::exists(path + ".tmp-keep"));
  std::ofstream(path + ".tmp-a1B2c3") << "half a checkpoint";
  REQUIRE(SaveTensors({{"a", zeros({1})}}, path).ok());
  CHECK_FALSE(std::filesystem::exists(path + ".tmp-a1B2c3"));
  CHECK_FALSE(std::filesystem::exists(path + ".tmp-XyZ789"));
  CHECK(std::filesystem::exists(path + ".tmp-keep"));
  CHECK(std::filesystem::exists(TempPath("other.safetensors.tmp-a1B2c3")));
  CHECK(LoadTensors(path).ok());
}

// Loads `bytes` as a checkpoint into a fresh module and returns the status,
// checking that the module did not change.
std::string LoadCorrupted(const std::string& bytes) {
  const std::string path = TempPath("corrupt.safetensors");
  WriteFile(path, bytes);
  Net net(DType::kF32, 7);
  const std::vector<std::string> before = Snapshot(net);
  const absl::Status status = load(net, path);
  CHECK(Snapshot(net) == before);
  const std::string prefix = "checkpoint " + path;
  REQUIRE(status.message().substr(0, prefix.size()) == prefix);
  return std::string(status.message().substr(prefix.size()));
}

// Replaces the first occurrence of `from` by `to` (same length keeps the header length).
std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

TEST_CASE("corrupted files give a status and leave the module unchanged") {
  const std::string path = TempPath("good.safetensors");
  REQUIRE(save(Net(DType::kF32, 1), path).ok());
  const std::string good = ReadFile(path);
  const uint64_t n = HeaderLength(good);

  CHECK(LoadCorrupted(good.substr(0, 5)) ==
        ": truncated: 5 bytes, too short for the 8-byte header length");
  CHECK(LoadCorrupted(good.substr(0, good.size() - 3)) ==
        ": the tensors cover 56 bytes but the data buffer has 53");
  CHECK(LoadCorrupted(good.substr(0, 8 + n / 2)) ==
        ": header length " + std::to_string(n) + " exceeds the file size (" +
            std::to_string(8 + n / 2) + " bytes) or the 100000000-byte limit");

  std::string flipped = good;
  flipped[7] ^= 0x40;  // the header length's top byte
  CHECK(LoadCorrupted(flipped) == ": header length " + std::to_string(n | 0x40ull << 56) +
                                      " exceeds the file size (" + std::to_string(good.size()) +
                                      " bytes) or the 100000000-byte limit");
  flipped = good;
  flipped[8 + 1] ^= 0x01;  // '"' -> '#' in the JSON
  CHECK(LoadCorrupted(flipped) ==
        ": invalid header: parse error at line 1, column 2: syntax error while parsing object "
        "key - invalid literal; last read: '{#'; expected string literal");
  CHECK(LoadCorrupted(Replace(good, "\"shape\":[2,3]", "\"shape\":[2,3,")) ==
        ": invalid header: parse error at line 1, column 207: syntax error while parsing value - "
        "unexpected ','; expected '[', '{', or a literal");
  // An entry without dtype or shape once loaded as f32, or as a scalar.
  CHECK(LoadCorrupted(Replace(good, "\"dtype\":\"F32\",", "")) ==
        ": invalid header: scale: missing field \"dtype\"");
  CHECK(LoadCorrupted(Replace(good, "\"shape\":[2,3],", "")) ==
        ": invalid header: fc.weight: missing field \"shape\"");
  // Dims past 2^60 elements.
  CHECK(LoadCorrupted(Replace(good, "\"shape\":[2,3]", "\"shape\":[4294967296,4294967296]")) ==
        ": invalid header: fc.weight: shape [4294967296,4294967296] has more "
        "than 2^60 elements");
  // 20 digits: 18446744073709551728 once wrapped to 112 and loaded.
  CHECK(LoadCorrupted(Replace(good, "\"shape\":[2,3]", "\"shape\":[2,18446744073709551728]")) ==
        ": invalid header: fc.weight.shape must be a non-negative integer below 2^63, got "
        "18446744073709551728");
  CHECK(LoadCorrupted(Replace(good, "[20,44]", "[20,48]")) ==
        ": fc.weight: f32[2,3] needs 24 bytes but data_offsets [20, 48] hold 28");
  // One bit of a weight flipped on disk: the header's CRC-32 no longer matches.
  flipped = good;
  flipped[8 + n + 21] ^= 0x10;
  CHECK_THAT(LoadCorrupted(flipped),
             Catch::StartsWith(": the data does not match its checksum (metadata "
                               "\"tensorcut.data_crc32\" is \"") &&
                 Catch::EndsWith("): the file was damaged after it was written"));
  CHECK(LoadCorrupted(Replace(good, "[44,56]", "[40,52]")) ==
        ": fc.bias: data_offsets [40, 52] overlap the previous tensor");
  CHECK(LoadCorrupted(Replace(good, "[44,56]", "[48,60]")) ==
        ": fc.bias: data_offsets [48, 60] leave a gap after byte 44");
  CHECK(LoadCorrupted(Replace(good, "[44,56]", "[56,44]")) ==
        ": fc.bias: data_offsets [56, 44] are reversed");
  CHECK(LoadCorrupted(Replace(good, "\"F32\"", "\"F16\"")) ==
        ": invalid header: scale: unsupported dtype \"F16\"");
  CHECK(LoadCorrupted(Replace(good, "\"dtype\"", "\"dtypo\"")) ==
        ": invalid header: scale: unknown field \"dtypo\"");
  CHECK(LoadCorrupted(Replace(good, "\"fc.bias\"", "\"scale\"  ")) ==
        ": invalid header: duplicate entry scale");
  CHECK(LoadCorrupted(Replace(good, "[44,56]", "[44,5.]")) ==
        ": invalid header: parse error at line 1, column 290: syntax error while parsing value - "
        "invalid number; expected digit after '.'; last read: '5.]'");
  CHECK(LoadCorrupted("") == ": truncated: 0 bytes, too short for the 8-byte header length");
  // Names and values are UTF-8 (a save writes them so; once, any bytes
  // loaded): a stray continuation byte, a truncated sequence, an overlong
  // form, a surrogate.
  for (const std::string bad :
       {std::string("sc\x80") + "le", std::string("sca\xe2\x82"), std::string("sc\xc0\xaf") + "e",
        std::string("s\xed\xa0\x80") + "e"}) {
    REQUIRE(bad.size() == 5);
    CHECK_THAT(LoadCorrupted(Replace(good, "\"scale\"", "\"" + bad + "\"")),
               Catch::Contains("invalid string: ill-formed UTF-8 byte"));
  }

  Net net(DType::kF32, 7);
  const absl::Status missing = load(net, TempPath("no_such.safetensors"));
  CHECK(missing.code() == absl::StatusCode::kNotFound);
  CHECK(missing.message() == "cannot open checkpoint " + TempPath("no_such.safetensors") +
                                 ": No such file or directory");
  // A FIFO once made the load hang in open(); a folder is not a file either.
  const std::string fifo = TempPath("fifo.safetensors");
  std::filesystem::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK(load(net, fifo).message() == "checkpoint " + fifo + " is not a regular file");
  CHECK(load(net, TempPath("")).message() ==
        "checkpoint " + TempPath("") + " is not a regular file");
}

// A file of one tensor "a" whose header is `header`, with `data_bytes` of data.
std::string FileWithHeader(const std::string& header, int data_bytes = 4) {
  const uint64_t length = header.size();
  return std::string(reinterpret_cast<const char*>(&length), 8) + header +
         std::string(data_bytes, '\0');
}

TEST_CASE("a header of another structure says where and what was expected") {
  const std::string a = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  CHECK(LoadCorrupted(FileWithHeader("[" + a + "]")) ==
        ": invalid header: the header must be an object, got an array");
  CHECK(LoadCorrupted(FileWithHeader(R"({"a":7})")) ==
        ": invalid header: a must be an object, got 7");
  // Found by the safetensors fuzz target: an empty name loaded, but a save refuses it.
  CHECK(LoadCorrupted(FileWithHeader(R"({"":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})")) ==
        ": invalid header: an entry with an empty name");
  CHECK(
      LoadCorrupted(FileWithHeader(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})")) ==
      ": invalid header: a.shape must be a non-negative integer below 2^63, got -1");
  CHECK(LoadCorrupted(
            FileWithHeader(R"({"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})")) ==
        ": invalid header: a.shape must be a non-negative integer below 2^63, got 1.0");
  CHECK(LoadCorrupted(FileWithHeader(R"({"a":{"dtype":null,"shape":[1],"data_offsets":[0,4]}})")) ==
        ": invalid header: a.dtype must be a string, got null");
  CHECK(LoadCorrupted(
            FileWithHeader(R"({"a":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})")) ==
        ": invalid header: a.shape must be a non-negative integer below 2^63, got an array");
  CHECK(LoadCorrupted(FileWithHeader(R"({"a":{"dtype":"F32","dtype":"F32","shape":[1]}})")) ==
        ": invalid header: a: duplicate field \"dtype\"");
  CHECK(LoadCorrupted(FileWithHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})")) ==
        ": invalid header: a.data_offsets needs 2 values");
  CHECK(LoadCorrupted(FileWithHeader(R"({"__metadata__":{"step":3},)" + a + "}")) ==
        ": invalid header: __metadata__.step must be a string, got 3");
  CHECK(LoadCorrupted(FileWithHeader("{" + a + "} x")) ==
        ": invalid header: parse error at line 1, column 56: syntax error while parsing value - "
        "invalid literal; last read: '4]}} x'; expected end of input");
  CHECK(
      LoadCorrupted(FileWithHeader(R"({"a":{"dtype":"F32","shape":[-0],"data_offsets":[0,4]}})")) ==
      ": invalid header: a.shape must be a non-negative integer below 2^63, got -0");
  CHECK(LoadCorrupted(FileWithHeader(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[)" +
                                     absl::StrJoin(std::vector<int>(1000, 7), ",") + "]}}")) ==
        ": invalid header: a.data_offsets has more than 2 values");
  CHECK(LoadCorrupted(FileWithHeader(R"({"a":{"dtype":"F32","shape":[)" +
                                     absl::StrJoin(std::vector<int>(100000, 1), ",") + "]}}")) ==
        ": invalid header: a.shape has more than 64 values");
  CHECK(LoadCorrupted(FileWithHeader("\xEF\xBB\xBF{" + a + "}")) ==
        ": invalid header: it starts with a byte-order mark");
  // Deep nesting stops at the first array where none may be, without recursion.
  CHECK(LoadCorrupted(
            FileWithHeader(R"({"a":{"dtype":"F32","shape":)" + std::string(100000, '[') + "}}")) ==
        ": invalid header: a.shape must be a non-negative integer below 2^63, got an array");
}

TEST_CASE("CheckWritable tells before a save whether it could write, and leaves nothing") {
  CHECK(CheckWritable("/nonexistent/x.safetensors").message() ==
        "cannot write in /nonexistent: No such file or directory");
  const std::string path = TempPath("writable.safetensors");
  REQUIRE(CheckWritable(path).ok());
  for (const auto& entry : std::filesystem::directory_iterator(TempPath(""))) {
    CHECK(entry.path().filename().string().rfind("writable.safetensors", 0) != 0);
  }
}

TEST_CASE("a save through a symbolic link replaces its target; what is not a file is refused") {
  Linear model(3, 2);
  const std::string target = TempPath("link_target.safetensors");
  const std::string link = TempPath("link.safetensors");
  std::filesystem::remove(link);
  REQUIRE(save(model, target).ok());
  std::filesystem::create_symlink(target, link);
  init::zeros_(model.weight());
  REQUIRE(save(model, link).ok());
  CHECK(std::filesystem::is_symlink(link));
  Linear loaded(3, 2);
  REQUIRE(load(loaded, target).ok());
  CHECK(loaded.weight().to_vector<float>() == std::vector<float>(6, 0.f));

  // A FIFO (as /dev/null, a device) and a directory stay as they were.
  const std::string fifo = TempPath("fifo.safetensors");
  std::filesystem::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const std::string refused = ": a checkpoint is written only over a regular file";
  CHECK(save(model, fifo).message() == fifo + " is not a regular file" + refused);
  CHECK(CheckWritable(fifo).message() == fifo + " is not a regular file" + refused);
  CHECK(std::filesystem::is_fifo(fifo));
  const std::string dir = TempPath("a_directory");
  std::filesystem::create_directories(dir);
  CHECK(CheckWritable(dir).message() == dir + " is a directory" + refused);
  CHECK(save(model, dir).message() == dir + " is a directory" + refused);
  CHECK(std::filesystem::is_directory(dir));
  // A link to the FIFO names both.
  const std::string fifo_link = TempPath("fifo_link.safetensors");
  std::filesystem::remove(fifo_link);
  std::filesystem::create_symlink(fifo, fifo_link);
  CHECK(save(model, fifo_link).message() == fifo_link + " is not a regular file (" +
                                                std::filesystem::canonical(fifo).string() + ")" +
                                                refused);
  CHECK(std::filesystem::is_fifo(fifo));
}

TEST_CASE("names and metadata that are not UTF-8 are refused at save, which writes nothing") {
  const std::string path = TempPath("not_utf8.safetensors");
  std::filesystem::remove(path);
  CHECK(SaveTensors({{"sc\x80le", zeros({1})}}, path).message() ==
        "checkpoint " + path + ": cannot save a tensor named \"sc\\x80le\": not valid UTF-8");
  CHECK(SaveTensors({{"a", zeros({1})}}, path, {{"k\xff", "v"}}).message() ==
        "checkpoint " + path + ": cannot save metadata \"k\\xff\": its key is not valid UTF-8");
  CHECK(SaveTensors({{"a", zeros({1})}}, path, {{"k", "\xc0\xaf"}}).message() ==
        "checkpoint " + path + ": cannot save metadata \"k\": its value is not valid UTF-8");
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("metadata keys are unique and strings UTF-8: a duplicate is an error, not last-wins") {
  const std::string path = TempPath("metadata.safetensors");
  REQUIRE(SaveTensors({{"a", zeros({1})}}, path, {{"ab", "1"}, {"cd", "é"}}).ok());
  const std::string good = ReadFile(path);
  std::ofstream(path, std::ios::binary) << Replace(good, "\"cd\"", "\"ab\"");
  Metadata metadata = {{"kept", "when the load fails"}};
  const absl::StatusOr<NamedTensors> loaded = LoadTensors(path, &metadata);
  REQUIRE_FALSE(loaded.ok());
  CHECK_THAT(std::string(loaded.status().message()), Catch::EndsWith(": duplicate metadata ab"));
  CHECK(metadata == Metadata{{"kept", "when the load fails"}});
  // Valid multi-byte UTF-8 loads as it was written.
  std::ofstream(path, std::ios::binary) << good;
  REQUIRE(LoadTensors(path, &metadata).ok());
  CHECK(metadata["cd"] == "é");
}

TEST_CASE("a checkpoint that does not match the module is rejected whole") {
  const std::string path = TempPath("mismatch.safetensors");
  Net reference(DType::kF32, 1);
  // Wrong dtype, wrong shape, a missing and an unexpected key in one file.
  const NamedTensors tensors = {{"fc.weight", testing::Random({3, 2}, DType::kF32, 1)},
                                {"fc.b", zeros({3})},
                                {"scale", zeros({}, DType::kF64)},
                                {"count", zeros({2}, DType::kI64)}};
  REQUIRE(SaveTensors(tensors, path).ok());
  Net net(DType::kF32, 7);
  const std::vector<std::string> before = Snapshot(net);
  const absl::Status status = load(net, path);
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(status.message() == "checkpoint " + path +
                                " does not match the module: missing: fc.bias; unexpected: fc.b; "
                                "mismatched: scale (expected f32[], file has f64[]), "
                                "fc.weight (expected f32[2,3], file has f32[3,2])");
  CHECK(Snapshot(net) == before);

  // A bool buffer byte other than 0 or 1 is corruption, not a value.
  Tensor mask = Tensor::Empty({2}, DType::kBool);
  static_cast<unsigned char*>(mask.raw_data())[1] = 2;
  REQUIRE(SaveTensors({{"mask", mask}}, path).ok());
  CHECK(LoadTensors(path).status().message() ==
        "checkpoint " + path + ": mask: element 1 is 2, not a BOOL (0 or 1)");
}

TEST_CASE("optimizer state is saved and restored with the module") {
  const std::string path = TempPath("train.safetensors");
  auto train = [](Net& net, Adam& opt, int steps) {
    for (int i = 0; i < steps; ++i) {
      for (const auto& [name, p] : net.named_parameters()) p.set_grad(ones(p.shape()) * 0.5);
      opt.step();
    }
  };
  Net straight(DType::kF32, 1);
  Adam straight_opt(straight.named_parameters(), 0.1);
  train(straight, straight_opt, 5);

  Net net(DType::kF32, 1);
  Adam opt(net.named_parameters(), 0.1);
  train(net, opt, 3);
  REQUIRE(save(net, path, &opt).ok());
  CHECK(ReadFile(path).find("\"optim.fc.weight.exp_avg_sq\"") != std::string::npos);

  Net resumed(DType::kF32, 9);
  Adam resumed_opt(resumed.named_parameters(), 0.1);
  REQUIRE(load(resumed, path, &resumed_opt).ok());
  train(resumed, resumed_opt, 2);
  CHECK(Snapshot(resumed) == Snapshot(straight));

  // Without an optimizer the state is ignored; a model-only checkpoint lacks it.
  Net inference(DType::kF32, 9);
  REQUIRE(load(inference, path).ok());
  CHECK(Snapshot(inference) == Snapshot(net));
  REQUIRE(save(net, path).ok());
  SGD sgd(resumed.named_parameters(), 0.1);
  CHECK(load(resumed, path, &sgd).message() ==
        "checkpoint " + path +
            " does not match the module: missing: optim.scale.step, optim.fc.weight.step, "
            "optim.fc.bias.step");
}

TEST_CASE("a checkpoint saved before the groups' options were saved still resumes") {
  const std::string path = TempPath("old.safetensors");
  Net net(DType::kF32, 1);
  Adam opt(net.named_parameters(), 0.1);
  for (const auto& [name, p] : net.named_parameters()) p.set_grad(ones(p.shape()));
  opt.step();
  REQUIRE(save(net, path, &opt).ok());
  // The file as the previous version wrote it: no optim.param_groups.*.
  REQUIRE(SaveTensors(WithoutGroupOptions(LoadTensors(path).value()), path).ok());
  Net resumed(DType::kF32, 9);
  Adam resumed_opt(resumed.named_parameters(), 0.05);
  REQUIRE(load(resumed, path, &resumed_opt).ok());
  CHECK(Snapshot(resumed) == Snapshot(net));
  CHECK(resumed_opt.state()[0].second.item<int64_t>() == 1);  // the step count loaded
  CHECK(resumed_opt.lr() == 0.05);                            // the options kept
}

TEST_CASE("a learning-rate scheduler's state is saved and restored with the optimizer's") {
  const std::string path = TempPath("scheduled.safetensors");
  auto train = [](Net& net, Adam& opt, LRScheduler& schedule, int steps) {
    for (int i = 0; i < steps; ++i) {
      for (const auto& [name, p] : net.named_parameters()) p.set_grad(ones(p.shape()) * 0.5);
      opt.step();
      schedule.step();
    }
  };
  Net straight(DType::kF32, 1);
  Adam straight_opt(straight.named_parameters(), 0.1);
  CosineAnnealingLR straight_schedule(straight_opt, 8);
  train(straight, straight_opt, straight_schedule, 6);

  Net net(DType::kF32, 1);
  Adam opt(net.named_parameters(), 0.1);
  CosineAnnealingLR schedule(opt, 8);
  train(net, opt, schedule, 3);
  REQUIRE(save(net, path, &opt, &schedule).ok());

  Net resumed(DType::kF32, 9);
  Adam resumed_opt(resumed.named_parameters(), 0.1);
  CosineAnnealingLR resumed_schedule(resumed_opt, 8);
  REQUIRE(load(resumed, path, &resumed_opt, &resumed_schedule).ok());
  CHECK(resumed_schedule.last_epoch() == 3);
  train(resumed, resumed_opt, resumed_schedule, 3);
  CHECK(Snapshot(resumed) == Snapshot(straight));
  CHECK(resumed_opt.lr() == straight_opt.lr());

  // Without a scheduler its state is skipped; one of another kind is refused
  // before anything changes.
  Net plain(DType::kF32, 9);
  Adam plain_opt(plain.named_parameters(), 0.1);
  REQUIRE(load(plain, path, &plain_opt).ok());
  Net other(DType::kF32, 9);
  Adam other_opt(other.named_parameters(), 0.1);
  ReduceLROnPlateau plateau(other_opt);
  const std::vector<std::string> before = Snapshot(other);
  CHECK(load(other, path, &other_opt, &plateau).message() ==
        "checkpoint " + path +
            " does not match the module: missing: optim.lr_scheduler.best, "
            "optim.lr_scheduler.num_bad_epochs, optim.lr_scheduler.cooldown_counter");
  CHECK(Snapshot(other) == before);
}

// n examples: features f32 [n, 1] = i, labels i64 [n] = i.
std::shared_ptr<ArrayDataset> Numbered(int64_t n) {
  Array x{ElementType::kU8, {n, 1}, std::vector<uint8_t>(static_cast<size_t>(n))};
  Array y{ElementType::kI64, {n}, std::vector<uint8_t>(static_cast<size_t>(8 * n))};
  for (int64_t i = 0; i < n; ++i) {
    x.bytes[i] = static_cast<uint8_t>(i);
    std::memcpy(&y.bytes[8 * i], &i, 8);
  }
  return std::make_shared<ArrayDataset>(
      std::vector<ArrayDataset::Field>{{x, DType::kF32, 1.0}, {y, DType::kI64}});
}

TEST_CASE("a data loader's position is saved and restored with the training state") {
  const std::string path = TempPath("resumable.safetensors");
  const DataLoaderOptions shuffled{.batch_size = 3, .shuffle = true, .seed = 4};
  Net net(DType::kF32, 1);
  Adam opt(net.named_parameters(), 0.1);
  DataLoader loader(Numbered(10), shuffled);
  for (int i = 0; i < 5; ++i) REQUIRE(loader.Next().ok());
  REQUIRE(loader.position() == DataLoader::Position{1, 1});
  REQUIRE(save(net, path, {.optimizer = &opt, .data = &loader}).ok());
  CHECK(ReadFile(path).find("\"data_loader.epoch\"") != std::string::npos);

  Net resumed(DType::kF32, 9);
  Adam resumed_opt(resumed.named_parameters(), 0.1);
  DataLoader resumed_loader(Numbered(10), shuffled);
  REQUIRE(load(resumed, path, {.optimizer = &resumed_opt, .data = &resumed_loader}).ok());
  CHECK(resumed_loader.position() == DataLoader::Position{1, 1});
  for (int i = 0; i < 4; ++i) {
    CHECK(resumed_loader.Next().value()[1].to_vector<int64_t>() ==
          loader.Next().value()[1].to_vector<int64_t>());
  }

  // Without a data loader the position is skipped; a loader whose epoch has
  // no batch 1 is refused and nothing changes.
  Net plain(DType::kF32, 9);
  REQUIRE(load(plain, path).ok());
  CHECK(Snapshot(plain) == Snapshot(net));
  Net other(DType::kF32, 9);
  Adam other_opt(other.named_parameters(), 0.1);
  DataLoader short_loader(Numbered(3), shuffled);
  const std::vector<std::string> before = Snapshot(other);
  const absl::Status status = load(other, path, {.optimizer = &other_opt, .data = &short_loader});
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(status.message().find("checkpoint " + path + ": ") == 0);
  CHECK(Snapshot(other) == before);
  CHECK(short_loader.position() == DataLoader::Position{0, 0});
}

TEST_CASE("a load that fails after the data loader's position was read puts the position back") {
  const std::string path = TempPath("bad_step.safetensors");
  Net net(DType::kF32, 1);
  Adam opt(net.named_parameters(), 0.1);
  DataLoader loader(Numbered(10), {.batch_size = 3});
  REQUIRE(loader.Next().ok());
  REQUIRE(save(net, path, {.optimizer = &opt, .data = &loader}).ok());
  // A negative step count: the optimizer refuses it after the position was set.
  NamedTensors file = LoadTensors(path).value();
  for (auto& [name, t] : file) {
    if (name == "optim.scale.step") t = full({}, -1, DType::kI64);
  }
  REQUIRE(SaveTensors(file, path).ok());

  Net resumed(DType::kF32, 9);
  Adam resumed_opt(resumed.named_parameters(), 0.1);
  DataLoader resumed_loader(Numbered(10), {.batch_size = 3});
  for (int i = 0; i < 2; ++i) REQUIRE(resumed_loader.Next().ok());
  const std::vector<std::string> before = Snapshot(resumed);
  const absl::Status status =
      load(resumed, path, {.optimizer = &resumed_opt, .data = &resumed_loader});
  CHECK(status.message() == "checkpoint " + path +
                                ": Adam state: optim.scale.step is -1; a step count cannot be "
                                "negative");
  CHECK(resumed_loader.position() == DataLoader::Position{0, 2});
  CHECK(Snapshot(resumed) == before);
}

TEST_CASE("a load that is not strict keeps what the file lacks and ignores what the module lacks") {
  const std::string path = TempPath("partial.safetensors");
  Net source(DType::kF32, 1);
  // The file: fc.weight only, and a key of another model.
  REQUIRE(SaveTensors({{"fc.weight", source.fc->weight}, {"head.weight", zeros({4})}}, path).ok());
  Net net(DType::kF32, 9);
  const std::vector<float> bias = net.fc->bias.to_vector<float>();
  CHECK(load(net, path).message() ==
        "checkpoint " + path +
            " does not match the module: missing: scale, count, fc.bias; unexpected: head.weight");
  REQUIRE(load(net, path, TrainingState{}, {.strict = false}).ok());
  CHECK(net.fc->weight.to_vector<float>() == source.fc->weight.to_vector<float>());
  CHECK(net.fc->bias.to_vector<float>() == bias);

  // Shapes and dtypes must still match, and nothing changes when they do not.
  REQUIRE(SaveTensors({{"fc.weight", zeros({3, 2})}, {"scale", zeros({})}}, path).ok());
  const std::vector<std::string> before = Snapshot(net);
  CHECK(load(net, path, TrainingState{}, {.strict = false}).message() ==
        "checkpoint " + path +
            " does not match the module: mismatched: fc.weight (expected f32[2,3], file has "
            "f32[3,2])");
  CHECK(Snapshot(net) == before);

  // The training state given must be there in full.
  Adam opt(net.named_parameters(), 0.1);
  REQUIRE(SaveTensors({{"fc.weight", source.fc->weight}}, path).ok());
  CHECK(load(net, path, {.optimizer = &opt}, {.strict = false}).message().find("missing: optim.") !=
        std::string::npos);
  CHECK(Snapshot(net) == before);
}

TEST_CASE("saving is atomic") {
  Net net(DType::kF32, 1);
  const std::string bad = TempPath("no_such_dir/ckpt.safetensors");
  const absl::Status status = save(net, bad);
  CHECK(status.message() == "cannot create checkpoint " + bad + ": No such file or directory");
  CHECK(!std::filesystem::exists(bad));

  // A write that fails half-way (the file size limit, as a full disk would)
  // leaves the existing checkpoint as it was and no temporary file behind.
  const std::filesystem::path dir = TempPath("atomic");
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "ckpt.safetensors").string();
  REQUIRE(save(net, path).ok());
  const std::string before = ReadFile(path);
  const NamedTensors big = {{"big", zeros({1 << 16})}};
  rlimit old_limit;
  getrlimit(RLIMIT_FSIZE, &old_limit);
  signal(SIGXFSZ, SIG_IGN);
  rlimit limit = old_limit;
  limit.rlim_cur = 4096;
  setrlimit(RLIMIT_FSIZE, &limit);
  const absl::Status failed = SaveTensors(big, path);
  setrlimit(RLIMIT_FSIZE, &old_limit);
  CHECK(failed.message() == "cannot write checkpoint " + path + ": File too large");
  CHECK(ReadFile(path) == before);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files += entry.exists();
  CHECK(files == 1);
}

// The layers whose PyTorch state_dict the fixture lists, built with the
// fixture's arguments.
std::map<std::string, std::shared_ptr<Module>> FixtureModules() {
  auto list = std::make_shared<ModuleList>();
  list->push_back(std::make_shared<Linear>(2, 3));
  list->push_back(std::make_shared<Linear>(3, 1));
  auto dict = std::make_shared<ModuleDict>();
  dict->insert("a", std::make_shared<Linear>(2, 3));
  return {
      {"conv1d", std::make_shared<Conv1d>(4, 6, 3, 1, 0, 1, 2)},
      {"conv2d", std::make_shared<Conv2d>(3, 4, IntPair(2, 3))},
      {"conv_transpose2d", std::make_shared<ConvTranspose2d>(4, 6, 3, 1, 0, 0, 2)},
      {"batch_norm1d", std::make_shared<BatchNorm1d>(3)},
      {"group_norm", std::make_shared<GroupNorm>(2, 6)},
      {"layer_norm", std::make_shared<LayerNorm>(std::vector<int64_t>{3, 4})},
      {"embedding", std::make_shared<Embedding>(10, 3)},
      {"multihead_attention", std::make_shared<MultiheadAttention>(8, 2)},
      {"lstm", std::make_shared<LSTM>(3, 4, 2)},
      {"gru", std::make_shared<GRU>(3, 5)},
      {"module_list", list},
      {"module_dict", dict},
  };
}

TEST_CASE("checkpoints of the layers have PyTorch's keys, order, dtypes and shapes") {
  std::ifstream fixture("tests/nn/testdata/torch_state_dicts.txt");
  REQUIRE(fixture.good());
  std::map<std::string, std::shared_ptr<Module>> modules = FixtureModules();
  std::string line;
  size_t checked = 0;
  while (std::getline(fixture, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t colon = line.find(':');
    const std::string key = line.substr(0, colon);
    INFO(line);
    REQUIRE(modules.count(key) == 1);
    // "<name> <type>" entries after the module's constructor call.
    const std::string entries = line.substr(line.rfind("): ") + 3);
    std::vector<std::string> want;
    for (absl::string_view entry : absl::StrSplit(entries, " | ")) want.emplace_back(entry);
    const std::string path = TempPath(key + ".safetensors");
    REQUIRE(save(*modules[key], path).ok());
    const NamedTensors saved = LoadTensors(path).value();
    std::vector<std::string> got;
    for (const auto& [name, t] : saved) {
      got.push_back(name + " " + t.type().ToString());
    }
    CHECK(got == want);
    ++checked;
  }
  CHECK(checked == modules.size());
}

}  // namespace
}  // namespace tc::nn
