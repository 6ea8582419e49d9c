#include "engine/npu2/profile.h"

#include <algorithm>
#include <filesystem>

#include <yaml-cpp/yaml.h>

namespace arch::npu2 {

namespace fs = std::filesystem;

std::string Profile::output_of(const std::string& role, bool is_residual) const {
  if (is_residual) return residual;
  auto it = wider.find(role);
  return it != wider.end() ? it->second : activations;
}

nlohmann::json Profile::to_json() const {
  nlohmann::json j;
  j["weights"] = weights;
  j["activations"] = activations;
  j["residual"] = residual;
  j["cache"] = cache;
  j["conv_state"] = conv_state;
  j["recurrent_state"] = recurrent_state;
  j["wider"] = nlohmann::json::object();
  for (const auto& [role, type] : wider) j["wider"][role] = type;
  j["check"] = {{"rel", check.rel}, {"abs", check.abs}};
  return j;
}

static bool known_type(const std::string& t) { return t == "bf16" || t == "f32"; }

Result<Profile> read_profile(const std::string& path) {
  Profile p;
  p.path = path;
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return error(path + ": cannot read the numeric profile");
  } catch (const YAML::Exception& e) {
    return error(path + ":" + std::to_string(e.mark.line + 1) + ": not YAML: " + e.msg);
  }
  if (!root.IsMap()) return error(path + ": a numeric profile is a mapping (weights, activations, residual, cache, wider, check)");
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      const auto line = std::to_string(kv.first.Mark().line + 1);
      auto type_of = [&](const YAML::Node& n, std::string& into) -> Status {
        into = n.as<std::string>();
        if (!known_type(into)) return error(path + ":" + line + ": '" + key + "': '" + into + "' is not bf16 or f32");
        return {};
      };
      if (key == "weights") ARCH_TRY_STATUS(type_of(kv.second, p.weights));
      else if (key == "activations") ARCH_TRY_STATUS(type_of(kv.second, p.activations));
      else if (key == "residual") ARCH_TRY_STATUS(type_of(kv.second, p.residual));
      else if (key == "cache") ARCH_TRY_STATUS(type_of(kv.second, p.cache));
      else if (key == "conv_state") ARCH_TRY_STATUS(type_of(kv.second, p.conv_state));
      else if (key == "recurrent_state") {
        ARCH_TRY_STATUS(type_of(kv.second, p.recurrent_state));
        if (p.recurrent_state != "f32")
          return error(path + ":" + line + ": 'recurrent_state' must be f32: the host reference keeps the delta rule's "
                       "matrices in f32 inside its op, so a narrower state could not be checked against it");
      }
      else if (key == "wider") {
        if (!kv.second.IsMap()) return error(path + ":" + line + ": 'wider' maps a matvec's role to its output type");
        for (const auto& w : kv.second) {
          const std::string role = w.first.as<std::string>();
          static const char* roles[] = {"qkv", "qkvz", "o", "gate_up", "down", "head", "gates", "router"};
          if (std::find(std::begin(roles), std::end(roles), role) == std::end(roles))
            return error(path + ":" + std::to_string(w.first.Mark().line + 1) + ": 'wider': '" + role +
                         "' is not a unit's role (qkv, qkvz, o, gate_up, down, head, gates, router)");
          ARCH_TRY_STATUS(type_of(w.second, p.wider[role]));
        }
      } else if (key == "check") {
        if (!kv.second.IsMap() || !kv.second["rel"] || !kv.second["abs"])
          return error(path + ":" + line + ": 'check' is {rel: R, abs: A}");
        p.check.rel = kv.second["rel"].as<double>();
        p.check.abs = kv.second["abs"].as<double>();
        if (!(p.check.rel >= 0) || !(p.check.abs >= 0)) return error(path + ":" + line + ": 'check' bounds must be >= 0");
      } else {
        return error(path + ":" + line + ": unknown field '" + key +
                     "' (weights, activations, residual, cache, conv_state, recurrent_state, wider, check)");
      }
    }
  } catch (const YAML::Exception& e) {
    return error(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  // The convolution's state holds what the matvec stored: narrower than
  // that, the host reference (which keeps it inside its op) could not round it.
  if (p.conv_state == "bf16" && p.activations == "f32")
    return error(path + ": 'conv_state' bf16 is narrower than the activations (f32) it holds");
  return p;
}

Result<Profile> profile_for_template(const std::string& template_path) {
  fs::path t(template_path);
  fs::path beside = t.parent_path() / (t.stem().string() + ".npu2.yaml");
  std::error_code ec;
  if (!fs::exists(beside, ec)) return Profile{};
  return read_profile(beside.string());
}

}  // namespace arch::npu2
