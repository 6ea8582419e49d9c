#include "importer/image_preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "core/json_text.h"
#include "core/mapped_file.h"

namespace arch {

namespace {

using json = nlohmann::json;

constexpr int kMaxSide = 16384;

// ---------------------------------------------------------------------------
// Pillow's resampling (libImaging/Resample.c), on 8-bit values.

struct Filter {
  double (*fn)(double);
  double support;
};

double box_filter(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }

double bilinear_filter(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double hamming_filter(double x) {
  if (x < 0.0) x = -x;
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x = x * M_PI;
  return std::sin(x) / x * (0.54f + 0.46f * std::cos(x));  // float constants, as PIL has them
}

double bicubic_filter(double x) {
  constexpr double a = -0.5;  // Keys' cubic convolution with a = -0.5
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x = x * M_PI;
  return std::sin(x) / x;
}

double lanczos_filter(double x) { return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3) : 0.0; }

std::optional<Filter> filter_named(const std::string& name) {
  if (name == "bilinear") return Filter{bilinear_filter, 1.0};
  if (name == "bicubic") return Filter{bicubic_filter, 2.0};
  if (name == "lanczos") return Filter{lanczos_filter, 3.0};
  if (name == "box") return Filter{box_filter, 0.5};
  if (name == "hamming") return Filter{hamming_filter, 1.0};
  return std::nullopt;
}

// Weights are fixed point with 22 fractional bits, so that a sum of 8-bit
// samples times weights fits 32 bits with headroom, and results round the
// way PIL's 8-bit resampling does (we match its numbers, see the tests).
constexpr int kWeightFracBits = 22;

uint8_t fixed_to_u8(int64_t acc) {
  int64_t v = acc >> kWeightFracBits;  // arithmetic shift: floor
  return uint8_t(std::clamp<int64_t>(v, 0, 255));
}

// The input samples each output sample reads: a window [start, start +
// length) and its fixed-point weights.
struct Taps {
  int width = 0;                   // weights stored per output sample
  std::vector<int> start, length;  // by output index
  std::vector<int32_t> weight;     // out_size * width
};

Taps taps_for(int in_size, int out_size, const Filter& filter) {
  // Downscaling widens the filter by the scale (antialiasing); upscaling
  // keeps it as it is.
  const double step = double(in_size) / out_size;
  const double widen = std::max(step, 1.0);
  const double reach = filter.support * widen;
  const double narrow = 1.0 / widen;  // multiplied, not divided: the same rounding as PIL
  Taps t;
  t.width = 2 * int(std::ceil(reach)) + 1;
  t.start.assign(out_size, 0);
  t.length.assign(out_size, 0);
  t.weight.assign(size_t(out_size) * t.width, 0);
  std::vector<double> raw(t.width);
  for (int o = 0; o < out_size; ++o) {
    const double mid = (o + 0.5) * step;  // the output sample's centre, in input coordinates
    // Window ends rounded half up, then truncated toward zero as C casts do.
    const int lo = std::max(0, int(mid - reach + 0.5));
    const int hi = std::min(in_size, int(mid + reach + 0.5));
    double total = 0.0;
    for (int i = lo; i < hi; ++i) total += raw[i - lo] = filter.fn((i - mid + 0.5) * narrow);
    for (int i = lo; i < hi; ++i) {
      const double w = total != 0.0 ? raw[i - lo] / total : raw[i - lo];
      const double scaled = w * double(1 << kWeightFracBits);
      t.weight[size_t(o) * t.width + (i - lo)] = int32_t(scaled < 0 ? scaled - 0.5 : scaled + 0.5);
    }
    t.start[o] = lo;
    t.length[o] = hi - lo;
  }
  return t;
}

// Resamples an 8-bit plane [rows, cols] along one axis to `out_size`.
std::vector<uint8_t> resample_pass(const std::vector<uint8_t>& in, int rows, int cols, int out_size,
                                   bool horizontal, const Filter& filter) {
  const Taps taps = taps_for(horizontal ? cols : rows, out_size, filter);
  const int out_rows = horizontal ? rows : out_size;
  const int out_cols = horizontal ? out_size : cols;
  auto sample = [&](int r, int c) { return int64_t(in[size_t(r) * cols + c]); };
  std::vector<uint8_t> out(size_t(out_rows) * out_cols);
  for (int r = 0; r < out_rows; ++r)
    for (int c = 0; c < out_cols; ++c) {
      const int o = horizontal ? c : r;
      const int32_t* w = &taps.weight[size_t(o) * taps.width];
      int64_t acc = int64_t(1) << (kWeightFracBits - 1);  // rounds the final shift to nearest
      for (int j = 0; j < taps.length[o]; ++j) {
        const int i = taps.start[o] + j;
        acc += (horizontal ? sample(r, i) : sample(i, c)) * w[j];
      }
      out[size_t(r) * out_cols + c] = fixed_to_u8(acc);
    }
  return out;
}

// Pillow's NEAREST resize (an affine scale): source index
// floor((x + 0.5) * in / out), the position stepped by repeated addition.
std::vector<int> nearest_index(int in_size, int out_size) {
  const double scale = double(in_size) / out_size;
  std::vector<int> index(out_size);
  double pos = scale * 0.5;
  for (int x = 0; x < out_size; ++x) {
    int i = pos < 0.0 ? -1 : int(pos);
    index[x] = std::clamp(i, 0, in_size - 1);
    pos += scale;
  }
  return index;
}

std::vector<uint8_t> to_u8_plane(const float* src, int64_t n) {
  std::vector<uint8_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    float v = src[i];
    // NaN becomes 0; otherwise round half up, clamp to 0..255.
    out[i] = !(v > 0.0f) ? 0 : v >= 255.0f ? 255 : uint8_t(std::floor(v + 0.5f));
  }
  return out;
}

void check_image(const Tensor& t, const char* what) {
  if (t.dtype != DType::F32 || t.shape.size() != 3 || t.shape[0] < 1 || t.shape[1] < 1 || t.shape[2] < 1)
    throw std::invalid_argument(std::string(what) + ": expected an F32 [C, H, W] image, got shape " +
                                dims_str(t.shape));
}

// transformers' get_resize_output_image_size(image, size, default_to_square=False).
std::pair<int, int> shortest_edge_size(int height, int width, int size) {
  const int64_t short_side = std::min(height, width), long_side = std::max(height, width);
  const int new_long = int(double(int64_t(size) * long_side) / double(short_side));
  return width <= height ? std::pair{new_long, size} : std::pair{size, new_long};
}

// ---------------------------------------------------------------------------
// preprocessor_config.json

enum class Kind { kViT, kClip, kConvNext, kOther };

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
  if (stem == "CLIP") return Kind::kClip;
  if (stem == "ConvNext") return Kind::kConvNext;
  return Kind::kOther;
}

Kind kind_of_model_type(const std::string& model_type) {
  if (model_type == "vit") return Kind::kViT;
  if (model_type == "clip_vision_model" || model_type == "clip") return Kind::kClip;
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
    case Kind::kConvNext:
      p.shortest_edge = 384;
      p.crop_pct = 224.0 / 256.0;
      p.resample = "bilinear";
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
  for (const char* key : {"do_flip_channel_order", "do_pad", "do_color_quantize"})
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

  // image_size: a number or [height, width]; CLIP keeps it in vision_config.
  const json* holder = &model_config;
  if (model_type == "clip" && model_config.contains("vision_config") && model_config["vision_config"].is_object())
    holder = &model_config["vision_config"];
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
      p.height = height;
      p.width = width;
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

std::string preprocess_problem(const ImagePreprocess& p) {
  auto bad_side = [](int v) { return v < 1 || v > kMaxSide; };
  if (p.do_resize) {
    if (p.resample != "nearest" && !filter_named(p.resample))
      return "unknown resample filter '" + p.resample + "'";
    if (p.shortest_edge < 0 || p.shortest_edge > kMaxSide)
      return "shortest_edge " + std::to_string(p.shortest_edge) + " is outside 0..16384";
    if (p.shortest_edge == 0 && (bad_side(p.height) || bad_side(p.width)))
      return "resize size " + std::to_string(p.height) + "x" + std::to_string(p.width) + " is outside 1..16384";
    if (p.crop_pct < 0 || !std::isfinite(p.crop_pct)) return "crop_pct must be positive";
    if (p.crop_pct > 0) {
      if (p.shortest_edge == 0) return "crop_pct needs a shortest_edge size";
      const double scaled = p.shortest_edge / p.crop_pct;
      if (p.shortest_edge < 384 && !(scaled >= 1 && scaled <= kMaxSide))
        return "shortest_edge / crop_pct = " + std::to_string(scaled) + " is outside 1..16384";
    }
  }
  if (p.do_center_crop && (bad_side(p.crop_height) || bad_side(p.crop_width)))
    return "crop size " + std::to_string(p.crop_height) + "x" + std::to_string(p.crop_width) + " is outside 1..16384";
  if (p.do_rescale && !(p.rescale_factor > 0 && std::isfinite(p.rescale_factor)))
    return "rescale_factor must be a positive number";
  if (p.do_normalize) {
    if (p.mean.size() != 3 || p.std.size() != 3) return "image_mean and image_std need 3 values each (R, G, B)";
    for (float s : p.std)
      if (s == 0.0f || !std::isfinite(s)) return "image_std must be finite and non-zero";
  }
  return "";
}

Result<ImagePreprocess> read_preprocessor_config(const std::string& dir, const json& model_config) {
  const std::string path = (std::filesystem::path(dir) / "preprocessor_config.json").string();
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) return from_file(path, model_config);
  return from_model_config(dir, model_config);
}

Tensor resize_image(const Tensor& image, int height, int width, const std::string& resample) {
  check_image(image, "resize_image");
  if (height < 1 || width < 1) throw std::invalid_argument("resize_image: target size must be positive");
  const std::optional<Filter> filter = filter_named(resample);
  if (!filter && resample != "nearest") throw std::invalid_argument("resize_image: unknown filter '" + resample + "'");
  const int channels = int(image.shape[0]), in_h = int(image.shape[1]), in_w = int(image.shape[2]);
  Tensor out = Tensor::zeros(DType::F32, {channels, height, width});
  std::vector<int> near_x, near_y;
  if (!filter) {
    near_x = nearest_index(in_w, width);
    near_y = nearest_index(in_h, height);
  }
  for (int c = 0; c < channels; ++c) {
    std::vector<uint8_t> plane = to_u8_plane(image.f32() + int64_t(c) * in_h * in_w, int64_t(in_h) * in_w);
    std::vector<uint8_t> result;
    if (!filter) {
      result.resize(size_t(height) * width);
      for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) result[size_t(y) * width + x] = plane[size_t(near_y[y]) * in_w + near_x[x]];
    } else {
      // Pillow skips a pass whose size does not change, and runs the
      // horizontal pass first, rounding to 8 bits in between.
      int cols = in_w;
      if (width != in_w) {
        plane = resample_pass(plane, in_h, in_w, width, /*horizontal=*/true, *filter);
        cols = width;
      }
      if (height != in_h) plane = resample_pass(plane, in_h, cols, height, /*horizontal=*/false, *filter);
      result = std::move(plane);
    }
    float* dst = out.f32() + int64_t(c) * height * width;
    for (size_t i = 0; i < result.size(); ++i) dst[i] = result[i];
  }
  return out;
}

Tensor center_crop_image(const Tensor& image, int height, int width) {
  check_image(image, "center_crop_image");
  if (height < 1 || width < 1) throw std::invalid_argument("center_crop_image: crop size must be positive");
  const int64_t channels = image.shape[0], in_h = image.shape[1], in_w = image.shape[2];
  // Python's (orig - crop) // 2 floors; with padding, output (i, j) is input
  // (i + top, j + left) wherever that lies inside the image, else zero.
  auto floor_half = [](int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); };
  const int64_t top = floor_half(in_h - height), left = floor_half(in_w - width);
  Tensor out = Tensor::zeros(DType::F32, {channels, height, width});
  for (int64_t c = 0; c < channels; ++c) {
    const float* src = image.f32() + c * in_h * in_w;
    float* dst = out.f32() + c * height * width;
    for (int64_t i = 0; i < height; ++i) {
      const int64_t y = i + top;
      if (y < 0 || y >= in_h) continue;
      for (int64_t j = 0; j < width; ++j) {
        const int64_t x = j + left;
        if (x >= 0 && x < in_w) dst[i * width + j] = src[y * in_w + x];
      }
    }
  }
  return out;
}

Tensor preprocess(const Tensor& rgb, const ImagePreprocess& p) {
  check_image(rgb, "preprocess");
  if (rgb.shape[0] != 3) throw std::invalid_argument("preprocess: expected 3 channels, got " + dims_str(rgb.shape));
  if (std::string problem = preprocess_problem(p); !problem.empty())
    throw std::invalid_argument("preprocess: " + problem);

  Tensor image = rgb;
  if (p.do_resize) {
    const int h = int(image.shape[1]), w = int(image.shape[2]);
    if (p.crop_pct > 0 && p.shortest_edge < 384) {
      // ConvNextImageProcessor.resize: Python's int() truncates.
      const int scaled = int(p.shortest_edge / p.crop_pct);
      auto [rh, rw] = shortest_edge_size(h, w, scaled);
      image = resize_image(image, rh, rw, p.resample);
      image = center_crop_image(image, p.shortest_edge, p.shortest_edge);
    } else if (p.crop_pct > 0) {
      image = resize_image(image, p.shortest_edge, p.shortest_edge, p.resample);
    } else if (p.shortest_edge > 0) {
      auto [rh, rw] = shortest_edge_size(h, w, p.shortest_edge);
      image = resize_image(image, rh, rw, p.resample);
    } else {
      image = resize_image(image, p.height, p.width, p.resample);
    }
  }
  if (p.do_center_crop) image = center_crop_image(image, p.crop_height, p.crop_width);

  // A fresh tensor for the result: `image` may still be the caller's.
  const int64_t plane = image.shape[1] * image.shape[2];
  Tensor out = Tensor::zeros(DType::F32, image.shape);
  const float* src = image.f32();
  float* dst = out.f32();
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t i = 0; i < plane; ++i) {
      float v = src[c * plane + i];
      if (p.do_rescale) v = float(double(v) * p.rescale_factor);
      if (p.do_normalize) v = (v - p.mean[c]) / p.std[c];
      dst[c * plane + i] = v;
    }
  }
  return out;
}

}  // namespace arch
