// archrun classify: an image through an image classifier; top-k labels.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "engine/runtime/forward.h"
#include "importer/image/image.h"
#include "importer/image/image_processor_config.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_classify(const Common& c, const std::string& image_path, int top_k, bool as_json) {
  auto m = open_model(c);
  if (!m.ok()) return fail(m.error());
  const Model& model = **m;
  auto rgb = load_image(image_path);
  if (!rgb.ok()) return fail(rgb.error());
  auto pre = read_preprocessor_config(c.model, model.checkpoint.config);
  if (!pre.ok()) return fail(pre.error());
  Tensor pixels = preprocess(*rgb, *pre);
  auto outs = forward(model, {{"pixel_values", pixels}}, {"logits"});
  if (!outs.ok()) return fail(error(image_path + ": " + outs.error().message));
  const Tensor& logits = outs->at("logits");
  // Softmax probabilities, best first.
  std::vector<std::pair<double, int>> ranked;
  double maxv = -INFINITY, total = 0;
  for (int64_t i = 0; i < logits.numel(); ++i) maxv = std::max(maxv, double(logits.f32()[i]));
  for (int64_t i = 0; i < logits.numel(); ++i) total += std::exp(double(logits.f32()[i]) - maxv);
  for (int64_t i = 0; i < logits.numel(); ++i)
    ranked.emplace_back(std::exp(double(logits.f32()[i]) - maxv) / total, int(i));
  std::stable_sort(ranked.begin(), ranked.end(), [](auto& a, auto& b) { return a.first > b.first; });
  ranked.resize(std::min<size_t>(ranked.size(), size_t(std::max(top_k, 1))));
  auto labels = model.checkpoint.config.value("id2label", nlohmann::json::object());
  auto label = [&](int id) {
    auto it = labels.find(std::to_string(id));
    return it != labels.end() && it->is_string() ? it->get<std::string>() : "LABEL_" + std::to_string(id);
  };
  if (as_json) {
    nlohmann::json j = nlohmann::json::array();
    for (auto& [p, id] : ranked) j.push_back({{"id", id}, {"label", label(id)}, {"probability", p}});
    std::printf("%s\n", nlohmann::json{{"top", j}}.dump().c_str());
  } else {
    for (auto& [p, id] : ranked) std::printf("%6.2f%%  %s (%d)\n", 100 * p, label(id).c_str(), id);
  }
  return 0;
}

}  // namespace arch::cli
