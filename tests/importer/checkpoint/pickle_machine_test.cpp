#include "importer/checkpoint/pickle_machine.h"

#include <gtest/gtest.h>

#include "engine/core/mapped_file.h"
#include "importer/checkpoint/zip_archive.h"
#include "tests/importer/checkpoint/torch_files.h"
#include "tests/test_files.h"

namespace arch::pickle {
namespace {

using namespace std::string_literals;
using testing::PickleWriter;

Result<Pickle> run(const std::string& bytes) {
  return unpickle(std::span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()), 0, "p.pkl");
}

std::string error_of(const std::string& bytes) {
  auto r = run(bytes);
  EXPECT_FALSE(r.ok()) << "ran without an error";
  return r.ok() ? "" : r.error().message;
}

TEST(TorchPickleMachine, ValuesComeOutAsWritten) {
  // (None, True, -1 by LONG1, 2^40, a 10-byte LONG1, 1.5, "s", b"b", [1, 2])
  PickleWriter w;
  w.proto().mark().op('N').op('\x88').raw("\x8a\x01\xff").integer(int64_t(1) << 40);
  w.raw("\x8a\x0a", std::string(10, '\x11')).raw("G\x3f\xf8", std::string(6, '\0'));
  w.str("s").raw("C\x01", "b").op(']').mark().integer(1).integer(2).op('e').op('t').stop();
  auto r = run(w.bytes());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Pickle& p = *r;
  ASSERT_EQ(p.at(p.root).kind, Kind::Tuple);
  const auto& v = p.items(p.root);
  ASSERT_EQ(v.size(), 9u);
  EXPECT_EQ(p.at(v[0]).kind, Kind::None);
  EXPECT_EQ(p.at(v[1]).number, 1);
  EXPECT_EQ(p.at(v[2]).number, -1);
  EXPECT_EQ(p.at(v[3]).number, int64_t(1) << 40);
  EXPECT_EQ(p.at(v[4]).kind, Kind::BigInt);
  EXPECT_EQ(p.str(v[4]), std::string(10, '\x11'));
  EXPECT_EQ(p.at(v[5]).real, 1.5);
  EXPECT_EQ(p.str(v[6]), "s");
  EXPECT_EQ(p.at(v[7]).kind, Kind::Bytes);
  EXPECT_EQ(p.items(v[8]).size(), 2u);
  EXPECT_EQ(p.end, w.bytes().size());
}

TEST(TorchPickleMachine, AListHoldingItselfIsNoCycleToFollow) {
  // l = []; l.append(l): the table holds it by index, nothing recurses.
  auto r =
      run("\x80\x02]q\x00h\x00"
          "a."s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->items(r->root), std::vector<Ref>{r->root});
}

TEST(TorchPickleMachine, AMarkHidesWhatLiesBelowIt) {
  EXPECT_CONTAINS(error_of("\x80\x02K\x01(\x85."),
                  "byte 5: stack underflow: TUPLE1 takes 1 object(s), 0 are there above the MARK");
  EXPECT_CONTAINS(error_of("\x80\x02(K\x01."), "STOP with 1 MARK(s) still open");
  EXPECT_CONTAINS(error_of("\x80\x02."), "STOP leaves 0 objects on the stack, expected 1");
}

TEST(TorchPickleMachine, LengthsPastTheEndAreRefusedBeforeAnythingIsMade) {
  EXPECT_CONTAINS(error_of("\x80\x02X\xff\xff\xff\xff"
                           "abc."),
                  "byte 2: truncated: BINUNICODE needs 4294967295 bytes, 4 remain");
  EXPECT_CONTAINS(error_of(std::string("\x80\x04\x8d").append(7, '\xff').append("\x7f.")),
                  "truncated: BINUNICODE8 needs");
  EXPECT_CONTAINS(error_of("\x80\x02T\xff\xff\xff\xff."), "BINSTRING has a negative length -1");
  EXPECT_CONTAINS(error_of("\x80\x04\x95\xff\xff\xff\xff\xff\xff\xff\xff."),
                  "truncated: a FRAME of 18446744073709551615 bytes");
  EXPECT_CONTAINS(error_of("\x80\x02"
                           "ctorch\nFloat"),
                  "truncated: GLOBAL's name has no end of line");
  EXPECT_CONTAINS(error_of("\x80\x02\x8b\x00\x00\x00\x80."s), "LONG4 has a negative length");
  EXPECT_CONTAINS(error_of(""), "p.pkl: byte 0: truncated: the pickle ends before its STOP");
}

TEST(TorchPickleMachine, NamesFromTheFileAreEscapedInMessages) {
  EXPECT_CONTAINS(error_of("\x80\x02"
                           "cos\x1b[31m\nsystem\n."),
                  "refuses global 'os\\x1b[31m.system'");
}

TEST(TorchPickleMachine, PersistentIdsAndRebuildArgumentsAreChecked) {
  PickleWriter module;
  module.proto().mark().str("module").op('t').op('Q').stop();
  EXPECT_CONTAINS(error_of(module.bytes()), "a persistent id of type 'module'; only storages are read");
  PickleWriter fields;
  fields.proto().mark().str("storage").global("torch", "FloatStorage").str("0").op('t').op('Q').stop();
  EXPECT_CONTAINS(error_of(fields.bytes()), "a storage's persistent id has 3 fields, expected 5");
  PickleWriter type;
  type.proto().mark().str("storage").str("torch.FloatStorage").str("0").str("cpu").integer(1).op('t').op('Q').stop();
  EXPECT_CONTAINS(error_of(type.bytes()), "a storage's type is a str, expected a torch storage type");

  auto rebuild = [](const std::vector<int64_t>& shape, const std::vector<int64_t>& stride) {
    PickleWriter w;
    w.proto().global("torch._utils", "_rebuild_tensor_v2").mark();
    w.mark().str("storage").global("torch", "FloatStorage").str("0").str("cpu").integer(4).op('t').op('Q');
    w.integer(0).ints(shape).ints(stride).op('\x89').op('}').op('t').op('R').stop();
    return w.bytes();
  };
  auto ok = run(rebuild({2, 2}, {2, 1}));
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->tensor(ok->root).shape, (Dims{2, 2}));
  EXPECT_EQ(ok->storage(ok->tensor(ok->root).storage).numel, 4);
  EXPECT_EQ(ok->storage(ok->tensor(ok->root).storage).dtype, DType::F32);
  EXPECT_CONTAINS(error_of(rebuild({2, 2}, {1})),
                  "torch._utils._rebuild_tensor_v2's size [2, 2] and stride [1] differ in length");
  EXPECT_CONTAINS(error_of(rebuild({2, -2}, {2, 1})),
                  "_rebuild_tensor_v2's size holds an int -2, expected non-negative ints");

  EXPECT_CONTAINS(error_of(rebuild(std::vector<int64_t>(65, 1), std::vector<int64_t>(65, 1))),
                  "_rebuild_tensor_v2's size has 65 dimensions, more than 64");
  PickleWriter key;
  key.proto().mark().str("storage").global("torch", "FloatStorage").str(std::string(300, '7')).str("cpu");
  key.integer(1).op('t').op('Q').stop();
  EXPECT_CONTAINS(error_of(key.bytes()), "a storage's key of 300 bytes, longer than 256");
  PickleWriter many;
  many.proto().global("torch._utils", "_rebuild_tensor_v2").ints(std::vector<int64_t>(8, 0)).op('R').stop();
  EXPECT_CONTAINS(error_of(many.bytes()), "torch._utils._rebuild_tensor_v2 takes at most 7 arguments, got 8");

  PickleWriter few;
  few.proto().global("torch._utils", "_rebuild_tensor_v2").op(')').op('R').stop();
  EXPECT_CONTAINS(error_of(few.bytes()), "torch._utils._rebuild_tensor_v2 takes 6 or 7 arguments, got 0");
  PickleWriter od;
  od.proto().global("collections", "OrderedDict").integer(1).raw("\x85").op('R').stop();
  EXPECT_CONTAINS(error_of(od.bytes()), "collections.OrderedDict takes 0 arguments, got 1");
  PickleWriter call;
  call.proto().str("f").op(')').op('R').stop();
  EXPECT_CONTAINS(error_of(call.bytes()), "REDUCE calls a str; only allow-listed globals are called");
  PickleWriter build;
  build.proto().op(']').op('}').op('b').stop();
  EXPECT_CONTAINS(error_of(build.bytes()), "BUILD applies to a dict, not to a list");
}

// Every prefix of a real pickle stops with a named error, not a crash.
TEST(TorchPickleMachine, EveryCutOfTheLlamaPickleIsAnError) {
  REQUIRE_SHARED_DIR();
  const std::string path = testing::golden_dir("torch_bin") + "/llama/pytorch_model.bin";
  ARCH_REQUIRE_SHARED(path);
  auto file = MappedFile::open(path);
  ASSERT_TRUE(file.ok());
  auto zip = ZipArchive::parse((*file)->data(), (*file)->size(), path);
  ASSERT_TRUE(zip.ok()) << zip.error().message;
  auto pkl = zip->entry("pytorch_model/data.pkl");
  ASSERT_TRUE(pkl.ok()) << pkl.error().message;
  auto whole = unpickle(*pkl, 0, "data.pkl");
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  EXPECT_EQ(whole->tensors.size(), 21u);
  for (size_t n = 0; n < pkl->size(); ++n) {
    auto cut = unpickle(pkl->subspan(0, n), 0, "data.pkl");
    ASSERT_FALSE(cut.ok()) << n;
    ASSERT_EQ(cut.error().message.rfind("data.pkl: byte ", 0), 0u) << cut.error().message;
  }
}

}  // namespace
}  // namespace arch::pickle

namespace arch::pickle {
namespace {

// A str is text: bytes that are not UTF-8 (a tensor name would carry them
// on into JSON) are named, not kept.
TEST(TorchPickleMachine, AStrThatIsNotUtf8IsNamed) {
  const std::string bytes = "\x80\x02X\x02\x00\x00\x00\xc0\x80."s;
  auto r = unpickle(std::span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()), 0, "p.pkl");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("BINUNICODE's string is not valid UTF-8"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace arch::pickle
