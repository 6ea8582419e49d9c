#include "engine/runtime/image_prompt.h"

#include <algorithm>

#include "importer/image/image.h"
#include "importer/image/image_preprocess.h"
#include "importer/image/image_processor_config.h"

namespace arch {

namespace {

const dsl::Val* config_value(const Model& m, const std::string& name) {
  for (const auto& [n, v] : m.instance.config)
    if (n == name) return &v;
  return nullptr;
}

Result<std::vector<int32_t>> int_list(const Model& m, const std::string& name) {
  std::vector<int32_t> out;
  const dsl::Val* v = config_value(m, name);
  if (!v || v->kind == dsl::Val::Null) return out;
  if (v->kind != dsl::Val::List) return error(m.template_path + ": config field " + name + " is not a list of token ids");
  for (const auto& x : v->list) {
    if (x.kind != dsl::Val::Int) return error(m.template_path + ": config field " + name + " is not a list of token ids");
    out.push_back(int32_t(x.i));
  }
  return out;
}

std::string repeated(const std::string& s, int64_t n) {
  std::string out;
  out.reserve(s.size() * size_t(n));
  for (int64_t k = 0; k < n; ++k) out += s;
  return out;
}

}  // namespace

Result<ImagePrompt> image_prompt(const Model& m) {
  const auto state = m.optional_state();
  if (state.size() != 1)
    return error(m.checkpoint.dir + ": " + m.family + " takes no image (its token graph holds no image features a graph of its makes)");
  ImagePrompt ip;
  ip.state = state[0];
  ip.image_token = int32_t(m.config_int("image_token_index", -1));
  ip.marker = int32_t(m.config_int("image_marker", ip.image_token));
  ip.tokens = m.config_int("image_tokens", 0);
  if (ip.image_token < 0 || ip.tokens <= 0)
    return error(m.template_path + ": a template whose step takes images declares image_token_index and image_tokens");
  ARCH_TRY(ip.before, int_list(m, "image_before"));
  ARCH_TRY(ip.after, int_list(m, "image_after"));
  return ip;
}

Result<std::vector<int32_t>> expand_image_ids(const std::vector<int32_t>& ids, const ImagePrompt& ip, int images) {
  std::vector<int32_t> out;
  int placed = 0;
  for (size_t k = 0; k < ids.size(); ++k) {
    if (ids[k] != ip.marker) {
      out.push_back(ids[k]);
      continue;
    }
    // Already expanded: the marker is the image token and a whole run of
    // them is here, or the image tokens follow the marker.
    const size_t from = ip.marker == ip.image_token ? k : k + 1;
    size_t run = 0;
    while (from + run < ids.size() && ids[from + run] == ip.image_token) ++run;
    if (run >= size_t(ip.tokens)) {
      out.insert(out.end(), ids.begin() + long(k), ids.begin() + long(from + run));
      k = from + run - 1;
      ++placed;
      continue;
    }
    // A marker past the images is refused before its tokens are made: a
    // prompt of many markers would otherwise grow by hundreds of tokens each.
    if (placed >= images) {
      ++placed;
      break;
    }
    out.insert(out.end(), ip.before.begin(), ip.before.end());
    out.insert(out.end(), size_t(ip.tokens), ip.image_token);
    out.insert(out.end(), ip.after.begin(), ip.after.end());
    ++placed;
  }
  if (placed != images)
    return error("the prompt holds " + (placed > images ? "more image markers" : std::to_string(placed) + " image marker" + (placed == 1 ? "" : "s")) +
                 " (token " + std::to_string(ip.marker) + ") " + (placed > images ? "than its " : "for ") + std::to_string(images) +
                 " image" + (images == 1 ? "" : "s") + ": write one where each image goes");
  return out;
}

Result<std::string> expand_image_text(const std::string& text, const Tokenizer& tok, const ImagePrompt& ip, int images) {
  const std::string marker = tok.decode(std::vector<int32_t>{ip.marker}, /*skip_special_tokens=*/false);
  if (marker.empty()) return error("the tokenizer has no text for the image marker, token " + std::to_string(ip.marker));
  const std::string expansion = tok.decode(ip.before, false) + repeated(tok.decode(std::vector<int32_t>{ip.image_token}, false), ip.tokens) +
                                tok.decode(ip.after, false);
  std::string out;
  int placed = 0;
  size_t at = 0;
  for (size_t hit; (hit = text.find(marker, at)) != std::string::npos; at = hit + marker.size()) {
    if (placed >= images) {  // one marker too many: counted, not expanded
      ++placed;
      break;
    }
    out.append(text, at, hit - at);
    out += expansion;
    ++placed;
  }
  out.append(text, at, std::string::npos);
  if (placed != images)
    return error("the prompt holds " + (placed > images ? "more image markers" : std::to_string(placed) + " image marker" + (placed == 1 ? "" : "s")) +
                 " (" + marker + ") " + (placed > images ? "than its " : "for ") + std::to_string(images) + " image" +
                 (images == 1 ? "" : "s") + ": write " + marker + " where each image goes");
  return out;
}

Result<Tensor> image_pixels(const Model& m, const std::string& path) {
  ARCH_TRY(Tensor rgb, load_image(path));
  ARCH_TRY(ImagePreprocess pre, read_preprocessor_config(m.checkpoint.dir, m.checkpoint.config));
  return preprocess(rgb, pre);
}

Result<Tensor> image_pixels(const Model& m, const std::string& bytes, const std::string& source) {
  ARCH_TRY(Tensor rgb, decode_image(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), source));
  ARCH_TRY(ImagePreprocess pre, read_preprocessor_config(m.checkpoint.dir, m.checkpoint.config));
  return preprocess(rgb, pre);
}

Status encode_images(Session& s, const ImagePrompt& ip, const std::vector<Tensor>& pixels) {
  ARCH_TRY(Tensor all, image_features(s, ip, pixels));
  s.begin({{ip.state, all}});
  return {};
}

Result<Tensor> image_features(Session& s, const ImagePrompt& ip, const std::vector<Tensor>& pixels) {
  const ModelGraph* producer = s.model().producer_of(ip.state);
  if (!producer || producer->graph.inputs.empty()) return error("no graph of the model makes " + ip.state);
  const std::string input = producer->graph.values[size_t(producer->graph.inputs[0])].name;
  std::vector<Tensor> features;
  int64_t rows = 0, width = 0;
  for (const Tensor& p : pixels) {
    ARCH_TRY(auto outs, s.run(producer->name(), {{input, p}}, {ip.state}));
    const Tensor& f = outs.at(ip.state);
    if (f.shape.size() != 2 || (width && f.dim(1) != width))
      return error(ip.state + " of an image is " + dims_str(f.shape) + ", not [tokens, width]");
    rows += f.dim(0), width = f.dim(1);
    features.push_back(f);
  }
  Tensor all = Tensor::zeros(DType::F32, {rows, width});
  int64_t at = 0;
  for (const Tensor& f : features) {
    std::copy(f.f32(), f.f32() + f.numel(), all.f32() + at);
    at += f.numel();
  }
  return all;
}

}  // namespace arch
