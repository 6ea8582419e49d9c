// A chat template parsed and rendered on a small conversation.
#include <nlohmann/json.hpp>

#include "importer/text/chat_template/chat_template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = arch::parse_chat_template(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!t.ok()) return 0;
  static const nlohmann::json context = {
      {"messages",
       {{{"role", "system"}, {"content", "Be brief."}},
        {{"role", "user"}, {"content", "Hello"}},
        {{"role", "assistant"}, {"content", "Hi there"}},
        {{"role", "user"}, {"content", "And 2 + 2?"}}}},
      {"add_generation_prompt", true},
      {"bos_token", "<s>"},
      {"eos_token", "</s>"}};
  (void)t->render(context);
  return 0;
}
