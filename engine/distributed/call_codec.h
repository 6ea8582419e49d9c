// A session call (engine/runtime/session_mirror.h) as bytes, to be sent to
// the other processes and read back there: a JSON head (the kind, the
// numbers, each tensor's name, dtype and shape) and the tensors' bytes.
#pragma once

#include <string>

#include "engine/runtime/session_mirror.h"

namespace arch {

std::string encode_call(const SessionCall& call);
Result<SessionCall> decode_call(const std::string& bytes);

}  // namespace arch
