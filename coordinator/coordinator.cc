#include "coordinator/coordinator.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "store/record/fingerprint.h"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;

Status CheckOptions(const CoordinatorOptions& o) {
  if (o.world_size == 0 || o.world_size > wire::kWorldSizeMax) {
    return Status::InvalidArgument("world size " + std::to_string(o.world_size) +
                                   " is outside 1.." + std::to_string(wire::kWorldSizeMax));
  }
  if (o.geometry.rank_count() != 1) {
    return Status::InvalidArgument("rank zero's geometry holds its own rank only, not " +
                                   std::to_string(o.geometry.rank_count()) + " ranks");
  }
  if (o.disk_limit_bytes == 0) return Status::InvalidArgument("disk limit is zero");
  return ValidateGeometry(o.geometry);
}

}  // namespace

Result<std::unique_ptr<Coordinator>> Coordinator::Start(CoordinatorOptions options,
                                                        RendezvousServer& rendezvous,
                                                        std::unique_ptr<Transfers> transfers) {
  STRATA_RETURN_IF_ERROR(CheckOptions(options));
  if (transfers == nullptr) return Status::InvalidArgument("no transfers for rank zero's planes");
  std::unique_ptr<Coordinator> c(new Coordinator());
  c->inbox_ = std::make_shared<wire::LinkInbox>(options.inbox_messages_max);
  c->links_ = std::make_unique<AcceptedLinks>(c->inbox_);

  // Rank zero's own record service first: a rank zero that cannot open it
  // fails before any peer joins.
  const LayoutFingerprint fingerprint = ComputeRankLayoutFingerprint(
      options.geometry.ranks[0], options.geometry.page_tokens, 0, options.world_size);
  Result<std::unique_ptr<LocalDisk>> disk =
      LocalDisk::Open(options.geometry, options.identity, fingerprint, options.disk);
  if (!disk.ok()) return disk.status().WithContext("rank 0 cannot open its record directory");
  c->disk_ = std::move(*disk);
  Result<std::unique_ptr<DiskTransport>> local =
      MakeRankTransport(options.make_transport, *c->disk_, std::move(transfers), options.staged);
  if (!local.ok()) return local.status().WithContext("rank 0 cannot open its record transport");

  wire::ListenerOptions listen;
  listen.bind = options.listen;
  listen.link_options = options.link;
  listen.link_options.name = "record link";
  if (options.shared_link_thread) {
    c->link_thread_ =
        std::make_unique<wire::LinkIoThread>("rank 0 record links", options.link.idle_spin);
    listen.link_options.io_thread = c->link_thread_.get();
  }
  listen.links_max = options.links_max;
  Result<std::unique_ptr<wire::Listener>> listener = wire::Listener::Open(
      listen,
      [links = c->links_.get()](std::unique_ptr<wire::Link> link) { links->Add(std::move(link)); });
  if (!listener.ok()) return listener.status().WithContext("rank 0 record listener");
  c->listener_ = std::move(*listener);
  c->listen_endpoint_ = c->listener_->local_endpoint();
  spdlog::info("rank 0 record listener on {}", c->listen_endpoint_.ToString());
  if (options.on_listening) options.on_listening(c->listen_endpoint_);

  STRATA_RETURN_IF_ERROR(c->Join(options, rendezvous, std::move(*local)));
  return c;
}

Status Coordinator::Join(CoordinatorOptions& options, RendezvousServer& rendezvous,
                         std::unique_ptr<DiskTransport> local) {
  const Clock::time_point deadline = Clock::now() + options.join_timeout;
  Result<PeerTable> table =
      rendezvous.AwaitPeers(options.world_size, listen_endpoint_.port, deadline);
  if (!table.ok()) return table.status().WithContext("rank 0 rendezvous");

  RankZeroFacts self;
  self.world_size = options.world_size;
  self.layout_fingerprint = ComputeLayoutFingerprint(options.geometry);
  self.has_disk_store = true;
  JoinSession session(*table, self, options.disk_limit_bytes, *links_, *inbox_,
                      options.scan_records_max);
  Status joined = session.CollectScans(deadline);
  if (joined.ok()) joined = session.Agree(*disk_, options.disk.durability, deadline);
  listener_->Close();
  join_stats_ = session.stats();
  if (!joined.ok()) {
    spdlog::error("rank 0 join failed: {}", joined.ToString());
    session.FailAll(joined);
    return joined.WithContext("rank 0 join");
  }
  std::vector<ShardedPeer> peers = session.TakePeers();
  links_->CloseAll();  // connections that never sent a Hello
  local->Seed(disk_->scan());

  ShardedClock clock = options.clock;
  if (!clock) clock = [] { return Clock::now(); };
  auto sharded = std::make_unique<ShardedTransport>(std::move(local), std::move(peers), inbox_,
                                                    std::move(clock), options.sharded);
  sharded_ = sharded.get();
  DiskStoreOptions store_options = options.store;
  store_options.disk_limit_bytes = join_stats_.disk_limit_bytes;
  // No free-space probe: the full disk may be any rank's (its failed job's
  // message names that rank's filesystem and free bytes), so a write failing
  // for want of space lowers the limit to what the ranks hold (DiskFiles).
  store_options.free_bytes = nullptr;
  Result<std::unique_ptr<DiskStore>> store =
      DiskStore::Open(options.geometry, std::move(sharded), disk_->scan().records, store_options);
  if (!store.ok()) {
    sharded_ = nullptr;
    return store.status().WithContext("rank 0 disk store");
  }
  store_ = std::move(*store);
  spdlog::info("rank 0 store open: {} ranks, {} records, disk limit {} bytes", options.world_size,
               store_->index().size(), join_stats_.disk_limit_bytes);
  return Status::Ok();
}

Coordinator::~Coordinator() {
  if (!closed_ && store_) (void)Close();
}

std::vector<PeerLinkReport> Coordinator::PeerLinks() const {
  return sharded_ == nullptr ? std::vector<PeerLinkReport>{} : sharded_->PeerReports();
}

std::optional<wire::LinkIoStats> Coordinator::SharedLinkThreadStats() const {
  if (!link_thread_) return std::nullopt;
  return link_thread_->stats();
}

Status Coordinator::Close() {
  if (closed_) return close_status_;
  closed_ = true;
  if (!store_) return close_status_;
  const Status closed = store_->Close();
  if (!sharded_->local_close_status().ok()) {
    // Rank zero's copies or disk I/O may still run: keep the directory, its
    // descriptor and the staging alive.
    (void)disk_.release();
    close_status_ = sharded_->local_close_status().WithContext(
        "rank 0 did not drain; keep device memory allocated");
  } else if (!sharded_->stopped().ok()) {
    close_status_ = sharded_->stopped().WithContext("the sharded transport had stopped");
  } else if (!sharded_->peer_drain_status().ok()) {
    close_status_ = sharded_->peer_drain_status();
  } else {
    close_status_ = closed;
  }
  return close_status_;
}

}  // namespace strata
