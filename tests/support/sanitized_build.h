// Whether this test binary runs under AddressSanitizer: its instrumented loops run several
// times slower, so timing bounds meant for release builds do not apply there.
#pragma once

namespace kite::test {

#if defined(__SANITIZE_ADDRESS__)  // GCC
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)  // clang
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

}  // namespace kite::test
