// A numeric profile (seeds/002's profiles): how the NPU2 engine stores what
// each unit writes, per model family, as a small YAML file beside its
// template (families/llama.npu2.yaml). The engine multiplies bf16 by bf16
// into f32 accumulators; the profile says which outputs stay wider.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/op.h"

namespace arch::npu2 {

struct Profile {
  std::string path;                 // the file read ("" : the defaults)
  std::string weights = "bf16";     // every bound constant
  std::string activations = "bf16"; // a unit's output, unless wider says otherwise
  std::string residual = "f32";     // the residual stream (the embedding and the residual adds)
  std::string cache = "bf16";       // the KV caches
  // A Gated-DeltaNet block's states: the convolution's last inputs (as the
  // matvec stored them: the activations' type loses nothing) and the delta
  // rule's matrices (f32: the host reference keeps them so, every position
  // decaying and rewriting them).
  std::string conv_state = "bf16";
  std::string recurrent_state = "f32";
  std::map<std::string, std::string> wider;  // a unit's role (qkv, qkvz, o, gate_up, down, head, gates, router) -> its output's type
  // What --check holds a unit to against its ops' f32 reference: the
  // rounding these types add, relative to the reference's largest |value|.
  Tolerance check{1.0 / 64, 1e-3};

  // The type a unit writes: `role` a matvec's (or "" for others), `residual`
  // whether it writes the residual stream.
  std::string output_of(const std::string& role, bool residual) const;
  nlohmann::json to_json() const;
};

// The profile beside `template_path` (its stem + ".npu2.yaml"), or the
// defaults where there is none. Errors name the file and the field.
Result<Profile> profile_for_template(const std::string& template_path);
Result<Profile> read_profile(const std::string& path);

}  // namespace arch::npu2
