// AckRecorder: a HostStore that forwards every call and remembers the keys
// whose stores were acknowledged (kStored), for tests that check after a
// fault or a crash that no acknowledged record was lost.
#pragma once

#include <optional>
#include <unordered_set>
#include <vector>

#include "store/tier/host_store.h"

namespace strata::testing {

class AckRecorder final : public HostStore {
 public:
  explicit AckRecorder(HostStore& inner) : inner_(inner) {}
  std::optional<HostHit> Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                uint64_t before) override {
    return inner_.Lookup(history, resident_tokens, before);
  }
  StoreOutcome Store(const PublishedCheckpoint& checkpoint) override {
    return inner_.Store(checkpoint);
  }
  Status Fetch(const HostHit& hit, const InboundTicket& ticket) override {
    return inner_.Fetch(hit, ticket);
  }
  void NotifyOnProgress(std::shared_ptr<WakeSignal> /*signal*/) override {}
  void Poll(uint64_t now_ms, std::vector<StoreEvent>& events) override {
    const size_t first = events.size();
    inner_.Poll(now_ms, events);
    for (size_t i = first; i < events.size(); ++i) {
      if (events[i].kind == StoreEvent::Kind::kStored) acked.insert(events[i].key);
    }
  }
  StoreStats Stats() const override { return inner_.Stats(); }
  Status Close() override { return inner_.Close(); }

  std::unordered_set<PrefixKey> acked;

 private:
  HostStore& inner_;
};

}  // namespace strata::testing
