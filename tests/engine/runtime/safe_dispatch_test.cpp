// A checkpoint whose model_type no family lists is matched by its tensors;
// it runs only when its config holds nothing the template leaves unread
// (the registry's generic fields aside), else it is refused naming those
// fields, unless --force-family asks for the family anyway.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "importer/checkpoint/toy_checkpoint.h"
#include "engine/runtime/model.h"

namespace arch {
namespace {

namespace fs = std::filesystem;

// The toy checkpoint (a Llama) under an unlisted model_type, with `extra`
// merged into its config.
struct Unlisted {
  fs::path dir = fs::temp_directory_path() / ("unlisted_" + std::to_string(getpid()));
  explicit Unlisted(const nlohmann::json& extra) {
    EXPECT_TRUE(write_toy_checkpoint(dir.string(), 1).ok());
    auto config = nlohmann::json::parse(std::ifstream(dir / "config.json"));
    config["model_type"] = "alien_lm";
    config["architectures"] = {"AlienForCausalLM"};
    config.update(extra);
    std::ofstream(dir / "config.json") << config.dump(2);
  }
  ~Unlisted() { fs::remove_all(dir); }
};

TEST(SafeDispatch, TensorsAndKnownFieldsRunBySignature) {
  Unlisted u(nlohmann::json::object({{"attention_dropout", 0.0}, {"initializer_range", 0.02}}));
  auto m = load_model(u.dir.string());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ((*m)->family, "LlamaStyle");
  EXPECT_NE((*m)->reason.find("signature"), std::string::npos) << (*m)->reason;
  EXPECT_TRUE((*m)->unread_config.empty());
  EXPECT_TRUE((*m)->warnings.empty());
}

TEST(SafeDispatch, UnreadConfigFieldsRefuseAndNameThemselves) {
  Unlisted u({{"logit_multiplier", 0.5}, {"embedding_multiplier", 12.0}, {"dropout", 0.1}});
  auto m = load_model(u.dir.string());
  ASSERT_FALSE(m.ok());
  const std::string& msg = m.error().message;
  EXPECT_NE(msg.find("model_type 'alien_lm' is not listed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("LlamaStyle does not read: embedding_multiplier, logit_multiplier."), std::string::npos) << msg;
  EXPECT_NE(msg.find("--force-family LlamaStyle"), std::string::npos) << msg;

  LoadOptions forced;
  forced.force_family = "LlamaStyle";
  auto f = load_model(u.dir.string(), forced);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ((*f)->unread_config, (std::vector<std::string>{"embedding_multiplier", "logit_multiplier"}));
  ASSERT_EQ((*f)->warnings.size(), 1u);
  EXPECT_NE((*f)->warnings[0].find("runs on LlamaStyle"), std::string::npos) << (*f)->warnings[0];
  EXPECT_NE((*f)->warnings[0].find("embedding_multiplier, logit_multiplier"), std::string::npos);

  forced.force_family = "NoSuchStyle";
  auto none = load_model(u.dir.string(), forced);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("--force-family NoSuchStyle: no such family"), std::string::npos)
      << none.error().message;
  forced.force_family = "ViTStyle";  // two templates: the file name says which
  auto two = load_model(u.dir.string(), forced);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().message.find("name one by its file"), std::string::npos) << two.error().message;
}

// A listed model_type runs whatever its config holds; the fields its
// template leaves unread are still told.
TEST(SafeDispatch, ListedTypesRunAndTellTheirUnreadFields) {
  Unlisted u({{"model_type", "llama"}, {"logit_multiplier", 0.5}});
  auto m = load_model(u.dir.string());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ((*m)->unread_config, std::vector<std::string>{"logit_multiplier"});
  EXPECT_TRUE((*m)->warnings.empty());
}

}  // namespace
}  // namespace arch
