// Replies as the routes send them: JSON bodies (text that is not valid
// UTF-8 replaced, never thrown on) and the API's errors.
#pragma once

#include <httplib.h>

#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/serve/api_error.h"
#include "engine/serve/openai_reply.h"

namespace arch::serve {

void reply_json(httplib::Response& res, const nlohmann::json& j, int status = 200);
void reply_error(httplib::Response& res, const ApiError& e);
// Bytes as base64 (OpenSSL's EVP_EncodeBlock): embeddings, images.
std::string base64(std::string_view bytes);

}  // namespace arch::serve
