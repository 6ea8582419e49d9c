// OpProfile's per-block split: a value's block is the segment its name has
// after a loop index (what bench --profile adds up by layer kind).
#include <gtest/gtest.h>

#include "engine/runtime/interpreter.h"

namespace arch {
namespace {

TEST(OpProfile, LayerBlockOfAValueName) {
  EXPECT_EQ(layer_block_of("layers.3.self_attention.attn#2"), "self_attention");
  EXPECT_EQ(layer_block_of("layers.12.mlp"), "mlp");
  EXPECT_EQ(layer_block_of("layers.0.linear_attention.moe.gate"), "linear_attention");
  EXPECT_EQ(layer_block_of("layers.7"), "");
  EXPECT_EQ(layer_block_of("logits"), "");
  EXPECT_EQ(layer_block_of("h.final"), "");
  EXPECT_EQ(layer_block_of("layers..x"), "");
}

}  // namespace
}  // namespace arch
