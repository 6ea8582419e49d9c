// archrun generate --image (issue 54): a vision-language model's prompt
// with an image file, its marker expanded as the model's processor does
// and its features placed, the tokens those of the library run on the same
// prepared pixels; mistakes refused by name.
#include <gtest/gtest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "engine/runtime/generate.h"
#include "engine/runtime/image_prompt.h"
#include "importer/image/image_write.h"
#include "tests/golden/golden_case.h"
#include "tests/test_files.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

using testing::run_tool;

// A PNG of seeded colours.
std::string png(testing::TempDir& dir, int h, int w, uint32_t seed) {
  Tensor img = Tensor::zeros(DType::F32, {3, h, w});
  for (int64_t k = 0; k < img.numel(); ++k) {
    seed = seed * 1664525u + 1013904223u;
    img.f32()[k] = float(seed >> 8) / float(1u << 24);
  }
  const std::string path = dir / ("image" + std::to_string(seed % 1000) + ".png");
  EXPECT_TRUE(write_png(path, img).ok());
  return path;
}

struct Case {
  const char* golden;
  std::vector<int32_t> ids;       // with one image marker
  std::vector<int32_t> expanded;  // what the marker becomes
};

std::vector<int32_t> library_tokens(const std::string& dir, const std::string& image, const std::vector<int32_t>& ids, int n) {
  auto m = load_model(dir);
  EXPECT_TRUE(m.ok()) << m.error().message;
  auto ip = image_prompt(**m);
  EXPECT_TRUE(ip.ok()) << ip.error().message;
  auto pixels = image_pixels(**m, image);
  EXPECT_TRUE(pixels.ok()) << pixels.error().message;
  auto prompt = expand_image_ids(ids, *ip, 1);
  EXPECT_TRUE(prompt.ok()) << prompt.error().message;
  Session s(**m, int64_t(prompt->size()) + n);
  EXPECT_TRUE(encode_images(s, *ip, {*pixels}).ok());
  GenerateOptions opt;
  opt.max_new_tokens = n;
  auto r = generate(s, *prompt, opt);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? r->tokens : std::vector<int32_t>{};
}

TEST(ArchrunImageChat, AnImagesMarkerBecomesItsTokensAndTheReplyIsTheLibrarys) {
  std::vector<int32_t> soft(9, 510), image(16, 500);
  std::vector<int32_t> gemma = {2, 456, 317, 108, 500};
  gemma.insert(gemma.end(), soft.begin(), soft.end());
  gemma.insert(gemma.end(), {501, 108, 115, 301});
  std::vector<int32_t> llava = {1, 447, 152, 383};
  llava.insert(llava.end(), image.begin(), image.end());
  llava.insert(llava.end(), {33, 136});
  for (const Case& c : {Case{"llava", {1, 447, 152, 383, 500, 33, 136}, llava},
                        Case{"gemma3_vlm", {2, 456, 317, 500, 115, 301}, gemma}}) {
    SCOPED_TRACE(c.golden);
    const std::string dir = testing::golden_dir(c.golden);
    ARCH_REQUIRE_SHARED(dir);
    testing::TempDir tmp;
    // Not the model's size: the processor resizes it (CLIP: shortest edge and crop; Gemma 3: square).
    const std::string image = png(tmp, 40, 52, 7);
    std::string ids;
    for (int32_t t : c.ids) ids += (ids.empty() ? "" : ",") + std::to_string(t);
    auto r = run_tool(testing::archrun() + " generate " + dir + " --ids " + ids + " --image " + image + " -n 8 --json");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const auto j = nlohmann::json::parse(testing::last_line(r.out));
    EXPECT_EQ(j["prompt_tokens"].get<std::vector<int32_t>>(), c.expanded);
    EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), library_tokens(dir, image, c.ids, 8));
    // Another image, another reply's features: the image is read.
    const std::string other = png(tmp, 40, 52, 99);
    auto o = run_tool(testing::archrun() + " generate " + dir + " --ids " + ids + " --image " + other + " -n 8 --json");
    ASSERT_EQ(o.exit_code, 0) << o.out;
    EXPECT_EQ(nlohmann::json::parse(testing::last_line(o.out))["tokens"].get<std::vector<int32_t>>(),
              library_tokens(dir, other, c.ids, 8));
  }
}

// The llava golden with a word-level tokenizer of its 512 ids ("<image>"
// is 500) and a chat template that writes an image part as <image>.
std::string llava_with_tokenizer(testing::TempDir& tmp) {
  const std::string golden = testing::golden_dir("llava");
  const std::string dir = tmp / "llava";
  std::filesystem::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors", "generation_config.json"})
    std::filesystem::create_symlink(golden + "/" + f, dir + "/" + f);
  nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int i = 3; i < 512; ++i) vocab[i == 500 ? std::string("<image>") : "w" + std::to_string(i)] = i;
  auto special = [](int id, const char* content) {
    return nlohmann::json{{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                          {"rstrip", false}, {"normalized", false}, {"special", true}};
  };
  nlohmann::json tok = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr},
                        {"added_tokens", {special(0, "<unk>"), special(1, "<s>"), special(2, "</s>"), special(500, "<image>")}},
                        {"normalizer", nullptr}, {"pre_tokenizer", {{"type", "Whitespace"}}}, {"post_processor", nullptr},
                        {"decoder", nullptr}, {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}}};
  testing::write_file(dir + "/tokenizer.json", tok.dump());
  const std::string tmpl =
      "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {% if m['content'] is string %}{{ m['content'] }}{% else %}"
      "{% for p in m['content'] %}{% if p['type'] == 'image' %}<image> {% else %}{{ p['text'] }}{% endif %}{% endfor %}"
      "{% endif %}{{ '\\n' }}{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}";
  testing::write_file(dir + "/tokenizer_config.json",
                      nlohmann::json{{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"chat_template", tmpl}}.dump());
  return dir;
}

// archrun chat --image: the first turn's image placed where the template
// writes its marker; the reply is generate's on the same rendering.
TEST(ArchrunImageChat, ChatTakesAnImageForItsFirstTurn) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("llava"));
  testing::TempDir tmp;
  const std::string dir = llava_with_tokenizer(tmp);
  const std::string image = png(tmp, 40, 36, 11);
  testing::write_file(tmp / "turns.txt", "w5 w7 w9\nw11 w12\n");
  auto chat = run_tool(testing::archrun() + " chat " + dir + " --image " + image + " -n 8 < " + (tmp / "turns.txt"));
  ASSERT_EQ(chat.exit_code, 0) << chat.out;
  auto gen = run_tool(testing::archrun() + " generate " + dir + " -p \"$(printf '<s>user: <image> w5 w7 w9\\nassistant:')\" --image " + image +
                      " -n 8 --json");
  ASSERT_EQ(gen.exit_code, 0) << gen.out;
  const auto want = nlohmann::json::parse(testing::last_line(gen.out));
  EXPECT_EQ(want["prompt_tokens"].size(), 24u);  // <s> user : 16 x <image> w5 w7 w9 assistant :
  EXPECT_EQ(chat.out.substr(0, chat.out.find('\n')), want["text"].get<std::string>()) << chat.out;
  // No chat template to place it in: refused by name.
  const std::string bare = tmp / "bare";
  std::filesystem::create_directories(bare);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    std::filesystem::create_symlink(dir + "/" + f, bare + "/" + f);
  auto none = run_tool(testing::archrun() + " chat " + bare + " --image " + image + " < " + (tmp / "turns.txt"));
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.out.find("no chat template to place the image in"), std::string::npos) << none.out;
}

TEST(ArchrunImageChat, MistakesAreRefusedByName) {
  const std::string llava = testing::golden_dir("llava");
  const std::string llama = testing::golden_dir("llama");
  ARCH_REQUIRE_SHARED(llava);
  testing::TempDir tmp;
  const std::string image = png(tmp, 32, 32, 3);
  // No marker for the image.
  auto none = run_tool(testing::archrun() + " generate " + llava + " --ids 1,5,6 --image " + image);
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.out.find("the prompt holds 0 image markers (token 500) for 1 image"), std::string::npos) << none.out;
  // Not an image.
  testing::write_file(tmp / "not.png", "no picture here");
  auto bad = run_tool(testing::archrun() + " generate " + llava + " --ids 1,500 --image " + (tmp / "not.png"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.out.find("--image " + (tmp / "not.png")), std::string::npos) << bad.out;
  // A text model takes no image.
  auto text = run_tool(testing::archrun() + " generate " + llama + " --ids 1,5 --image " + image);
  EXPECT_NE(text.exit_code, 0);
  EXPECT_NE(text.out.find("takes no image"), std::string::npos) << text.out;
}

// A marker past the images is refused before its tokens are made: a
// prompt of a million markers and one image grows by no image's tokens.
TEST(ImagePrompt, MarkersPastTheImagesAreRefusedUnexpanded) {
  ImagePrompt ip;
  ip.marker = 7;
  ip.image_token = 9;
  ip.tokens = 256;
  std::vector<int32_t> ids(1000000, 7);
  auto r = expand_image_ids(ids, ip, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the prompt holds more image markers (token 7) than its 1 image"), std::string::npos)
      << r.error().message;
  auto two = expand_image_ids({1, 7, 2, 7}, ip, 2);
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->size(), 2u + 2 * 256u);
}

}  // namespace
}  // namespace arch
