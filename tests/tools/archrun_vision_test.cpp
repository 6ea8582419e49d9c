// The vision commands on the goldens: archrun classify on DINOv2 with an
// image-classification head (registers, an image of another size than the
// config's): the labels and probabilities are the head's on the
// preprocessed image, run in-process; archrun upscale through Swin2SR;
// archrun bench on encoders.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <stb/stb_image_write.h>

#include "engine/runtime/forward.h"
#include "engine/runtime/model.h"
#include "importer/image/image.h"
#include "importer/image/image_preprocess.h"
#include "importer/image/image_processor_config.h"
#include "tests/engine/runtime/cross_encoder.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

TEST(ArchrunClassify, Dinov2WithAHead) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("dinov2_registers"));
  const nlohmann::json labels = {{"0", "cat"}, {"1", "dog"}, {"2", "bird"}, {"3", "fish"}};
  testing::GoldenVariant v("dinov2_registers", "dinov2_classifier", {{"id2label", labels}},
                           {{"classifier.weight", testing::seeded({4, 128}, 31)}, {"classifier.bias", testing::seeded({4}, 32)}});
  // BitImageProcessor as DINOv2's cards have it, resizing to 40 x 48 (5 x 6 patches of 8).
  std::ofstream(v.dir / "preprocessor_config.json") << R"({"image_processor_type": "BitImageProcessor",
      "do_resize": true, "size": {"height": 40, "width": 48}, "resample": 3, "do_center_crop": false,
      "do_rescale": true, "rescale_factor": 0.00392156862745098, "do_normalize": true,
      "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]})";
  std::vector<unsigned char> rgb(64 * 56 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<unsigned char>((i * 53) % 241);
  const std::string png = (v.dir / "image.png").string();
  ASSERT_NE(stbi_write_png(png.c_str(), 64, 56, 3, rgb.data(), 64 * 3), 0);
  auto r = testing::run_tool(testing::archrun() + " classify " + v.path() + " " + png + " --top-k 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto top = nlohmann::json::parse(r.out)["top"];
  ASSERT_EQ(top.size(), 4u);
  // In-process: the same preprocessing, the head's softmax.
  auto m = load_model(v.path());
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto image = load_image(png);
  ASSERT_TRUE(image.ok());
  auto pre = read_preprocessor_config(v.path(), (*m)->checkpoint.config);
  ASSERT_TRUE(pre.ok()) << pre.error().message;
  const Tensor pixels = preprocess(*image, *pre);
  ASSERT_EQ(pixels.shape, (Dims{3, 40, 48}));
  auto out = forward(**m, {{"pixel_values", pixels}}, {"logits"});
  ASSERT_TRUE(out.ok()) << out.error().message;
  const float* l = out->at("logits").f32();
  double most = -INFINITY, total = 0;
  for (int i = 0; i < 4; ++i) most = std::max(most, double(l[i]));
  for (int i = 0; i < 4; ++i) total += std::exp(l[i] - most);
  for (const auto& t : top) {
    const std::string label = t["label"];
    int id = -1;
    for (int i = 0; i < 4; ++i)
      if (labels[std::to_string(i)] == label) id = i;
    ASSERT_GE(id, 0) << label;
    EXPECT_NEAR(t["probability"].get<double>(), std::exp(l[id] - most) / total, 1e-5) << label;
  }
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// archrun upscale: a PNG twice the size, tile by tile; nothing written when
// the model cannot upscale.
TEST(ArchrunUpscale, WritesAnImageOfTheRightSize) {
  const std::string dir = testing::golden_dir("swin2sr");
  ARCH_REQUIRE_SHARED(dir);
  testing::GoldenVariant scratch("swin2sr", "upscale_scratch", nlohmann::json::object());
  std::vector<unsigned char> rgb(45 * 30 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<unsigned char>((i * 29) % 253);
  const std::string in = (scratch.dir / "in.png").string(), out = (scratch.dir / "out.png").string();
  ASSERT_NE(stbi_write_png(in.c_str(), 45, 30, 3, rgb.data(), 45 * 3), 0);
  auto r = testing::run_tool(testing::archrun() + " upscale " + dir + " " + in + " -o " + out + " --tile 24 --overlap 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(testing::last_line(r.out));
  EXPECT_EQ(j["output"]["width"], 90);
  EXPECT_EQ(j["output"]["height"], 60);
  EXPECT_EQ(j["scale"], 2);
  auto img = load_image(out);
  ASSERT_TRUE(img.ok()) << img.error().message;
  EXPECT_EQ(img->shape, (Dims{3, 60, 90}));
  // Progress on stderr, tile by tile.
  auto p = testing::run_tool(testing::archrun() + " upscale " + dir + " " + in + " -o " + out + " --tile 24 --overlap 8");
  ASSERT_EQ(p.exit_code, 0) << p.out;
  EXPECT_NE(p.out.find("tile 6/6"), std::string::npos) << p.out;
  // A model that is not a super-resolution model: an error, and no file.
  const std::string none = (scratch.dir / "none.png").string();
  auto bad = testing::run_tool(testing::archrun() + " upscale " + testing::golden_dir("dinov2") + " " + in + " -o " + none);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.out.find("the model makes no reconstruction"), std::string::npos) << bad.out;
  EXPECT_FALSE(std::filesystem::exists(none));
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// archrun bench on encoders: a text encoder's sequences and a vision
// model's images per second, with the GFLOP of the pass and the GEMM rate
// measured beside it (figures, not timed assertions).
TEST(ArchrunBenchEncoder, ReportsInputsPerSecondBesideTheGemmRate) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("deberta_v2"));
  auto text = testing::run_tool(testing::archrun() + " bench " + testing::golden_dir("deberta_v2") + " -p 300 --json");
  ASSERT_EQ(text.exit_code, 0) << text.out;
  auto t = nlohmann::json::parse(testing::last_line(text.out));
  EXPECT_EQ(t["inputs"], "input_ids [64]");  // -p 300 cut to the model's 64 positions
  EXPECT_GT(t["sequences_per_s"].get<double>(), 0.0);
  EXPECT_GT(t["gflop"].get<double>(), 0.0);
  EXPECT_GT(t["gemm_gflop_s"].get<double>(), 0.0);
  auto image = testing::run_tool(testing::archrun() + " bench " + testing::golden_dir("swin2sr") + " --json");
  ASSERT_EQ(image.exit_code, 0) << image.out;
  auto i = nlohmann::json::parse(testing::last_line(image.out));
  EXPECT_EQ(i["inputs"], "pixel_values [3, 16, 16]");  // the config's image_size
  EXPECT_GT(i["images_per_s"].get<double>(), 0.0);
  EXPECT_GT(i["gflop"].get<double>(), 0.0);
}

}  // namespace
}  // namespace arch
