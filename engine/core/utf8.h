// UTF-8 validity, as Unicode defines it (no overlong forms, no surrogates,
// nothing past U+10FFFF): what every layer that takes text from a file
// checks before it treats bytes as text.
#pragma once

#include <cstddef>
#include <string_view>

namespace arch {

// Length of the valid UTF-8 sequence at s[i], or 0; `good` gets how many
// bytes of it were acceptable before the first bad one (the maximal subpart).
size_t valid_utf8_sequence(std::string_view s, size_t i, size_t& good);
bool is_valid_utf8(std::string_view s);

}  // namespace arch
