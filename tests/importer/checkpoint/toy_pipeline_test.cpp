// A toy spec holding `pipeline`: model_index.json, each component from the
// spec file it names (beside it) in its folder, the scheduler's config.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "importer/checkpoint/checkpoint.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::TempDir;

TEST(ToyPipeline, WritesEachComponentAndTheIndex) {
  TempDir specs, out;
  std::ofstream(specs / "part.json") << R"({"config": {"model_type": "x"}, "tensors": [["a.weight", [2, 3]], ["b.{i<2}.bias", [4]]]})";
  std::ofstream(specs / "pipe.json") << R"({"pipeline": {"model_index": {"_class_name": "P"},
      "components": {"first": "part.json", "second": "part.json"}, "scheduler_config": {"_class_name": "S"}}})";
  ASSERT_TRUE(write_toy_from_spec(specs / "pipe.json", out.path()).ok());
  namespace fs = std::filesystem;
  EXPECT_TRUE(fs::exists(out / "model_index.json"));
  EXPECT_TRUE(fs::exists(fs::path(out.path()) / "scheduler" / "scheduler_config.json"));
  for (const char* c : {"first", "second"}) {
    auto ck = load_checkpoint((fs::path(out.path()) / c).string());
    ASSERT_TRUE(ck.ok()) << ck.error().message;
    EXPECT_EQ(ck->tensors.size(), 3u);
    EXPECT_EQ(ck->shape_of("b.1.bias"), (Dims{4}));
  }
  // The components draw from seeds of their own: the same spec, different weights.
  auto a = load_checkpoint((fs::path(out.path()) / "first").string()), b = load_checkpoint((fs::path(out.path()) / "second").string());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(to_f32(*a->find("a.weight")).f32()[0], to_f32(*b->find("a.weight")).f32()[0]);
}

}  // namespace
}  // namespace arch
