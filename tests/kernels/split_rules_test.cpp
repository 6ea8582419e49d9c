// Split rules (OpDef::split, engine/core/split.h) worked by hand on small
// shapes: what part of each input an op asks for a part of its outputs,
// and what part of each output it then makes.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/kernels.h"

namespace arch {
namespace {

TypedShape f32(std::vector<Dim> dims) { return {DType::F32, Shape(std::move(dims))}; }

Result<SplitAnswer> ask(const char* op, const std::vector<TypedShape>& in, const std::vector<TypedShape>& out,
                        const nlohmann::json& attrs, const std::vector<Part>& want) {
  const OpDef* def = op_table().find(op);
  EXPECT_TRUE(def && def->split) << op;
  std::unique_ptr<bool[]> present(new bool[in.size()]);
  for (size_t i = 0; i < in.size(); ++i) present[i] = true;
  return def->split(SplitQuery{in, {present.get(), in.size()}, out, attrs, want});
}

const Dim S = Dim::seq();

// q | k | v joined along channels 16 + 16 + 32: channels [0, 8), [16, 24)
// and [32, 48) are each input's first half.
TEST(SplitRules, ConcatAlongTheJoinedAxisTakesEachInputsShare) {
  const std::vector<TypedShape> in = {f32({S, Dim::of(16)}), f32({S, Dim::of(16)}), f32({S, Dim::of(32)})};
  auto a = ask("concat", in, {f32({S, Dim::of(64)})}, {{"axis", 1}}, {Part{1, {{0, 8}, {16, 24}, {32, 48}}}});
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->inputs[0], Part::of(1, 0, 8));
  EXPECT_EQ(a->inputs[1], Part::of(1, 0, 8));
  EXPECT_EQ(a->inputs[2], Part::of(1, 0, 16));
  // A part leaving an input out entirely cannot be made by this concat.
  EXPECT_FALSE(ask("concat", in, {f32({S, Dim::of(64)})}, {{"axis", 1}}, {Part::of(1, 0, 8)}).ok());
}

// [seq, 2 key heads, 2 x 16] as [seq, 4 value heads, 16]: value head 1
// alone cuts key head 0's pair, so the whole pair (value heads 0 and 1) is
// made and said, and its reader slices head 1 from it.
TEST(SplitRules, AReshapeCuttingAStepMakesTheWholeStep) {
  auto a = ask("reshape", {f32({S, Dim::of(2), Dim::of(32)})}, {f32({S, Dim::of(4), Dim::of(16)})},
               {{"shape", {-1, 4, 16}}}, {Part::of(1, 1, 2)});
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->inputs[0], Part::of(1, 0, 1));
  ASSERT_EQ(a->outputs.size(), 1u);
  EXPECT_EQ(a->outputs[0], Part::of(1, 0, 2));
  EXPECT_EQ(a->attrs["shape"][1], 2);
  // On whole steps, as asked.
  auto b = ask("reshape", {f32({S, Dim::of(2), Dim::of(32)})}, {f32({S, Dim::of(4), Dim::of(16)})},
               {{"shape", {-1, 4, 16}}}, {Part::of(1, 2, 4)});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->inputs[0], Part::of(1, 1, 2));
  EXPECT_TRUE(b->outputs.empty());
}

// The convolution's channels, its window's rows the same channels.
TEST(SplitRules, CausalConvByChannelsItsWindowAlike) {
  const Part channels{1, {{0, 16}, {32, 48}}};
  auto a = ask("causal_conv1d", {f32({S, Dim::of(64)}), f32({Dim::of(64), Dim::of(4)})},
               {f32({S, Dim::of(64)}), f32({Dim::of(64), Dim::of(4)})}, nlohmann::json::object(),
               {channels, Part{kOpenPart, {}}});
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->inputs[0], channels);
  EXPECT_EQ(a->inputs[1], (Part{0, channels.ranges}));
  ASSERT_EQ(a->outputs.size(), 2u);
  EXPECT_EQ(a->outputs[1], (Part{0, channels.ranges}));
  EXPECT_FALSE(ask("causal_conv1d", {f32({S, Dim::of(64)}), f32({Dim::of(64), Dim::of(4)})},
                   {f32({S, Dim::of(64)}), f32({Dim::of(64), Dim::of(4)})}, nlohmann::json::object(),
                   {channels, Part::of(1, 0, 2)})
                   .ok());  // the window by its time steps: not a part this op makes
}

// 4 value heads over 2 key heads: value head 3 reads key head 1; value
// heads 1 and 2 read key heads 0 and 1 in the whole's pattern.
TEST(SplitRules, GatedDeltaRuleByValueHeadsAndTheKeyHeadsTheyRead) {
  const std::vector<TypedShape> in = {f32({S, Dim::of(2), Dim::of(8)}), f32({S, Dim::of(2), Dim::of(8)}),
                                      f32({S, Dim::of(4), Dim::of(8)}), f32({S, Dim::of(4)}), f32({S, Dim::of(4)})};
  const std::vector<TypedShape> out = {f32({S, Dim::of(4), Dim::of(8)}), f32({Dim::of(4), Dim::of(8), Dim::of(8)})};
  auto a = ask("gated_delta_rule", in, out, nlohmann::json::object(), {Part::of(1, 3, 4), Part{kOpenPart, {}}});
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->inputs[0], Part::of(1, 1, 2));
  EXPECT_EQ(a->inputs[1], Part::of(1, 1, 2));
  EXPECT_EQ(a->inputs[2], Part::of(1, 3, 4));
  EXPECT_EQ(a->inputs[3], Part::of(1, 3, 4));
  EXPECT_EQ(a->outputs[1], Part::of(0, 3, 4));
  auto b = ask("gated_delta_rule", in, out, nlohmann::json::object(), {Part::of(1, 1, 3), Part{kOpenPart, {}}});
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->inputs[0], Part::of(1, 0, 2));
}

}  // namespace
}  // namespace arch
