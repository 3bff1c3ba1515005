#include "tests/sim/sim_world.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iterator>

namespace strata::sim {
namespace {

constexpr size_t kTraceTail = 80;
constexpr SimTime kMs = 1000;
// A cleanup that failed says so in the store's failure (ShardedTransport).
constexpr const char* kCleanupFailed = "unlinking the file from the ranks that wrote it failed";

double Rate(SimRandom& random, double top) {
  return random.Chance(0.35) ? 0.0
                             : top * (0.2 + 0.8 * static_cast<double>(random.Below(1001)) / 1000.0);
}

template <typename Map>
auto PickFrom(const Map& m, SimRandom& random) {
  auto it = m.begin();
  std::advance(it, static_cast<long>(random.Below(m.size())));
  return it;
}

std::string Describe(const RecordJob& job) {
  return "job " + std::to_string(job.id.value) + " (" + std::string(RecordJobKindName(job.kind)) +
         " of " + job.key.ToFileStem().substr(0, 24) + ")";
}

}  // namespace

void SimCounts::Add(const SimCounts& o) {
  seeds += o.seeds;
  steps += o.steps;
  jobs_submitted += o.jobs_submitted;
  jobs_ok += o.jobs_ok;
  jobs_failed += o.jobs_failed;
  submits_refused += o.submits_refused;
  stops += o.stops;
  restarts += o.restarts;
  records_checked += o.records_checked;
  frames += o.frames;
  link_resets += o.link_resets;
  rank_kills += o.rank_kills;
  half_open_links += o.half_open_links;
  stalls += o.stalls;
  delay_spikes += o.delay_spikes;
  disk_full += o.disk_full;
  io_errors += o.io_errors;
  damaged_records += o.damaged_records;
  hostile_messages += o.hostile_messages;
}

SimReport RunSimulation(const SimOptions& options) { return SimWorld(options).Run(); }

SimWorld::SimWorld(const SimOptions& options) : options_(options), random_(options.seed) {
  const uint32_t world = static_cast<uint32_t>(random_.Between(2, 4));
  for (uint32_t r = 0; r < world; ++r) {
    disks_.push_back(std::make_unique<SimDisk>(RankId(r), random_.Between(2, 12)));
  }
  rates_ = {Rate(random_, 0.004), Rate(random_, 0.002), Rate(random_, 0.001), Rate(random_, 0.002),
            Rate(random_, 0.01),  Rate(random_, 0.01),  Rate(random_, 0.01),  Rate(random_, 0.02),
            Rate(random_, 0.001), Rate(random_, 0.5)};
  sharded_.job_timeout = std::chrono::milliseconds(100);
  sharded_.max_outstanding_jobs = static_cast<uint32_t>(random_.Between(2, 24));
  agent_.held_max = random_.Between(1, 12);
  agent_.planted_bug = options.planted_bug;
  net_options_.peers = world - 1;
  net_options_.send_queue_frames = random_.Between(2, 64);
  report_.seed = options.seed;
  report_.world_size = world;
  report_.counts.seeds = 1;
}

SimWorld::~SimWorld() {
  if (!transport_) return;
  for (uint32_t r = 1; r < world(); ++r) network_->Reset(RankId(r), "the simulation ended");
  (void)transport_->Close(std::chrono::seconds(10));
}

SimReport SimWorld::Run() {
  for (uint32_t s = 0; s < options_.sessions && !failed(); ++s) {
    RunSession(s);
    if (!failed()) Restart();
  }
  for (const auto& d : disks_) {
    report_.counts.disk_full += d->injected_full;
    report_.counts.io_errors += d->injected_io_errors;
  }
  report_.trace_tail.assign(trace_.begin(), trace_.end());
  return report_;
}

void SimWorld::Violation(const std::string& what) {
  if (failed()) return;
  report_.violation =
      Status::Internal("seed " + std::to_string(options_.seed) + ", session " +
                       std::to_string(session_) + ", t=" + std::to_string(now_) + "us: " + what);
  Trace("VIOLATION: " + what);
}

void SimWorld::Trace(const std::string& event) {
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "[t=%9.3fms] ", static_cast<double>(now_) / kMs);
  std::string line = stamp + event;
  if (options_.trace) std::fprintf(stderr, "%s\n", line.c_str());
  trace_.push_back(std::move(line));
  if (trace_.size() > kTraceTail) trace_.pop_front();
}

// ---- sessions ----------------------------------------------------------------

void SimWorld::RunSession(uint32_t session) {
  session_ = session;
  StartSession();
  for (uint32_t i = 0; i < options_.steps_per_session && !failed(); ++i) {
    Step(true);
    if (kill_zero_) {
      KillZero();
      return;
    }
    if (stop_seen_) {
      // Copies still in flight on other ranks keep running: their ids must
      // stay held while they land.
      const uint64_t extra = random_.Below(30);
      for (uint64_t k = 0; k < extra && !failed(); ++k) Step(false);
      break;
    }
  }
  if (!failed()) EndSession();
}

void SimWorld::StartSession() {
  network_ = std::make_unique<SimNetwork>(net_options_, random_);
  hostile_seen_ = 0;
  network_->set_now(now_);
  inbox_ = std::make_shared<wire::LinkInbox>();
  agents_.clear();
  for (auto& d : disks_) d->NewSession();
  std::vector<ShardedPeer> peers;
  for (uint32_t r = 1; r < world(); ++r) {
    agents_.push_back(
        std::make_unique<SimAgent>(RankId(r), *disks_[r], *network_, random_, agent_));
    peers.push_back({RankId(r), r, network_->ChannelTo(RankId(r), inbox_->HandlersFor(r))});
  }
  auto local = std::make_unique<SimLocalTransport>(*disks_[0], *network_, random_, agent_.disk_min,
                                                   agent_.disk_max);
  local_ = local.get();
  transport_ = std::make_unique<ShardedTransport>(
      std::move(local), std::move(peers), inbox_,
      [this] { return std::chrono::steady_clock::time_point{} + std::chrono::microseconds(now_); },
      sharded_);
  pages_ = SimIdPool(48);
  slots_ = SimIdPool(8);
  outstanding_.clear();
  busy_keys_.clear();
  stop_seen_ = false;
  session_clean_ = true;
  kill_zero_ = false;
  Trace("session " + std::to_string(session_) + " starts: " + std::to_string(world()) + " ranks, " +
        std::to_string(committed_.size()) + " records");
}

void SimWorld::Forget(const RecordJob& job) {
  switch (job.kind) {
    case RecordJobKind::kStore: uncertain_.insert(job.key); break;
    case RecordJobKind::kUnlink:
      committed_.erase(job.key);
      uncertain_.insert(job.key);
      break;
    case RecordJobKind::kTruncate:
      if (auto it = committed_.find(job.key); it != committed_.end())
        it->second.row_uncertain = true;
      break;
    case RecordJobKind::kFetch: break;
  }
}

void SimWorld::EndSession() {
  // Quiesce: every job is reported, or the transport stops, within its
  // timeout (liveness).
  const SimTime end_by = now_ + 3 * static_cast<SimTime>(sharded_.job_timeout.count()) * kMs;
  while (!failed() && !outstanding_.empty() && !stop_seen_) {
    if (now_ > end_by) {
      Violation(std::to_string(outstanding_.size()) +
                " jobs were neither reported nor stopped within 3 job timeouts; the first is " +
                Describe(outstanding_.begin()->second));
      return;
    }
    Step(false);
  }
  if (failed()) return;
  // A peer that cannot answer (reset, half-open, not reading) would keep
  // Close waiting until its deadline; in the simulation its connection
  // times out at once.
  for (uint32_t r = 1; r < world(); ++r) {
    if (network_->Unresponsive(RankId(r)) || agents_[r - 1]->stalled()) {
      network_->Reset(RankId(r), "closing: no answer within the close timeout");
    }
  }
  network_->set_on_send([this] { Flush(); });
  const Status closed = transport_->Close(std::chrono::seconds(10));
  network_->set_on_send(nullptr);
  Flush();
  Trace("rank zero closed: " + closed.ToString() +
        "; drains: " + transport_->peer_drain_status().ToString());
  if (session_clean_ && !stop_seen_ && (!closed.ok() || !transport_->peer_drain_status().ok())) {
    Violation("a session without link or rank faults did not close clean: " + closed.ToString() +
              "; " + transport_->peer_drain_status().ToString());
  }
  for (auto& [id, job] : outstanding_) Forget(job);
  // Peers whose link is gone finish what they accepted, then exit.
  for (auto& a : agents_) (void)a->Step(true);
  transport_.reset();
}

void SimWorld::KillZero() {
  Trace("rank zero killed");
  ++report_.counts.rank_kills;
  disks_[0]->Crash(random_);
  local_->MarkCrashed();
  for (uint32_t r = 1; r < world(); ++r) network_->Reset(RankId(r), "rank zero was killed");
  (void)transport_->Close(std::chrono::seconds(10));  // every link is closed: no wait
  for (auto& [id, job] : outstanding_) Forget(job);
  for (auto& a : agents_) (void)a->Step(true);
  transport_.reset();
}

// Runs the world at once (while rank zero closes): time jumps past every
// delay, peers drain, and their answers reach rank zero's inbox.
void SimWorld::Flush() {
  if (flushing_) return;
  flushing_ = true;
  for (int round = 0; round < 4 && !failed(); ++round) {
    now_ += 1000 * kMs;
    network_->set_now(now_);
    for (auto& a : agents_) {
      Status s = a->Step(true);
      if (!s.ok()) Violation(s.message());
    }
    Status s = network_->DeliverToZero();
    if (!s.ok()) Violation(s.message());
  }
  flushing_ = false;
}

// ---- one step ----------------------------------------------------------------

void SimWorld::Step(bool submit) {
  ++report_.counts.steps;
  now_ += random_.Between(50, 1500);
  network_->set_now(now_);
  Faults();
  const uint64_t frames_before = network_->frames_delivered();
  for (auto& a : agents_) {
    Status s = a->Step(false);
    if (!s.ok()) Violation(s.message());
  }
  Status s = network_->DeliverToZero();
  if (!s.ok()) Violation(s.message());
  report_.counts.frames += network_->frames_delivered() - frames_before;
  if (submit && !stop_seen_) SubmitSome();
  PollTransport();
  CheckEveryStep();
}

void SimWorld::Faults() {
  auto peer = [&] { return static_cast<uint32_t>(random_.Between(1, world() - 1)); };
  SimCounts& c = report_.counts;
  if (random_.Chance(rates_.reset)) {
    const uint32_t r = peer();
    Trace("fault: link to rank " + std::to_string(r) + " reset");
    network_->Reset(RankId(r), "connection lost");
    session_clean_ = false;
    ++c.link_resets;
  }
  if (random_.Chance(rates_.kill_peer)) {
    const uint32_t r = peer();
    if (!agents_[r - 1]->crashed()) {
      Trace("fault: rank " + std::to_string(r) + " killed");
      agents_[r - 1]->Crash();
      session_clean_ = false;
      ++c.rank_kills;
    }
  }
  if (random_.Chance(rates_.kill_zero)) kill_zero_ = true;
  if (random_.Chance(rates_.half_open)) {
    const uint32_t r = peer();
    const bool to_peer = random_.Chance(0.5);
    Trace("fault: link to rank " + std::to_string(r) + " half-open (" +
          (to_peer ? "to the peer" : "to rank zero") + ")");
    network_->Blackhole(RankId(r), to_peer);
    session_clean_ = false;
    ++c.half_open_links;
  }
  if (random_.Chance(rates_.stall)) {
    const uint32_t r = peer();
    const SimTime d = random_.Between(1 * kMs, 250 * kMs);
    Trace("fault: rank " + std::to_string(r) + " stops reading for " + std::to_string(d / kMs) +
          " ms");
    agents_[r - 1]->StallUntil(now_ + d);
    session_clean_ = false;
    ++c.stalls;
  }
  if (random_.Chance(rates_.spike)) {
    const uint32_t r = peer();
    network_->Spike(RankId(r), random_.Between(1 * kMs, 150 * kMs),
                    now_ + random_.Between(1 * kMs, 50 * kMs));
    ++c.delay_spikes;
  }
  if (random_.Chance(rates_.full)) {
    const uint32_t r = static_cast<uint32_t>(random_.Below(world()));
    Trace("fault: rank " + std::to_string(r) + " disk full");
    disks_[r]->faults.full_until = now_ + random_.Between(1 * kMs, 50 * kMs);
  }
  if (random_.Chance(rates_.hostile)) {
    const uint32_t r = peer();
    Trace("fault: rank " + std::to_string(r) + " sends a message the protocol forbids");
    agents_[r - 1]->SendHostile();
    ++c.hostile_messages;
  }
  if (random_.Chance(rates_.eio)) {
    const uint32_t r = static_cast<uint32_t>(random_.Below(world()));
    Trace("fault: rank " + std::to_string(r) + " EIO");
    disks_[r]->faults.io_errors += static_cast<uint32_t>(random_.Between(1, 3));
  }
}

// ---- the store model ---------------------------------------------------------

bool SimWorld::HasChildren(const PrefixKey& key) const {
  for (const auto& [k, rec] : committed_) {
    if (rec.parent == key) return true;
  }
  for (const auto& [id, job] : outstanding_) {
    if (job.parent == key) return true;
  }
  // An uncertain child (a failed store whose cleanup failed) may be
  // orphaned by the unlink: the agreement drops it at the restart.
  return false;
}

std::optional<RecordJob> SimWorld::NextJob() {
  RecordJob job;
  job.id = JobId(next_job_++);
  const uint64_t pick = random_.Below(100);
  std::vector<PrefixKey> idle;
  for (const auto& [key, rec] : committed_) {
    if (!KeyBusy(key)) idle.push_back(key);
  }
  if (pick < 50 || idle.empty()) {
    if (committed_.size() + outstanding_.size() >= 48) return std::nullopt;
    job.kind = RecordJobKind::kStore;
    if (!idle.empty() && random_.Chance(0.6)) job.parent = idle[random_.Below(idle.size())];
    job.tail_pages = static_cast<uint32_t>(random_.Between(1, 3));
    job.key.consumed = (job.parent ? job.parent->consumed : 0) + job.tail_pages * 16;
    for (auto& b : job.key.digest) b = static_cast<uint8_t>(random_.Next());
    for (auto& b : job.bucket) b = static_cast<uint8_t>(random_.Next());
    if (random_.Chance(0.5)) job.row_slot = StateSlot(0);
    return job;
  }
  const PrefixKey key = idle[random_.Below(idle.size())];
  const Known& rec = committed_.at(key);
  job.key = key;
  job.tail_pages = rec.tail_pages;
  if (pick < 80) {
    job.kind = RecordJobKind::kFetch;
    job.first_page = static_cast<uint32_t>(random_.Below(rec.tail_pages));
    if (rec.row && !rec.row_uncertain && random_.Chance(0.5)) job.row_slot = StateSlot(0);
  } else if (pick < 92) {
    if (HasChildren(key)) return std::nullopt;
    job.kind = RecordJobKind::kUnlink;
    job.tail_pages = 0;
  } else {
    if (!rec.row || rec.row_uncertain) return std::nullopt;
    job.kind = RecordJobKind::kTruncate;
  }
  return job;
}

void SimWorld::SubmitSome() {
  const uint64_t n = random_.Below(3);
  for (uint64_t i = 0; i < n && !failed(); ++i) {
    std::optional<RecordJob> job = NextJob();
    if (job) Submit(std::move(*job));
  }
}

void SimWorld::Submit(RecordJob job) {
  const uint64_t id = job.id.value;
  if (job.kind == RecordJobKind::kStore || job.kind == RecordJobKind::kFetch) {
    auto pages = pages_.Acquire(job.tail_pages - job.first_page, id, random_);
    if (!pages) return;
    for (uint32_t p : *pages) job.page_ids.push_back(PageId(p));
    if (job.row_slot) {
      auto slot = slots_.Acquire(1, id, random_);
      if (!slot) {
        pages_.Release(id);
        return;
      }
      job.row_slot = StateSlot(slot->front());
    }
  }
  const bool was_stopped = !transport_->stopped().ok();
  Status s = transport_->Submit(job);
  if (s.ok()) {
    if (was_stopped) Violation("a stopped transport accepted " + Describe(job));
    Trace("submit " + Describe(job));
    ++report_.counts.jobs_submitted;
    busy_keys_.insert(job.key);
    outstanding_[job.id] = std::move(job);
    return;
  }
  pages_.Release(id);
  slots_.Release(id);
  if (s.code() == StatusCode::kBusy) {
    ++report_.counts.submits_refused;
  } else if (s.code() != StatusCode::kAborted || transport_->stopped().ok()) {
    Violation("the transport refused a valid " + Describe(job) + ": " + s.ToString());
  }
}

void SimWorld::PollTransport() {
  const bool stopped_before = stop_seen_;
  std::vector<RecordJobDone> out;
  transport_->Poll(out);
  if (stopped_before && !out.empty()) {
    Violation("a stopped transport reported " + std::to_string(out.size()) + " completions");
  }
  for (const RecordJobDone& d : out) OnDone(d);
  if (network_->hostile_delivered() > hostile_seen_) {
    hostile_seen_ = network_->hostile_delivered();
    if (transport_->stopped().ok()) {
      Violation("rank zero received a message the protocol forbids and kept running");
    }
  }
  if (!stop_seen_ && !transport_->stopped().ok()) {
    stop_seen_ = true;
    ++report_.counts.stops;
    Trace("transport stopped: " + transport_->stopped().message());
    // It must refuse from now on, and send nothing anywhere.
    std::optional<RecordJob> probe = NextJob();
    if (probe) Submit(std::move(*probe));
  }
}

void SimWorld::OnDone(const RecordJobDone& done) {
  auto it = outstanding_.find(done.id);
  if (it == outstanding_.end()) {
    Violation("completion of job " + std::to_string(done.id.value) +
              ", which is not outstanding (unknown or reported twice)");
    return;
  }
  const RecordJob job = it->second;
  Trace("done " + Describe(job) + ": " + done.status.ToString() + (done.fs_full ? " [full]" : ""));
  const bool cleanup_failed = done.status.message().find(kCleanupFailed) != std::string::npos;
  CheckCompletion(job, done, cleanup_failed);
  ++(done.status.ok() ? report_.counts.jobs_ok : report_.counts.jobs_failed);
  switch (job.kind) {
    case RecordJobKind::kStore:
      if (done.status.ok()) {
        committed_[job.key] = {job.parent, SimDisk::DigestOf(job), job.tail_pages,
                               job.row_slot.has_value(), false};
      } else if (cleanup_failed) {
        uncertain_.insert(job.key);
      }
      break;
    case RecordJobKind::kUnlink:
      committed_.erase(job.key);
      if (!done.status.ok()) uncertain_.insert(job.key);
      break;
    case RecordJobKind::kTruncate:
      if (auto c = committed_.find(job.key); c != committed_.end()) {
        if (done.status.ok()) {
          c->second.row = false;
        } else {
          c->second.row_uncertain = true;
        }
      }
      break;
    case RecordJobKind::kFetch: break;
  }
  pages_.Release(job.id.value);
  slots_.Release(job.id.value);
  busy_keys_.erase(job.key);
  outstanding_.erase(it);
}

}  // namespace strata::sim
