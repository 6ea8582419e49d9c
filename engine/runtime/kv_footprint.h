// What a program's KV caches hold per position: every kv_cache op's row of
// keys and, where it is given one, of values, in the element type the
// program keeps them (F32, or F16 with --kv-f16). A latent cache (keys that
// hold the values, no v) counts its keys once.
#pragma once

#include <cstdint>

#include "engine/runtime/interpreter.h"

namespace arch {

int64_t kv_bytes_per_position(const Program& p);

// What a program's recurrent states hold per sequence, at any position
// (OpDef::state_bytes: a causal convolution's last inputs, a delta rule's
// matrices): the state a session keeps beside its KV caches.
int64_t state_bytes_per_sequence(const Program& p);

}  // namespace arch
