// PoolCatalog's private state (pool_catalog.h): shared by its .cc files only.
#pragma once

#include <map>
#include <unordered_map>
#include <vector>

#include "coordinator/pool/pool_catalog.h"

namespace strata::pool {

struct PoolCatalog::Record {
  ScopeId scope{};
  PrefixKey key;
  InstanceId owner{};
  PutKind kind = PutKind::kCascade;
  uint64_t bytes = 0;
  uint64_t checksum = 0;
  std::vector<SlotId> slots;
};

struct PoolCatalog::ScopeState {
  ScopeState(const PoolScope& s, uint32_t page_tokens) : scope(s), index(page_tokens) {}
  PoolScope scope;
  PrefixIndex index;
  uint64_t last_use_ms = 0;
  // Holdings of the scope's sessions, by their keys' buckets (as the index
  // files records), for LookupHeld; within a bucket by session and key, so
  // that a withdrawal costs a lookup, not a scan.
  using HeldBy = std::map<std::pair<SessionId, PrefixKey>, Holding>;
  std::map<Digest128, HeldBy> held;
};

struct PoolCatalog::OpenClaim {
  // The records pinned while the claim runs: a key and the record it named
  // when claimed. A record removed meanwhile (its owner's session ended) took
  // its pin with it, and a later record of the same key is not this claim's
  // to unpin (the pool simulation found a claim's end taking a new put's pin).
  std::vector<PrefixKey> keys;
  std::vector<NodeLocation> locations;
  std::vector<SlotId> held;  // held until release, even after a failure
  ClaimClock clock;
  bool failed = false;  // failed by ExpireClaims: unpinned, not counted in flight
};

struct PoolCatalog::PendingPut {
  PrefixKey key;
  NodeLocation location;  // a later record of the same key has another
};

struct PoolCatalog::Session {
  InstanceId instance{};
  ScopeId scope{};
  std::map<PutId, PendingPut> puts;
  std::map<ClaimId, OpenClaim> claims;
  std::unordered_map<PrefixKey, Holding> holdings;  // announced, by key
  ExportRecordSizes export_sizes{};
};

}  // namespace strata::pool
