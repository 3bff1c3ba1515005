// AllocMeter: counts the heap bytes this process allocates while one is
// alive, through the sanitizer allocator's malloc hook (every malloc and
// operator new). For checking that a decoder allocates in proportion to the
// bytes it was given, never to sizes those bytes declare. One meter at a
// time; not for threaded code.
#pragma once

#include <cstddef>

namespace strata::fuzz {

class AllocMeter {
 public:
  AllocMeter();
  ~AllocMeter();
  AllocMeter(const AllocMeter&) = delete;
  AllocMeter& operator=(const AllocMeter&) = delete;

  // Bytes requested since construction (frees are not subtracted).
  size_t bytes() const;
  // The largest single request since construction.
  size_t largest() const;
};

}  // namespace strata::fuzz
