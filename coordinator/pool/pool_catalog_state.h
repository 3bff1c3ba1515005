// PoolCatalog's private state (pool_catalog.h): shared by its .cc files only.
#pragma once

#include <map>
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
};

struct PoolCatalog::OpenClaim {
  std::vector<PrefixKey> keys;  // pinned while the claim runs
  std::vector<SlotId> held;     // held until release, even after a failure
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
};

}  // namespace strata::pool
