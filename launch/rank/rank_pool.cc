#include "launch/rank/rank_pool.h"

#include <unistd.h>

#include <array>
#include <string>

#include "coordinator/pool/lookup_grace.h"
#include "launch/presets.h"
#include "launch/rank/rank_stores.h"
#include "store/record/fingerprint.h"

namespace strata {

namespace {

// prefix_cache.pool_instance, or the host name and process id.
std::string InstanceSource(const RankConfig& config) {
  if (config.prefix_cache.pool_instance) return *config.prefix_cache.pool_instance;
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  return std::string(host.data()) + ":" + std::to_string(::getpid());
}

}  // namespace

std::unique_ptr<pool::PooledStore> AttachRankPool(const RankConfig& config,
                                                  const CacheGeometry& geometry,
                                                  MemoryStore& memory) {
  if (!config.prefix_cache.pool) return nullptr;
  pool::PoolLinkOptions o;
  o.client.socket_path = *config.prefix_cache.pool;
  o.client.hello = pool::InstanceHello(
      geometry, ComputeNamespaceIdentity(RankModelIdentity(config), StateMode::kOrdinary),
      {InstanceSource(config)});
  // The lookup grace of a manager on this host (lookup_grace.h).
  o.client.lookup_bound = std::chrono::milliseconds(
      pool::LookupGraceUs(pool::ManagerPlace::kLocalHost, 0) / 1000);
  // Claims copy through a local slab record, so the arena is only mapped.
  o.registration = pool::ArenaRegistration::kNone;
  auto pooled =
      std::make_unique<pool::PooledStore>(memory, memory, pool::PoolLink::AttachAtStartup(o));
  memory.SetEvictionSink(pooled.get());
  return pooled;
}

std::vector<MetricFamily> PoolClientMetrics(const pool::PoolInstanceStats& pool,
                                            const StoreStats& store) {
  using Labels = std::vector<std::pair<std::string, std::string>>;
  auto one = [](std::string name, MetricKind kind, std::string help, uint64_t value,
                Labels labels = {}) {
    return MetricFamily{std::move(name), kind, std::move(help), {{std::move(labels), value}}};
  };
  std::vector<MetricFamily> out;
  out.push_back(one("strata_host_cache_held_total", MetricKind::kCounter,
                    "Records that came to be held by a local tier (stored or imported).",
                    store.memory.stored_total, {{"tier", "dram"}}));
  out.push_back(one("strata_host_cache_dropped_total", MetricKind::kCounter,
                    "Records a local tier discarded: evicted from the end of the local chain "
                    "without the pool taking them.",
                    pool.dropped_end_of_chain, {{"tier", "dram"}, {"reason", "end_of_chain"}}));
  out.push_back(one("strata_pool_client_attached", MetricKind::kGauge,
                    "1 while this instance shares through its pool manager, else 0.",
                    pool.attached ? 1 : 0));
  out.push_back(one("strata_pool_client_reconnects_total", MetricKind::kCounter,
                    "Reattachments after a lost connection.", pool.reconnects));
  out.push_back(one("strata_pool_client_lookups_total", MetricKind::kCounter,
                    "Lookups asked of the manager.", pool.lookups));
  out.push_back(one("strata_pool_client_lookup_misses_total", MetricKind::kCounter,
                    "Manager lookups with no answer within the lookup grace (or failed).",
                    pool.lookup_failures));
  MetricFamily claims{"strata_pool_client_claims_total", MetricKind::kCounter,
                      "Pooled chains claimed, by outcome (failed: restored locally or recomputed).",
                      {{{{"outcome", "ok"}}, pool.claims}, {{{"outcome", "failed"}}, pool.claim_failures}}};
  out.push_back(std::move(claims));
  out.push_back(one("strata_pool_client_claimed_bytes_total", MetricKind::kCounter,
                    "Bytes of records claimed from the pool.", pool.claimed_bytes));
  out.push_back(one("strata_pool_client_puts_total", MetricKind::kCounter,
                    "Evicted records the manager accepted.", pool.puts));
  out.push_back(one("strata_pool_client_put_bytes_total", MetricKind::kCounter,
                    "Bytes of records the manager accepted.", pool.put_bytes));
  MetricFamily refusals{"strata_pool_client_put_refusals_total", MetricKind::kCounter,
                        "Puts the manager refused or that failed, by status.", {}};
  for (const auto& [reason, n] : pool.put_refusals) refusals.samples.push_back({{{"reason", reason}}, n});
  out.push_back(std::move(refusals));
  return out;
}

}  // namespace strata
