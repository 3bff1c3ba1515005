#include "coordinator/sharded_transport.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;

// Cleanup unlinks use ids with this bit set; a store's ids never have it.
constexpr uint64_t kCleanupIdBit = uint64_t{1} << 63;

std::map<uint64_t, RankId> RankByTag(const std::vector<ShardedPeer>& peers) {
  std::map<uint64_t, RankId> out;
  for (const ShardedPeer& p : peers) out[p.tag] = p.rank;
  return out;
}

std::string Join(const std::vector<RankId>& ranks) {
  std::string out;
  for (RankId r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r.value);
  return out;
}

// Metric-friendly reason names for a link's rejected frames.
std::string RejectionReason(wire::FrameRejection r) {
  std::string name(wire::FrameRejectionName(r));
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

}  // namespace

ShardedTransport::ShardedTransport(std::unique_ptr<DiskTransport> local,
                                   std::vector<ShardedPeer> peers,
                                   std::shared_ptr<wire::LinkInbox> inbox, ShardedClock clock,
                                   ShardedOptions options)
    : local_(std::move(local)),
      inbox_(std::move(inbox)),
      signal_(std::make_shared<WakeSignal>()),
      clock_(std::move(clock)),
      options_(options),
      tracker_(static_cast<uint32_t>(peers.size()) + 1),
      gate_(RankByTag(peers)) {
  std::sort(peers.begin(), peers.end(),
            [](const ShardedPeer& a, const ShardedPeer& b) { return a.rank < b.rank; });
  all_ranks_.push_back(RankId(0));
  for (size_t i = 0; i < peers.size(); ++i) {
    STRATA_ASSERT(peers[i].rank.value == i + 1, "sharded peers must be ranks 1 .. N-1, each once");
    peer_by_tag_[peers[i].tag] = i;
    all_ranks_.push_back(peers[i].rank);
    Peer p;
    p.rank = peers[i].rank;
    p.link = std::move(peers[i].link);
    peers_.push_back(std::move(p));
  }
  local_->NotifyOnCompletion(signal_);
  WatchInbox();
}

void ShardedTransport::WatchInbox() {
  inbox_->NotifyOnEvent(signal_, [this](const wire::LinkEvent& e) {
    MutexLock lock(gate_mu_);
    return gate_.Wakes(e);
  });
}

void ShardedTransport::NotifyOnCompletion(std::shared_ptr<WakeSignal> signal) {
  signal_ = signal ? std::move(signal) : std::make_shared<WakeSignal>();
  local_->NotifyOnCompletion(signal_);
  WatchInbox();
  // A share waiting for its link may have missed the drain the old signal got.
  const bool paced =
      std::any_of(peers_.begin(), peers_.end(), [](const Peer& p) { return !p.outgoing.empty(); });
  if (!ready_.empty() || paced) signal_->Notify();
}

ShardedTransport::~ShardedTransport() {
  if (!closed_) (void)Close(options_.job_timeout);
  // Links the coordinator still holds (strangers) may queue events: none
  // may reach this transport's gate from now on.
  inbox_->NotifyOnEvent(nullptr);
}

ShardedTransport::Peer* ShardedTransport::PeerOf(RankId rank) {
  if (rank.value == 0 || rank.value > peers_.size()) return nullptr;
  return &peers_[rank.value - 1];
}

std::string ShardedTransport::Describe(JobId id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return "job " + std::to_string(id.value);
  return "job " + std::to_string(id.value) + " (" +
         std::string(RecordJobKindName(it->second.kind)) + " of " + it->second.key.ToFileStem() +
         ")";
}

// ---- submitting ------------------------------------------------------------

Status ShardedTransport::Admit(const RecordJob& job) const {
  if (!stopped_.ok()) return Status::Aborted("sharded transport stopped: " + stopped_.message());
  if (closing_) return Status::Aborted("sharded transport is closed");
  if ((job.id.value & kCleanupIdBit) != 0) {
    return Status::InvalidArgument("job id " + std::to_string(job.id.value) +
                                   " uses the bit reserved for cleanup unlinks");
  }
  if (jobs_.count(job.id) != 0) {
    return Status::InvalidArgument("job " + std::to_string(job.id.value) + " is already running");
  }
  if (tracker_.outstanding() >= options_.max_outstanding_jobs) {
    return Status::Busy("sharded transport has " + std::to_string(tracker_.outstanding()) +
                        " jobs outstanding");
  }
  // Refuse what a peer would reject before anything starts anywhere.
  return wire::CheckMessage(wire::Job{job});
}

void ShardedTransport::Begin(const RecordJob& job, std::span<const HostBuffers> shares) {
  Status begun = tracker_.Begin(job.id, job.kind, all_ranks_, clock_() + options_.job_timeout);
  STRATA_ASSERT(begun.ok(), "tracker refused a fresh job: " + begun.ToString());
  jobs_[job.id] = {job.kind, job.key};
  if (job.host_data && job.kind == RecordJobKind::kFetch) {
    std::vector<std::optional<HostDataReceiver>>& receivers = host_fetches_[job.id];
    receivers.resize(shares.size());
    for (size_t r = 1; r < shares.size(); ++r) receivers[r].emplace(shares[r]);
    SendToPeers(job, all_ranks_);
  } else {
    SendToPeers(job, all_ranks_, job.host_data ? shares : std::span<const HostBuffers>{});
  }
  if (!ready_.empty()) signal_->Notify();  // a peer refused it at once
}

Status ShardedTransport::Submit(RecordJob job) {
  STRATA_RETURN_IF_ERROR(Admit(job));
  if (job.host_data) {
    return Status::InvalidArgument("a host-data job of " + job.key.ToFileStem() +
                                   " goes through SubmitShares");
  }
  STRATA_RETURN_IF_ERROR(local_->Submit(job));
  Begin(job, {});
  return Status::Ok();
}

void ShardedTransport::SubmitLocalCleanups() {
  while (!local_cleanups_.empty() && stopped_.ok()) {
    Status s = local_->Submit(local_cleanups_.front());
    if (s.code() == StatusCode::kBusy) return;
    const JobId id = local_cleanups_.front().id;
    local_cleanups_.pop_front();
    if (!s.ok()) HandleOutcome(id, {.rank = RankId(0), .status = s});
  }
}

// ---- completions -----------------------------------------------------------

void ShardedTransport::HandleOutcome(JobId id, RankOutcome outcome) {
  if (!stopped_.ok()) return;  // nothing is reported once stopped
  const RankId rank = outcome.rank;
  Peer* peer = PeerOf(rank);
  if (peer != nullptr) ++(outcome.status.ok() ? peer->jobs_done : peer->jobs_failed);
  WarnIfCorrupt(id, outcome);
  Result<std::optional<JobCompletion>> r = tracker_.Report(id, std::move(outcome));
  if (!r.ok()) {
    Stop(peer, r.status().message(), "protocol");
    return;
  }
  if (!r->has_value()) return;
  JobCompletion done = std::move(**r);
  auto cleanup = cleanups_.find(id);
  if (cleanup != cleanups_.end()) {
    JobCompletion failure = std::move(cleanup->second.failure);
    cleanups_.erase(cleanup);
    Status status = failure.status;
    if (!done.status.ok()) {
      status = Status(status.code(), status.message() +
                                         "; unlinking the file from the ranks that wrote it "
                                         "failed: " +
                                         done.status.message());
    }
    ready_.push_back({failure.id, status, failure.fs_full, failure.bytes});
    return;
  }
  auto info = jobs_.find(id);
  STRATA_ASSERT(info != jobs_.end(), "a tracked job has no info");
  const PrefixKey key = info->second.key;
  jobs_.erase(info);
  host_fetches_.erase(id);
  if (auto h = host_jobs_.find(id); h != host_jobs_.end()) {
    host_bytes_in_flight_ -= h->second;
    host_jobs_.erase(h);
  }
  if (done.status.ok() || done.wrote.empty()) {
    ready_.push_back({done.id, done.status, done.fs_full, done.bytes});
    return;
  }
  StartCleanup(std::move(done), key);
}

void ShardedTransport::WarnIfCorrupt(JobId id, const RankOutcome& outcome) const {
  if (outcome.status.code() != StatusCode::kCorruption) return;
  auto info = jobs_.find(id);
  if (info == jobs_.end() || info->second.kind != RecordJobKind::kFetch) return;
  // The status names the file and the page or row; the store that submitted
  // the fetch removes the record from every rank when the job completes.
  spdlog::warn("{} found record {} corrupt on fetch: {}", RankName(outcome.rank),
               info->second.key.ToFileStem(), outcome.status.message());
}

void ShardedTransport::StartCleanup(JobCompletion failure, const PrefixKey& key) {
  RecordJob unlink;
  unlink.id = JobId(kCleanupIdBit | next_cleanup_++);
  unlink.kind = RecordJobKind::kUnlink;
  unlink.key = key;
  const std::vector<RankId> wrote = failure.wrote;
  spdlog::warn("store of {} failed ({}); unlinking it from ranks {}", key.ToFileStem(),
               failure.status.ToString(), Join(wrote));
  Status begun =
      tracker_.Begin(unlink.id, RecordJobKind::kUnlink, wrote, clock_() + options_.job_timeout);
  STRATA_ASSERT(begun.ok(), "tracker refused a cleanup: " + begun.ToString());
  cleanups_[unlink.id] = {std::move(failure)};
  if (wrote.front() == RankId(0)) {
    Status s = local_->Submit(unlink);
    if (s.code() == StatusCode::kBusy) {
      local_cleanups_.push_back(unlink);
    } else if (!s.ok()) {
      HandleOutcome(unlink.id, {.rank = RankId(0), .status = s});
    }
  }
  SendToPeers(unlink, wrote);
}

void ShardedTransport::HandleEvent(wire::LinkEvent& e) {
  auto at = peer_by_tag_.find(e.tag);
  if (at == peer_by_tag_.end()) return;
  Peer& peer = peers_[at->second];
  switch (e.kind) {
    case wire::LinkEvent::Kind::kClosed: {
      peer.closed = true;
      if (closing_ && peer.drained.has_value()) return;
      const bool outstanding = tracker_.WaitsOn(peer.rank);
      std::string reason = "the record link to " + RankName(peer.rank) + " closed (" +
                           wire::DescribeClose(e.state) + ")";
      if (outstanding) reason += " with jobs outstanding; their ids must never be reused";
      if (closing_) {
        peer.failed = true;
        if (!peer.drained) peer.drained = Status::Unavailable(reason + " before it drained");
        return;
      }
      Stop(&peer, reason, "link_lost");
      return;
    }
    case wire::LinkEvent::Kind::kOverflow:
      Stop(&peer, RankName(peer.rank) + " sent more messages than rank zero queues", "protocol");
      peer.link->Close();
      return;
    case wire::LinkEvent::Kind::kMessage: break;
  }
  wire::Message& m = e.message;
  if (auto* data = std::get_if<wire::JobData>(&m)) {
    (void)TakeJobData(peer, *data);
    return;
  }
  if (auto* done = std::get_if<wire::JobDone>(&m)) {
    if (done->rank != peer.rank) {
      Stop(&peer,
           "the record link of " + RankName(peer.rank) + " reported a job of " +
               RankName(done->rank),
           "protocol");
      return;
    }
    if (std::any_of(peer.outgoing.begin(), peer.outgoing.end(),
                    [&](const Outgoing& o) { return o.id == done->id; })) {
      Stop(&peer,
           RankName(peer.rank) + " answered " + Describe(done->id) + " before its Job was sent",
           "protocol");
      return;
    }
    if (!CheckFetchDone(peer, *done)) return;
    HandleOutcome(done->id,
                  {peer.rank, std::move(done->status), done->filesystem_full, done->bytes});
    return;
  }
  if (auto* drained = std::get_if<wire::Drained>(&m)) {
    peer.drained = drained->status;
    return;
  }
  if (std::holds_alternative<wire::Heartbeat>(m) || std::holds_alternative<wire::Close>(m)) {
    return;  // a Close is followed by the link closing
  }
  Stop(&peer, RankName(peer.rank) + " sent an unexpected " + std::string(wire::MessageName(m)),
       "protocol");
}

void ShardedTransport::CheckDeadlines() {
  if (!stopped_.ok()) return;
  std::vector<OverdueJob> overdue = tracker_.Overdue(clock_());
  if (overdue.empty()) return;
  const OverdueJob& o = overdue.front();
  for (RankId r : o.missing) {
    if (Peer* p = PeerOf(r)) {
      ++p->errors["timeout"];
      p->failed = true;
    }
  }
  Stop(nullptr,
       Describe(o.id) + " was not finished by rank(s) " + Join(o.missing) + " within " +
           std::to_string(options_.job_timeout.count()) + " ms; its ids must never be reused",
       "");
}

void ShardedTransport::Stop(Peer* peer, const std::string& reason, const std::string& error_kind) {
  if (peer != nullptr) {
    peer->failed = true;
    if (!error_kind.empty()) ++peer->errors[error_kind];
  }
  if (!stopped_.ok()) return;
  stopped_ = Status::Unavailable(reason);
  {
    MutexLock lock(gate_mu_);
    gate_.Clear();
  }
  spdlog::error("sharded transport stopped: {}", reason);
  ready_.clear();  // nothing is reported once stopped
  host_fetches_.clear();
  for (Peer& p : peers_) p.outgoing.clear();  // the callers' shares are not read again
}

void ShardedTransport::Pump() {
  SubmitLocalCleanups();
  for (Peer& p : peers_) SendOutgoing(p);  // shares waiting for their links to drain
  local_done_.clear();
  local_->Poll(local_done_);
  for (RecordJobDone& d : local_done_) {
    HandleOutcome(d.id, {RankId(0), std::move(d.status), d.fs_full, d.bytes});
  }
  events_.clear();
  inbox_->Take(events_);
  for (wire::LinkEvent& e : events_) HandleEvent(e);
  CheckDeadlines();
}

void ShardedTransport::Poll(std::vector<RecordJobDone>& out) {
  Pump();
  for (RecordJobDone& d : ready_) out.push_back(std::move(d));
  ready_.clear();
}

bool ShardedTransport::WaitForCompletion(std::chrono::milliseconds timeout) {
  const Clock::time_point until = Clock::now() + timeout;
  for (;;) {
    Pump();
    if (!ready_.empty()) return true;
    if (Clock::now() >= until) return false;
    (void)signal_->WaitUntil(until, options_.idle_spin);
  }
}

// ---- closing ---------------------------------------------------------------

Status ShardedTransport::Close(std::chrono::milliseconds deadline) {
  if (closed_) return close_status_;
  closed_ = true;
  const Clock::time_point until = Clock::now() + deadline;
  auto left = [&] {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()));
  };
  // Accepted jobs finish first; their completions wait in ready_.
  for (;;) {
    Pump();
    if (!stopped_.ok() || tracker_.outstanding() == 0 || Clock::now() >= until) break;
    (void)signal_->WaitUntil(until);
  }
  closing_ = true;
  // What was not sent by now never is: the Drain must not overtake a share's
  // chunks, and the callers' shares are not read after Close.
  for (Peer& p : peers_) p.outgoing.clear();
  for (Peer& p : peers_) {
    if (p.closed) {
      if (!p.drained) {
        p.drained =
            Status::Unavailable("the record link to " + RankName(p.rank) + " was already closed");
      }
      continue;
    }
    Status s = p.link->Send(wire::Drain{});
    if (!s.ok()) p.drained = s.WithContext("sending Drain");
  }
  auto waiting = [&] {
    for (const Peer& p : peers_) {
      if (!p.closed && !p.drained) return true;
    }
    return false;
  };
  while (waiting() && Clock::now() < until) {
    (void)inbox_->WaitUntil(until);
    Pump();
  }
  for (Peer& p : peers_) {
    if (!p.drained) {
      p.drained = Status::Aborted(RankName(p.rank) + " did not report Drained within " +
                                  std::to_string(deadline.count()) + " ms");
    }
    if (!p.drained->ok()) {
      ++p.errors["drain"];
      p.failed = true;
      if (peer_drain_status_.ok()) {
        peer_drain_status_ =
            Status(p.drained->code(),
                   RankName(p.rank) + " did not confirm its drain: " + p.drained->message());
      }
    }
    if (!p.closed) (void)p.link->Send(wire::Close{"rank zero closed its store"});
  }
  for (Peer& p : peers_) p.link->Close();
  close_status_ = local_->Close(left());
  return close_status_;
}

std::vector<PeerLinkReport> ShardedTransport::PeerReports() const {
  std::vector<PeerLinkReport> out;
  for (const Peer& p : peers_) {
    PeerLinkReport r;
    r.peer = p.rank;
    r.link = p.link->stats();
    r.link_state = p.link->state();
    const bool link_closed = p.closed || p.link->state().phase == wire::LinkPhase::kClosed;
    if (p.failed) {
      r.state = "failed";
    } else if (link_closed) {
      r.state = "closed";
    } else if (closing_) {
      r.state = "draining";
    } else {
      r.state = "up";
    }
    r.errors_by_reason = p.errors;
    for (size_t i = 0; i < wire::kFrameRejectionCount; ++i) {
      if (r.link.rejected_frames[i] > 0) {
        r.errors_by_reason[RejectionReason(static_cast<wire::FrameRejection>(i))] +=
            r.link.rejected_frames[i];
      }
    }
    r.jobs_sent = p.jobs_sent;
    r.jobs_done = p.jobs_done;
    r.jobs_failed = p.jobs_failed;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace strata
