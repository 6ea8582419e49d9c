#include "engine/serve/openai_reply.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>

#include "engine/serve/tool_calls.h"

namespace arch::serve {

using json = nlohmann::json;

json Usage::json() const {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

ReplyHeader make_header(bool chat, const std::string& model) {
  static std::atomic<uint64_t> next{1};
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  ReplyHeader h;
  char id[64];
  std::snprintf(id, sizeof id, "%s-%llx%06llx", chat ? "chatcmpl" : "cmpl",
                (unsigned long long)std::chrono::duration_cast<std::chrono::seconds>(now).count(),
                (unsigned long long)next++);
  h.id = id;
  h.created = std::chrono::duration_cast<std::chrono::seconds>(now).count();
  h.model = model;
  h.chat = chat;
  return h;
}

namespace {

json envelope(const ReplyHeader& h, bool chunk) {
  return {{"id", h.id},
          {"object", h.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion"},
          {"created", h.created},
          {"model", h.model},
          {"system_fingerprint", "archetype"}};
}

}  // namespace

json completion_reply(const ReplyHeader& h, const std::string& text, const std::vector<int32_t>& ids,
                      const std::string& finish_reason, const Usage& usage, const json& logprobs) {
  json j = envelope(h, false);
  json choice = {{"index", 0}, {"logprobs", logprobs}, {"finish_reason", finish_reason}, {"tokens", ids}};
  if (h.chat) choice["message"] = {{"role", "assistant"}, {"content", text}};
  else choice["text"] = text;
  j["choices"] = json::array({choice});
  j["usage"] = usage.json();
  return j;
}

json completion_chunk(const ReplyHeader& h, const std::string& text, const std::vector<int32_t>& ids, bool first,
                      const json& logprobs) {
  json j = envelope(h, true);
  json choice = {{"index", 0}, {"logprobs", logprobs}, {"finish_reason", nullptr}, {"tokens", ids}};
  if (h.chat) {
    choice["delta"] = {{"content", text}};
    if (first) choice["delta"]["role"] = "assistant";
  } else {
    choice["text"] = text;
  }
  j["choices"] = json::array({choice});
  return j;
}

json logprobs_json(bool chat, std::span<const int32_t> ids, std::span<const TokenLogprobs> lps,
                   const std::function<std::string(int32_t, int32_t)>& piece, LogprobsCursor& at) {
  const size_t n = std::min(ids.size(), lps.size());
  auto bytes = [](const std::string& t) {
    json b = json::array();
    for (unsigned char c : t) b.push_back(int(c));
    return b;
  };
  if (chat) {
    json content = json::array();
    for (size_t i = 0; i < n; ++i) {
      const std::string t = piece(ids[i], at.prev);
      json top = json::array();
      for (const auto& [id, lp] : lps[i].top) {
        const std::string a = piece(id, at.prev);
        top.push_back({{"token", a}, {"logprob", lp}, {"bytes", bytes(a)}});
      }
      content.push_back({{"token", t}, {"logprob", lps[i].logprob}, {"bytes", bytes(t)}, {"top_logprobs", top}});
      at.offset += int64_t(t.size()), at.prev = ids[i];
    }
    return {{"content", content}, {"refusal", nullptr}};
  }
  json tokens = json::array(), token_logprobs = json::array(), top_logprobs = json::array(), text_offset = json::array();
  for (size_t i = 0; i < n; ++i) {
    const std::string t = piece(ids[i], at.prev);
    tokens.push_back(t);
    token_logprobs.push_back(lps[i].logprob);
    json top = json::object();
    for (const auto& [id, lp] : lps[i].top) top[piece(id, at.prev)] = lp;
    top_logprobs.push_back(top);
    text_offset.push_back(at.offset);
    at.offset += int64_t(t.size()), at.prev = ids[i];
  }
  return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}, {"text_offset", text_offset}};
}

json final_chunk(const ReplyHeader& h, const std::string& finish_reason, const Usage& usage) {
  json j = envelope(h, true);
  json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason}};
  if (h.chat) choice["delta"] = json::object();
  else choice["text"] = "";
  j["choices"] = json::array({choice});
  j["usage"] = usage.json();
  return j;
}

void with_tool_calls(json& choice, const ParsedReply& parsed, const std::string& reply_id, bool delta) {
  if (parsed.calls.empty()) return;
  json calls = json::array();
  for (size_t i = 0; i < parsed.calls.size(); ++i) {
    json call = {{"id", "call_" + reply_id.substr(reply_id.find('-') + 1) + "_" + std::to_string(i)}, {"type", "function"},
                 {"function", {{"name", parsed.calls[i].name}, {"arguments", parsed.calls[i].arguments}}}};
    if (delta) call["index"] = i;
    calls.push_back(std::move(call));
  }
  json& m = choice[delta ? "delta" : "message"];
  m["content"] = parsed.content.empty() ? json(nullptr) : json(parsed.content);
  m["tool_calls"] = std::move(calls);
  if (!delta) choice["finish_reason"] = "tool_calls";
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse(const json& j) { return "data: " + dump(j) + "\n\n"; }

json model_list(const std::string& model, int64_t created) {
  return {{"object", "list"},
          {"data", json::array({{{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "archetype"}}})}};
}

json embedding_reply(const std::string& model, const std::vector<std::vector<float>>& vectors, int64_t prompt_tokens) {
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i)
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", vectors[i]}});
  return {{"object", "list"},
          {"data", data},
          {"model", model},
          {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace arch::serve
