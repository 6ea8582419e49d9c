// A toy spec's tensor names: `{i<N}` for 0 .. N-1, `{M<=i<N}` for M .. N-1,
// nested (each layer's experts); a malformed segment is an error naming it.
#include <gtest/gtest.h>

#include <fstream>

#include "importer/checkpoint/checkpoint.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::TempDir;

TEST(ToySpec, LayerRangesExpandAndNest) {
  TempDir specs, out;
  std::ofstream(specs / "moe.json") << R"({"config": {"model_type": "x"}, "tensors": [
      ["l.0.dense.weight", [2, 3]], ["l.{1<=i<3}.experts.{e<2}.weight", [4, 3]], ["l.{i<3}.norm.weight", [3]]]})";
  ASSERT_TRUE(write_toy_from_spec(specs / "moe.json", out.path()).ok());
  auto ck = load_checkpoint(out.path());
  ASSERT_TRUE(ck.ok()) << ck.error().message;
  EXPECT_EQ(ck->tensors.size(), 1u + 2 * 2 + 3);
  for (const char* name : {"l.1.experts.0.weight", "l.1.experts.1.weight", "l.2.experts.1.weight"})
    EXPECT_EQ(ck->shape_of(name), (Dims{4, 3})) << name;
  EXPECT_EQ(ck->find("l.0.experts.0.weight"), nullptr);
  EXPECT_EQ(ck->shape_of("l.2.norm.weight"), (Dims{3}));
}

TEST(ToySpec, MalformedSegmentsAreNamed) {
  TempDir specs, out;
  std::ofstream(specs / "bad.json") << R"({"config": {"model_type": "x"}, "tensors": [["l.{a<=i<3}.w", [2]]]})";
  auto r = write_toy_from_spec(specs / "bad.json", out.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("tensor 'l.{a<=i<3}.w': M in {M<=i<N} must be a number"), std::string::npos)
      << r.error().message;
  std::ofstream(specs / "open.json") << R"({"config": {"model_type": "x"}, "tensors": [["l.{i.w", [2]]]})";
  auto o = write_toy_from_spec(specs / "open.json", out.path());
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.error().message.find("a layer segment is written {i<N} or {M<=i<N}"), std::string::npos)
      << o.error().message;
}

}  // namespace
}  // namespace arch
