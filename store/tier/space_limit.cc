#include "store/tier/space_limit.h"

#include <algorithm>

namespace strata {

uint64_t SpaceMargin(uint64_t holdable_bytes) { return holdable_bytes / 16; }

uint64_t LimitForFilesystem(uint64_t limit_bytes, uint64_t holdable_bytes) {
  return std::min(limit_bytes, holdable_bytes - SpaceMargin(holdable_bytes));
}

}  // namespace strata
