// Numeric profiles: the file beside the template, its fields, its errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/npu2/profile.h"

namespace arch::npu2 {
namespace {

std::string write(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

TEST(Npu2Profile, LlamaStyleKeepsTheHeadWide) {
  auto p = profile_for_template(std::string(ARCHETYPE_FAMILIES_DIR) + "/llama.arch");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_NE(p->path.find("llama.npu2.yaml"), std::string::npos);
  EXPECT_EQ(p->output_of("head", false), "f32");
  EXPECT_EQ(p->output_of("qkv", false), "bf16");
  EXPECT_EQ(p->output_of("", true), "f32");
  EXPECT_DOUBLE_EQ(p->check.rel, 1.0 / 64);
}

TEST(Npu2Profile, NoFileGivesTheDefaults) {
  auto p = profile_for_template("/nonexistent/x.arch");
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->path.empty());
  EXPECT_EQ(p->output_of("head", false), "bf16");
}

TEST(Npu2Profile, ErrorsNameTheFileLineAndField) {
  auto r = read_profile(write("npu2_bad_type.yaml", "weights: bf16\nactivations: int4\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("npu2_bad_type.yaml:2: 'activations': 'int4' is not bf16 or f32"), std::string::npos)
      << r.error().message;
  r = read_profile(write("npu2_bad_role.yaml", "wider:\n  lm_head: f32\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'lm_head' is not a unit's role"), std::string::npos) << r.error().message;
  r = read_profile(write("npu2_unknown.yaml", "weight: bf16\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unknown field 'weight'"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace arch::npu2
