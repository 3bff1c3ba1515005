#include "coordinator/pool/instance_pool.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <type_traits>

#include "coordinator/pool/lookup_grace.h"
#include "coordinator/pool/pool_socket.h"
#include "store/record/record_layout.h"

namespace strata::pool {

PoolLinkOptions InstanceLinkOptions(const InstancePoolOptions& options,
                                    const CacheGeometry& geometry) {
  PoolLinkOptions o;
  o.client.socket_path = options.socket_path;
  o.client.job_secret = options.job_secret;
  o.client.tls = options.tls;
  o.client.hello = InstanceHello(geometry, options.model_identity, options.sources);
  // A manager on this host: the local grace. Over TCP, unset: each
  // connection takes the network grace of its measured round trip.
  const Result<PoolAddress> address = ParsePoolAddress(options.socket_path);
  o.client.lookup_bound = options.lookup_bound;
  o.client.data_path = options.data_path;
  if (!o.client.lookup_bound && !(address.ok() && address->tcp())) {
    o.client.lookup_bound =
        std::chrono::milliseconds(LookupGraceUs(ManagerPlace::kLocalHost, 0) / 1000);
  }
  if (options.registrar != nullptr && options.supply) {
    o.registration = ArenaRegistration::kRegistered;
    o.registrar = options.registrar;
    o.budget_supply = options.supply;
  }
  return o;
}

std::vector<std::string> InstanceSources(const std::optional<std::string>& configured,
                                         const std::vector<std::string>& gpu_uuids) {
  if (configured) return {*configured};
  if (!gpu_uuids.empty()) return gpu_uuids;
  std::array<char, 256> host{};
  if (::gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  return {std::string(host.data()) + ":" + std::to_string(::getpid())};
}

Result<std::unique_ptr<InstancePool>> InstancePool::Attach(
    const InstancePoolOptions& options, const CacheGeometry& geometry, LocalChain chain,
    const std::function<Result<std::unique_ptr<Transfers>>()>& landing_transfers) {
  const RecordLayout layout(geometry);
  PooledTiers tiers{.record_sizes = {.page_record_bytes = layout.page_record_bytes(),
                                     .row_segment_bytes = layout.row_segment_bytes()}};
  std::unique_ptr<InstancePool> out(new InstancePool(chain));
  DiskStore** disk = std::get_if<DiskStore*>(&chain);
  if (MemoryStore** memory = std::get_if<MemoryStore*>(&chain)) {
    tiers.local = tiers.landing = *memory;
    tiers.intake = *memory;
  } else if (disk != nullptr && (*disk)->files().share_count() > 1) {
    // Ranks in separate processes: no memory tier holds every rank's bytes,
    // so claims land in the disk tier, every rank writing its own share.
    tiers.local = tiers.landing = *disk;
    tiers.intake = *disk;
    tiers.disk_landing = *disk;
    tiers.end_of_chain_tier = "disk";
  } else {
    if (!landing_transfers) {
      return Status::InvalidArgument("the pool's landing tier needs transfers over the planes");
    }
    const uint64_t slot_bytes = layout.page_record_bytes();
    const uint64_t slots = std::max(kPoolLandingBytes / slot_bytes, kPoolLandingSlotsMin);
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<SlabPool> slabs,
                            SlabPool::Create(slot_bytes, slots, 0, options.registrar));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> transfers, landing_transfers());
    out->landing_ = std::make_unique<MemoryStore>(
        geometry, std::shared_ptr<SlabPool>(std::move(slabs)), std::move(transfers));
    tiers.landing = out->landing_.get();
    tiers.intake = out->landing_.get();
    tiers.end_of_chain_tier = "disk";
    if (disk != nullptr) tiers.local = *disk;
    // Pool only: published checkpoints are stored in the landing tier and
    // parked from there for the manager.
    if (std::holds_alternative<std::monostate>(chain)) tiers.publish_from = out->landing_.get();
    if (CompositeStore** composite = std::get_if<CompositeStore*>(&chain)) {
      tiers.local = *composite;
    }
  }
  // Exports copy out of the planes, which one process holds only when its
  // ranks share it (not a disk tier over ranks in separate processes).
  if (landing_transfers && tiers.disk_landing == nullptr) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Transfers> transfers, landing_transfers());
    out->export_copier_ =
        std::make_unique<ExportCopier>(std::move(transfers), geometry, options.registrar);
    tiers.export_copier = out->export_copier_.get();
  }
  out->store_ = std::make_unique<PooledStore>(
      std::move(tiers), PoolLink::AttachAtStartup(InstanceLinkOptions(options, geometry)));
  out->SetSink(out->store_.get());
  return out;
}

InstancePool::~InstancePool() {
  SetSink(nullptr);
  store_.reset();
  landing_.reset();
  export_copier_.reset();
}

void InstancePool::SetSink(EvictionSink* sink) {
  std::visit(
      [sink](auto tier) {
        if constexpr (std::is_pointer_v<decltype(tier)>) {
          if (tier != nullptr) tier->SetEvictionSink(sink);
        }
      },
      chain_);
}

}  // namespace strata::pool
