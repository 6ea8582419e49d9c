// A chat request's images: what the vision-language model's sequence runs
// with (its token graph's image features), made before it joins the batch.
#include "engine/runtime/image_prompt.h"
#include "engine/serve/completion_request.h"
#include "engine/serve/server.h"

namespace arch::serve {

std::variant<NamedTensors, ApiError> Server::image_state(const CompletionRequest& r) {
  auto ip = image_prompt(*model_);
  if (!ip.ok()) return bad_request("model '" + name_ + "' takes no images: " + ip.error().message, r.image_fields.front());
  // Images no context could hold are refused before any is decoded.
  if (int64_t(r.images.size()) * ip->tokens >= opt_.context)
    return bad_request("This model's maximum context length is " + std::to_string(opt_.context) + " tokens. However, the " +
                           std::to_string(r.images.size()) + " images alone take " +
                           std::to_string(int64_t(r.images.size()) * ip->tokens) + " (" + std::to_string(ip->tokens) + " each).",
                       "messages", "context_length_exceeded");
  std::vector<Tensor> pixels;
  for (size_t k = 0; k < r.images.size(); ++k) {
    auto p = image_pixels(*model_, r.images[k], r.image_fields[k]);
    if (!p.ok()) return bad_request("'" + r.image_fields[k] + "' is not an image this server decodes (PNG, JPEG, BMP, GIF): " +
                                        p.error().message,
                                    r.image_fields[k]);
    pixels.push_back(std::move(*p));
  }
  // The image graph runs here, on this request's thread, one request at a
  // time: it holds the server's threads while it runs.
  auto lock = hold_work();
  Session s(*model_);
  auto features = image_features(s, *ip, pixels);
  if (!features.ok()) return ApiError{500, "the image encoder failed: " + features.error().message, "server_error", "", ""};
  return NamedTensors{{ip->state, std::move(*features)}};
}

}  // namespace arch::serve
