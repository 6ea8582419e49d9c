// The server's completion and chat request bodies, read field by field.
#include "engine/serve/completion_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  (void)arch::serve::parse_completion_request(body, true);
  (void)arch::serve::parse_completion_request(body, false);
  return 0;
}
