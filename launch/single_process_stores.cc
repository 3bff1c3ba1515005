// RankStores for one process holding every rank (world size 1, or
// --single-process): memory, disk or both tiers on this host.
#include <filesystem>

#include "launch/presets.h"
#include "launch/rank_stores.h"
#include "launch/runtime_service.h"
#include "store/disk_store.h"
#include "store/host_planes.h"
#include "store/local_disk.h"
#include "store/memory_store.h"

namespace strata {

namespace {

constexpr auto kIdleBound = std::chrono::seconds(60);

class SingleProcessStores final : public RankStores {
 public:
  Status Open(const RankConfig& config, uint64_t seed) {
    config_ = config;
    const uint32_t ranks = config.cluster.single_process ? config.cluster.world_size : 1;
    STRATA_ASSIGN_OR_RETURN(geometry_, PresetGeometry(config.runtime.preset, ranks,
                                                      config.runtime.pages, config.runtime.rows));
    planes_ = std::make_unique<HostPlanes>(geometry_);
    const NamespaceIdentity identity =
        ComputeNamespaceIdentity("synthetic/" + config.runtime.preset, StateMode::kOrdinary);
    const LayoutFingerprint fingerprint = ComputeLayoutFingerprint(geometry_);
    const PrefixCacheConfig& pc = config.prefix_cache;
    const bool disk = pc.disk_dir.has_value() && pc.disk_limit_bytes.value_or(1) > 0;
    const uint64_t max_age_ms = pc.max_age ? static_cast<uint64_t>(pc.max_age->count()) : 0;
    const uint64_t slot_bytes = RecordLayout(geometry_).page_record_bytes();
    if (pc.memory_bytes > 0 && disk) {
      return Status::FailedPrecondition(
          "prefix_cache.memory with prefix_cache.disk needs the composite store, which this build "
          "does not have yet; set one of them");
    }
    if (pc.memory_bytes > 0) {
      const uint64_t warm = pc.memory_bytes / slot_bytes;
      if (warm == 0) {
        return Status::InvalidArgument("prefix_cache.memory is smaller than one page record (" +
                                       std::to_string(slot_bytes) + " bytes)");
      }
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<SlabPool> pool,
                              SlabPool::Create(slot_bytes, warm, 0));
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> t, MakeHostTransfers(*planes_));
      memory_ =
          std::make_unique<MemoryStore>(geometry_, std::shared_ptr<SlabPool>(std::move(pool)),
                                        std::move(t), MemoryStoreOptions{.max_age_ms = max_age_ms});
      summary_ = "memory store, " + std::to_string(pc.memory_bytes >> 20) + " MiB (" +
                 std::to_string(warm) + " slots)";
      store_ = memory_.get();
    } else if (disk) {
      LocalDiskOptions o;
      o.base_dir = *pc.disk_dir;
      STRATA_ASSIGN_OR_RETURN(local_, LocalDisk::Open(geometry_, identity, fingerprint, o));
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> t, MakeHostTransfers(*planes_));
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<StagedTransport> staged,
                              local_->MakeTransport(std::move(t)));
      const uint64_t limit = pc.disk_limit_bytes.value_or(uint64_t{4} << 30);
      STRATA_ASSIGN_OR_RETURN(
          disk_, DiskStore::Open(geometry_, std::move(staged), local_->scan().records,
                                 {.disk_limit_bytes = limit, .max_age_ms = max_age_ms}));
      summary_ = "disk store at " + local_->path() + ", limit " + std::to_string(limit >> 20) +
                 " MiB, " + std::to_string(local_->scan().records.size()) + " records scanned";
      store_ = disk_.get();
    } else {
      summary_ = "prefix cache disabled (no memory, no disk)";
    }
    summary_ += ", " + std::to_string(ranks) + " rank(s) in this process";
    runtime_ =
        std::make_unique<SyntheticRuntime>(*planes_, store_, SyntheticRuntimeOptions{.seed = seed});
    return Status::Ok();
  }

  HostStore* store() override { return store_; }
  bool drives_runtime() const override { return true; }
  SyntheticRuntime& runtime() override { return *runtime_; }
  std::string Summary() const override { return summary_; }

  Qualification MakeQualification() override {
    RecordListings listings = [this]() -> Result<std::vector<std::vector<std::string>>> {
      if (!local_) return std::vector<std::vector<std::string>>{{}};
      STRATA_ASSIGN_OR_RETURN(auto files, ListRecordFiles(local_->path()));
      return std::vector<std::vector<std::string>>{files};
    };
    WaitIdle idle = [this] { return disk_ == nullptr || disk_->WaitIdle(kIdleBound); };
    return Qualification(*runtime_, listings, idle);
  }

  Status Close() override {
    if (store_ == nullptr) return Status::Ok();
    Status s = store_->Close();
    if (!s.ok()) {
      // Copies may still run: keep everything they could touch alive.
      (void)memory_.release();
      (void)disk_.release();
      (void)local_.release();
      (void)planes_.release();
      return s;
    }
    memory_.reset();
    disk_.reset();
    local_.reset();
    store_ = nullptr;
    return Status::Ok();
  }

 private:
  RankConfig config_;
  CacheGeometry geometry_;
  std::unique_ptr<HostPlanes> planes_;
  std::unique_ptr<LocalDisk> local_;
  std::unique_ptr<MemoryStore> memory_;
  std::unique_ptr<DiskStore> disk_;
  HostStore* store_ = nullptr;
  std::unique_ptr<SyntheticRuntime> runtime_;
  std::string summary_;
};

}  // namespace

PhaseReport RankStores::CompositePhase() {
  PhaseReport r;
  r.name = "memory hit, composite spill and read-through";
  r.detail = "needs memory and disk tiers in one process";
  return r;
}

Result<std::unique_ptr<RankStores>> OpenSingleProcessStores(const RankConfig& config,
                                                            uint64_t seed) {
  auto s = std::make_unique<SingleProcessStores>();
  STRATA_RETURN_IF_ERROR(s->Open(config, seed));
  return std::unique_ptr<RankStores>(std::move(s));
}

Result<std::unique_ptr<RankStores>> OpenRankStores(const RankConfig& config, uint64_t seed) {
  if (config.cluster.world_size == 1 || config.cluster.single_process) {
    return OpenSingleProcessStores(config, seed);
  }
  return Status::FailedPrecondition(
      "ranks in separate processes need the coordinator and rank agent, which this build does "
      "not have yet");
}

}  // namespace strata
