#include "coordinator/pool/pool_scope.h"

#include <algorithm>

#include "store/base/byte_writer.h"

namespace strata::pool {

ScopeId ComputeScopeId(const PoolScope& scope) {
  ByteWriter w;
  w.String(kScopeDomain);
  w.String(scope.pool_name);
  w.Bytes(scope.model_identity);
  w.Bytes(scope.layout);
  w.U32(static_cast<uint32_t>(scope.rank_plane_bytes.size()));
  for (const std::vector<uint64_t>& planes : scope.rank_plane_bytes) {
    w.U32(static_cast<uint32_t>(planes.size()));
    for (uint64_t bytes : planes) w.U64(bytes);
  }
  return Blake2b128(w.bytes());
}

std::vector<std::vector<uint64_t>> RankPlaneBytes(const CacheGeometry& geometry) {
  std::vector<std::vector<uint64_t>> out;
  out.reserve(geometry.ranks.size());
  for (const RankGeometry& rank : geometry.ranks) {
    std::vector<uint64_t> planes{rank.row.unit_bytes};
    for (const PlaneSpec& p : rank.page_planes) planes.push_back(p.unit_bytes);
    out.push_back(std::move(planes));
  }
  return out;
}

InstanceId ComputeInstanceId(std::string_view pool_name, std::span<const std::string> sources) {
  std::vector<std::string> sorted(sources.begin(), sources.end());
  std::sort(sorted.begin(), sorted.end());
  ByteWriter w;
  w.String(kInstanceDomain);
  w.String(pool_name);
  w.U32(static_cast<uint32_t>(sorted.size()));
  for (const std::string& s : sorted) w.String(s);
  return Blake2b128(w.bytes());
}

}  // namespace strata::pool
