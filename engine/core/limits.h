// Resource limits on what a user's files may ask of us. A header may claim a
// terabyte, a template may unroll a loop a billion times, a chat template may
// double a string sixty-four times: each such demand is checked against a
// named limit before anything is allocated, and refused with a message that
// names the limit and how to raise it. Every limit has a default that no real
// checkpoint comes near; a user with a real need raises it:
//   ARCHETYPE_LIMITS="loop_iterations=200000,image_pixels=1e9" archrun ...
//   archrun --limit loop_iterations=200000 ...
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/error.h"

namespace arch {

struct LimitInfo {
  std::string name;
  int64_t value;     // in force now
  int64_t standard;  // the default
  std::string what;  // what it bounds, and in which unit
};

// The value in force for a named limit (the default, or what
// ARCHETYPE_LIMITS / set_limit made it). An unknown name is a programming
// error: every name used in the code is listed in limits.cpp.
int64_t limit(std::string_view name);

// Set one limit ("name", value >= 1); an unknown name or a value < 1 is an
// error naming the known limits.
Status set_limit(std::string_view name, int64_t value);

// "name=value[,name=value...]" (values may be written 1e9 or 1000000000), as
// ARCHETYPE_LIMITS and --limit take them. Empty text sets nothing.
Status set_limits(std::string_view spec);

// ARCHETYPE_LIMITS as the tools read it at their start: an error naming the
// variable if its text is wrong (limit() then keeps the defaults).
Status limits_environment();

// Every limit with its value, default and meaning (for --help and docs).
std::vector<LimitInfo> all_limits();

// The one message for a demand over a limit:
// "<where>: <what> (<asked>) exceeds the limit 'NAME' (<value>); raise it
//  with --limit NAME=N or ARCHETYPE_LIMITS=NAME=N if this is meant"
Error over_limit(std::string_view name, const std::string& where, const std::string& what, int64_t asked);

// The product of sizes a request gives (an image's height and width, a
// loop's steps), held at INT64_MAX where it would overflow: the figure to
// check, computed before anything of that size is made. Any size <= 0: 0.
int64_t saturating_product(std::initializer_list<int64_t> sizes);

// asked <= limit(name) ? ok : over_limit(...)
Status check_limit(std::string_view name, int64_t asked, const std::string& where, const std::string& what);

}  // namespace arch
