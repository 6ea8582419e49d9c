#include "engine/distributed/call_codec.h"

#include <cstring>

#include <nlohmann/json.hpp>

namespace arch {

std::string encode_call(const SessionCall& call) {
  nlohmann::json head = {{"kind", int(call.kind)}, {"session", call.session}, {"n", call.n},
                         {"m", call.m},           {"graph", call.graph},     {"last_only", call.last_only}};
  std::string body;
  auto& tensors = head["inputs"] = nlohmann::json::array();
  for (const auto& [name, t] : call.inputs) {
    tensors.push_back({{"name", name}, {"dtype", int(t.dtype)}, {"shape", t.shape}});
    body.append(static_cast<const char*>(t.data), t.nbytes());
  }
  auto& pieces = head["pieces"] = nlohmann::json::array();
  for (const auto& [slot, tokens] : call.pieces) {
    pieces.push_back({{"slot", slot}, {"tokens", tokens.size()}});
    body.append(reinterpret_cast<const char*>(tokens.data()), tokens.size() * 4);
  }
  const std::string text = head.dump();
  const uint64_t n = text.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return out + text + body;
}

Result<SessionCall> decode_call(const std::string& bytes) {
  uint64_t n = 0;
  if (bytes.size() < 8) return error("a session call shorter than its header");
  std::memcpy(&n, bytes.data(), 8);
  if (n > bytes.size() - 8) return error("a session call whose header runs past its end");
  SessionCall c;
  size_t at = 8 + n;
  auto take = [&](size_t len) -> const char* {
    if (len > bytes.size() - at) return nullptr;
    const char* p = bytes.data() + at;
    at += len;
    return p;
  };
  try {
    const auto head = nlohmann::json::parse(bytes.substr(8, n));
    c.kind = SessionCall::Kind(head.at("kind").get<int>());
    c.session = head.at("session").get<int64_t>();
    c.n = head.at("n").get<int64_t>();
    c.m = head.at("m").get<int64_t>();
    c.graph = head.at("graph").get<std::string>();
    c.last_only = head.at("last_only").get<bool>();
    for (const auto& t : head.at("inputs")) {
      Tensor x = Tensor::zeros(DType(t.at("dtype").get<int>()), t.at("shape").get<Dims>());
      const char* p = take(x.nbytes());
      if (!p) return error("a session call whose tensors run past its end");
      std::memcpy(x.data, p, x.nbytes());
      c.inputs[t.at("name").get<std::string>()] = x;
    }
    for (const auto& piece : head.at("pieces")) {
      std::vector<int32_t> tokens(piece.at("tokens").get<size_t>());
      const char* p = take(tokens.size() * 4);
      if (!p) return error("a session call whose tokens run past its end");
      std::memcpy(tokens.data(), p, tokens.size() * 4);
      c.pieces.push_back({piece.at("slot").get<int>(), std::move(tokens)});
    }
  } catch (const std::exception& e) {
    return error(std::string("a session call that does not read: ") + e.what());
  }
  return c;
}

}  // namespace arch
