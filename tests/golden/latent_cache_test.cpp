// DeepSeek's latent KV cache (deepseek_v3): per token and layer the normed
// latent and the shared rope key, kv_lora_rank + qk_rope_head_dim values,
// against every head's keys and values when cached as transformers does
// (--flag latent_cache=false); both give transformers' greedy tokens.
#include <gtest/gtest.h>

#include "engine/runtime/generate.h"
#include "engine/runtime/kv_footprint.h"
#include "engine/runtime/model.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

using testing::golden_dir;
using testing::read_json;

TEST(LatentCache, HoldsTheLatentAndTheRopeKeyOnly) {
  std::string dir = golden_dir("deepseek_v3");
  ARCH_REQUIRE_SHARED(dir);
  auto config = read_json(dir + "/config.json");
  const int64_t layers = config["num_hidden_layers"], heads = config["num_attention_heads"];
  const int64_t latent = config["kv_lora_rank"], rope = config["qk_rope_head_dim"];
  const int64_t qk = config["qk_nope_head_dim"].get<int64_t>() + rope, v = config["v_head_dim"];
  auto prompt = read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int32_t>>();
  auto want = read_json(dir + "/expected.json")["greedy"]["new_token_ids"].get<std::vector<int32_t>>();
  for (bool latent_form : {true, false}) {
    SCOPED_TRACE(latent_form ? "latent" : "per head");
    LoadOptions lo;
    lo.flags["latent_cache"] = latent_form;
    auto m = load_model(dir, lo);
    ASSERT_TRUE(m.ok()) << m.error().message;
    const int64_t per_position = kv_bytes_per_position((*m)->program());
    EXPECT_EQ(per_position, latent_form ? layers * (latent + rope) * 4 : layers * heads * (qk + v) * 4);
    GenerateOptions opt;
    opt.max_new_tokens = int(want.size());
    auto r = generate(**m, prompt, opt);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->tokens, want);
  }
}

}  // namespace
}  // namespace arch
