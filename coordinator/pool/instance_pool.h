// An instance's pool (docs/pool.md, "The instance"): its local chain joined
// to the manager as a PooledStore, made the end of the chain's eviction
// sink, with the landing tier claims land in. Shared by everything that
// configures an instance: a rank ([prefix_cache] pool, launch/rank/
// rank_pool.h) and the Python module (pool=...). Every memory / disk / pool
// configuration of one process: memory + pool (the memory tier lands claims
// and ends the chain), disk + pool and memory + disk + pool (the disk tier
// ends the chain; claims land in a small memory tier of the pool's own), and
// pool only (claims land there, and so do published checkpoints, which are
// then put to the manager: PooledTiers::publish_from). With ranks in
// separate processes (rank zero's DiskStore, whose transport has a share per
// rank) the disk tier ends the chain and claims land in it, every rank
// writing its own share (DiskStore::Import); `geometry` is then every
// rank's, so the scope names the world size. Exports copy out of the planes
// through transfers of their own (`landing_transfers` called once more),
// except with ranks in separate processes (no exports there).
//
// Thread: the store's owner.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "coordinator/pool/pool_budget.h"
#include "coordinator/pool/pool_data_path.h"
#include "coordinator/pool/pooled_store.h"
#include "coordinator/rendezvous/job_secret.h"
#include "store/record/geometry.h"
#include "store/tier/composite/composite_store.h"
#include "store/tier/disk_store.h"
#include "store/tier/memory_store.h"
#include "wire/tls.h"

namespace strata::pool {

// Host memory of the pool's own landing tier (claims restored from the pool
// when the local chain is not a memory tier), at least kPoolLandingSlotsMin
// page records.
inline constexpr uint64_t kPoolLandingBytes = uint64_t{64} << 20;
inline constexpr uint64_t kPoolLandingSlotsMin = 16;

struct InstancePoolOptions {
  std::string socket_path;              // the manager's address: a Unix socket, or tcp://HOST:PORT
  std::optional<JobSecret> job_secret;  // over TCP, what the Hello proves
  std::shared_ptr<const wire::TlsContext> tls;  // over TCP; null: plaintext
  std::vector<std::string> sources;             // the instance's identity at the pool
  NamespaceIdentity model_identity{};
  // The planes' registrar (CUDA host registration with device planes; null
  // with host planes): it registers the landing tier's slabs, and the arena
  // too when `supply` is set, after the budget of what the host and GPUs
  // can give, read then (pool_budget.h). Without a supply the arena is only
  // mapped (the data path copies through the landing tier and does not
  // need it registered).
  HostRegistrar* registrar = nullptr;
  std::function<BudgetSupply()> supply;
  // How long an admission waits for the manager's lookup answer; unset: the
  // grace of a manager on this host's socket, or over TCP each connection's
  // measured network grace (lookup_grace.h). Tests on loaded
  // machines set seconds so that a slow answer does not turn a hit into a
  // miss.
  std::optional<std::chrono::milliseconds> lookup_bound;
  // Over TCP: the arena's file or the data channel (pool_data_path.h).
  PoolDataPath data_path = PoolDataPath::kAuto;
};

// An instance's sources at the pool (its identity there, stable across
// restarts where the sources are): `configured` when set, else the planes'
// GPU UUIDs, else the host name and process id (which change).
std::vector<std::string> InstanceSources(const std::optional<std::string>& configured,
                                         const std::vector<std::string>& gpu_uuids);

// The local chain a pool joins (none: pool only). Its tiers outlive the pool.
using LocalChain = std::variant<std::monostate, MemoryStore*, DiskStore*, CompositeStore*>;

class InstancePool {
 public:
  // Attaches (waiting up to 10 s at startup, then one warning and local
  // tiers only), makes the store the chain's eviction sink and, unless the
  // chain is a memory tier or a disk tier over ranks in separate processes
  // (which lands claims itself), lands claims in a MemoryStore of
  // kPoolLandingBytes over `landing_transfers` (called then; empty there is
  // kInvalidArgument), and copies exports over another of them (when set).
  static Result<std::unique_ptr<InstancePool>> Attach(
      const InstancePoolOptions& options, const CacheGeometry& geometry, LocalChain chain,
      const std::function<Result<std::unique_ptr<Transfers>>()>& landing_transfers);
  // Unhooks the chain's eviction sink, then frees the store and its landing
  // tier. Close the store first.
  ~InstancePool();
  InstancePool(const InstancePool&) = delete;
  InstancePool& operator=(const InstancePool&) = delete;

  PooledStore& store() { return *store_; }
  const PooledStore& store() const { return *store_; }
  // The landing tier of its own (null with a memory chain, which lands claims).
  const MemoryStore* landing() const { return landing_.get(); }

 private:
  explicit InstancePool(LocalChain chain) : chain_(chain) {}
  // Sets the chain's eviction sink (null unhooks it).
  void SetSink(EvictionSink* sink);

  LocalChain chain_;
  std::unique_ptr<ExportCopier> export_copier_;  // outlives the store
  std::unique_ptr<MemoryStore> landing_;
  std::unique_ptr<PooledStore> store_;
};

// The link options an instance attaches with: the Hello of its layout, the
// lookup grace of a manager on this host's socket (lookup_grace.h; over TCP
// none: each connection measures its own), and the arena's registration
// with device planes.
PoolLinkOptions InstanceLinkOptions(const InstancePoolOptions& options,
                                    const CacheGeometry& geometry);

}  // namespace strata::pool
