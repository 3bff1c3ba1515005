// ShardedTransport (seed 2.14): rank zero's DiskTransport when ranks run on
// separate hosts. Each job runs on rank zero's own transport (its
// StagedTransport) and is sent, unchanged (same file, page ids, state slot),
// to every peer over its record link; it completes only when every rank
// finished it (coordinator/completion_tracker.h): a fetch once every rank's
// planes hold the bytes, a store once every rank copied out and wrote.
//
// Failures:
//   - a store that failed on some ranks is unlinked from the ranks that
//     wrote it before the failure is reported; a failed cleanup is reported
//     with that failure;
//   - a peer whose send queue is full fails the job on that rank (Submit
//     never blocks);
//   - a lost link, a protocol error, or a job not finished by every rank
//     within job_timeout stops the transport: stopped() says why, no
//     completion is reported from then on (the job's device ids may still be
//     written by a peer and must never be reused), and Submit refuses.
//
// Thread: the owner's (the disk store's). Link I/O threads only feed the
// inbox and ask the completion gate whether to wake the owner.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "coordinator/completion_gate.h"
#include "coordinator/completion_tracker.h"
#include "coordinator/peer_link_report.h"
#include "rank_agent/host_data.h"
#include "store/base/idle_spin.h"
#include "store/base/mutex.h"
#include "store/tier/disk_transport.h"
#include "wire/link/link.h"
#include "wire/link/link_inbox.h"

namespace strata {

// Host-data bytes (one rank's shares) of the jobs in flight, at most, and
// the largest share one job moves. The chunks are paced on the links
// (kPacedQueueBytes queued at most), so this bounds the memory a peer holds
// for stores whose Job has not run (kHostDataPendingBytesMax, twice this)
// and for fetch answers on their way, not a link's send queue.
inline constexpr uint64_t kHostDataInFlightBytesMax = uint64_t{512} << 20;
// Host-data jobs in flight, at most: each takes at least two frames of a
// link's send queue (chunks and the Job, or chunks and the answer), whose
// frame bound is 1024.
inline constexpr size_t kHostDataJobsInFlightMax = 256;

struct ShardedOptions {
  // A job not finished by every rank this long after Submit stops the
  // transport.
  std::chrono::milliseconds job_timeout{60'000};
  // Jobs accepted and not yet finished by every rank; Submit says kBusy
  // beyond.
  uint32_t max_outstanding_jobs = 1024;
  // How long WaitForCompletion checks for a completion without sleeping
  // before it sleeps (store/base/idle_spin.h): the peers' answers to a
  // control job come within tens of microseconds.
  std::chrono::microseconds idle_spin = DefaultIdleSpin();
};

// The time job deadlines are measured in; steady_clock::now in production, a
// test's own clock otherwise. Called on the owner thread.
using ShardedClock = std::function<std::chrono::steady_clock::time_point()>;

// A peer rank's record link, started with `inbox` handlers under `tag`: a
// wire::Link in production.
struct ShardedPeer {
  RankId rank;
  uint64_t tag = 0;
  std::unique_ptr<wire::MessageChannel> link;
};

class ShardedTransport final : public DiskTransport {
 public:
  // `local` runs rank zero's share; `peers` are ranks 1 .. N-1, each once;
  // `inbox` receives their links' events.
  ShardedTransport(std::unique_ptr<DiskTransport> local, std::vector<ShardedPeer> peers,
                   std::shared_ptr<wire::LinkInbox> inbox, ShardedClock clock,
                   ShardedOptions options = {});
  // Close(job_timeout) unless closed.
  ~ShardedTransport() override;
  ShardedTransport(const ShardedTransport&) = delete;
  ShardedTransport& operator=(const ShardedTransport&) = delete;

  Status Submit(RecordJob job) override;
  // A host-data job (RecordJob::host_data) on every rank: rank zero's share
  // through its own transport's SubmitHost; a store sends each peer its
  // share as JobData before the Job; a fetch takes each peer's JobData into
  // its share, and a peer that answers OK without every byte, or sends bytes
  // nobody awaits, stops the transport (a protocol error). Every share must
  // be the same size (every rank has the same layout). kBusy while
  // kHostDataInFlightBytesMax would be passed; kInvalidArgument for a share
  // above it. With no peers, a job without host data is SubmitHost.
  Status SubmitShares(const RecordJob& job, std::span<const HostBuffers> shares) override;
  uint32_t share_count() const override { return world_size(); }
  uint64_t share_bytes_max() const override { return kHostDataInFlightBytesMax; }
  // As rank zero's own transport (every rank runs the same kind where its
  // probe agrees; a rank that stages needs no room in rank zero's pool).
  bool device_jobs_stage() const override { return local_->device_jobs_stage(); }
  void Poll(std::vector<RecordJobDone>& out) override;
  // Sleeps on one signal that rank zero's transport and every peer's link
  // raise, so whichever finishes last wakes it at once.
  // A peer's JobDone raises it only when it is the last answer its job
  // awaits from the peers (coordinator/completion_gate.h): one wake-up per
  // job for all the peers, plus rank zero's own completion when that comes
  // first.
  bool WaitForCompletion(std::chrono::milliseconds timeout) override;
  void NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) override;
  Status stopped() const override { return stopped_; }
  // Finishes accepted jobs (unless stopped), sends Drain to every peer and
  // waits for their Drained, sends Close and closes the links, then closes
  // rank zero's transport, all within `deadline`. Returns the local close:
  // an error means rank zero's copies may still run. Peers that did not
  // confirm their drain are in peer_drain_status().
  Status Close(std::chrono::milliseconds deadline) override;

  // OK when every peer confirmed its drain at Close; otherwise the first
  // that did not (that peer keeps its own memory alive).
  const Status& peer_drain_status() const { return peer_drain_status_; }
  // What Close returned (rank zero's own transport); OK before Close.
  const Status& local_close_status() const { return close_status_; }
  // One entry per peer, in rank order. Owner thread.
  std::vector<PeerLinkReport> PeerReports() const;
  uint32_t world_size() const { return static_cast<uint32_t>(peers_.size()) + 1; }

 private:
  // A Job for one peer, and the share to send before it.
  struct Outgoing {
    JobId id;
    std::optional<ShareCursor> share;
    wire::Message job;
  };
  struct Peer {
    RankId rank;
    std::unique_ptr<wire::MessageChannel> link;
    bool closed = false;  // its link closed
    bool failed = false;  // lost, protocol error, timeout, or no drain
    std::optional<Status> drained;
    std::map<std::string, uint64_t> errors;
    uint64_t jobs_sent = 0;
    uint64_t jobs_done = 0;
    uint64_t jobs_failed = 0;
    // What is yet to be sent to it, in order: a job, after its share's
    // chunks for a host-data store (paced: the rest goes once the link
    // drained). Empty unless a share is on its way.
    std::deque<Outgoing> outgoing;
    bool sending = false;  // SendOutgoing runs (a failure it handles may queue more)
  };
  // A job as rank zero accepted it (for cleanup and messages).
  struct JobInfo {
    RecordJobKind kind = RecordJobKind::kStore;
    PrefixKey key;
  };
  // A store that failed on some ranks, waiting for its cleanup unlink.
  struct Cleanup {
    JobCompletion failure;
  };

  void Pump();
  // What Submit and SubmitShares check before anything starts.
  Status Admit(const RecordJob& job) const;
  // Begins tracking an accepted job, then sends it to the peers.
  void Begin(const RecordJob& job, std::span<const HostBuffers> shares);
  // Registers the peers' answers with the gate, then sends; with `shares`
  // (a host-data store), each peer's share as JobData before the Job.
  void SendToPeers(const RecordJob& job, const std::vector<RankId>& ranks,
                   std::span<const HostBuffers> shares = {});
  // Sends what `peer.outgoing` holds, in order, until a share waits for the
  // link to drain. A refused send fails the job on that rank (kBusy) or
  // stops the transport.
  void SendOutgoing(Peer& peer);
  void OnSendRefused(Peer& peer, JobId id, const Status& sent);
  // A peer's JobData or JobDone of a host-data fetch; false when it broke
  // the protocol (the transport stopped).
  bool TakeJobData(Peer& peer, const wire::JobData& data);
  bool CheckFetchDone(Peer& peer, const wire::JobDone& done);
  // (Re)installs the inbox's notification of signal_ through the gate.
  void WatchInbox();
  void HandleOutcome(JobId id, RankOutcome outcome);
  // Logs a rank's fetch that failed its checksums (kCorruption), naming the
  // rank, the record and (in the status) the file and page or row.
  void WarnIfCorrupt(JobId id, const RankOutcome& outcome) const;
  void HandleEvent(wire::LinkEvent& event);
  void StartCleanup(JobCompletion failure, const PrefixKey& key);
  void CheckDeadlines();
  void Stop(Peer* peer, const std::string& reason, const std::string& error_kind);
  void SubmitLocalCleanups();
  Peer* PeerOf(RankId rank);
  std::string Describe(JobId id) const;

  std::unique_ptr<DiskTransport> local_;
  std::vector<Peer> peers_;                 // rank order
  std::map<uint64_t, size_t> peer_by_tag_;  // inbox tag -> index in peers_
  std::shared_ptr<wire::LinkInbox> inbox_;
  std::shared_ptr<WakeSignal> signal_;  // raised by local_ and inbox_; never null
  ShardedClock clock_;
  ShardedOptions options_;
  CompletionTracker tracker_;
  // Decides which queued link events raise signal_; read by the links' I/O
  // threads through the inbox's filter.
  Mutex gate_mu_;
  CompletionGate gate_ GUARDED_BY(gate_mu_);
  std::vector<RankId> all_ranks_;
  std::map<JobId, JobInfo> jobs_;      // accepted, not yet reported
  std::map<JobId, Cleanup> cleanups_;  // by cleanup job id
  // Host-data fetches: per rank (index = rank; rank zero's unused), the
  // receiver of its share until that rank answered.
  std::map<JobId, std::vector<std::optional<HostDataReceiver>>> host_fetches_;
  // Host-data jobs in flight: one rank's share bytes, by job; and their sum.
  std::map<JobId, uint64_t> host_jobs_;
  uint64_t host_bytes_in_flight_ = 0;
  std::deque<RecordJob> local_cleanups_;  // refused by `local` with kBusy; retried
  uint64_t next_cleanup_ = 1;
  std::vector<RecordJobDone> ready_;  // completions for the next Poll
  std::vector<RecordJobDone> local_done_;
  std::vector<wire::LinkEvent> events_;
  Status stopped_;
  bool closing_ = false;
  bool closed_ = false;
  Status close_status_;
  Status peer_drain_status_;
};

}  // namespace strata
