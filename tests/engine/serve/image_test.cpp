// /v1/images/generations over the SD 1.5 and SDXL pipeline goldens: the PNG is the
// one imagining the same ids from the same seeded latents in-process writes.
#include "tests/engine/serve/serve_fixture.h"

#include <openssl/evp.h>

#include "importer/image/image_write.h"
#include "engine/runtime/pipeline.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::RunningServer;
using json = nlohmann::json;

std::string unbase64(const std::string& b64) {
  std::string out(b64.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(b64.data()), int(b64.size()));
  out.resize(size_t(std::max(n, 0)) - (b64.size() >= 2 && b64[b64.size() - 1] == '=' ? (b64[b64.size() - 2] == '=' ? 2 : 1) : 0));
  return out;
}

TEST(ServeImages, APngIsWhatImaginingGives) {
  const std::string dir = testing::golden_dir("sd15_pipeline");
  ARCH_REQUIRE_SHARED(dir);
  auto p = load_pipeline(dir);
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto pipe = std::make_shared<Pipeline>(std::move(p).value());
  const std::vector<int32_t> ids = {98, 18, 80, 16, 93, 12, 59, 99, 99, 99, 99, 99, 99, 99, 99, 99};
  const std::vector<int32_t> negative = {98, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99};
  ImagineOptions opt;
  opt.ids = ids;
  opt.negative_ids = negative;
  opt.steps = 4;
  auto shape = latent_shape(*pipe, 32, 32);
  ASSERT_TRUE(shape.ok());
  opt.latents = seeded_latents(*shape, 11);
  auto want = imagine(*pipe, opt);
  ASSERT_TRUE(want.ok()) << want.error().message;
  const fs::path png = fs::temp_directory_path() / ("serve_image_" + std::to_string(getpid()) + ".png");
  ASSERT_TRUE(write_png(png.string(), want->image).ok());
  std::ifstream in(png, std::ios::binary);
  const std::string want_bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  fs::remove(png);

  RunningServer s(serve::Server::make(pipe, dir, testing::options()));
  auto c = s.client();
  json req = {{"model", "sd15_pipeline"}, {"prompt_ids", ids}, {"negative_prompt_ids", negative}, {"num_inference_steps", 4},
              {"size", "32x32"}, {"seed", 11}, {"response_format", "b64_json"}};
  auto r = c.Post("/v1/images/generations", req.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  auto j = testing::body_of(r);
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(unbase64(j["data"][0]["b64_json"]), want_bytes);
  EXPECT_EQ(j["data"][0]["seed"], 11);
  // What it cannot make.
  for (const json& bad : {json{{"prompt", "a cat"}}, json{{"prompt_ids", ids}, {"size", "32 by 32"}},
                          json{{"prompt_ids", ids}, {"size", "30x30"}, {"negative_prompt_ids", negative}},
                          json{{"prompt_ids", ids}, {"response_format", "url"}}, json{{"prompt_ids", ids}, {"n", 2}},
                          json{{"prompt_ids", ids}, {"num_inference_steps", 0}}}) {
    auto b = c.Post("/v1/images/generations", bad.dump(), "application/json");
    EXPECT_EQ(b->status, 400) << bad.dump() << ": " << b->body;
  }
  EXPECT_EQ(c.Post("/v1/chat/completions", json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}}.dump(), "application/json")->status, 400);
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// An SDXL pipeline folder: the PNG is what imagining both encoders' ids
// from the same seeded latents in-process writes (zeros for the
// unconditional half); the second encoder's fields refused on SD 1.5.
TEST(ServeImages, SdxlFromBothEncodersIds) {
  const std::string dir = testing::golden_dir("sdxl_pipeline");
  ARCH_REQUIRE_SHARED(dir);
  auto p = load_pipeline(dir);
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto pipe = std::make_shared<Pipeline>(std::move(p).value());
  const auto in = testing::read_json(dir + "/inputs.json");
  ImagineOptions opt;
  opt.ids = in["prompt_input_ids"].get<std::vector<int32_t>>();
  opt.ids_2 = in["prompt_input_ids_2"].get<std::vector<int32_t>>();
  opt.steps = 2;
  opt.guidance = 5.0f;
  auto shape = latent_shape(*pipe, 32, 32);
  ASSERT_TRUE(shape.ok());
  opt.latents = seeded_latents(*shape, 7);
  auto want = imagine(*pipe, opt);
  ASSERT_TRUE(want.ok()) << want.error().message;
  const fs::path png = fs::temp_directory_path() / ("serve_xl_" + std::to_string(getpid()) + ".png");
  ASSERT_TRUE(write_png(png.string(), want->image).ok());
  std::ifstream f(png, std::ios::binary);
  const std::string want_bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  fs::remove(png);
  RunningServer s(serve::Server::make(pipe, dir, testing::options()));
  auto c = s.client();
  json req = {{"prompt_ids", opt.ids}, {"prompt_ids_2", opt.ids_2}, {"num_inference_steps", 2}, {"guidance_scale", 5.0},
              {"size", "32x32"}, {"seed", 7}};
  auto r = c.Post("/v1/images/generations", req.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(unbase64(testing::body_of(r)["data"][0]["b64_json"].get<std::string>()), want_bytes);

  auto sd15 = load_pipeline(testing::golden_dir("sd15_pipeline"));
  ASSERT_TRUE(sd15.ok());
  RunningServer one(serve::Server::make(std::make_shared<Pipeline>(std::move(sd15).value()), testing::golden_dir("sd15_pipeline"), testing::options()));
  auto c1 = one.client();
  auto bad = c1.Post("/v1/images/generations", json{{"prompt_ids", {98, 99}}, {"prompt_ids_2", {98, 99}}}.dump(), "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(testing::body_of(bad)["error"]["param"], "prompt_ids_2") << bad->body;
}

}  // namespace
}  // namespace arch
