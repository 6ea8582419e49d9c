// The GGUF reader against llama.cpp's own files (../shared/golden/gguf):
// every header count, metadata key and tensor info as gguf-py lists them,
// every tensor's raw bytes and its float32 dequantization bit for bit
// (their sha256), and a named error for each malformed header.
#include "importer/checkpoint/gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "importer/checkpoint/canonical.h"
#include "importer/checkpoint/checkpoint.h"
#include "importer/checkpoint/gguf_tensor.h"
#include "tests/sha256.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using json = nlohmann::json;
using testing::golden_dir;
using testing::sha256_hex;

// In file order, as the golden lists the metadata.
nlohmann::ordered_json read_json(const std::string& path) { return nlohmann::ordered_json::parse(std::ifstream(path)); }

class GgufGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufGolden, HeaderMetadataAndTensorInfosAreGgufPys) {
  const std::string base = golden_dir("gguf") + "/llama_rand." + GetParam();
  ARCH_REQUIRE_SHARED(base + ".gguf");
  const auto want = read_json(base + ".tensors.json");
  auto f = read_gguf(base + ".gguf");
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->version, want["header"]["version"].get<uint32_t>());
  EXPECT_EQ(f->tensors.size(), want["header"]["tensor_count"].get<size_t>());
  EXPECT_EQ(f->metadata.size(), want["header"]["kv_count"].get<size_t>());
  EXPECT_EQ(f->data_offset, want["data_section_offset"].get<uint64_t>());
  EXPECT_EQ(f->alignment, want["alignment"].get<uint64_t>());
  size_t i = 0;
  for (const auto& [key, entry] : want["metadata"].items()) {
    ASSERT_LT(i, f->metadata.size());
    EXPECT_EQ(f->metadata[i].first, key);  // in file order
    const GgufValue& v = f->metadata[i].second;
    EXPECT_EQ(gguf_type_name(v.type, v.element), entry["type"].get<std::string>()) << key;
    EXPECT_EQ(v.value.dump(), entry["value"].dump()) << key;  // floats: the same doubles, printed alike
    ++i;
  }
  ASSERT_EQ(f->tensors.size(), want["tensors"].size());
  for (size_t t = 0; t < f->tensors.size(); ++t) {
    const GgufTensorInfo& info = f->tensors[t];
    const json& w = want["tensors"][t];
    EXPECT_EQ(info.name, w["name"].get<std::string>());
    EXPECT_EQ(ggml_type_name(info.type), w["type"].get<std::string>()) << info.name;
    EXPECT_EQ(info.ne, w["ne"].get<std::vector<int64_t>>()) << info.name;
    EXPECT_EQ(info.bytes, w["n_bytes"].get<uint64_t>()) << info.name;
    EXPECT_EQ(info.offset, w["offset_in_data_section"].get<uint64_t>()) << info.name;
    EXPECT_EQ(f->data_offset + info.offset, w["file_offset"].get<uint64_t>()) << info.name;
    EXPECT_EQ(sha256_hex(info.data, info.bytes), w["sha256_raw"].get<std::string>()) << info.name;
  }
}

// The formats leave no freedom: every value is one exact product (and, for
// Q4_K / Q5_K, one subtraction), so the float32 bits must be gguf-py's.
TEST_P(GgufGolden, EveryTensorDequantizesBitForBit) {
  const std::string base = golden_dir("gguf") + "/llama_rand." + GetParam();
  ARCH_REQUIRE_SHARED(base + ".gguf");
  const auto want = read_json(base + ".tensors.json");
  auto f = read_gguf(base + ".gguf");
  ASSERT_TRUE(f.ok()) << f.error().message;
  for (size_t t = 0; t < f->tensors.size(); ++t) {
    const GgufTensorInfo& info = f->tensors[t];
    auto tensor = gguf_tensor(*f, info);
    ASSERT_TRUE(tensor.ok()) << tensor.error().message;
    EXPECT_EQ(tensor->shape, want["tensors"][t]["numpy_shape"].get<Dims>()) << info.name;
    Tensor f32 = to_f32(*tensor);
    EXPECT_EQ(sha256_hex(f32.data, f32.nbytes()), want["tensors"][t]["sha256_dequant_f32le"].get<std::string>())
        << info.name << " (" << ggml_type_name(info.type) << ")";
  }
}

// archrun import of a GGUF: `stored` keeps its k-quants, f32 writes what
// they hold (the type asked for is the type written).
TEST(GgufImport, StoredKeepsKQuantsAndF32WidensThem) {
  const std::string path = golden_dir("gguf") + "/llama_rand.Q4_K_M.gguf";
  ARCH_REQUIRE_SHARED(path);
  testing::TempDir dir;
  for (auto [type, want] : {std::pair{ImportType::AsStored, DType::Q4_K}, std::pair{ImportType::F32, DType::F32}}) {
    auto report = import_checkpoint(path, dir / "m.safetensors", type);
    ASSERT_TRUE(report.ok()) << report.error().message;
    auto ckpt = load_checkpoint(dir / "m.safetensors");
    ASSERT_TRUE(ckpt.ok()) << ckpt.error().message;
    const Tensor* q = ckpt->find("model.layers.0.self_attn.q_proj.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->dtype, want);
  }
}

INSTANTIATE_TEST_SUITE_P(Files, GgufGolden, ::testing::Values("F32", "Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"));

// --- malformed headers -------------------------------------------------

struct Bytes {
  std::string s;
  Bytes& u32(uint32_t v) { return raw(&v, 4); }
  Bytes& u64(uint64_t v) { return raw(&v, 8); }
  Bytes& str(const std::string& v) { return u64(v.size()).raw(v.data(), v.size()); }
  Bytes& raw(const void* p, size_t n) {
    s.append(static_cast<const char*>(p), n);
    return *this;
  }
};

// "GGUF", version 3, counts.
Bytes header(uint64_t tensors, uint64_t kvs) { return Bytes().raw("GGUF", 4).u32(3).u64(tensors).u64(kvs); }

std::string read_error(const std::string& bytes) {
  testing::TempDir dir;
  const std::string path = dir / "m.gguf";
  testing::write_file(path, bytes);
  auto f = read_gguf(path);
  return f.ok() ? "(read without error)" : f.error().message;
}

void expect_error(const std::string& bytes, const std::string& part) {
  const std::string msg = read_error(bytes);
  EXPECT_NE(msg.find(part), std::string::npos) << "expected '" << part << "' in: " << msg;
  EXPECT_NE(msg.find("m.gguf"), std::string::npos) << msg;
}

TEST(GgufMalformed, EachFaultIsNamed) {
  expect_error("GGUX", "not a GGUF file");
  expect_error(Bytes().raw("GGUF", 4).u32(1).u64(0).u64(0).s, "version 1");
  expect_error(Bytes().raw("GGUF", 4).u32(7).u64(0).u64(0).s, "GGUF version 7");
  expect_error(Bytes().raw("GGUF", 4).u32(3).s, "truncated");
  expect_error(header(0, 1).str("k").u32(99).s, "unknown value type 99");
  expect_error(header(0, 1).str("k").u32(8).u64(1ull << 40).s, "runs past the end");
  expect_error(header(0, 1).str("k").u32(9).u32(4).u64(1ull << 60).s, "gguf_items");
  expect_error(header(0, 1).str("k").u32(9).u32(4).u64(1000).u32(1).s, "runs past the end");
  expect_error(header(0, 1).str("k").u32(9).u32(9).u64(1).s, "array of arrays");
  expect_error(header(0, 1).str("k").u32(7).raw("\x02", 1).s, "expected 0 or 1");
  expect_error(header(0, 1).str("k").u32(8).str("a\xB1").s, "is not valid UTF-8");  // found by fuzz_gguf
  expect_error(header(1, 0).str("w\xC0\x80").s, "is not valid UTF-8");
  expect_error(header(0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(1).s, "'k' appears twice");
  expect_error(header(0, 1).str("general.alignment").u32(4).u32(3).s, "power of two");
  expect_error(header(0, 1).str("general.alignment").u32(10).u64(32).s, "expected a UINT32");
  // tensor infos
  expect_error(header(1, 0).str("w").u32(5).s, "5 dims");
  expect_error(header(1, 0).str("w").u32(2).u64(32).u64(0).u32(0).u64(0).s, "a dim of 0");  // found by fuzz_gguf
  expect_error(header(1, 0).str("w").u32(1).u64(32).u32(77).u64(0).s, "unknown ggml type 77");
  expect_error(header(1, 0).str("w").u32(1).u64(100).u32(12).u64(0).s, "do not split into Q4_K blocks");
  expect_error(header(1, 0).str("w").u32(2).u64(1ull << 40).u64(1ull << 40).u32(0).u64(0).s, "too large");
  // 2^62 + 256 F32 values: their bytes wrapped to 1024 (found by fuzz_gguf)
  expect_error(header(1, 0).str("w").u32(1).u64((1ull << 62) + 256).u32(0).u64(0).s, "too large");
  expect_error(header(1, 0).str("w").u32(1).u64(4).u32(0).u64(3).s, "not a multiple of the alignment");
  {
    Bytes b = header(1, 0).str("w").u32(1).u64(4).u32(0).u64(0);
    b.s.resize((b.s.size() + 31) / 32 * 32 + 8, '\0');  // 8 of the 16 bytes
    expect_error(b.s, "runs past the end");
  }
  {
    Bytes b = header(2, 0).str("a").u32(1).u64(8).u32(0).u64(0).str("b").u32(1).u64(8).u32(0).u64(0);
    b.s.resize((b.s.size() + 31) / 32 * 32 + 64, '\0');
    expect_error(b.s, "overlap");
  }
  {
    Bytes b = header(2, 0).str("a").u32(1).u64(8).u32(0).u64(0).str("a").u32(1).u64(8).u32(0).u64(32);
    b.s.resize((b.s.size() + 31) / 32 * 32 + 64, '\0');
    expect_error(b.s, "'a' appears twice");
  }
}

TEST(GgufMalformed, AWellFormedFileReads) {
  Bytes b = header(1, 2).str("general.architecture").u32(8).str("llama").str("x").u32(9).u32(6).u64(2);
  float v[2] = {0.5f, -2};
  b.raw(v, 8).str("w").u32(2).u64(4).u64(2).u32(0).u64(0);
  b.s.resize((b.s.size() + 31) / 32 * 32, '\0');
  float w[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  b.raw(w, sizeof w);
  testing::TempDir dir;
  testing::write_file(dir / "m.gguf", b.s);
  auto f = read_gguf(dir / "m.gguf");
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->find("general.architecture")->value, "llama");
  EXPECT_EQ(f->find("x")->value, json({0.5, -2.0}));
  auto t = gguf_tensor(*f, f->tensors[0]);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->shape, (Dims{2, 4}));
  EXPECT_EQ(t->f32()[5], 6.0f);
}

TEST(GgufMalformed, TypesNotRunAreRefusedByName) {
  Bytes b = header(1, 0).str("blk.0.attn_q.weight").u32(1).u64(256).u32(16).u64(0);  // IQ2_XXS
  b.s.resize((b.s.size() + 31) / 32 * 32 + 66, '\0');
  testing::TempDir dir;
  testing::write_file(dir / "m.gguf", b.s);
  auto f = read_gguf(dir / "m.gguf");
  ASSERT_TRUE(f.ok()) << f.error().message;
  auto t = gguf_tensor(*f, f->tensors[0]);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("'blk.0.attn_q.weight' is IQ2_XXS"), std::string::npos) << t.error().message;
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// llama-quantize's fallbacks for rows that do not split into 256 (Q5_0,
// Q5_1, IQ4_NL; and Q4_1): one hand-made block each, read back as the
// format defines its values (checked against gguf-py's dequantization on
// llama-quantize's own files: bit for bit).
TEST(GgufFallbackTypes, OneBlockOfEachReadsAsItsFormulas) {
  struct Type {
    uint32_t id;
    size_t bytes;
  };
  const uint16_t d = 0x3C00 /* 1.0 */, m = 0xC000 /* -2.0 */;
  for (Type type : {Type{6, 22}, Type{7, 24}, Type{3, 20}, Type{20, 18}}) {
    SCOPED_TRACE(ggml_type_name(type.id));
    std::string block(type.bytes, '\0');
    std::memcpy(block.data(), &d, 2);
    const bool with_min = type.id == 3 || type.id == 7, five = type.id == 6 || type.id == 7;
    if (with_min) std::memcpy(block.data() + 2, &m, 2);
    const size_t high_at = with_min ? 4 : 2, nibbles_at = (with_min ? 4 : 2) + (five ? 4 : 0);
    const uint32_t high = 0xA5A5F00F;
    if (five) std::memcpy(block.data() + high_at, &high, 4);
    for (int i = 0; i < 16; ++i) block[nibbles_at + i] = char((i * 7 % 16) | ((15 - i) << 4));
    Bytes b = header(1, 0).str("w").u32(1).u64(32).u32(type.id).u64(0);
    b.s.resize((b.s.size() + 31) / 32 * 32, '\0');
    b.s += block;
    testing::TempDir dir;
    testing::write_file(dir / "m.gguf", b.s);
    auto f = read_gguf(dir / "m.gguf");
    ASSERT_TRUE(f.ok()) << f.error().message;
    auto t = gguf_tensor(*f, f->tensors[0]);
    ASSERT_TRUE(t.ok()) << t.error().message;
    Tensor x = to_f32(*t);
    const int8_t iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    for (int i = 0; i < 32; ++i) {
      int q = i < 16 ? (i * 7 % 16) : (15 - (i - 16));
      if (five) q |= int(high >> i & 1) << 4;
      const float want = type.id == 20 ? float(iq4nl[q]) : with_min ? float(q) - 2.0f : float(q - (five ? 16 : 8));
      EXPECT_EQ(x.f32()[i], want) << "value " << i;
    }
  }
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// Llama 3.1's rope_freqs divisors become rope_scaling; divisors no llama3
// scaling gives are refused, not run with other frequencies.
TEST(GgufRopeFreqs, Llama3DivisorsBecomeRopeScalingAndOthersAreRefused) {
  auto file_with = [](const std::vector<float>& divisors) {
    Bytes b = header(1, 4).str("general.architecture").u32(8).str("llama");
    b.str("llama.embedding_length").u32(4).u32(64).str("llama.attention.head_count").u32(4).u32(4);
    b.str("llama.rope.freq_base").u32(6).raw(std::vector<float>{500000.0f}.data(), 4);
    b.str("rope_freqs.weight").u32(1).u64(divisors.size()).u32(0).u64(0);
    b.s.resize((b.s.size() + 31) / 32 * 32, '\0');
    b.raw(divisors.data(), divisors.size() * 4);
    return b.s;
  };
  // head_dim 16 at theta 5e5: Meta's scaling (factor 8, low 1, high 4, 8192)
  // slows the pairs of wavelength past 8192 and keeps those under 2048.
  std::vector<float> meta;
  for (int i = 0; i < 8; ++i) {
    const double wl = 2 * M_PI * std::pow(500000.0, 2.0 * i / 16);
    const double smooth = (8192 / wl - 1) / 3;
    meta.push_back(wl < 2048 ? 1.0f : wl > 8192 ? 8.0f : float(1 / ((1 - smooth) / 8 + smooth)));
  }
  testing::TempDir dir;
  testing::write_file(dir / "good.gguf", file_with(meta));
  auto good = load_checkpoint(dir / "good.gguf");
  ASSERT_TRUE(good.ok()) << good.error().message;
  const auto& s = good->config["rope_scaling"];
  EXPECT_EQ(s["rope_type"], "llama3");
  EXPECT_EQ(s["factor"], 8.0);
  EXPECT_EQ(s["original_max_position_embeddings"], 8192.0);
  EXPECT_FALSE(good->has("rope_freqs.weight"));

  // A damaged file's config values of the wrong type are no crash (found by
  // fuzz_gguf: rope_theta a string threw from JSON's value()).
  {
    Bytes odd = header(1, 2).str("general.architecture").u32(8).str("llama");
    odd.str("llama.rope.freq_base").u32(8).str("fast");
    odd.str("rope_freqs.weight").u32(1).u64(8).u32(0).u64(0);
    odd.s.resize((odd.s.size() + 31) / 32 * 32, '\0');
    odd.raw(meta.data(), meta.size() * 4);
    testing::write_file(dir / "odd.gguf", odd.s);
    auto r = load_checkpoint(dir / "odd.gguf");
    EXPECT_FALSE(r.ok());  // no head size to read the divisors against: named, not thrown
  }

  // A NaN rope base is refused where it enters, not run as NaN logits.
  {
    Bytes nan = header(0, 2).str("general.architecture").u32(8).str("llama");
    const float value = NAN;
    nan.str("llama.rope.freq_base").u32(6).raw(&value, 4);
    testing::write_file(dir / "nan.gguf", nan.s);
    auto r = load_checkpoint(dir / "nan.gguf");
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("'llama.rope.freq_base' (config field rope_theta) is"), std::string::npos)
        << r.error().message;
  }

  testing::write_file(dir / "bad.gguf", file_with({1, 3, 1, 2, 8, 8, 8, 8}));
  auto bad = load_checkpoint(dir / "bad.gguf");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("are not llama3 rope scaling's"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace arch
