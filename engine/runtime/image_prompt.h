// A prompt with images, for a vision-language model (its token graph takes
// image features as an optional state input: Model::optional_state): where
// each image's tokens go, and its pixels as the checkpoint's processor makes
// them. What an image becomes in the prompt is the template's data:
//   image_marker   the token a prompt (or a chat template) writes for an image
//   image_before, image_after
//                  the tokens written around its image tokens, in the
//                  marker's place (Gemma 3: "\n\n" <start_of_image> ...
//                  <end_of_image> "\n\n"; LLaVA: none)
//   image_token_index, image_tokens
//                  the token each image feature replaces, and how many per image
#pragma once

#include <string>
#include <vector>

#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

struct ImagePrompt {
  std::string state;                // the token graph's input that holds the features
  int32_t marker = -1;
  int32_t image_token = -1;
  int64_t tokens = 0;               // per image
  std::vector<int32_t> before, after;
};

// The model's image prompt; an error for a model that takes no images.
Result<ImagePrompt> image_prompt(const Model& m);

// Each image marker in `ids` in place of its image's tokens: before, then
// `tokens` image tokens, then after. A marker already followed by its image
// tokens (ids a processor expanded, as the goldens give them) is kept. The
// images placed must number `images`.
Result<std::vector<int32_t>> expand_image_ids(const std::vector<int32_t>& ids, const ImagePrompt& ip, int images);

// The same on a prompt's text, before it is tokenized, as the processors
// do (the marker's text replaced by its expansion's): so the text around an
// image tokenizes as it would in transformers.
Result<std::string> expand_image_text(const std::string& text, const Tokenizer& tok, const ImagePrompt& ip, int images);

// The image file at `path` as the model's pixel_values: decoded, and
// resized, cropped and normalised as the checkpoint's preprocessor_config.json
// says (or its model_type's processor's defaults).
Result<Tensor> image_pixels(const Model& m, const std::string& path);

// The same from an image file's bytes (`source` names it in errors).
Result<Tensor> image_pixels(const Model& m, const std::string& bytes, const std::string& source);

// The features of the images (each one's pixel_values), made by the
// model's graph that makes ip.state, one image after another, their rows
// in order: what the token graph's state input takes.
Result<Tensor> image_features(Session& s, const ImagePrompt& ip, const std::vector<Tensor>& pixels);
// The same handed to the session's next step (which starts over).
Status encode_images(Session& s, const ImagePrompt& ip, const std::vector<Tensor>& pixels);

}  // namespace arch
