// The RuntimeDriver of one process holding every rank (world size 1, or
// --single-process): memory, disk or both tiers (CompositeStore) on this host.
#include "launch/rank/single_process_stores.h"

#include "launch/pool_metrics.h"
#include "launch/rank/pool_budget_supply.h"
#include "launch/rank/rank_disk_transport.h"
#include "launch/rank/rank_pool.h"
#include "launch/rank/rank_transport.h"

#include "launch/presets.h"
#include "launch/runtime/attach_planes.h"
#include "launch/runtime/process_planes.h"
#include "launch/runtime/record_files.h"
#include "store/tier/composite/composite_store.h"
#include "store/tier/disk_store.h"
#include "store/tier/local_disk.h"
#include "store/tier/memory_store.h"

namespace strata {

namespace {

constexpr auto kIdleBound = std::chrono::seconds(60);

ShutdownDrain ToShutdownDrain(const DrainOnShutdown& d) {
  switch (d.mode) {
    case DrainMode::kOff: return {};
    case DrainMode::kUntilDone: return {ShutdownDrain::Mode::kUntilDone, {}};
    case DrainMode::kBounded: return {ShutdownDrain::Mode::kBounded, d.write_limit};
  }
  return {};
}

std::string Mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

class SingleProcessStores final : public RuntimeDriver {
 public:
  Status Open(const RankConfig& config, uint64_t seed) {
    config_ = config;
    seed_ = seed;
    const uint32_t ranks = config.cluster.single_process ? config.cluster.world_size : 1;
    STRATA_ASSIGN_OR_RETURN(geometry_, PresetGeometry(config.runtime.preset, ranks,
                                                      config.runtime.pages, config.runtime.rows));
    STRATA_ASSIGN_OR_RETURN(planes_, ProcessPlanes::Open(geometry_, config.runtime.gpus,
                                                         TransferThreads(config.runtime)));
    if (config.attach.socket) {
      STRATA_ASSIGN_OR_RETURN(attached_, AttachPlanes::Open(geometry_, config.runtime.gpus,
                                                            TransferThreads(config.runtime)));
    }
    STRATA_RETURN_IF_ERROR(OpenStore());
    summary_ += ", " + std::to_string(ranks) + " rank(s) in this process, " + planes_->Describe();
    runtimes_.push_back(std::make_unique<SyntheticRuntime>(planes_->planes(), store_,
                                                           SyntheticRuntimeOptions{.seed = seed}));
    return Status::Ok();
  }

  HostStore* store() override { return store_; }
  SyntheticRuntime& runtime() override { return *runtimes_.back(); }
  std::string Summary() const override { return summary_; }
  TransportDecision Transport() const override { return transport_; }
  bool has_memory_and_disk() const override { return composite_ != nullptr; }
  std::vector<MetricFamily> ExtraMetrics() const override {
    if (pool_) return PoolClientMetrics(pool_->store().pool_stats());
    if (store_ == nullptr) return {};
    return {UnpooledEndOfChainDrops(store_->Stats(), local_ != nullptr)};
  }
  PlaneImporter* attach_planes() override { return attached_ ? &attached_->importer() : nullptr; }

  Qualification MakeQualification() override {
    RecordListings listings = [this]() -> Result<std::vector<std::vector<std::string>>> {
      if (!local_) return std::vector<std::vector<std::string>>{{}};
      STRATA_ASSIGN_OR_RETURN(auto files, ListRecordFiles(local_->path()));
      return std::vector<std::vector<std::string>>{files};
    };
    WaitIdle idle = [this] {
      if (composite_) return composite_->WaitIdle(NowMs(), kIdleBound);
      return disk_ == nullptr || disk_->WaitIdle(kIdleBound);
    };
    return Qualification(runtime(), listings, idle);
  }

  // Phases 1-2 must have written records under memory pressure (the memory
  // tier smaller than the working set). With drain_on_shutdown "on": closes
  // the composite (every memory-only
  // record is written), reopens it on the same directory with empty memory,
  // then replays the conversations twice through a fresh runtime: the first
  // replay must read every hit through from disk into memory, the second
  // (a fresh runtime again: nothing on its GPU) must hit memory without
  // reading the disk.
  PhaseReport CompositePhase() override {
    PhaseReport r;
    r.name = "composite: drain to disk, read-through, memory hit";
    auto fail = [&r](std::string why) {
      r.ok = false;
      r.detail = std::move(why);
      return r;
    };
    if (config_.prefix_cache.drain_on_shutdown.mode != DrainMode::kUntilDone) {
      return fail(
          "needs prefix_cache.drain_on_shutdown = \"on\" (it writes every memory-only "
          "record before the store closes)");
    }
    const StoreStats before_close = store_->Stats();
    if (before_close.disk.stored_total == 0) {
      return fail(
          "no record was written under memory pressure: give prefix_cache.memory less "
          "than the qualification's working set");
    }
    if (Status s = Close(); !s.ok()) return fail("closing with drain: " + s.ToString());
    if (Status s = OpenStore(); !s.ok()) return fail("reopening: " + s.ToString());
    PhaseReport read_through = Replay();
    const StoreStats after_read = store_->Stats();
    if (!read_through.ok) return fail("read-through: " + read_through.detail);
    if (after_read.disk.bytes_out_total == 0 || after_read.memory.records == 0) {
      return fail("hits were not read through disk into memory");
    }
    PhaseReport memory_hit = Replay();
    const StoreStats after_hit = store_->Stats();
    if (!memory_hit.ok) return fail("memory hit: " + memory_hit.detail);
    if (after_hit.disk.bytes_out_total != after_read.disk.bytes_out_total ||
        after_hit.memory.bytes_out_total == after_read.memory.bytes_out_total) {
      return fail("the second replay read the disk instead of memory");
    }
    r.ok = true;
    r.host_hits = read_through.host_hits + memory_hit.host_hits;
    r.restored_bytes = read_through.restored_bytes + memory_hit.restored_bytes;
    r.records = memory_hit.records;
    r.detail = std::to_string(before_close.disk.stored_total) +
               " records written under memory pressure, " + std::to_string(r.records) +
               " on disk after the drain; " + std::to_string(read_through.host_hits) +
               " read through into memory, then " + std::to_string(memory_hit.host_hits) +
               " memory hits, every byte checked";
    return r;
  }

  Status Close() override {
    if (store_ == nullptr) return Status::Ok();
    Status s = store_->Close();
    if (!s.ok()) {
      // Copies may still run: keep everything they could touch alive.
      (void)memory_.release();
      (void)pool_.release();
      (void)disk_.release();
      (void)composite_.release();
      (void)local_.release();
      (void)planes_.release();
      (void)attached_.release();
      return s;
    }
    pool_.reset();  // unhooks the chain's eviction sink first
    memory_.reset();
    disk_.reset();
    composite_.reset();
    local_.reset();
    store_ = nullptr;
    return Status::Ok();
  }

 private:
  // The qualification's conversations replayed by a fresh runtime (same
  // seed, empty GPU cache) over the current store.
  PhaseReport Replay() {
    runtimes_.push_back(std::make_unique<SyntheticRuntime>(planes_->planes(), store_,
                                                           SyntheticRuntimeOptions{.seed = seed_}));
    return MakeQualification().RestoreAfterRestart();
  }

  uint64_t NowMs() const {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::steady_clock::now() - start_)
                                     .count());
  }

  // Transfers over the attached runtime's planes with attach.socket, over
  // the synthetic runtime's otherwise.
  Result<std::unique_ptr<Transfers>> MakeTransfers() {
    if (attached_) return attached_->MakeTransfers();
    return planes_->MakeTransfers();
  }

  // The disk transport for this host's probe. A runtime attached to this
  // one process gets the staged transport: its direct side would need the
  // attached planes behind an attach gate, which only ranks in separate
  // processes run (multi_process_stores.cc); "direct" asked for fails.
  Result<RankTransportChoice> ChooseTransport() const {
    if (!attached_ || config_.prefix_cache.transport == TransportChoice::kStaged) {
      return ChooseRankTransport(config_, local_->path());
    }
    const std::string why =
        "the direct transport runs over an attached runtime's planes only with ranks in "
        "separate processes (cluster.single_process = false)";
    if (config_.prefix_cache.transport == TransportChoice::kDirect) {
      return Status::FailedPrecondition("transport = \"direct\" refused: " + why);
    }
    return RankTransportChoice{
        .decision = {.kind = TransportKind::kStaged, .reason = "direct refused: " + why},
        .library = nullptr};
  }

  Status OpenStore() {
    const PrefixCacheConfig& pc = config_.prefix_cache;
    const bool disk = pc.disk_dir.has_value() && pc.disk_limit_bytes.value_or(1) > 0;
    const uint64_t slot_bytes = RecordLayout(geometry_).page_record_bytes();
    const uint64_t warm = pc.memory_bytes / slot_bytes;
    if (pc.memory_bytes > 0 && warm == 0) {
      return Status::InvalidArgument("prefix_cache.memory is smaller than one page record (" +
                                     std::to_string(slot_bytes) + " bytes)");
    }
    const uint64_t max_age_ms = pc.max_age ? static_cast<uint64_t>(pc.max_age->count()) : 0;
    if (!disk && warm > 0) {
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<SlabPool> pool,
                              SlabPool::Create(slot_bytes, warm, 0, planes_->registrar()));
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> t, MakeTransfers());
      memory_ =
          std::make_unique<MemoryStore>(geometry_, std::shared_ptr<SlabPool>(std::move(pool)),
                                        std::move(t), MemoryStoreOptions{.max_age_ms = max_age_ms});
      summary_ = "memory store, " + Mib(pc.memory_bytes) + " (" + std::to_string(warm) + " slots)";
      store_ = memory_.get();
      return AttachPool(memory_.get());
    }
    if (!disk) {
      summary_ = "prefix cache disabled (no memory, no disk)";
      return AttachPool(std::monostate{});
    }
    const uint64_t limit = *pc.disk_limit_bytes;  // resolved by OpenRankStores
    LocalDiskOptions o;
    o.base_dir = *pc.disk_dir;
    o.durability = pc.durability;
    o.disk_thread.idle_spin = IdleSpin(pc);
    o.warm_slots = warm;
    o.registrar = planes_->registrar();
    STRATA_ASSIGN_OR_RETURN(
        local_,
        LocalDisk::Open(geometry_,
                        ComputeNamespaceIdentity(RankModelIdentity(config_), StateMode::kOrdinary),
                        ComputeLayoutFingerprint(geometry_), o));
    STRATA_ASSIGN_OR_RETURN(RankTransportChoice chosen, ChooseTransport());
    transport_ = chosen.decision;
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> t, MakeTransfers());
    STRATA_ASSIGN_OR_RETURN(
        std::unique_ptr<DiskTransport> staged,
        // Direct only without an attached runtime (ChooseTransport), so the
        // direct side's planes are this process's own (planes_).
        OpenRankDiskTransport(
            transport_, *local_, planes_->planes(), std::move(t),
            CuFileSeams(std::move(chosen.library), CuFileIoModeFor(transport_.kind))));
    const std::string scanned = std::to_string(local_->scan().records.size()) +
                                " records scanned, " + TransportSummary(transport_);
    if (warm > 0) {
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> memory, MakeTransfers());
      CompositeStoreOptions co;
      co.disk_limit_bytes = limit;
      co.max_age_ms = max_age_ms;
      co.drain = ToShutdownDrain(pc.drain_on_shutdown);
      co.latencies = latencies_;
      co.free_bytes = [disk = local_.get()] { return disk->FreeBytes(); };
      // Restores of chains on disk go straight into the GPU (seed 2.6).
      co.direct = transport_.kind != TransportKind::kStaged;
      STRATA_ASSIGN_OR_RETURN(composite_,
                              CompositeStore::Open(geometry_, local_->pool(), std::move(memory),
                                                   std::move(staged), local_->scan().records, co));
      summary_ = "composite store: memory " + Mib(pc.memory_bytes) + " (" + std::to_string(warm) +
                 " slots), disk at " + local_->path() + ", limit " + Mib(limit) + ", " + scanned +
                 ", drain_on_shutdown " + DrainOnShutdownText(pc.drain_on_shutdown);
      store_ = composite_.get();
      return AttachPool(composite_.get());
    }
    STRATA_ASSIGN_OR_RETURN(
        disk_,
        DiskStore::Open(geometry_, std::move(staged), local_->scan().records,
                        {.disk_limit_bytes = limit,
                         .max_age_ms = max_age_ms,
                         .latencies = latencies_,
                         .free_bytes = [disk = local_.get()] { return disk->FreeBytes(); }}));
    summary_ = "disk store at " + local_->path() + ", limit " + Mib(limit) + ", " + scanned;
    store_ = disk_.get();
    return AttachPool(disk_.get());
  }

  // The arena's registration with GPU planes: their registrar, and the host's
  // and GPUs' memory read just before registering (pool_budget.h).
  RankPoolRegistration PoolRegistration() const {
    ProcessPlanes* planes = planes_.get();
    return {.registrar = planes->registrar(),
            .supply =
                [planes] { return RankBudgetSupply(ReadHostMemory(), planes->DeviceFreeBytes()); },
            .gpu_uuids = planes->DeviceUuids()};
  }

  // With prefix_cache.pool: the pool joins the local chain (rank_pool.h).
  Status AttachPool(pool::LocalChain chain) {
    if (!config_.prefix_cache.pool) return Status::Ok();
    STRATA_ASSIGN_OR_RETURN(pool_, AttachRankPool(
                                       config_, geometry_, chain,
                                       [this] { return MakeTransfers(); }, PoolRegistration()));
    if (store_ == nullptr) {
      summary_ = "pool only (stores and claims land in " + Mib(pool::kPoolLandingBytes) +
                 "; stored records go to the pool)";
    }
    summary_ += ", pool at " + *config_.prefix_cache.pool +
                (pool_->store().link().sharing() ? "" : " (not attached)");
    store_ = &pool_->store();
    return Status::Ok();
  }

  RankConfig config_;
  uint64_t seed_ = 1;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  CacheGeometry geometry_;
  std::unique_ptr<ProcessPlanes> planes_;
  std::unique_ptr<AttachPlanes> attached_;  // with attach.socket only
  std::unique_ptr<LocalDisk> local_;
  std::unique_ptr<MemoryStore> memory_;
  std::unique_ptr<pool::InstancePool> pool_;  // with prefix_cache.pool
  std::unique_ptr<DiskStore> disk_;
  std::unique_ptr<CompositeStore> composite_;
  HostStore* store_ = nullptr;
  // The newest is the one in use; earlier ones (before a reopen) stay alive
  // for references taken to them.
  std::vector<std::unique_ptr<SyntheticRuntime>> runtimes_;
  std::string summary_;
  TransportDecision transport_{.kind = TransportKind::kStaged, .reason = "configured"};
};

}  // namespace

Result<std::unique_ptr<RuntimeDriver>> OpenSingleProcessStores(const RankConfig& config,
                                                               uint64_t seed) {
  auto s = std::make_unique<SingleProcessStores>();
  STRATA_RETURN_IF_ERROR(s->Open(config, seed));
  return std::unique_ptr<RuntimeDriver>(std::move(s));
}

}  // namespace strata
