// What a program's KV caches hold per position: every kv_cache op's row of
// keys and, where it is given one, of values, in the element type the
// program keeps them (F32, or F16 with --kv-f16). A latent cache (keys that
// hold the values, no v) counts its keys once.
#pragma once

#include <cstdint>

#include "engine/runtime/interpreter.h"

namespace arch {

int64_t kv_bytes_per_position(const Program& p);

}  // namespace arch
