// Liveness bounds in seconds for the tests that check a refusal comes
// quickly instead of running away: scaled under AddressSanitizer, which
// runs such loops 10-40x slower (tools/sanitize.sh). And whether it is on:
// its quarantine keeps freed memory resident, so resident-memory checks
// mean nothing under it (its leak checker stands in for them).
#pragma once

namespace arch::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif
inline constexpr double kTimeScale = kAddressSanitizer ? 40.0 : 1.0;

// `seconds` on a plain build, more under a sanitizer.
constexpr double time_bound(double seconds) { return seconds * kTimeScale; }

}  // namespace arch::testing
