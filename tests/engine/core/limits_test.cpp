// Named limits: defaults, raising one, and the one message a demand over a
// limit gets.
#include "engine/core/limits.h"

#include <gtest/gtest.h>

namespace arch {
namespace {

TEST(Limits, DefaultsAreListed) {
  bool found = false;
  for (const auto& l : all_limits())
    if (l.name == "loop_iterations") {
      found = true;
      EXPECT_EQ(l.standard, 65536);
      EXPECT_EQ(limit("loop_iterations"), l.value);
    }
  EXPECT_TRUE(found);
}

TEST(Limits, AMessageNamesTheLimitAndHowToRaiseIt) {
  Status st = check_limit("image_pixels", int64_t(100000) * 100000, "big.png", "the image's pixels");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "big.png: the image's pixels (10000000000) exceeds the limit 'image_pixels' (178956970); if this is "
            "meant, raise it with --limit image_pixels=N or ARCHETYPE_LIMITS=image_pixels=N");
  EXPECT_TRUE(check_limit("image_pixels", 178956970, "", "").ok());
}

// A request's sizes multiplied for a check never wrap to something small:
// 100000 x 100000 x 16 x 41 is past int64 and stays the largest figure.
TEST(Limits, SaturatingProductNeverWraps) {
  EXPECT_EQ(saturating_product({4, 64, 64}), 16384);
  EXPECT_EQ(saturating_product({41, 16, 100000, 100000, 10000000}), INT64_MAX);
  EXPECT_EQ(saturating_product({int64_t(1) << 62, 4}), INT64_MAX);
  EXPECT_EQ(saturating_product({5, 0, int64_t(1) << 62}), 0);
  EXPECT_EQ(saturating_product({}), 1);
  EXPECT_FALSE(check_limit("latent_elements", saturating_product({41, 16, 100000, 100000}), "", "latents").ok());
  EXPECT_EQ(limit("latent_elements"), int64_t(1) << 28);
}

TEST(Limits, RaisedAndRestored) {
  const int64_t before = limit("graph_nodes");
  ASSERT_TRUE(set_limits("graph_nodes=1e7,loop_iterations=100000").ok());
  EXPECT_EQ(limit("graph_nodes"), 10000000);
  EXPECT_EQ(limit("loop_iterations"), 100000);
  ASSERT_TRUE(set_limit("graph_nodes", before).ok());
  ASSERT_TRUE(set_limit("loop_iterations", 65536).ok());
}

TEST(Limits, BadSpecsSetNothing) {
  const int64_t before = limit("graph_nodes");
  auto unknown = set_limits("graph_nodes=5,no_such=3");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown limit 'no_such'"), std::string::npos);
  EXPECT_EQ(limit("graph_nodes"), before);  // all or nothing
  for (const char* bad : {"graph_nodes=0", "graph_nodes=-3", "graph_nodes=1.5", "graph_nodes=nan", "graph_nodes=",
                          "graph_nodes"}) {
    EXPECT_FALSE(set_limits(bad).ok()) << bad;
    EXPECT_EQ(limit("graph_nodes"), before) << bad;
  }
}

}  // namespace
}  // namespace arch
