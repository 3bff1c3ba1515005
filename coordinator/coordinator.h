// Coordinator: rank zero's disk store when a model's ranks run on separate
// hosts (seed 2.14, DESIGN.md "Ranks on separate hosts"). Start opens rank
// zero's own record directory and transport (staged unless
// options.make_transport chooses another), a record listener on a
// wildcard address, runs the rendezvous (each peer learns the nonce and the
// address to dial), checks every peer's Hello, collects scan summaries,
// agrees on the records every rank keeps and has every rank (itself too)
// delete / truncate to it, then builds the one DiskStore that indexes,
// sizes, evicts and plans for all ranks over a ShardedTransport.
//
// Thread: Start blocks its caller through the join. Afterwards store(),
// PeerLinks() and Close() belong to the store's owner thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/join_session.h"
#include "coordinator/peer_link_report.h"
#include "coordinator/rendezvous/rendezvous.h"
#include "coordinator/sharded_transport.h"
#include "store/tier/disk_store.h"
#include "store/tier/local_disk.h"
#include "store/transfer/transfers.h"
#include "wire/endpoint.h"
#include "wire/link/link.h"
#include "wire/link/link_inbox.h"
#include "wire/link/link_io_thread.h"
#include "wire/listener.h"

namespace strata {

struct CoordinatorOptions {
  uint32_t world_size = 0;  // every rank, rank zero included (1 .. wire::kWorldSizeMax)
  // Rank zero's geometry alone (exactly one rank). Every peer's must have
  // the same layout fingerprint.
  CacheGeometry geometry;
  NamespaceIdentity identity{};
  LocalDiskOptions disk;          // base_dir: where rank zero's record directory goes
  uint64_t disk_limit_bytes = 0;  // rank zero's own limit (> 0); the store uses the smallest
  DiskStoreOptions store;         // its disk_limit_bytes is replaced by the agreed limit
  StagedOptions staged;
  // Rank zero's own transport (LocalDisk's DiskTransportFactory), called
  // once during Start; empty: staged.
  DiskTransportFactory make_transport;
  // The record listener: a numeric address peers reach (the rendezvous hands
  // them the address they reached rank zero on); port 0 picks one.
  wire::Endpoint listen{"127.0.0.1", 0};
  wire::LinkOptions link;
  // Every record link on one I/O thread (wire/link/link_io_thread.h, idle
  // spin link.idle_spin) instead of a thread per link: a job's answers from
  // every peer then wake one thread, not one per peer.
  bool shared_link_thread = false;
  size_t links_max = 1024;  // connections the listener accepts over its life
  // Bound on the whole join: rendezvous, Hellos, scans, agreement.
  std::chrono::milliseconds join_timeout{120'000};
  ShardedOptions sharded;
  // Job deadlines are measured with it; steady_clock::now when empty.
  ShardedClock clock;
  // Called once the listener is bound, with its address and chosen port.
  std::function<void(const wire::Endpoint&)> on_listening;
  size_t inbox_messages_max = wire::LinkInbox::kDefaultMessagesMax;
  uint64_t scan_records_max = uint64_t{1} << 24;  // records one peer may summarize
};

class Coordinator {
 public:
  // Everything above, blocking until the store is built or the join fails.
  // `transfers` moves rank zero's own planes. Errors name what failed: rank
  // zero's own directory, the rendezvous, a Hello that fails startup
  // (fingerprint, disk settings, world size, protocol version), the join
  // deadline (naming missing ranks and refused Hellos), a peer that could
  // not apply the agreement. Joined peers are told why with Close.
  static Result<std::unique_ptr<Coordinator>> Start(CoordinatorOptions options,
                                                    RendezvousServer& rendezvous,
                                                    std::unique_ptr<Transfers> transfers);
  // Close() unless closed.
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // The store for every rank: a HostStore whose Poll reports kStopped when
  // the sharded transport stopped (a peer lost, a job timeout).
  DiskStore& store() { return *store_; }
  // The transport under the store, for benchmarks and tools that run record
  // jobs directly: only while the store is idle, on its owner thread, with
  // job ids at or above kDirectJobIdBase (the store's own ids stay below).
  ShardedTransport& transport() { return *sharded_; }
  static constexpr uint64_t kDirectJobIdBase = uint64_t{1} << 62;
  // The record listener's address (its port, when 0 was asked for).
  const wire::Endpoint& listen_endpoint() const { return listen_endpoint_; }
  const JoinStats& join_stats() const { return join_stats_; }
  // Rank zero's own record directory.
  const std::string& record_dir() const { return disk_->path(); }
  // Per-peer link state and error counters, in rank order.
  std::vector<PeerLinkReport> PeerLinks() const;
  // The shared record-link thread's counters (its idle spin, which the
  // links' own LinkStats leave at 0); empty without shared_link_thread.
  std::optional<wire::LinkIoStats> SharedLinkThreadStats() const;
  // Drains the store (accepted jobs finish on every rank), has every peer
  // drain and confirm, sends Close and closes the links, within the store's
  // close_deadline. Errors: rank zero's copies may still run (its staging
  // and directory stay alive: keep device memory allocated), or a peer did
  // not confirm its drain (that peer keeps its own memory).
  Status Close();

 private:
  Coordinator() = default;
  Status Join(CoordinatorOptions& options, RendezvousServer& rendezvous,
              std::unique_ptr<DiskTransport> local);

  // Destruction runs bottom-up: the store (and the peer links inside its
  // transport) first, then the listener, links still in the join, the
  // record directory, the inbox every link feeds, and last the links' shared
  // I/O thread (which every link on it must have left).
  std::unique_ptr<wire::LinkIoThread> link_thread_;
  std::shared_ptr<wire::LinkInbox> inbox_;
  std::unique_ptr<LocalDisk> disk_;
  std::unique_ptr<AcceptedLinks> links_;
  std::unique_ptr<wire::Listener> listener_;
  std::unique_ptr<DiskStore> store_;
  ShardedTransport* sharded_ = nullptr;  // owned by store_
  wire::Endpoint listen_endpoint_;
  JoinStats join_stats_;
  bool closed_ = false;
  Status close_status_;
};

}  // namespace strata
