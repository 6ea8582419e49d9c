#include "serve/http_reply.h"

namespace arch::serve {

void reply_json(httplib::Response& res, const nlohmann::json& j, int status) {
  res.status = status;
  res.set_content(dump(j), "application/json");
}

void reply_error(httplib::Response& res, const ApiError& e) {
  if (e.status == 503) res.set_header("Retry-After", "1");
  reply_json(res, e.body(), e.status);
}

}  // namespace arch::serve
