// The OpenAI API's reply objects: a completion and a chat completion, whole
// or as stream chunks (server-sent events), the model list, embeddings.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/sampler.h"

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
// tokenizer replies with ids only); `logprobs`: the choice's (null: not
// asked for).
nlohmann::json completion_reply(const ReplyHeader& h, const std::string& text, const std::vector<int32_t>& ids,
                                const std::string& finish_reason, const Usage& usage,
                                const nlohmann::json& logprobs = nullptr);
// One stream chunk: a piece of text (the chat's first says the role), or the
// last with the finish reason and usage.
nlohmann::json completion_chunk(const ReplyHeader& h, const std::string& text, const std::vector<int32_t>& ids,
                                 bool first, const nlohmann::json& logprobs = nullptr);
// Where a completion's logprobs stand: the byte offset of the next token's
// text, and the token before it (its text's context).
struct LogprobsCursor {
  int64_t offset = 0;
  int32_t prev = -1;
};
// A choice's `logprobs` for these tokens (`lps`: one per id), as the API
// gives them: chat's {"content": [{"token", "logprob", "bytes",
// "top_logprobs"}]}, completions' {"tokens", "token_logprobs",
// "top_logprobs", "text_offset"} (offsets in bytes). `piece(id, prev)`: a
// token's text after `prev`; the cursor moves past these tokens.
nlohmann::json logprobs_json(bool chat, std::span<const int32_t> ids, std::span<const TokenLogprobs> lps,
                             const std::function<std::string(int32_t, int32_t)>& piece, LogprobsCursor& at);
nlohmann::json final_chunk(const ReplyHeader& h, const std::string& finish_reason, const Usage& usage);
// A chat choice (whole: its message; a chunk: its delta) given the calls a
// reply's text holds: tool_calls (ids made from the reply's), the content
// the words outside them (null where none), finish_reason tool_calls.
void with_tool_calls(nlohmann::json& choice, const struct ParsedReply& parsed, const std::string& reply_id, bool delta);
// JSON as sent: text that is not valid UTF-8 replaced, never thrown on.
std::string dump(const nlohmann::json& j);
// An event of a server-sent event stream: "data: <json>\n\n".
std::string sse(const nlohmann::json& j);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

nlohmann::json model_list(const std::string& model, int64_t created);
nlohmann::json embedding_reply(const std::string& model, const std::vector<std::vector<float>>& vectors,
                               int64_t prompt_tokens);

}  // namespace arch::serve
