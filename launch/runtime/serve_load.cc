#include "launch/runtime/serve_load.h"

namespace strata {

ServeLoad::ServeLoad(SyntheticRuntime& runtime) : rt_(runtime) {
  conversations_.reserve(kConversations);
  for (int i = 0; i < kConversations; ++i) conversations_.push_back(rt_.NewConversation());
}

Result<TurnReport> ServeLoad::Turn() {
  const uint64_t tick = tick_++;
  Result<TurnReport> t = rt_.Turn(conversations_[tick % conversations_.size()], kTurnTokens);
  if (t.ok() && tick % kEvictEveryTurns == kEvictEveryTurns - 1) rt_.EvictGpu();
  return t;
}

}  // namespace strata
