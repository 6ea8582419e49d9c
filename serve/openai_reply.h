// The OpenAI API's reply objects: a completion and a chat completion, whole
// or as stream chunks (server-sent events), the model list, embeddings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace arch::serve {

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0;
  nlohmann::json json() const;
};

// What every reply of one request shares: its id, creation time, model.
struct ReplyHeader {
  std::string id;        // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;   // seconds since the epoch
  std::string model;
  bool chat = false;
};
ReplyHeader make_header(bool chat, const std::string& model);

// A whole reply. `ids`: the tokens, given beside the text (a model without a
// tokenizer replies with ids only).
nlohmann::json completion_reply(const ReplyHeader& h, const std::string& text, const std::vector<int32_t>& ids,
                                const std::string& finish_reason, const Usage& usage);
// One stream chunk: a piece of text (the chat's first says the role), or the
// last with the finish reason and usage.
nlohmann::json completion_chunk(const ReplyHeader& h, const std::string& text, const std::vector<int32_t>& ids,
                                 bool first);
nlohmann::json final_chunk(const ReplyHeader& h, const std::string& finish_reason, const Usage& usage);
// JSON as sent: text that is not valid UTF-8 replaced, never thrown on.
std::string dump(const nlohmann::json& j);
// An event of a server-sent event stream: "data: <json>\n\n".
std::string sse(const nlohmann::json& j);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

nlohmann::json model_list(const std::string& model, int64_t created);
nlohmann::json embedding_reply(const std::string& model, const std::vector<std::vector<float>>& vectors,
                               int64_t prompt_tokens);

}  // namespace arch::serve
