// The synthetic runtime's serve load: a few conversations taking turns, with
// every GPU copy dropped now and then so restores follow. Run by rank zero
// of `strata rank --workload serve` and by rank zero's `strata runtime`;
// the caller paces the turns (kServeTurnInterval) and watches its stop.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "launch/runtime/synthetic_runtime.h"

namespace strata {

// One turn this often.
inline constexpr std::chrono::milliseconds kServeTurnInterval{500};

class ServeLoad {
 public:
  // `runtime` must outlive this.
  explicit ServeLoad(SyntheticRuntime& runtime);
  // The next conversation's turn (and, every kEvictEveryTurns turns, a GPU eviction).
  Result<TurnReport> Turn();

 private:
  static constexpr int kConversations = 4;
  static constexpr uint64_t kTurnTokens = 256;
  static constexpr uint64_t kEvictEveryTurns = 16;

  SyntheticRuntime& rt_;
  std::vector<uint32_t> conversations_;
  uint64_t tick_ = 0;
};

}  // namespace strata
