#include "importer/image/image_processor_config.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "engine/core/json_text.h"
#include "engine/core/mapped_file.h"

namespace arch {

namespace {

using json = nlohmann::json;
constexpr int kMaxSide = kMaxImageSide;

enum class Kind { kViT, kDeiT, kClip, kConvNext, kSiglip, kOther };

// "ViTImageProcessor", "CLIPImageProcessorFast", "ConvNextFeatureExtractor"
// -> the class's stem: "ViT", "CLIP", "ConvNext".
std::string processor_stem(std::string type) {
  for (const char* suffix : {"ImageProcessorFast", "ImageProcessor", "FeatureExtractor"}) {
    std::string s = suffix;
    if (type.size() > s.size() && type.compare(type.size() - s.size(), s.size(), s) == 0)
      return type.substr(0, type.size() - s.size());
  }
  return type;
}

Kind kind_of_stem(const std::string& stem) {
  if (stem == "ViT") return Kind::kViT;
  if (stem == "DeiT") return Kind::kDeiT;
  if (stem == "CLIP") return Kind::kClip;
  if (stem == "ConvNext") return Kind::kConvNext;
  if (stem == "Siglip" || stem == "Gemma3") return Kind::kSiglip;
  return Kind::kOther;
}

Kind kind_of_model_type(const std::string& model_type) {
  if (model_type == "vit") return Kind::kViT;
  if (model_type == "deit") return Kind::kDeiT;
  if (model_type == "clip_vision_model" || model_type == "clip" || model_type == "llava") return Kind::kClip;
  if (model_type == "siglip_vision_model" || model_type == "siglip" || model_type == "gemma3") return Kind::kSiglip;
  if (model_type == "resnet" || model_type == "convnext") return Kind::kConvNext;
  return Kind::kOther;
}

const std::vector<float> kHalf = {0.5f, 0.5f, 0.5f};  // IMAGENET_STANDARD_MEAN / _STD
const std::vector<float> kClipMean = {0.48145466f, 0.4578275f, 0.40821073f};
const std::vector<float> kClipStd = {0.26862954f, 0.26130258f, 0.27577711f};
const std::vector<float> kImageNetMean = {0.485f, 0.456f, 0.406f};  // IMAGENET_DEFAULT_MEAN / _STD
const std::vector<float> kImageNetStd = {0.229f, 0.224f, 0.225f};

// The processor class's own defaults (its __init__ arguments).
ImagePreprocess class_defaults(Kind kind) {
  ImagePreprocess p;
  switch (kind) {
    case Kind::kClip:
      p.shortest_edge = 224;
      p.resample = "bicubic";
      p.do_center_crop = true;
      p.crop_height = p.crop_width = 224;
      p.mean = kClipMean;
      p.std = kClipStd;
      break;
    case Kind::kDeiT:  // DeiTImageProcessor: 256 x 256, bicubic, a 224 x 224 center crop
      p.height = p.width = 256;
      p.resample = "bicubic";
      p.do_center_crop = true;
      p.crop_height = p.crop_width = 224;
      p.mean = kHalf;
      p.std = kHalf;
      break;
    case Kind::kConvNext:
      p.shortest_edge = 384;
      p.crop_pct = 224.0 / 256.0;
      p.resample = "bilinear";
      p.mean = kHalf;
      p.std = kHalf;
      break;
    case Kind::kSiglip:  // SiglipImageProcessor: 224 x 224, bicubic, no crop (Gemma3ImageProcessor: bilinear)
      p.height = p.width = 224;
      p.resample = "bicubic";
      p.mean = kHalf;
      p.std = kHalf;
      break;
    case Kind::kViT:
    case Kind::kOther:
      p.height = p.width = 224;
      p.resample = "bilinear";
      p.mean = kHalf;
      p.std = kHalf;
      break;
  }
  return p;
}

bool present(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

const char* resample_name(int code) {
  switch (code) {
    case 0: return "nearest";
    case 1: return "lanczos";
    case 2: return "bilinear";
    case 3: return "bicubic";
    case 4: return "box";
    case 5: return "hamming";
    default: return nullptr;
  }
}

// Reads one preprocessor_config.json's keys onto defaults; every error names
// the file and the key.
class ConfigReader {
 public:
  ConfigReader(const json& j, std::string path) : j_(j), path_(std::move(path)) {}

  Error fail(const std::string& key, const std::string& what) const {
    return error(path_ + ": '" + key + "' " + what);
  }

  Status read_bool(const char* key, bool& out) const {
    if (!present(j_, key)) return {};
    if (!j_[key].is_boolean()) return fail(key, "must be true or false, not " + json_type_name(j_[key]));
    out = j_[key].get<bool>();
    return {};
  }

  Result<int> side(const std::string& key, const json& v) const {
    if (!v.is_number_integer() && !(v.is_number_float() && v.get<double>() == std::floor(v.get<double>())))
      return fail(key, "must be a whole number, not " + (v.is_number() ? v.dump() : json_type_name(v)));
    double d = v.get<double>();
    if (d < 1 || d > kMaxSide) return fail(key, "must be between 1 and " + std::to_string(kMaxSide) + ", not " + v.dump());
    return int(d);
  }

  // size / crop_size: a number, [height, width], {"height", "width"} or
  // {"shortest_edge"}. `number_is_shortest` is the class's get_size_dict
  // default_to_square=False.
  Status read_size(const char* key, bool number_is_shortest, bool allow_shortest, int& shortest, int& height,
                   int& width) const {
    if (!present(j_, key)) return {};
    const json& v = j_[key];
    const std::string k = key;
    if (v.is_number()) {
      ARCH_TRY(int s, side(k, v));
      if (number_is_shortest && allow_shortest) {
        shortest = s;
      } else {
        shortest = 0;
        height = width = s;
      }
      return {};
    }
    if (v.is_array() && v.size() == 2) {
      ARCH_TRY(int h, side(k + "[0]", v[0]));
      ARCH_TRY(int w, side(k + "[1]", v[1]));
      shortest = 0;
      height = h;
      width = w;
      return {};
    }
    if (v.is_object()) {
      if (present(v, "longest_edge"))
        return fail(k, "with a longest_edge is not supported (only {\"height\", \"width\"} or {\"shortest_edge\"})");
      if (present(v, "shortest_edge")) {
        if (!allow_shortest) return fail(k, "must give height and width, not shortest_edge");
        ARCH_TRY(int s, side(k + ".shortest_edge", v["shortest_edge"]));
        shortest = s;
        return {};
      }
      if (present(v, "height") && present(v, "width")) {
        ARCH_TRY(int h, side(k + ".height", v["height"]));
        ARCH_TRY(int w, side(k + ".width", v["width"]));
        shortest = 0;
        height = h;
        width = w;
        return {};
      }
    }
    return fail(k, "must be a number, [height, width], {\"height\": H, \"width\": W} or {\"shortest_edge\": S}, not " +
                       v.dump());
  }

  Status read_channels(const char* key, std::vector<float>& out) const {
    if (!present(j_, key)) return {};
    const json& v = j_[key];
    std::vector<float> values;
    if (v.is_number()) {
      values.assign(3, v.get<float>());
    } else if (v.is_array() && (v.size() == 1 || v.size() == 3)) {
      for (const json& x : v) {
        if (!x.is_number()) return fail(key, "must hold numbers, not " + v.dump());
        values.push_back(x.get<float>());
      }
      if (values.size() == 1) values.assign(3, values[0]);
    } else {
      return fail(key, "must be a number or a list of 1 or 3 numbers (R, G, B), not " + v.dump());
    }
    out = values;
    return {};
  }

  Status read_positive(const char* key, double& out) const {
    if (!present(j_, key)) return {};
    const json& v = j_[key];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      return fail(key, "must be a positive number, not " + v.dump());
    out = v.get<double>();
    return {};
  }

  Status read_resample(std::string& out) const {
    if (!present(j_, "resample")) return {};
    const json& v = j_["resample"];
    const char* name = v.is_number_integer() ? resample_name(v.get<int>()) : nullptr;
    if (!name)
      return fail("resample", "must be a PIL filter code: 0 nearest, 1 lanczos, 2 bilinear, 3 bicubic, 4 box, "
                              "5 hamming; not " + v.dump());
    out = name;
    return {};
  }

 private:
  const json& j_;
  std::string path_;
};

std::string model_type_of(const json& model_config) {
  if (model_config.is_object() && model_config.contains("model_type") && model_config["model_type"].is_string())
    return model_config["model_type"].get<std::string>();
  return "";
}

Result<ImagePreprocess> from_file(const std::string& path, const json& model_config) {
  ARCH_TRY(auto file, MappedFile::open(path));
  ARCH_TRY(json j, parse_json(file->text(), path));
  if (!j.is_object()) return error(path + ": expected a JSON object at the top level, found " + json_type_name(j));

  // Which class the file was written for; its __init__ defaults fill the gaps.
  std::string stem;
  for (const char* key : {"image_processor_type", "feature_extractor_type"}) {
    if (present(j, key)) {
      if (!j[key].is_string()) return error(path + ": '" + key + "' must be a string, not " + j[key].dump());
      stem = processor_stem(j[key].get<std::string>());
      break;
    }
  }
  Kind kind = !stem.empty() ? kind_of_stem(stem) : kind_of_model_type(model_type_of(model_config));
  const std::string class_name = !stem.empty() ? stem + "ImageProcessor" : "an unnamed image processor";
  ImagePreprocess p = class_defaults(kind);
  if (stem == "Gemma3") p.resample = "bilinear";
  ConfigReader r(j, path);

  if (kind == Kind::kOther) {
    // No defaults known: what gets used must be spelled out.
    auto require = [&](const char* key, bool used) -> Status {
      if (used && !present(j, key))
        return error(path + ": '" + key + "' is missing, and " + class_name + " has no default known here");
      return {};
    };
    bool resize = !present(j, "do_resize") || j["do_resize"] == true;
    bool normalize = !present(j, "do_normalize") || j["do_normalize"] == true;
    bool crop = present(j, "do_center_crop") && j["do_center_crop"] == true;
    ARCH_TRY_STATUS(require("size", resize));
    ARCH_TRY_STATUS(require("resample", resize));
    ARCH_TRY_STATUS(require("crop_size", crop));
    ARCH_TRY_STATUS(require("image_mean", normalize));
    ARCH_TRY_STATUS(require("image_std", normalize));
  }

  // Steps this reader does not implement must not be skipped silently.
  for (const char* key : {"do_flip_channel_order", "do_pad", "do_color_quantize", "do_pan_and_scan"})
    if (present(j, key) && j[key] == true)
      return error(path + ": '" + key + "' is true, a step not supported here");

  // get_size_dict(size, default_to_square=False) in these classes' __init__.
  static const char* const kShortestStems[] = {"CLIP", "ChineseCLIP", "ConvNext", "Bit", "MobileNetV1", "MobileNetV2"};
  const bool number_is_shortest =
      kind == Kind::kClip || kind == Kind::kConvNext ||
      std::find(std::begin(kShortestStems), std::end(kShortestStems), stem) != std::end(kShortestStems);

  ARCH_TRY_STATUS(r.read_bool("do_resize", p.do_resize));
  ARCH_TRY_STATUS(r.read_size("size", number_is_shortest, /*allow_shortest=*/kind != Kind::kViT, p.shortest_edge,
                              p.height, p.width));
  ARCH_TRY_STATUS(r.read_resample(p.resample));
  ARCH_TRY_STATUS(r.read_bool("do_rescale", p.do_rescale));
  ARCH_TRY_STATUS(r.read_positive("rescale_factor", p.rescale_factor));
  ARCH_TRY_STATUS(r.read_bool("do_normalize", p.do_normalize));
  ARCH_TRY_STATUS(r.read_channels("image_mean", p.mean));
  ARCH_TRY_STATUS(r.read_channels("image_std", p.std));
  for (float s : p.std)
    if (s == 0.0f) return r.fail("image_std", "has a zero, which would divide by zero");

  if (kind == Kind::kConvNext) {
    // ConvNext crops inside its resize; it has no do_center_crop / crop_size.
    ARCH_TRY_STATUS(r.read_positive("crop_pct", p.crop_pct));
    if (p.shortest_edge == 0) return r.fail("size", "must be {\"shortest_edge\": S} for " + class_name);
  } else if (kind == Kind::kOther && present(j, "crop_pct")) {
    ARCH_TRY_STATUS(r.read_positive("crop_pct", p.crop_pct));
    if (present(j, "do_center_crop") && j["do_center_crop"] == true)
      return r.fail("crop_pct", "together with do_center_crop (PoolFormer's scheme) is not supported");
    if (p.shortest_edge == 0) return r.fail("crop_pct", "needs size {\"shortest_edge\": S}");
  } else if (kind != Kind::kViT) {
    // ViTImageProcessor has no center crop and ignores these keys, as CLIP
    // ignores crop_pct.
    int unused_shortest = 0;
    ARCH_TRY_STATUS(r.read_bool("do_center_crop", p.do_center_crop));
    ARCH_TRY_STATUS(r.read_size("crop_size", false, /*allow_shortest=*/false, unused_shortest, p.crop_height,
                                p.crop_width));
  }
  if (std::string problem = preprocess_problem(p); !problem.empty()) return error(path + ": " + problem);
  return p;
}

Result<ImagePreprocess> from_model_config(const std::string& dir, const json& model_config) {
  const std::string model_type = model_type_of(model_config);
  const Kind kind = kind_of_model_type(model_type);
  if (kind == Kind::kOther)
    return error(dir + ": no preprocessor_config.json, and no default image preprocessing is known for model_type '" +
                 model_type + "'");
  ImagePreprocess p = class_defaults(kind);

  // image_size: a number or [height, width]; CLIP and the vision-language
  // models keep it in vision_config.
  const json* holder = &model_config;
  if (model_config.contains("vision_config") && model_config["vision_config"].is_object())
    holder = &model_config["vision_config"];
  if (model_type == "gemma3") p.resample = "bilinear";  // Gemma3ImageProcessor
  int height = 224, width = 224;
  if (present(*holder, "image_size")) {
    ConfigReader r(*holder, dir + "/config.json");
    const json& v = (*holder)["image_size"];
    if (v.is_array() && v.size() == 2) {
      ARCH_TRY(height, r.side("image_size[0]", v[0]));
      ARCH_TRY(width, r.side("image_size[1]", v[1]));
    } else {
      ARCH_TRY(int s, r.side("image_size", v));
      height = width = s;
    }
  }
  switch (kind) {
    case Kind::kViT:
    case Kind::kSiglip:
      p.height = height;
      p.width = width;
      break;
    case Kind::kDeiT:  // the crop the model's size, resized first as 256 is to 224
      p.height = height * 256 / 224;
      p.width = width * 256 / 224;
      p.crop_height = height;
      p.crop_width = width;
      break;
    case Kind::kClip:
      p.shortest_edge = std::min(height, width);
      p.crop_height = height;
      p.crop_width = width;
      break;
    case Kind::kConvNext:
      p.shortest_edge = 224;
      p.crop_pct = 0.875;
      p.resample = "bicubic";
      p.mean = kImageNetMean;
      p.std = kImageNetStd;
      break;
    case Kind::kOther:
      break;
  }
  return p;
}
}  // namespace

Result<ImagePreprocess> read_preprocessor_config(const std::string& dir, const json& model_config) {
  const std::string path = (std::filesystem::path(dir) / "preprocessor_config.json").string();
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return from_file(path, model_config);
  return from_model_config(dir, model_config);
}

}  // namespace arch
