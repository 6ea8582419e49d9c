// POST /v1/images/generations: a Stable Diffusion pipeline's text to image,
// one request at a time, the PNG as base64 (`b64_json`). Beside the API's
// fields (prompt, n = 1, size "WxH", response_format b64_json) it takes
// diffusers' knobs by their names: negative_prompt, num_inference_steps,
// guidance_scale, seed; SDXL's second encoder through tokenizer_2/ (or
// prompt_ids_2 / negative_prompt_ids_2); and prompt_ids / negative_prompt_ids for a
// pipeline without a tokenizer/.
#include <chrono>
#include <cstdio>
#include <random>

#include <httplib.h>

#include "engine/runtime/denoise.h"
#include "importer/image/image_write.h"
#include "engine/serve/completion_request.h"
#include "engine/serve/http_reply.h"
#include "engine/serve/scratch_file.h"
#include "engine/serve/server.h"

namespace arch::serve {

namespace {

// The ids of field `name`, or nothing where it is absent; false: not ids.
bool ids_of(const nlohmann::json& j, const char* name, std::vector<int32_t>& out) {
  if (!j.contains(name)) return true;
  if (!j[name].is_array() || j[name].empty()) return false;
  for (const auto& x : j[name]) {
    if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX) return false;
    out.push_back(int32_t(x.get<int64_t>()));
  }
  return true;
}

}  // namespace

void Server::image(const httplib::Request& req, httplib::Response& res) {
  auto parsed = json_request(req);
  if (auto* e = std::get_if<ApiError>(&parsed)) return reply_error(res, *e);
  const nlohmann::json& j = std::get<nlohmann::json>(parsed);
  if (!pipeline_) return reply_error(res, bad_request("model '" + name_ + "' makes no images: it serves " + serves(), "model"));
  if (j.contains("n") && !j["n"].is_null() && j["n"] != 1) return reply_error(res, bad_request("'n' must be 1", "n"));
  auto format = string_field(j, "response_format", "b64_json");
  auto negative = string_field(j, "negative_prompt", "");
  for (auto* f : {&format, &negative})
    if (auto* e = std::get_if<ApiError>(f)) return reply_error(res, *e);
  if (std::get<std::string>(format) != "b64_json")
    return reply_error(res, bad_request("'response_format' must be b64_json: this server keeps no image URLs", "response_format"));
  ImagineOptions opt;
  if (j.contains("num_inference_steps")) {
    if (!j["num_inference_steps"].is_number_integer() || j["num_inference_steps"] < 1 || j["num_inference_steps"] > 500)
      return reply_error(res, bad_request("'num_inference_steps' must be an integer from 1 to 500", "num_inference_steps"));
    opt.steps = j["num_inference_steps"].get<int>();
  }
  if (j.contains("guidance_scale")) {
    if (!j["guidance_scale"].is_number())
      return reply_error(res, bad_request("'guidance_scale' must be a number from 0 to 100", "guidance_scale"));
    opt.guidance = float(j["guidance_scale"].get<double>());  // 1e300: inf, refused below
    if (Status st = check_guidance(opt.guidance, "'guidance_scale'"); !st.ok())
      return reply_error(res, bad_request(st.error().message, "guidance_scale"));
  }
  int64_t height = 0, width = 0;
  if (j.contains("size") && !j["size"].is_null()) {
    const std::string size = j["size"].is_string() ? j["size"].get<std::string>() : "";
    long long w = 0, h = 0;
    char tail = 0;
    if (std::sscanf(size.c_str(), "%lldx%lld%c", &w, &h, &tail) != 2 || w < 8 || h < 8 || w > 4096 || h > 4096)
      return reply_error(res, bad_request("'size' must be WIDTHxHEIGHT, each from 8 to 4096, got '" + size + "'", "size"));
    width = w, height = h;
  }
  const uint64_t seed = j.contains("seed") && j["seed"].is_number_integer() ? j["seed"].get<uint64_t>() : std::random_device{}();
  const std::string tok_dir = path_ + "/tokenizer";
  if (!ids_of(j, "prompt_ids", opt.ids) || !ids_of(j, "negative_prompt_ids", opt.negative_ids))
    return reply_error(res, bad_request("'prompt_ids' and 'negative_prompt_ids' must be non-empty arrays of token ids", "prompt_ids"));
  if (opt.ids.empty()) {
    if (!j.contains("prompt") || !j["prompt"].is_string() || j["prompt"].get<std::string>().empty())
      return reply_error(res, bad_request("'prompt' (the text) is required", "prompt"));
    if (!tok_) return reply_error(res, bad_request("this pipeline has no tokenizer/: send 'prompt_ids'", "prompt"));
    opt.ids = pipeline_prompt_ids(*pipeline_, *tok_, tok_dir, j["prompt"].get<std::string>());
  }
  const bool xl = pipeline_->text_encoder_2 != nullptr;
  if (!xl && (j.contains("prompt_ids_2") || j.contains("negative_prompt_ids_2")))
    return reply_error(res, bad_request("'prompt_ids_2' and 'negative_prompt_ids_2' are an SDXL pipeline's: this one has one text encoder", "prompt_ids_2"));
  if (xl) {
    // The second encoder's ids: given, or its tokenizer_2/ on the text.
    if (!ids_of(j, "prompt_ids_2", opt.ids_2) || !ids_of(j, "negative_prompt_ids_2", opt.negative_ids_2))
      return reply_error(res, bad_request("'prompt_ids_2' and 'negative_prompt_ids_2' must be non-empty arrays of token ids", "prompt_ids_2"));
    if (!opt.negative_ids_2.empty() && opt.negative_ids.empty())
      return reply_error(res, bad_request("'negative_prompt_ids_2' is the second encoder's half of a negative prompt: send 'negative_prompt_ids' too", "negative_prompt_ids_2"));
    const std::string tok_dir_2 = path_ + "/tokenizer_2";
    if (opt.ids_2.empty() && j.contains("prompt") && j["prompt"].is_string() && !j["prompt"].get<std::string>().empty()) {
      if (!tok_2_) return reply_error(res, bad_request("this SDXL pipeline has no tokenizer_2/: send 'prompt_ids_2'", "prompt"));
      opt.ids_2 = pipeline_prompt_ids(*pipeline_, *tok_2_, tok_dir_2, j["prompt"].get<std::string>());
    }
    // No negative prompt: the pipeline's zeros; a negative prompt through both tokenizers.
    if (opt.negative_ids.empty() && opt.guidance != 1.0f && !std::get<std::string>(negative).empty()) {
      if (!tok_ || !tok_2_) return reply_error(res, bad_request("this SDXL pipeline lacks tokenizer/ or tokenizer_2/: send 'negative_prompt_ids' and 'negative_prompt_ids_2'", "negative_prompt"));
      opt.negative_ids = pipeline_prompt_ids(*pipeline_, *tok_, tok_dir, std::get<std::string>(negative));
      opt.negative_ids_2 = pipeline_prompt_ids(*pipeline_, *tok_2_, tok_dir_2, std::get<std::string>(negative));
    }
  } else if (opt.negative_ids.empty() && opt.guidance != 1.0f) {
    if (!tok_) return reply_error(res, bad_request("this pipeline has no tokenizer/: guidance needs 'negative_prompt_ids'", "negative_prompt_ids"));
    opt.negative_ids = pipeline_prompt_ids(*pipeline_, *tok_, tok_dir, std::get<std::string>(negative));
  }
  auto shape = latent_shape(*pipeline_, height, width);
  if (!shape.ok()) return reply_error(res, bad_request(shape.error().message, "size"));
  opt.latents = seeded_latents(*shape, seed);
  opt.noise_seed = noise_seed_of(seed);
  Result<ImagineResult> made = error("");
  {
    auto lock = hold_work();
    made = imagine(*pipeline_, opt);
  }
  if (!made.ok()) return reply_error(res, bad_request("the pipeline cannot make this image: " + made.error().message, "prompt"));
  ScratchFile png(".png");
  if (Status st = write_png(png.path, made->image); !st.ok()) return reply_error(res, {500, st.error().message, "server_error", "", ""});
  reply_json(res, {{"created", std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()},
                   {"data", {{{"b64_json", base64(png.read())}, {"seed", seed}}}}});
}

}  // namespace arch::serve
