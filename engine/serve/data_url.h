// Images in a chat request come as data URLs (RFC 2397):
// data:image/png;base64,iVBORw0KG... This server fetches nothing, so any
// other URL is refused by the caller.
#pragma once

#include <string>
#include <string_view>

#include "engine/core/error.h"

namespace arch::serve {

// The bytes a base64 data URL holds; an error saying what is wrong with it
// (not a data URL, not base64, no bytes, or past `max_bytes`).
Result<std::string> decode_data_url(std::string_view url, size_t max_bytes);

}  // namespace arch::serve
