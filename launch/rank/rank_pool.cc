#include "launch/rank/rank_pool.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <string>

#include "coordinator/pool/lookup_grace.h"
#include "launch/presets.h"
#include "launch/rank/rank_stores.h"
#include "store/record/fingerprint.h"

namespace strata {

namespace {

pool::PoolLinkOptions LinkOptions(const RankConfig& config, const CacheGeometry& geometry,
                                  const RankPoolRegistration& registration) {
  pool::PoolLinkOptions o;
  o.client.socket_path = *config.prefix_cache.pool;
  o.client.hello = pool::InstanceHello(
      geometry, ComputeNamespaceIdentity(RankModelIdentity(config), StateMode::kOrdinary),
      PoolInstanceSources(config, registration.gpu_uuids));
  // The lookup grace of a manager on this host (lookup_grace.h).
  o.client.lookup_bound =
      std::chrono::milliseconds(pool::LookupGraceUs(pool::ManagerPlace::kLocalHost, 0) / 1000);
  // With device planes the arena is registered, after the budget.
  o.registration = registration.registrar != nullptr ? pool::ArenaRegistration::kRegistered
                                                     : pool::ArenaRegistration::kNone;
  o.registrar = registration.registrar;
  o.budget_supply = registration.supply;
  return o;
}

ExportRecordSizes ExportSizes(const CacheGeometry& geometry) {
  const RecordLayout layout(geometry);
  return {.page_record_bytes = layout.page_record_bytes(),
          .row_segment_bytes = layout.row_segment_bytes()};
}

}  // namespace

std::vector<std::string> PoolInstanceSources(const RankConfig& config,
                                             const std::vector<std::string>& gpu_uuids) {
  if (config.prefix_cache.pool_instance) return {*config.prefix_cache.pool_instance};
  if (!gpu_uuids.empty()) return gpu_uuids;
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  return {std::string(host.data()) + ":" + std::to_string(::getpid())};
}

std::unique_ptr<pool::PooledStore> AttachRankPool(const RankConfig& config,
                                                  const CacheGeometry& geometry,
                                                  MemoryStore& memory,
                                                  const RankPoolRegistration& registration) {
  if (!config.prefix_cache.pool) return nullptr;
  auto pooled = std::make_unique<pool::PooledStore>(
      pool::PooledTiers{.local = &memory,
                        .landing = &memory,
                        .intake = &memory,
                        .record_sizes = ExportSizes(geometry)},
      pool::PoolLink::AttachAtStartup(LinkOptions(config, geometry, registration)));
  memory.SetEvictionSink(pooled.get());
  return pooled;
}

Result<std::unique_ptr<RankPool>> AttachRankPoolWithDisk(const RankConfig& config,
                                                         const CacheGeometry& geometry,
                                                         DiskChainEnd end, HostRegistrar* registrar,
                                                         std::unique_ptr<Transfers> transfers,
                                                         const RankPoolRegistration& registration) {
  if (!config.prefix_cache.pool) return std::unique_ptr<RankPool>();
  const uint64_t slot_bytes = RecordLayout(geometry).page_record_bytes();
  const uint64_t slots = std::max(kPoolLandingBytes / slot_bytes, kPoolLandingSlotsMin);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<SlabPool> slabs,
                          SlabPool::Create(slot_bytes, slots, 0, registrar));
  auto out = std::make_unique<RankPool>();
  out->landing = std::make_unique<MemoryStore>(
      geometry, std::shared_ptr<SlabPool>(std::move(slabs)), std::move(transfers));
  pool::PooledTiers tiers{.landing = out->landing.get(), .intake = out->landing.get()};
  if (auto* disk = std::get_if<DiskStore*>(&end)) tiers.local = *disk;
  if (auto* composite = std::get_if<CompositeStore*>(&end)) tiers.local = *composite;
  tiers.end_of_chain_tier = "disk";
  tiers.record_sizes = ExportSizes(geometry);
  out->store = std::make_unique<pool::PooledStore>(
      std::move(tiers),
      pool::PoolLink::AttachAtStartup(LinkOptions(config, geometry, registration)));
  if (auto* disk = std::get_if<DiskStore*>(&end)) (*disk)->SetEvictionSink(out->store.get());
  if (auto* composite = std::get_if<CompositeStore*>(&end)) {
    (*composite)->SetEvictionSink(out->store.get());
  }
  return out;
}

}  // namespace strata
