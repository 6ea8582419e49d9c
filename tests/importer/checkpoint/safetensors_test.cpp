#include "importer/checkpoint/safetensors.h"

#include "engine/core/limits.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tests/test_files.h"

namespace arch {
namespace {

using testing::TempDir;

Tensor f32_tensor(Dims shape, std::vector<float> values) {
  Tensor t = Tensor::zeros(DType::F32, std::move(shape));
  std::memcpy(t.data, values.data(), values.size() * 4);
  return t;
}

template <class T>
std::vector<T> values_of(const Tensor& t) {
  const T* p = static_cast<const T*>(t.data);
  return std::vector<T>(p, p + t.numel());
}

TEST(Safetensors, RoundTripKeepsValuesShapesAndMetadata) {
  TempDir dir;
  Tensor f32 = f32_tensor({2, 3}, {1.5f, -2.f, 3.25f, 0.f, 1e-8f, -7.f});
  Tensor bf16 = Tensor::zeros(DType::BF16, {3});
  auto* b = static_cast<uint16_t*>(bf16.data);
  b[0] = f32_to_bf16(1.0f), b[1] = f32_to_bf16(-0.5f), b[2] = f32_to_bf16(3.0f);
  Tensor f16 = Tensor::zeros(DType::F16, {2, 1});
  auto* h = static_cast<uint16_t*>(f16.data);
  h[0] = 0x3c00, h[1] = 0xc000;  // 1.0, -2.0
  Tensor i64 = Tensor::zeros(DType::I64, {2});
  static_cast<int64_t*>(i64.data)[0] = -5, static_cast<int64_t*>(i64.data)[1] = int64_t(1) << 40;
  Tensor scalar = f32_tensor({}, {42.f});
  Tensor empty = Tensor::zeros(DType::F32, {0, 4});

  std::string path = dir / "rt.safetensors";
  ASSERT_TRUE(write_safetensors(path, {{"w.f32", f32}, {"w.bf16", bf16}, {"w.f16", f16}, {"ids", i64},
                                       {"scalar", scalar}, {"empty", empty}},
                                {{"format", "pt"}, {"note", "round trip"}})
                  .ok());

  // The data section starts 8-aligned: the header is padded with spaces.
  std::string bytes = testing::read_file(path);
  uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ((8 + header_len) % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + header_len + 24 + 6 + 4 + 16 + 4 + 0);

  auto r = read_safetensors(path);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const SafetensorsFile& f = *r;
  EXPECT_EQ(f.path, path);
  EXPECT_EQ(f.metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"note", "round trip"}}));
  ASSERT_EQ(f.tensors.size(), 6u);

  const Tensor& rf32 = f.tensors.at("w.f32");
  EXPECT_EQ(rf32.dtype, DType::F32);
  EXPECT_EQ(rf32.shape, (Dims{2, 3}));
  EXPECT_EQ(values_of<float>(rf32), (std::vector<float>{1.5f, -2.f, 3.25f, 0.f, 1e-8f, -7.f}));

  const Tensor& rbf16 = f.tensors.at("w.bf16");
  EXPECT_EQ(rbf16.dtype, DType::BF16);
  EXPECT_EQ(rbf16.shape, (Dims{3}));
  EXPECT_EQ(values_of<float>(to_f32(rbf16)), (std::vector<float>{1.0f, -0.5f, 3.0f}));

  const Tensor& rf16 = f.tensors.at("w.f16");
  EXPECT_EQ(rf16.dtype, DType::F16);
  EXPECT_EQ(rf16.shape, (Dims{2, 1}));
  EXPECT_EQ(values_of<float>(to_f32(rf16)), (std::vector<float>{1.0f, -2.0f}));

  const Tensor& rids = f.tensors.at("ids");
  EXPECT_EQ(rids.dtype, DType::I64);
  EXPECT_EQ(values_of<int64_t>(rids), (std::vector<int64_t>{-5, int64_t(1) << 40}));

  EXPECT_EQ(f.tensors.at("scalar").shape, Dims{});
  EXPECT_EQ(values_of<float>(f.tensors.at("scalar")), std::vector<float>{42.f});
  EXPECT_EQ(f.tensors.at("empty").shape, (Dims{0, 4}));
  EXPECT_EQ(f.tensors.at("empty").nbytes(), 0u);
}

TEST(Safetensors, TensorsAreViewsThatOutliveTheFileObject) {
  TempDir dir;
  std::string path = dir / "v.safetensors";
  ASSERT_TRUE(write_safetensors(path, {{"a", f32_tensor({2}, {3.f, 4.f})}}).ok());
  Tensor kept;
  {
    auto r = read_safetensors(path);
    ASSERT_TRUE(r.ok()) << r.error().message;
    kept = r->tensors.at("a");
  }
  ASSERT_NE(kept.owner, nullptr);
  EXPECT_EQ(values_of<float>(kept), (std::vector<float>{3.f, 4.f}));
  EXPECT_TRUE(kept.mapped);  // a view of the file's read-only pages, not a copy
}

TEST(Safetensors, SameInputWritesIdenticalBytes) {
  TempDir dir;
  std::vector<std::pair<std::string, Tensor>> t = {{"z", f32_tensor({1}, {1.f})}, {"a", f32_tensor({1}, {2.f})}};
  ASSERT_TRUE(write_safetensors(dir / "1.safetensors", t).ok());
  ASSERT_TRUE(write_safetensors(dir / "2.safetensors", t).ok());
  EXPECT_EQ(testing::read_file(dir / "1.safetensors"), testing::read_file(dir / "2.safetensors"));
  // Data follows the given order: "z" first although "a" sorts first.
  auto r = read_safetensors(dir / "1.safetensors");
  ASSERT_TRUE(r.ok());
  EXPECT_LT(static_cast<char*>(r->tensors.at("z").data), static_cast<char*>(r->tensors.at("a").data));
}

TEST(Safetensors, MisalignedTensorIsCopiedToAlignedStorage) {
  TempDir dir;
  std::string path = dir / "odd.safetensors";
  float v = 2.5f;
  std::string data = std::string(1, '\x07') + std::string(reinterpret_cast<char*>(&v), 4);
  // Header of 8 bytes keeps the data section 8-aligned; the F32 starts at +1.
  std::string header = R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"f":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  testing::write_file(path, testing::safetensors_bytes(header, data));
  auto r = read_safetensors(path);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Tensor& f = r->tensors.at("f");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.data) % 4, 0u);
  EXPECT_EQ(f.f32()[0], 2.5f);
  EXPECT_EQ(*static_cast<uint8_t*>(r->tensors.at("b").data), 7);
}

// ---- malformed files: each must fail with a message naming file, tensor and problem

class MalformedSafetensors : public ::testing::Test {
 protected:
  // Writes raw bytes, reads them back, returns the error message.
  std::string error_for_bytes(const std::string& bytes) {
    testing::write_file(path_, bytes);
    auto r = read_safetensors(path_);
    EXPECT_FALSE(r.ok()) << "read succeeded on malformed bytes";
    if (r.ok()) return "";
    EXPECT_CONTAINS(r.error().message, path_) << "message must name the file";
    return r.error().message;
  }
  std::string error_for(const std::string& header, const std::string& data) {
    return error_for_bytes(testing::safetensors_bytes(header, data));
  }
  // One tensor "w" with the given entry JSON over `data_bytes` bytes of data.
  std::string error_for_entry(const std::string& entry, size_t data_bytes = 16) {
    return error_for("{\"w\":" + entry + "}", std::string(data_bytes, '\0'));
  }

  TempDir dir_;
  std::string path_ = dir_ / "bad.safetensors";
};

TEST_F(MalformedSafetensors, EmptyFileIsTruncated) {
  std::string msg = error_for_bytes("");
  EXPECT_CONTAINS(msg, "truncated");
  EXPECT_CONTAINS(msg, "0 bytes");
}

TEST_F(MalformedSafetensors, FileShorterThanEightBytesIsTruncated) {
  std::string msg = error_for_bytes(std::string("\x05\0\0\0\0", 5));
  EXPECT_CONTAINS(msg, "truncated");
  EXPECT_CONTAINS(msg, "5 bytes");
}

TEST_F(MalformedSafetensors, HeaderLengthPastEndOfFile) {
  std::string bytes = testing::safetensors_bytes("{}", "");
  bytes[0] = char(0xe8), bytes[1] = char(0x03);  // claims 1000 header bytes, 2 follow
  std::string msg = error_for_bytes(bytes);
  EXPECT_CONTAINS(msg, "header length 1000 runs past the end of the file");
}

TEST_F(MalformedSafetensors, HugeHeaderLengthDoesNotOverflow) {
  std::string bytes = testing::safetensors_bytes("{}", "");
  for (int i = 0; i < 8; ++i) bytes[i] = char(0xff);
  EXPECT_CONTAINS(error_for_bytes(bytes), "runs past the end of the file");
}

// A header past its named limit is refused before it is parsed.
TEST(SafetensorsFiles, AHeaderPastItsLimit) {
  TempDir dir;
  Tensor t = f32_tensor({1}, {1.f});
  ASSERT_TRUE(write_safetensors(dir / "a.safetensors", {{"a", t}}).ok());
  ASSERT_TRUE(set_limit("header_bytes", 16).ok());
  auto r = read_safetensors(dir / "a.safetensors");
  ASSERT_TRUE(set_limit("header_bytes", 100000000).ok());
  ASSERT_FALSE(r.ok());
  EXPECT_CONTAINS(r.error().message, dir / "a.safetensors" + ": the header's length in bytes (");
  EXPECT_CONTAINS(r.error().message, "exceeds the limit 'header_bytes' (16)");
}

TEST_F(MalformedSafetensors, HeaderNotValidJson) {
  std::string msg = error_for("{\"w\": {\"dtype\": ", "");
  EXPECT_CONTAINS(msg, "header");
  EXPECT_CONTAINS(msg, "invalid JSON");
}

TEST_F(MalformedSafetensors, HeaderWithGarbageBytesIsNotValidJson) {
  EXPECT_CONTAINS(error_for(std::string("\xff\xfe\0\x01", 4), ""), "invalid JSON");
}

TEST_F(MalformedSafetensors, HeaderNotAnObject) {
  std::string msg = error_for("[1, 2, 3]", "");
  EXPECT_CONTAINS(msg, "header is array, expected a JSON object");
}

TEST_F(MalformedSafetensors, DuplicateTensorName) {
  std::string e = R"({"dtype":"U8","shape":[1],"data_offsets":[0,1]})";
  std::string msg = error_for("{\"w\":" + e + ",\"w\":" + e + "}", "\x01");
  EXPECT_CONTAINS(msg, "duplicate key 'w'");
}

TEST_F(MalformedSafetensors, EntryNotAnObject) {
  std::string msg = error_for_entry("[1, 2]");
  EXPECT_CONTAINS(msg, "tensor 'w'");
  EXPECT_CONTAINS(msg, "entry is array, expected an object");
}

TEST_F(MalformedSafetensors, MissingFields) {
  EXPECT_CONTAINS(error_for_entry(R"({"shape":[4],"data_offsets":[0,16]})"), "tensor 'w': missing field 'dtype'");
  EXPECT_CONTAINS(error_for_entry(R"({"dtype":"F32","data_offsets":[0,16]})"), "tensor 'w': missing field 'shape'");
  EXPECT_CONTAINS(error_for_entry(R"({"dtype":"F32","shape":[4]})"), "tensor 'w': missing field 'data_offsets'");
}

TEST_F(MalformedSafetensors, WrongFieldTypes) {
  EXPECT_CONTAINS(error_for_entry(R"({"dtype":4,"shape":[4],"data_offsets":[0,16]})"), "tensor 'w': field 'dtype' is integer, expected a string");
  EXPECT_CONTAINS(error_for_entry(R"({"dtype":"F32","shape":"4","data_offsets":[0,16]})"), "tensor 'w': field 'shape' is string, expected an array of integers");
  EXPECT_CONTAINS(error_for_entry(R"({"dtype":"F32","shape":[4.0],"data_offsets":[0,16]})"), "tensor 'w': shape [4.0] holds number 4.0, expected integers");
  EXPECT_CONTAINS(error_for_entry(R"({"dtype":"F32","shape":[4],"data_offsets":"0-16"})"), "tensor 'w': data_offsets \"0-16\" must be two ascending non-negative integers");
}

TEST_F(MalformedSafetensors, UnknownDtypeIsNamed) {
  std::string msg = error_for_entry(R"({"dtype":"F8_E8M0","shape":[4],"data_offsets":[0,4]})");
  EXPECT_CONTAINS(msg, "tensor 'w': unknown dtype 'F8_E8M0'");
  EXPECT_CONTAINS(msg, "supported: F32");
}

TEST_F(MalformedSafetensors, NegativeDimension) {
  std::string msg = error_for_entry(R"({"dtype":"F32","shape":[-2,2],"data_offsets":[0,16]})");
  EXPECT_CONTAINS(msg, "tensor 'w': negative dimension -2 in shape [-2,2]");
}

TEST_F(MalformedSafetensors, DataOffsetsNotTwoAscendingIntegers) {
  for (const char* offsets : {"[16,0]", "[0]", "[0,8,16]", "[-4,12]", "[0.0,16]", "[0,\"16\"]"}) {
    std::string msg = error_for_entry(std::string(R"({"dtype":"F32","shape":[4],"data_offsets":)") + offsets + "}");
    EXPECT_CONTAINS(msg, "tensor 'w': data_offsets");
    EXPECT_CONTAINS(msg, "must be two ascending non-negative integers") << offsets;
  }
}

TEST_F(MalformedSafetensors, OffsetsPastEndOfDataSection) {
  std::string msg = error_for_entry(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})", 12);
  EXPECT_CONTAINS(msg, "tensor 'w': data_offsets [0, 16] run past the end of the data section (12 bytes)");
}

TEST_F(MalformedSafetensors, OverlappingTensorsNameBoth) {
  std::string msg = error_for(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                              std::string(12, '\0'));
  EXPECT_CONTAINS(msg, "tensors 'a' and 'b' overlap");
  EXPECT_CONTAINS(msg, "[0, 8] and [4, 12]");
}

TEST_F(MalformedSafetensors, TensorInsideAnotherOverlaps) {
  std::string msg = error_for(R"({"big":{"dtype":"U8","shape":[16],"data_offsets":[0,16]},)"
                              R"("mid":{"dtype":"U8","shape":[2],"data_offsets":[10,12]},)"
                              R"("x":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
                              std::string(16, '\0'));
  EXPECT_CONTAINS(msg, "tensors 'big' and 'x' overlap");
}

TEST_F(MalformedSafetensors, SizeMismatchSaysExpectedAndActual) {
  std::string msg = error_for_entry(R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,16]})", 24);
  EXPECT_CONTAINS(msg, "tensor 'w': size mismatch");
  EXPECT_CONTAINS(msg, "F32 x [2, 3] needs 24 bytes (expected)");
  EXPECT_CONTAINS(msg, "hold 16 bytes (actual)");
}

TEST_F(MalformedSafetensors, ShapeTooLargeToAddress) {
  std::string msg = error_for_entry(
      R"({"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,16]})");
  EXPECT_CONTAINS(msg, "tensor 'w'");
  EXPECT_CONTAINS(msg, "too large");
}

// Found by fuzz_safetensors_header: a shape whose bytes fit 64 bits (a zero
// dimension last) but whose element count, multiplied dim by dim as numel()
// does, passes int64 on its way to 0.
TEST_F(MalformedSafetensors, ElementCountPastInt64IsTooLargeEvenOverNoBytes) {
  std::string msg = error_for_entry(R"({"dtype":"U8","shape":[4611686018427387904,2,0],"data_offsets":[0,0]})", 0);
  EXPECT_CONTAINS(msg, "tensor 'w'");
  EXPECT_CONTAINS(msg, "too large");
}

TEST_F(MalformedSafetensors, MetadataMustMapStringsToStrings) {
  EXPECT_CONTAINS(error_for(R"({"__metadata__":{"format":1}})", ""), "__metadata__ 'format' is integer, expected a string");
  EXPECT_CONTAINS(error_for(R"({"__metadata__":"pt"})", ""), "__metadata__ is string");
}

// Every truncation and many single-byte corruptions of a valid file: each read
// returns a value or an error naming the file, and never crashes.
TEST(SafetensorsFiles, CorruptedBytesNeverCrash) {
  TempDir dir;
  std::string good_path = dir / "good.safetensors";
  ASSERT_TRUE(write_safetensors(good_path, {{"a", f32_tensor({2, 2}, {1.f, 2.f, 3.f, 4.f})},
                                            {"b", f32_tensor({3}, {5.f, 6.f, 7.f})}},
                                {{"format", "pt"}})
                  .ok());
  const std::string good = testing::read_file(good_path);
  std::string path = dir / "bad.safetensors";
  auto check = [&](const std::string& bytes) {
    testing::write_file(path, bytes);
    auto r = read_safetensors(path);
    if (!r.ok()) {
      EXPECT_CONTAINS(r.error().message, path);
    }
  };
  for (size_t n = 0; n < good.size(); ++n) check(good.substr(0, n));
  std::mt19937 rng(1234);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes = good;
    size_t at = rng() % bytes.size();
    const std::string json_chars = "{}[]\",:0-9e";  // corruptions that keep the JSON plausible
    bytes[at] = char(rng() % 3 == 0 ? json_chars[rng() % json_chars.size()] : rng() & 0xff);
    check(bytes);
  }
}

TEST(SafetensorsFiles, MissingFileAndDirectoryAreErrors) {
  TempDir dir;
  auto missing = read_safetensors(dir / "nope.safetensors");
  ASSERT_FALSE(missing.ok());
  EXPECT_CONTAINS(missing.error().message, "nope.safetensors: cannot open: No such file or directory");
  auto directory = read_safetensors(dir.path());
  ASSERT_FALSE(directory.ok());
  EXPECT_CONTAINS(directory.error().message, "not a regular file");
}

TEST(SafetensorsWrite, RefusesWhatCannotBeWritten) {
  TempDir dir;
  Tensor t = f32_tensor({1}, {1.f});
  auto dup = write_safetensors(dir / "d.safetensors", {{"a", t}, {"a", t}});
  ASSERT_FALSE(dup.ok());
  EXPECT_CONTAINS(dup.error().message, "tensor 'a': given twice");
  auto reserved = write_safetensors(dir / "r.safetensors", {{"__metadata__", t}});
  ASSERT_FALSE(reserved.ok());
  EXPECT_CONTAINS(reserved.error().message, "reserved");
  auto nowhere = write_safetensors(dir / "no/such/dir/x.safetensors", {{"a", t}});
  ASSERT_FALSE(nowhere.ok());
  EXPECT_CONTAINS(nowhere.error().message, "x.safetensors: the folder");
  EXPECT_CONTAINS(nowhere.error().message, "does not exist");
  auto no_data = write_safetensors(dir / "n.safetensors", {{"a", Tensor{DType::F32, {2}, nullptr, nullptr}}});
  ASSERT_FALSE(no_data.ok());
  EXPECT_CONTAINS(no_data.error().message, "tensor 'a': has no data");
}

// Streamed: tensors made as they are written, read back the same; a source
// that fails or makes the wrong size leaves no file behind.
TEST(SafetensorsWrite, StreamsTensorsFromASource) {
  TempDir dir;
  std::vector<std::pair<std::string, Tensor>> layout = {{"a", Tensor{DType::F32, {2}, nullptr, nullptr}},
                                                         {"b", Tensor{DType::F32, {3}, nullptr, nullptr}}};
  int made = 0;
  auto ok = write_safetensors(dir / "s.safetensors", layout, {{"k", "v"}}, [&](size_t i) -> Result<Tensor> {
    ++made;
    return i == 0 ? f32_tensor({2}, {1.f, 2.f}) : f32_tensor({3}, {3.f, 4.f, 5.f});
  });
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(made, 2);
  auto back = read_safetensors(dir / "s.safetensors");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->tensors.at("b").f32()[2], 5.f);
  EXPECT_EQ(back->metadata.at("k"), "v");

  auto failing = write_safetensors(dir / "f.safetensors", layout, {},
                                   [&](size_t) -> Result<Tensor> { return error("conversion failed"); });
  ASSERT_FALSE(failing.ok());
  EXPECT_CONTAINS(failing.error().message, "conversion failed");
  EXPECT_FALSE(std::filesystem::exists(dir / "f.safetensors"));
  auto wrong = write_safetensors(dir / "w.safetensors", layout, {},
                                 [&](size_t) -> Result<Tensor> { return f32_tensor({1}, {1.f}); });
  ASSERT_FALSE(wrong.ok());
  EXPECT_CONTAINS(wrong.error().message, "tensor 'a': 4 bytes made, the header says 8");
  EXPECT_FALSE(std::filesystem::exists(dir / "w.safetensors"));
}

}  // namespace
}  // namespace arch
