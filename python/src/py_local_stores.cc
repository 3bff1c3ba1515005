// The single-process stores over a Python runtime's planes: memory, disk and
// both (CompositeStore), built the way launch/rank/single_process_stores.cc
// builds them for `strata rank`.
#include <pybind11/pybind11.h>

#include "coordinator/pool/instance_pool.h"
#include "coordinator/pool/pool_data_path.h"
#include "coordinator/pool/pool_socket.h"
#include "coordinator/rendezvous/job_secret.h"
#include "python/src/py_local_stores.h"
#include "python/src/py_status.h"
#include "store/record/fingerprint.h"
#include "store/record/record_layout.h"
#include "store/tier/composite/composite_store.h"
#include "store/tier/disk_store.h"
#include "store/tier/local_disk.h"
#include "store/tier/memory_store.h"

namespace strata::python {

namespace py = pybind11;

namespace {

// Owns planes, directory and store; members are destroyed store first.
class LocalStores final : public StoreOwner {
 public:
  explicit LocalStores(std::unique_ptr<RuntimePlanes> planes) : planes_(std::move(planes)) {}
  ~LocalStores() override {
    // Close() ran (the handle calls it); what is left is safe to free, the
    // pool first (it unhooks the chain's eviction sink).
    pool_.reset();
    store_.reset();
    local_.reset();
  }

  Status Open(const LocalStoreOptions& o) {
    const CacheGeometry& g = planes_->geometry();
    const uint64_t slot_bytes = RecordLayout(g).page_record_bytes();
    const uint64_t warm = o.memory_bytes / slot_bytes;
    if (o.memory_bytes > 0 && warm == 0) {
      return Status::InvalidArgument("memory_bytes is smaller than one page record (" +
                                     std::to_string(slot_bytes) + " bytes)");
    }
    STRATA_RETURN_IF_ERROR(OpenLocal(o, warm));
    if (!o.pool) return Status::Ok();
    STRATA_ASSIGN_OR_RETURN(const pool::PoolAddress address, pool::ParsePoolAddress(*o.pool));
    const std::optional<pool::PoolDataPath> data_path = pool::ParsePoolDataPath(o.pool_data);
    if (!data_path) {
      return Status::InvalidArgument("pool_data: \"" + o.pool_data +
                                     "\" is not \"auto\", \"arena\" or \"tcp\"");
    }
    std::optional<JobSecret> secret;  // over TCP: STRATA_JOB_SECRET
    if (address.tcp()) {
      STRATA_ASSIGN_OR_RETURN(JobSecret read, ReadJobSecret(std::nullopt));
      secret = std::move(read);
    }
    const pool::InstancePoolOptions po{
        .socket_path = *o.pool,
        .job_secret = std::move(secret),
        .tls = nullptr,  // TLS to a pool is configured in strata rank only
        .sources = pool::InstanceSources(o.pool_instance, {}),
        .model_identity = ComputeNamespaceIdentity(o.model_identity, StateMode::kOrdinary),
        // Slabs registered with device planes; the arena only mapped (no
        // budget supply here: claims copy through the landing tier).
        .registrar = planes_->registrar(),
        .supply = {},
        .lookup_bound = std::nullopt,
        .data_path = *data_path};
    STRATA_ASSIGN_OR_RETURN(pool_, pool::InstancePool::Attach(
                                       po, g, chain_, [this] { return planes_->MakeTransfers(); }));
    return Status::Ok();
  }

  // The local chain (none: pool only).
  Status OpenLocal(const LocalStoreOptions& o, uint64_t warm) {
    const CacheGeometry& g = planes_->geometry();
    const uint64_t slot_bytes = RecordLayout(g).page_record_bytes();
    if (!o.directory) {
      if (warm == 0) {
        if (o.pool) return Status::Ok();  // pool only
        return Status::InvalidArgument("a store needs memory_bytes, a directory or a pool");
      }
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<SlabPool> pool,
                              SlabPool::Create(slot_bytes, warm, 0, planes_->registrar()));
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> t, planes_->MakeTransfers());
      auto memory = std::make_unique<MemoryStore>(g, std::shared_ptr<SlabPool>(std::move(pool)),
                                                  std::move(t));
      chain_ = memory.get();
      store_ = std::move(memory);
      return Status::Ok();
    }
    if (o.disk_bytes == 0)
      return Status::InvalidArgument("disk_bytes must be nonzero with a directory");
    LocalDiskOptions lo;
    lo.base_dir = *o.directory;
    lo.durability = o.durability;
    lo.warm_slots = warm;
    lo.registrar = planes_->registrar();
    STRATA_ASSIGN_OR_RETURN(
        local_, LocalDisk::Open(g, ComputeNamespaceIdentity(o.model_identity, StateMode::kOrdinary),
                                ComputeLayoutFingerprint(g), lo));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> t, planes_->MakeTransfers());
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<StagedTransport> staged,
                            local_->MakeTransport(std::move(t)));
    auto free_bytes = [disk = local_.get()] { return disk->FreeBytes(); };
    if (warm > 0) {
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> memory, planes_->MakeTransfers());
      CompositeStoreOptions co;
      co.disk_limit_bytes = o.disk_bytes;
      co.drain =
          o.drain_on_close ? ShutdownDrain{ShutdownDrain::Mode::kUntilDone, {}} : ShutdownDrain{};
      co.free_bytes = free_bytes;
      STRATA_ASSIGN_OR_RETURN(std::unique_ptr<CompositeStore> composite,
                              CompositeStore::Open(g, local_->pool(), std::move(memory),
                                                   std::move(staged), local_->scan().records, co));
      chain_ = composite.get();
      store_ = std::move(composite);
      return Status::Ok();
    }
    STRATA_ASSIGN_OR_RETURN(
        std::unique_ptr<DiskStore> disk,
        DiskStore::Open(g, std::move(staged), local_->scan().records,
                        {.disk_limit_bytes = o.disk_bytes, .free_bytes = free_bytes}));
    chain_ = disk.get();
    store_ = std::move(disk);
    return Status::Ok();
  }

  HostStore& store() override { return pool_ ? pool_->store() : *store_; }
  Status Close() override {
    // A pooled store closes its local tiers too.
    Status s = store().Close();
    if (!s.ok()) {
      // Copies may still run: keep what they could touch.
      (void)pool_.release();
      (void)store_.release();
      (void)local_.release();
      (void)planes_.release();
    }
    return s;
  }
  std::string record_dir() const override { return local_ ? local_->path() : ""; }
  std::optional<pool::PoolInstanceStats> pool_stats() const override {
    if (!pool_) return std::nullopt;
    return pool_->store().pool_stats();
  }

 private:
  std::unique_ptr<RuntimePlanes> planes_;
  std::unique_ptr<LocalDisk> local_;
  std::unique_ptr<HostStore> store_;  // the local chain; null: pool only
  pool::LocalChain chain_;            // the same, typed
  std::unique_ptr<pool::InstancePool> pool_;
};

}  // namespace

Result<std::unique_ptr<StoreOwner>> OpenLocalStore(std::unique_ptr<RuntimePlanes> planes,
                                                   const LocalStoreOptions& options) {
  planes->set_transfer_threads(options.threads);
  auto owner = std::make_unique<LocalStores>(std::move(planes));
  STRATA_RETURN_IF_ERROR(owner->Open(options));
  return std::unique_ptr<StoreOwner>(std::move(owner));
}

}  // namespace strata::python
