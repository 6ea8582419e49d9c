#include "engine/serve/http_reply.h"

#include <openssl/evp.h>

namespace arch::serve {

void reply_json(httplib::Response& res, const nlohmann::json& j, int status) {
  res.status = status;
  res.set_content(dump(j), "application/json");
}

void reply_error(httplib::Response& res, const ApiError& e) {
  if (e.status == 503) res.set_header("Retry-After", "1");
  reply_json(res, e.body(), e.status);
}

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), int(bytes.size()));
  out.resize(size_t(n));
  return out;
}

}  // namespace arch::serve
