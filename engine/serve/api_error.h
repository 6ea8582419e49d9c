// An error as the OpenAI API replies with it: an HTTP status and
// {"error": {"message", "type", "param", "code"}}, which its clients turn
// into their own exceptions (BadRequestError, AuthenticationError, ...).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace arch::serve {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the request field at fault ("" : none)
  std::string code;   // a stable name: "invalid_api_key", "model_not_found", "context_length_exceeded"

  nlohmann::json body() const;
};

ApiError bad_request(std::string message, std::string param = "", std::string code = "");

}  // namespace arch::serve
