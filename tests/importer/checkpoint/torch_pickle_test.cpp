#include "importer/checkpoint/torch_pickle.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "importer/checkpoint/safetensors.h"
#include "tests/importer/checkpoint/torch_files.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::f32_bytes;
using testing::PickleWriter;
using testing::TempDir;
using testing::TensorSpec;
using testing::torch_legacy;
using testing::torch_zip;
using namespace std::string_literals;

std::string torch_bin(const std::string& name) { return testing::golden_dir("torch_bin") + "/" + name; }

std::string bytes_of(const Tensor& t) { return std::string(static_cast<const char*>(t.data), t.nbytes()); }

// Every tensor of `got` is the safetensors file's: same names, dtypes,
// shapes and bytes.
void expect_same_tensors(const std::map<std::string, Tensor>& got, const std::string& safetensors_path) {
  auto want = read_safetensors(safetensors_path);
  ASSERT_TRUE(want.ok()) << want.error().message;
  std::set<std::string> got_names, want_names;
  for (const auto& [name, t] : got) got_names.insert(name);
  for (const auto& [name, t] : want->tensors) want_names.insert(name);
  EXPECT_EQ(got_names, want_names);
  for (const auto& [name, w] : want->tensors) {
    auto it = got.find(name);
    if (it == got.end()) continue;
    const Tensor& g = it->second;
    EXPECT_EQ(g.dtype, w.dtype) << name;
    EXPECT_EQ(g.shape, w.shape) << name;
    ASSERT_EQ(g.nbytes(), w.nbytes()) << name;
    EXPECT_TRUE(bytes_of(g) == bytes_of(w)) << name << ": bytes differ";
  }
}

Result<TorchFile> read_bytes(const TempDir& dir, const std::string& bytes, const std::string& name = "model.bin") {
  // A new file, not one truncated: ext4 flushes a truncated file's
  // rewrite to disk at its close, a few milliseconds each time.
  std::filesystem::remove(dir / name);
  testing::write_file(dir / name, bytes);
  return read_torch_file(dir / name);
}

// The error of reading `bytes`, or "" (and a test failure) if it was read.
std::string error_of(const std::string& bytes) {
  TempDir dir;
  auto r = read_bytes(dir, bytes);
  EXPECT_FALSE(r.ok()) << "read without an error";
  return r.ok() ? "" : r.error().message;
}

// ---- the shared goldens: bit-identical to their safetensors sources

TEST(TorchPickle, LlamaZipMatchesSafetensors) {
  REQUIRE_SHARED_DIR();
  ARCH_REQUIRE_SHARED(torch_bin("llama/pytorch_model.bin"));
  auto f = read_torch_file(torch_bin("llama/pytorch_model.bin"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->path, torch_bin("llama/pytorch_model.bin"));
  EXPECT_EQ(f->tensors.size(), 21u);
  expect_same_tensors(f->tensors, testing::golden_dir("llama") + "/model.safetensors");
}

TEST(TorchPickle, BertZipMatchesSafetensors) {
  REQUIRE_SHARED_DIR();
  ARCH_REQUIRE_SHARED(torch_bin("bert/pytorch_model.bin"));
  auto f = read_torch_file(torch_bin("bert/pytorch_model.bin"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->tensors.size(), 39u);
  expect_same_tensors(f->tensors, testing::golden_dir("bert") + "/model.safetensors");
}

TEST(TorchPickle, LegacyLlamaMatchesSafetensors) {
  REQUIRE_SHARED_DIR();
  ARCH_REQUIRE_SHARED(torch_bin("llama_legacy/pytorch_model.bin"));
  auto f = read_torch_file(torch_bin("llama_legacy/pytorch_model.bin"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  expect_same_tensors(f->tensors, testing::golden_dir("llama") + "/model.safetensors");
}

TEST(TorchPickle, ShardsHoldWhatTheirIndexSaysAndTogetherMatchSafetensors) {
  REQUIRE_SHARED_DIR();
  const std::string dir = torch_bin("llama_sharded");
  ARCH_REQUIRE_SHARED(dir + "/pytorch_model.bin.index.json");
  const auto index = nlohmann::json::parse(std::ifstream(dir + "/pytorch_model.bin.index.json"));
  std::map<std::string, Tensor> all;
  for (const char* shard : {"pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"}) {
    auto f = read_torch_file(dir + "/" + shard);
    ASSERT_TRUE(f.ok()) << f.error().message;
    for (const auto& [name, t] : f->tensors) {
      EXPECT_EQ(index["weight_map"].value(name, ""), shard) << name;
      EXPECT_TRUE(all.emplace(name, t).second) << name << " is in both shards";
    }
  }
  EXPECT_EQ(all.size(), index["weight_map"].size());
  expect_same_tensors(all, testing::golden_dir("llama") + "/model.safetensors");
}

TEST(TorchPickle, MaliciousFileIsRefusedByItsGlobalAndNeverRun) {
  REQUIRE_SHARED_DIR();
  ARCH_REQUIRE_SHARED(torch_bin("malicious/pytorch_model.bin"));
  const std::string pwned = "/tmp/archetype_pwned";
  ASSERT_FALSE(std::filesystem::exists(pwned)) << pwned << " exists before the test: remove it";
  auto f = read_torch_file(torch_bin("malicious/pytorch_model.bin"));
  ASSERT_FALSE(f.ok());
  const std::string& m = f.error().message;
  EXPECT_CONTAINS(m, torch_bin("malicious/pytorch_model.bin") + ": pytorch_model/data.pkl: byte ");
  EXPECT_CONTAINS(m, "refuses global 'posix.system' (loading a checkpoint never runs code)");
  EXPECT_FALSE(std::filesystem::exists(pwned));
}

TEST(TorchPickle, TensorsAreMappedViewsThatOutliveTheirFile) {
  REQUIRE_SHARED_DIR();
  ARCH_REQUIRE_SHARED(torch_bin("llama/pytorch_model.bin"));
  Tensor embed;
  {
    auto f = read_torch_file(torch_bin("llama/pytorch_model.bin"));
    ASSERT_TRUE(f.ok()) << f.error().message;
    for (const auto& [name, t] : f->tensors) {
      EXPECT_TRUE(t.mapped) << name;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % 64, 0u) << name << ": torch aligns its storages to 64 bytes";
    }
    embed = f->tensors.at("model.embed_tokens.weight");
  }
  // The mapping lives on in the tensor's owner.
  auto want = read_safetensors(testing::golden_dir("llama") + "/model.safetensors");
  ASSERT_TRUE(want.ok());
  EXPECT_TRUE(bytes_of(embed) == bytes_of(want->tensors.at("model.embed_tokens.weight")));
}

// ---- hand-made files: what the reader makes of each layout

TEST(TorchPickle, EachStorageTypeGivesItsDType) {
  const std::vector<std::pair<std::string, DType>> types = {
      {"FloatStorage", DType::F32},  {"HalfStorage", DType::F16}, {"BFloat16Storage", DType::BF16},
      {"DoubleStorage", DType::F64}, {"LongStorage", DType::I64}, {"IntStorage", DType::I32},
      {"CharStorage", DType::I8},    {"ByteStorage", DType::U8},  {"BoolStorage", DType::BOOL}};
  std::vector<TensorSpec> specs;
  std::vector<std::pair<std::string, std::string>> storages;
  for (size_t i = 0; i < types.size(); ++i) {
    const size_t esize = dtype_size(types[i].second);
    specs.push_back({std::string("t").append(std::to_string(i)), types[i].first, std::to_string(i), 3, 0, {3}, {1}});
    std::string data;
    for (size_t b = 0; b < 3 * esize; ++b) data += char((b + i) % 2);  // 0 and 1: bools too
    storages.push_back({std::to_string(i), data});
  }
  TempDir dir;
  auto f = read_bytes(dir, torch_zip(testing::state_dict_pickle(specs), storages));
  ASSERT_TRUE(f.ok()) << f.error().message;
  for (size_t i = 0; i < types.size(); ++i) {
    const Tensor& t = f->tensors.at(specs[i].name);
    EXPECT_EQ(t.dtype, types[i].second) << types[i].first;
    EXPECT_EQ(t.shape, Dims{3});
    EXPECT_TRUE(t.mapped);
    EXPECT_EQ(bytes_of(t), storages[i].second) << types[i].first;
  }
}

TEST(TorchPickle, StorageOffsetViewsIntoTheStorageAndStridesAreCopiedContiguous) {
  // One storage of 8 floats: a [2] view from element 5, a [3, 2] transposed
  // view of its first 6 (stride [1, 3]), a [2, 1, 2] view with any stride
  // on its size-1 dimension.
  std::vector<float> v = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<TensorSpec> specs = {{"tail", "FloatStorage", "0", 8, 5, {2}, {1}},
                                   {"transposed", "FloatStorage", "0", 8, 0, {3, 2}, {1, 3}},
                                   {"unit", "FloatStorage", "0", 8, 4, {2, 1, 2}, {2, 99, 1}},
                                   {"scalar", "FloatStorage", "0", 8, 7, {}, {}},
                                   {"empty", "FloatStorage", "0", 8, 0, {0, 4}, {4, 1}}};
  TempDir dir;
  auto f = read_bytes(dir, torch_zip(testing::state_dict_pickle(specs), {{"0", f32_bytes(v)}}));
  ASSERT_TRUE(f.ok()) << f.error().message;
  const Tensor& tail = f->tensors.at("tail");
  EXPECT_TRUE(tail.mapped);
  EXPECT_EQ(bytes_of(tail), f32_bytes({5, 6}));
  const Tensor& transposed = f->tensors.at("transposed");
  EXPECT_FALSE(transposed.mapped);
  EXPECT_EQ(transposed.shape, (Dims{3, 2}));
  EXPECT_EQ(bytes_of(transposed), f32_bytes({0, 3, 1, 4, 2, 5}));
  EXPECT_TRUE(f->tensors.at("unit").mapped);
  EXPECT_EQ(bytes_of(f->tensors.at("unit")), f32_bytes({4, 5, 6, 7}));
  EXPECT_EQ(bytes_of(f->tensors.at("scalar")), f32_bytes({7}));
  EXPECT_EQ(f->tensors.at("empty").shape, (Dims{0, 4}));
}

TEST(TorchPickle, LegacyMisalignedStorageIsCopiedOnceAndShared) {
  // Storage keys of 1 and 2 characters put the first storage's bytes at an
  // odd offset; its two tensors share one aligned copy.
  std::vector<TensorSpec> specs = {{"a", "FloatStorage", "k", 4, 0, {2}, {1}},
                                   {"b", "FloatStorage", "k", 4, 2, {2}, {1}},
                                   {"c", "HalfStorage", "kk", 2, 0, {2}, {1}}};
  const std::string bytes =
      torch_legacy(testing::state_dict_pickle(specs, true),
                   {{"k", f32_bytes({1, 2, 3, 4})}, {"kk", std::string("\x00\x3c\x00\xc0", 4), 2}});
  const size_t k_at = bytes.size() - 4 - 8 - 16;  // where storage k's bytes start
  ASSERT_NE(k_at % 4, 0u) << "the test wants storage k misaligned";
  TempDir dir;
  auto f = read_bytes(dir, bytes);
  ASSERT_TRUE(f.ok()) << f.error().message;
  const Tensor& a = f->tensors.at("a");
  const Tensor& b = f->tensors.at("b");
  EXPECT_EQ(bytes_of(a), f32_bytes({1, 2}));
  EXPECT_EQ(bytes_of(b), f32_bytes({3, 4}));
  for (const Tensor* t : {&a, &b, static_cast<const Tensor*>(&f->tensors.at("c"))})
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % dtype_size(t->dtype), 0u);
  EXPECT_FALSE(a.mapped);
  EXPECT_EQ(a.owner, b.owner) << "one copy of the storage, not one per tensor";
  EXPECT_EQ(static_cast<const char*>(b.data) - static_cast<const char*>(a.data), 8);
  EXPECT_EQ(bytes_of(f->tensors.at("c")), std::string("\x00\x3c\x00\xc0", 4));
}

TEST(TorchPickle, StateDictUnderATrainingCheckpointsKeyWithOtherValuesSkipped) {
  // {"epoch": 3, "model": OrderedDict({"w": tensor, "_note": "x"}) with its
  // _metadata state, "optimizer": {}}; the tensor by _rebuild_parameter.
  PickleWriter w;
  w.proto().op('}').mark().str("epoch").integer(3).str("optimizer").op('}');
  w.str("model").global("collections", "OrderedDict").op(')').op('R').mark();
  w.str("w").global("torch._utils", "_rebuild_parameter").mark();
  testing::write_tensor(w, {"w", "FloatStorage", "0", 2, 0, {2}, {1}});
  w.op('\x88').global("collections", "OrderedDict").op(')').op('R').op('t').op('R');
  w.str("_note").str("x").str("step").raw("G", std::string("\x3f\xf0\0\0\0\0\0\0", 8)).op('u');
  w.op('}').mark().str("_metadata").op('}').op('u').op('b');  // BUILD: the OrderedDict's attributes
  w.op('u').stop();
  TempDir dir;
  auto f = read_bytes(dir, torch_zip(w.bytes(), {{"0", f32_bytes({1, 2})}}));
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->tensors.size(), 1u);
  EXPECT_EQ(bytes_of(f->tensors.at("w")), f32_bytes({1, 2}));
}

TEST(TorchPickle, Protocol4FramesMemoizeAndStackGlobals) {
  // What pickle protocol 4 writes: FRAME, SHORT_BINUNICODE, STACK_GLOBAL,
  // MEMOIZE with BINGET.
  auto short_str = [](const std::string& s) { return std::string("\x8c").append(1, char(s.size())).append(s); };
  PickleWriter body;
  body.op('}').raw("\x94").mark().raw(short_str("w"));
  body.raw(short_str("torch._utils") + short_str("_rebuild_tensor_v2") + "\x93\x94").mark();
  body.mark().raw(short_str("storage")).raw(short_str("torch") + short_str("FloatStorage") + "\x93");
  body.raw(short_str("0") + short_str("cpu")).integer(2).op('t').op('Q');
  body.integer(0).integer(2).raw("\x85").integer(1).raw("\x85").op('\x89');
  body.raw(short_str("collections") + short_str("OrderedDict") + "\x93").op(')').op('R').op('t').op('R');
  body.raw(short_str("v")).raw("h\x01");  // memo 1, the rebuild function: no tensor, so skipped
  body.op('u').stop();
  const std::string pickle =
      std::string("\x80\x04\x95").append(testing::le_bytes(body.bytes().size(), 8)).append(body.bytes());
  TempDir dir;
  auto f = read_bytes(dir, torch_zip(pickle, {{"0", f32_bytes({1, 2})}}));
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->tensors.size(), 1u);
  EXPECT_EQ(bytes_of(f->tensors.at("w")), f32_bytes({1, 2}));
}

TEST(TorchPickle, AnyArchiveFolderNameAndAByteorderRecordAreRead) {
  const std::string pickle = testing::state_dict_pickle({{"w", "FloatStorage", "0", 1, 0, {1}, {1}}});
  std::vector<testing::ZipEntry> entries = {{"my model/data.pkl", pickle},
                                            {"my model/byteorder", "little"},
                                            {"my model/data/0", f32_bytes({3})},
                                            {".data/version", "3\n"}};
  TempDir dir;
  auto f = read_bytes(dir, testing::zip_bytes(entries));
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(bytes_of(f->tensors.at("w")), f32_bytes({3}));
  auto z64 = read_bytes(dir, testing::zip_bytes(entries, true), "zip64.bin");
  ASSERT_TRUE(z64.ok()) << z64.error().message;
  EXPECT_EQ(bytes_of(z64->tensors.at("w")), f32_bytes({3}));
}

// ---- malformed files: each a named error

const std::string kOne = testing::state_dict_pickle({{"w", "FloatStorage", "0", 2, 0, {2}, {1}}});

std::string one_tensor_zip(const std::string& pickle) { return torch_zip(pickle, {{"0", f32_bytes({1, 2})}}); }

TEST(TorchPickle, TruncatedPickleIsNamed) {
  const std::string m = error_of(one_tensor_zip(kOne.substr(0, kOne.size() - 7)));
  EXPECT_CONTAINS(m, "model.bin: archive/data.pkl: byte ");
  EXPECT_CONTAINS(m, "truncated");
}

TEST(TorchPickle, UnknownAndRefusedOpcodesAreNamed) {
  EXPECT_CONTAINS(error_of(one_tensor_zip("\x80\x02\xff.")), "archive/data.pkl: byte 2: unknown opcode 0xff");
  EXPECT_CONTAINS(error_of(one_tensor_zip("\x80\x02(i__builtin__\nobject\n.")),
                  "byte 3: refuses opcode INST ('i', 0x69): torch.save does not write it");
  EXPECT_CONTAINS(error_of(one_tensor_zip("\x80\x02\x81.")), "refuses opcode NEWOBJ (0x81)");
  EXPECT_CONTAINS(error_of(one_tensor_zip("\x80\x09}.")), "pickle protocol 9 is newer than 5");
}

TEST(TorchPickle, GlobalsOutsideTheAllowListAreRefusedByName) {
  PickleWriter w;
  w.proto().global("builtins", "eval").str("1").raw("\x85").op('R').stop();
  EXPECT_CONTAINS(error_of(one_tensor_zip(w.bytes())),
                  "archive/data.pkl: byte 2: refuses global 'builtins.eval' (loading a checkpoint never runs code)");
  PickleWriter s;  // by STACK_GLOBAL too, and a torch storage type not read
  s.proto(4).str("os").str("system").raw("\x93").stop();
  EXPECT_CONTAINS(error_of(one_tensor_zip(s.bytes())), "refuses global 'os.system'");
  PickleWriter t;
  t.proto().global("torch", "ShortStorage").stop();
  EXPECT_CONTAINS(error_of(one_tensor_zip(t.bytes())), "refuses global 'torch.ShortStorage': storages of that type");
  PickleWriter c;  // a storage type is not called
  c.proto().global("torch", "FloatStorage").op(')').op('R').stop();
  EXPECT_CONTAINS(error_of(one_tensor_zip(c.bytes())), "REDUCE calls 'torch.FloatStorage'");
}

TEST(TorchPickle, MemoAndStackMisuseIsNamed) {
  EXPECT_CONTAINS(error_of(one_tensor_zip("\x80\x02h\x07.")), "BINGET of memo id 7, which was never stored");
  EXPECT_CONTAINS(error_of(one_tensor_zip("\x80\x02q\x00."s)), "BINPUT with nothing on the stack");
  EXPECT_CONTAINS(error_of(one_tensor_zip("\x80\x02}(s.")),
                  "stack underflow: SETITEM takes 2 object(s), 0 are there above the MARK");
  EXPECT_CONTAINS(error_of(one_tensor_zip("\x80\x02t.")), "TUPLE without a MARK before it");
  EXPECT_CONTAINS(error_of(one_tensor_zip("\x80\x02}}.")), "STOP leaves 2 objects on the stack, expected 1");
  EXPECT_CONTAINS(error_of(one_tensor_zip("\x80\x02K\x01K\x02K\x03s.")), "SETITEM applies to a dict, not to an int");
}

TEST(TorchPickle, ShapeBeyondItsStorageIsNamedWithTheTensor) {
  const std::string past = testing::state_dict_pickle({{"w", "FloatStorage", "0", 2, 1, {2}, {1}}});
  EXPECT_CONTAINS(error_of(one_tensor_zip(past)),
                  "model.bin: tensor 'w': size [2], stride [1] at offset 1 reaches element 2, past the end of its "
                  "storage '0' (torch.FloatStorage, 2 elements)");
  const std::string huge =
      testing::state_dict_pickle({{"w", "FloatStorage", "0", 2, 0, {int64_t(1) << 40, int64_t(1) << 40}, {0, 0}}});
  EXPECT_CONTAINS(error_of(one_tensor_zip(huge)), "tensor 'w': size [1099511627776, 1099511627776]");
  EXPECT_CONTAINS(error_of(one_tensor_zip(huge)), "is too large to address");
  // A stride of 0 repeats one element: its copy passes the file's budget.
  const std::string repeat = testing::state_dict_pickle({{"w", "FloatStorage", "0", 2, 0, {1 << 20, 2}, {0, 1}}});
  EXPECT_CONTAINS(error_of(one_tensor_zip(repeat)), "tensor 'w': a contiguous copy of its size [1048576, 2]");
  EXPECT_CONTAINS(error_of(one_tensor_zip(repeat)), "(twice its size)");
  // The storage's entry is shorter than its persistent id says.
  const std::string more = testing::state_dict_pickle({{"w", "FloatStorage", "0", 3, 0, {2}, {1}}});
  EXPECT_CONTAINS(error_of(one_tensor_zip(more)),
                  "tensor 'w': its storage '0' (torch.FloatStorage, 3 elements) needs 12 bytes, its data holds 8");
  const std::string missing = testing::state_dict_pickle({{"w", "FloatStorage", "9", 2, 0, {2}, {1}}});
  EXPECT_CONTAINS(error_of(one_tensor_zip(missing)),
                  "model.bin: the zip archive has no entry 'archive/data/9' (the storage of tensor 'w')");
}

TEST(TorchPickle, ZipFaultsAreNamed) {
  // A compressed storage entry.
  std::vector<testing::ZipEntry> entries = {{"archive/data.pkl", kOne}, {"archive/data/0", f32_bytes({1, 2}), 8}};
  EXPECT_CONTAINS(error_of(testing::zip_bytes(entries)),
                  "model.bin: zip entry 'archive/data/0' is compressed (deflate); torch.save stores its entries "
                  "uncompressed");
  // No end record: the archive cut short.
  const std::string good = one_tensor_zip(kOne);
  EXPECT_CONTAINS(error_of(good.substr(0, good.size() - 10)), "no end-of-central-directory record");
  // An end record pointing past the file.
  std::string bad = good;
  bad[bad.size() - 3] = '\x7f';  // the central directory's offset, high byte
  EXPECT_CONTAINS(error_of(bad), "the zip central directory");
  EXPECT_CONTAINS(error_of(bad), "runs past the end of the file");
  std::string lies = good;
  lies[lies.size() - 11] = '\x7f';  // the entry count, high byte
  EXPECT_CONTAINS(error_of(lies), "entries, more than its central directory");
  // No data.pkl, two of them, a big-endian byteorder.
  EXPECT_CONTAINS(error_of(testing::zip_bytes({{"archive/other.pkl", kOne}})), "without a <folder>/data.pkl entry");
  EXPECT_CONTAINS(error_of(testing::zip_bytes({{"a/data.pkl", kOne}, {"b/data.pkl", kOne}})),
                  "holds 2 pickles (a/data.pkl, b/data.pkl)");
  EXPECT_CONTAINS(error_of(testing::zip_bytes({{"a/data.pkl", kOne}, {"a/byteorder", "big"}})),
                  "a/byteorder says 'big'");
  EXPECT_CONTAINS(error_of(testing::zip_bytes({{"a/data.pkl", kOne}, {"a/data.pkl", kOne}})),
                  "holds entry 'a/data.pkl' twice");
}

TEST(TorchPickle, NotATorchFileAndBadLegacyHeadersAreNamed) {
  EXPECT_CONTAINS(error_of(""), "model.bin: not a torch.save file");
  EXPECT_CONTAINS(error_of("{\"a\": 1}"), "neither a zip header");
  EXPECT_CONTAINS(error_of("\x80\x02K\x01."), "not a torch.save file: its first pickle is not torch's magic number");
  std::string legacy = torch_legacy(testing::state_dict_pickle({{"w", "FloatStorage", "k", 2, 0, {2}, {1}}}, true),
                                    {{"k", f32_bytes({1, 2})}});
  TempDir dir;
  auto ok = read_bytes(dir, legacy);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_CONTAINS(error_of(legacy.substr(0, legacy.size() - 3)), "storage 'k' at byte");
  EXPECT_CONTAINS(error_of(legacy.substr(0, legacy.size() - 3)), "run past the end of the file");
  std::string version = legacy;
  version[version.find("M\xe9\x03")] = 'K';  // protocol 1001 -> 233, and a stray byte
  EXPECT_CONTAINS(error_of(version), "model.bin: the protocol version's pickle");
  // A storage view (legacy view metadata) is not read.
  std::string view = legacy;
  const size_t none = view.find("\x02N", view.find("_rebuild_tensor_v2")) + 1;  // numel 2, then None
  view[none] = ')';
  EXPECT_CONTAINS(error_of(view), "storage 'k' is a view of another");
}

TEST(TorchPickle, ObjectsThatAreNoStateDictAreNamed) {
  EXPECT_CONTAINS(error_of(one_tensor_zip("\x80\x02]q\x00."s)),
                  "model.bin: archive/data.pkl: the pickled object is a list, expected a dict of tensors");
  EXPECT_CONTAINS(error_of(one_tensor_zip("\x80\x02}X\x05\x00\x00\x00modelK\x01s."s)),
                  "the pickled dict holds no tensors, nor a dict of them under 'state_dict'");
  PickleWriter twice;
  twice.proto().op('}').mark();
  for (int i = 0; i < 2; ++i) {
    twice.str("w");
    testing::write_tensor(twice, {"w", "FloatStorage", "0", 2, 0, {2}, {1}});
  }
  EXPECT_CONTAINS(error_of(one_tensor_zip(twice.op('u').stop().bytes())), "tensor 'w' is given twice");
}

// Every cut and many random byte changes of a small file end in a value,
// never a crash (the fuzz target goes further).
TEST(TorchPickle, CutsAndMutationsOfAFileGiveErrorsNotCrashes) {
  const std::vector<TensorSpec> specs = {{"a", "FloatStorage", "0", 4, 0, {2, 2}, {2, 1}},
                                         {"b", "HalfStorage", "1", 2, 1, {1}, {1}}};
  const std::string zip =
      torch_zip(testing::state_dict_pickle(specs), {{"0", f32_bytes({1, 2, 3, 4})}, {"1", std::string(4, '\1')}});
  const std::string legacy = torch_legacy(testing::state_dict_pickle(specs, true),
                                          {{"0", f32_bytes({1, 2, 3, 4})}, {"1", std::string(4, '\1'), 2}});
  TempDir dir;
  std::mt19937 rng(48);
  for (const std::string& file : {zip, legacy}) {
    for (size_t n = 0; n < file.size(); n += 3) (void)read_bytes(dir, file.substr(0, n));
    for (int i = 0; i < 1500; ++i) {
      std::string m = file;
      for (int k = 0; k < 1 + int(rng() % 4); ++k) m[rng() % m.size()] = char(rng());
      (void)read_bytes(dir, m);
    }
  }
}

}  // namespace
}  // namespace arch
