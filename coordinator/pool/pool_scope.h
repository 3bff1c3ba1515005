// Scope and instance identity of a pool (seed 2.15). Instances share records
// only within one scope: the pool's name, the model identity, the layout
// fingerprint and every rank's plane sizes. The manager's --name salts both,
// so a renamed pool is a distinct namespace and its cache starts cold.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "store/base/digest.h"
#include "store/record/fingerprint.h"

namespace strata::pool {

// BLAKE2b-128 over the canonical little-endian encoding (store/base/byte_writer.h)
// of kScopeDomain and the scope's fields.
using ScopeId = Digest128;
// BLAKE2b-128 over kInstanceDomain, the pool name and the instance's sources.
using InstanceId = Digest128;

inline constexpr std::string_view kScopeDomain = "strata-pool-scope-v1";
inline constexpr std::string_view kInstanceDomain = "strata-pool-instance-v1";

struct PoolScope {
  std::string pool_name;
  NamespaceIdentity model_identity{};  // store/record/fingerprint.h
  LayoutFingerprint layout{};
  // Per rank, its plane unit sizes in geometry order: the row plane, then the
  // page planes sorted by name.
  std::vector<std::vector<uint64_t>> rank_plane_bytes;

  friend bool operator==(const PoolScope&, const PoolScope&) = default;
};

ScopeId ComputeScopeId(const PoolScope& scope);

// The plane sizes of a geometry, in PoolScope::rank_plane_bytes order.
std::vector<std::vector<uint64_t>> RankPlaneBytes(const CacheGeometry& geometry);

// Stable across restarts: from the GPUs' UUIDs (in any order; they are
// sorted), or from a configured id for an instance with host planes. Salted by
// the pool name.
InstanceId ComputeInstanceId(std::string_view pool_name, std::span<const std::string> sources);

}  // namespace strata::pool
