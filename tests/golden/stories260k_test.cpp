// A real trained model: stories260K (llama2.c's TinyStories model in
// Hugging Face layout). Greedy decoding from BOS must give exactly the 256
// tokens llama2.c's run.c gives.
#include <gtest/gtest.h>

#include "engine/runtime/generate.h"
#include "engine/runtime/model.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

TEST(Stories260K, GreedyFromBosMatchesLlama2c) {
  std::string dir = testing::shared_dir() + "/models/stories260K";
  ARCH_REQUIRE_SHARED(dir);
  auto ref = testing::read_json(dir + "/reference_greedy.json");
  auto want = ref["greedy_ids_incl_bos"].get<std::vector<int32_t>>();
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  GenerateOptions opt;
  opt.max_new_tokens = int(want.size()) - 1;
  auto r = generate(**model, {want[0]}, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::vector<int32_t> got = {want[0]};
  got.insert(got.end(), r->tokens.begin(), r->tokens.end());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << "first difference at position " << i;
}

}  // namespace
}  // namespace arch
