// Hostile safetensors files: each is refused with a UsageError naming the file, the tensor and
// what is wrong, from the header alone (before any GPU is looked for).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>

#include "ridge/errors.hpp"
#include "ridge/gpt2/decode.hpp"
#include "ridge/gpt2/reference.hpp"
#include "ridge/gpt2/safetensors.hpp"

using namespace ridge;

namespace {

class HostileSafetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("ridge_hostile_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A file with `header` as its JSON, `data_bytes` zero bytes of data, and a length field that
  // says `claimed_length` (default: the header's true length).
  std::string write_raw(const std::string& name, const std::string& header, std::size_t data_bytes,
                        std::optional<std::uint64_t> claimed_length = std::nullopt) {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    const std::uint64_t n = claimed_length.value_or(header.size());
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header << std::string(data_bytes, '\0');
    return path;
  }

  // Opening `path` throws a UsageError whose message holds the file's path and every fragment.
  static void expect_refused(const std::string& path, std::initializer_list<std::string> fragments) {
    try {
      gpt2::SafetensorsFile file(path);
      FAIL() << "accepted " << path;
    } catch (const UsageError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(path), std::string::npos) << message;
      for (const auto& f : fragments) EXPECT_NE(message.find(f), std::string::npos) << "'" << f << "' in " << message;
      // The same bytes from memory (what the fuzz target reads) are refused with the same words.
      try {
        gpt2::SafetensorsFile::from_bytes(file_bytes(path), path);
        ADD_FAILURE() << "from_bytes accepted " << path;
      } catch (const UsageError& from_memory) {
        EXPECT_EQ(std::string(from_memory.what()), message);
      }
    }
  }

  static std::string file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  std::filesystem::path dir_;
};

}  // namespace

TEST_F(HostileSafetensors, ElementCountOverflowIsRefused) {
  // [2^32, 2^32] F32 in 0 bytes: the element count wraps to 0 in 64 bits and used to be accepted.
  expect_refused(write_raw("overflow.safetensors",
                           R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0),
                 {"'w'", "overflows"});
  // 2^62 elements of 4 bytes: the count fits, the byte count does not.
  expect_refused(write_raw("bytes_overflow.safetensors",
                           R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", 0),
                 {"'w'", "overflows"});
  EXPECT_FALSE(gpt2::checked_byte_count({4294967296LL, 4294967296LL}, 4));
  EXPECT_EQ(gpt2::checked_byte_count({3, 0, 5}, 4), 0u);
  EXPECT_EQ(gpt2::checked_byte_count({768, 2304}, 2), 768u * 2304u * 2u);
  EXPECT_FALSE(gpt2::checked_byte_count({-1}, 4));
}

TEST_F(HostileSafetensors, OffsetsPastTheEndAreRefused) {
  expect_refused(write_raw("past_end.safetensors", R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[16,32]}})", 16),
                 {"'w'", "truncated", "32"});
}

TEST_F(HostileSafetensors, OverlappingTensorsAreRefused) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                             R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})";
  expect_refused(write_raw("overlap.safetensors", header, 24), {"'a'", "'b'", "overlap"});
  // Empty tensors take no bytes, so they never overlap; adjacent tensors do not either.
  const std::string fine = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                           R"("e":{"dtype":"F32","shape":[0],"data_offsets":[8,8]},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}})";
  EXPECT_NO_THROW(gpt2::SafetensorsFile(write_raw("adjacent.safetensors", fine, 24)));
}

TEST_F(HostileSafetensors, NegativeOrReversedOffsetsAndSizesAreRefused) {
  expect_refused(write_raw("negative.safetensors", R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[-16,0]}})", 16),
                 {"'w'", "data_offsets"});
  expect_refused(write_raw("reversed.safetensors", R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[16,0]}})", 16),
                 {"'w'", "end before"});
  expect_refused(write_raw("negative_size.safetensors", R"({"w":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})",
                           16),
                 {"'w'", "negative"});
}

TEST_F(HostileSafetensors, UnknownDtypeIsRefused) {
  expect_refused(write_raw("dtype.safetensors", R"({"w":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", 16),
                 {"'w'", "unknown dtype 'F128'"});
}

TEST_F(HostileSafetensors, HeaderLengthPastTheEndOrHugeIsRefused) {
  const std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  expect_refused(write_raw("long_header.safetensors", header, 4, header.size() + 1000), {"header claims"});
  // 2^64 - 1: must not allocate, nor wrap around when 8 is added.
  expect_refused(write_raw("huge_header.safetensors", header, 4, ~std::uint64_t{0}), {"limit"});
  expect_refused(write_raw("short.safetensors", "", 0, 0).substr(0), {"JSON"});
}

TEST_F(HostileSafetensors, NonJsonOrNonObjectHeaderIsRefused) {
  expect_refused(write_raw("garbage.safetensors", "\x01\x02garbage", 0), {"not valid JSON"});
  expect_refused(write_raw("array.safetensors", "[1,2,3]", 0), {"not a JSON object"});
  expect_refused(write_raw("entry.safetensors", R"({"w":42})", 0), {"'w'", "dtype"});
}

TEST_F(HostileSafetensors, WrongShapesForGpt2AreRefusedFromTheHeader) {
  const auto config = gpt2::preset("tiny");
  const auto weights = gpt2::random_weights(config, 3);
  const auto specs = gpt2::tensor_specs(config);
  const std::string good = (dir_ / "good.safetensors").string();
  gpt2::save_safetensors(weights, good);
  const gpt2::Config checked = gpt2::check_weights_file(good);
  EXPECT_EQ(checked.layers, config.layers);
  EXPECT_EQ(checked.context, config.context);

  // A layer norm with the wrong width: named, with the expected shape.
  std::vector<gpt2::SafetensorsTensor> tensors;
  for (std::size_t i = 0; i < specs.size(); ++i)
    tensors.push_back({specs[i].name, "F32", specs[i].shape, weights.tensors[i], {}});
  for (auto& t : tensors)
    if (t.name == "h.0.ln_2.bias") {
      t.shape = {t.shape[0] + 1};
      t.floats.push_back(0.0f);
    }
  const std::string bad = (dir_ / "bad_shape.safetensors").string();
  gpt2::write_safetensors(bad, tensors);
  try {
    gpt2::check_weights_file(bad);
    FAIL() << "accepted a wrong shape";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("h.0.ln_2.bias"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  // wte of rank 1.
  const std::string flat = write_raw("flat_wte.safetensors",
                                     R"({"wte.weight":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                     R"("wpe.weight":{"dtype":"F32","shape":[2,2],"data_offsets":[16,32]}})",
                                     32);
  EXPECT_THROW(gpt2::check_weights_file(flat), UsageError);
}

TEST_F(HostileSafetensors, DecodeOptionsCheckTheWeightsFileWithoutAGpu) {
  const std::string path = write_raw(
      "overflow.safetensors", R"({"wte.weight":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0);
  gpt2::DecodeOptions o;
  o.weights = path;
  EXPECT_THROW(o.validate(), UsageError);
  // A good file whose context is shorter than asked for.
  const auto config = gpt2::preset("tiny");
  const std::string good = (dir_ / "tiny.safetensors").string();
  gpt2::save_safetensors(gpt2::random_weights(config, 1), good);
  o.weights = good;
  o.contexts = {config.context};
  EXPECT_NO_THROW(o.validate());
  o.contexts = {config.context + 1};
  EXPECT_THROW(o.validate(), UsageError);
}

TEST_F(HostileSafetensors, DecodeOptionsCheckTheReferenceFileWithoutAGpu) {
  gpt2::DecodeOptions o;
  o.model = "tiny";
  o.contexts = {8};
  const auto config = gpt2::preset("tiny");
  const std::string path = (dir_ / "reference.safetensors").string();
  auto write = [&](std::int64_t vocab, const std::string& token_dtype) {
    gpt2::SafetensorsTensor tokens{"tokens", token_dtype, {1, 4}, {}, {}};
    if (token_dtype == "I32") tokens.ints = {1, 2, 3, 4};
    else tokens.floats = {1, 2, 3, 4};
    gpt2::write_safetensors(path, {tokens, {"logits", "F32", {1, vocab}, std::vector<float>(vocab, 0.5f), {}}});
  };
  write(config.vocab, "I32");
  o.check_logits = path;
  EXPECT_NO_THROW(o.validate());
  write(config.vocab + 1, "I32");  // logits for another vocabulary
  try {
    o.validate();
    FAIL() << "accepted logits of the wrong vocabulary";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'logits' has shape"), std::string::npos) << e.what();
  }
  write(config.vocab, "F32");  // tokens stored as floats
  EXPECT_THROW(o.validate(), UsageError);
}

TEST_F(HostileSafetensors, BytesInMemoryReadLikeTheFile) {
  gpt2::Weights weights = gpt2::random_weights(gpt2::preset("tiny"), 3);
  const std::string path = (dir_ / "tiny.safetensors").string();
  gpt2::save_safetensors(weights, path);
  const gpt2::SafetensorsFile on_disk(path);
  const auto in_memory = gpt2::SafetensorsFile::from_bytes(file_bytes(path), "tiny in memory");
  EXPECT_EQ(in_memory.path(), "tiny in memory");
  ASSERT_EQ(in_memory.names(), on_disk.names());
  ASSERT_FALSE(on_disk.names().empty());
  for (const auto& name : on_disk.names()) {
    EXPECT_EQ(in_memory.read_bytes(name), on_disk.read_bytes(name)) << name;
    EXPECT_EQ(in_memory.entry(name).shape, on_disk.entry(name).shape) << name;
  }
  EXPECT_EQ(in_memory.metadata(), on_disk.metadata());
}

TEST_F(HostileSafetensors, EmptyTensorsReadAsEmpty) {
  // Found by fuzzing (UBSan): an empty tensor was copied with memcpy from and to null pointers.
  // The input, with one tensor of every dtype: tests/unit/data/fuzz/safetensors/.
  const std::string path = std::string(RIDGE_SOURCE_DIR) + "/tests/unit/data/fuzz/safetensors/empty_tensor.safetensors";
  const gpt2::SafetensorsFile on_disk(path);
  const auto in_memory = gpt2::SafetensorsFile::from_bytes(file_bytes(path), path);
  for (const auto* file : {&on_disk, &in_memory}) {
    ASSERT_TRUE(file->contains("empty"));
    EXPECT_EQ(file->entry("empty").shape, (std::vector<std::int64_t>{0, 5}));
    EXPECT_TRUE(file->read_bytes("empty").empty());
    EXPECT_TRUE(file->read_floats("empty").empty());
    EXPECT_EQ(file->read_floats("f32"), (std::vector<float>{1, -2, 3.5f, 0}));
    EXPECT_EQ(file->read_ints("i32"), (std::vector<int>{7, -7}));
    EXPECT_THROW(file->read_ints("i64"), UsageError) << "2^40 does not fit in int";
  }
}
