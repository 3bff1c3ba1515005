// LeakOnPurpose: keeps an object alive for the rest of the process, for state
// that copies or kernel I/O may still use after an unconfirmed drain (a
// stream or a ring that did not stop). Under LeakSanitizer the object, and
// everything reachable from it, is marked as an intended leak, so sanitized
// test runs report only real leaks.
#pragma once

#include <memory>

#if defined(__SANITIZE_ADDRESS__)
#define STRATA_HAVE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_HAVE_LSAN 1
#endif
#endif
#ifdef STRATA_HAVE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace strata {

template <typename T>
T* LeakOnPurpose(std::unique_ptr<T> object) {
  T* raw = object.release();
#ifdef STRATA_HAVE_LSAN
  if (raw != nullptr) __lsan_ignore_object(raw);
#endif
  return raw;
}

}  // namespace strata
