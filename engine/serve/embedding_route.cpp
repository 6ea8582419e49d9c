// POST /v1/embeddings: each input (text, or token ids) through the encoder,
// its token states pooled as the model card says (else their mean) and
// L2-normalised (as the API's embeddings are), as floats or as base64 of their little-endian float32 bytes (what
// the openai clients ask for by default).
#include <cstring>

#include <httplib.h>

#include "engine/runtime/text_encoder.h"
#include "engine/serve/completion_request.h"
#include "engine/serve/http_reply.h"
#include "engine/serve/server.h"

namespace arch::serve {

void Server::embed(const httplib::Request& req, httplib::Response& res) {
  auto parsed = json_request(req);
  if (auto* e = std::get_if<ApiError>(&parsed)) return reply_error(res, *e);
  const nlohmann::json& j = std::get<nlohmann::json>(parsed);
  if (!embeds_) return reply_error(res, bad_request("model '" + name_ + "' makes no embeddings: it serves " + serves(), "model"));
  if (!j.contains("input")) return reply_error(res, bad_request("'input' is required", "input"));
  auto field = string_field(j, "encoding_format", "float");
  if (auto* e = std::get_if<ApiError>(&field)) return reply_error(res, *e);
  const std::string& format = std::get<std::string>(field);
  if (format != "float" && format != "base64") return reply_error(res, bad_request("'encoding_format' must be float or base64", "encoding_format"));
  // The inputs as id lists: a string, a list of strings, a list of ids, a list of id lists.
  const nlohmann::json& in = j["input"];
  std::vector<std::vector<int32_t>> inputs;
  auto add_text = [&](const std::string& text) -> bool {
    if (!tok_) return false;
    inputs.push_back(tok_->encode(text, true));
    return true;
  };
  auto add_ids = [&](const nlohmann::json& ids) -> bool {
    std::vector<int32_t> v;
    for (const auto& x : ids) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || (vocab_ > 0 && x.get<int64_t>() >= vocab_)) return false;
      v.push_back(int32_t(x.get<int64_t>()));
    }
    inputs.push_back(std::move(v));
    return true;
  };
  bool ok = true;
  if (in.is_string()) ok = add_text(in.get<std::string>());
  else if (in.is_array() && !in.empty() && in[0].is_number_integer()) ok = add_ids(in);
  else if (in.is_array() && !in.empty())
    for (const auto& x : in) ok = ok && (x.is_string() ? add_text(x.get<std::string>()) : x.is_array() && add_ids(x));
  else ok = false;
  if (!ok)
    return reply_error(res, bad_request(tok_ ? "'input' must be a string, an array of strings, or token ids (each in the vocabulary)"
                                             : "'input' must be token ids (each in the vocabulary): this model has no tokenizer",
                                        "input"));
  if (inputs.size() > 2048) return reply_error(res, bad_request("'input' holds more than 2048 inputs", "input"));
  std::vector<std::vector<float>> vectors;
  int64_t tokens = 0;
  const int64_t limit = text_positions(*model_);
  for (const auto& ids : inputs) {
    if (ids.empty()) return reply_error(res, bad_request("an input is empty", "input"));
    if (limit > 0 && int64_t(ids.size()) > limit)
      return reply_error(res, bad_request("an input of " + std::to_string(ids.size()) + " tokens exceeds the model's " +
                                              std::to_string(limit) + " positions", "input", "context_length_exceeded"));
    Result<std::vector<float>> vec = error("");
    {
      auto lock = hold_work();
      vec = embed_ids(*model_, ids, pooling_.pooling, /*normalize=*/true);
    }
    if (!vec.ok()) return reply_error(res, {500, "the encoder failed: " + vec.error().message, "server_error", "", ""});
    vectors.push_back(std::move(*vec));
    tokens += int64_t(ids.size());
  }
  nlohmann::json reply = embedding_reply(name_, vectors, tokens);
  if (format == "base64")
    for (size_t i = 0; i < vectors.size(); ++i) reply["data"][i]["embedding"] =
          base64(std::string_view(reinterpret_cast<const char*>(vectors[i].data()), vectors[i].size() * sizeof(float)));
  reply_json(res, reply);
}

}  // namespace arch::serve
