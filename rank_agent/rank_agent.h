// RankAgent: a peer rank's record service when ranks run on separate hosts
// (seed 2.14, docs/wire.md). It opens its own record directory, slab pool,
// disk thread and transport (staged over the caller's transfer threads,
// unless options.make_transport chooses another)
// before it joins, so a rank that cannot open them fails here and never
// joins. Then, on its own thread: the rendezvous, the record link to rank
// zero, Hello, its scan summary and the agreement (delete / truncate,
// rescan). Every Job rank zero sends then runs on its own transport
// and is answered with JobDone; a host-data job (RecordJob::host_data) runs
// on host memory whose bytes travel on the link as JobData
// (host_data_jobs.h). On Drain it finishes the jobs it accepted
// and reports Drained; Close from rank zero ends the session. What it
// decides while serving (hold, busy, drain, the answers) is ServingRules
// (serving_rules.h); this class does the I/O around it.
//
// Serving runs on the record link's I/O thread, not the agent's: the thread
// that read a Job submits it to the transport. The thread that finishes a
// job's work (the disk thread, a transfer thread) runs the serving pump
// itself when the serving state is free, and answers with one inline
// sendmsg. So a job costs no hand-off beyond the one to the thread that
// does its work. The serving state has one holder at a time
// (ServeWhileFree), and nobody waits for it: a thread that finds it taken
// leaves its frame or its pump request behind, which the holder takes up
// before it lets go, so the I/O thread never waits for a low-priority disk
// thread. What costs more than an answer stays on the I/O thread: rank
// zero's frames, a fetch's bytes (JobData), a held host-data job's buffers.
// The agent's thread waits meanwhile and does what may block: closing the
// transport when a drain is due or the session ended.
//
// When its drain is not confirmed (copies or disk I/O did not stop within
// drain_timeout) it keeps its transport, transfer threads, disk thread and
// staging alive (leaked) and ends with the error: the caller must then keep
// this rank's device planes allocated.
//
// Thread: Start, Wait, Stop, state and stats may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rank_agent/host_data_jobs.h"
#include "rank_agent/paced_answers.h"
#include "rank_agent/serving_rules.h"
#include "store/base/mutex.h"
#include "store/base/wake_signal.h"
#include "store/record/geometry.h"
#include "store/tier/local_disk.h"
#include "store/tier/staged_transport.h"
#include "store/transfer/transfers.h"
#include "wire/link/link.h"
#include "wire/link/link_inbox.h"

namespace strata {

// How a peer reaches rank zero's record listener: what the rendezvous hands
// it (coordinator/rendezvous/rendezvous.h JoinTicket; coordinator/rendezvous/rendezvous_join.h
// adapts a RendezvousClient).
struct RecordLinkTicket {
  wire::Endpoint record;  // rank zero's record listener, numeric address
  wire::Nonce nonce{};    // presented in Hello
  uint32_t world_size = 0;
};
// Blocks until rank zero hands out this rank's ticket, or fails at
// `deadline`. Called once, on the agent's thread.
using RankJoin =
    std::function<Result<RecordLinkTicket>(std::chrono::steady_clock::time_point deadline)>;

struct RankAgentOptions {
  RankId rank;              // 1 .. world_size-1
  uint32_t world_size = 0;  // at least 2
  // This rank's geometry alone (exactly one rank: its planes and row). Its
  // layout fingerprint must equal rank zero's own.
  CacheGeometry geometry;
  NamespaceIdentity identity{};
  LocalDiskOptions disk;          // base_dir: where this rank's record directory goes
  uint64_t disk_limit_bytes = 0;  // > 0; rank zero uses the smallest limit of all ranks
  StagedOptions staged;
  // This rank's transport (LocalDisk's DiskTransportFactory), called once
  // during Start and then dropped; empty: staged.
  DiskTransportFactory make_transport;
  wire::LinkOptions link;  // the record link to rank zero
  // Bound on the whole join: rendezvous, Hello, scan summary, agreement.
  std::chrono::milliseconds join_timeout{120'000};
  // Bound on finishing accepted jobs and stopping threads (Drain, a lost
  // link, Stop).
  std::chrono::milliseconds drain_timeout{30'000};
  // Jobs held while the transport is full; beyond, a job fails with
  // kBusy on this rank.
  size_t held_jobs_max = 1024;
  size_t inbox_messages_max = wire::LinkInbox::kDefaultMessagesMax;
};

enum class AgentState : uint8_t {
  kJoining,   // rendezvous, Hello, scan, agreement
  kServing,   // running jobs
  kDraining,  // rank zero sent Drain
  kClosed,    // ended cleanly
  kFailed,    // ended with an error (see Wait)
};
std::string_view AgentStateName(AgentState state);

struct AgentStats {
  uint64_t jobs_done = 0;    // answered OK
  uint64_t jobs_failed = 0;  // answered with an error
  uint64_t bytes = 0;        // payload bytes the jobs moved
  // Wake-ups the record link's I/O thread saved by spinning: mostly
  // frames, also functions posted to it (wire::LinkStats::idle_spin_hits);
  // 0 before the link is dialed.
  uint64_t link_idle_spin_hits = 0;
};

class RankAgent {
 public:
  // Opens the record directory ("<base>/<identity>-<this rank's
  // fingerprint>", scanned and cleaned), the pool, the disk thread and the
  // transport over `transfers` (this rank's planes, which must
  // outlive the agent), then starts the agent's thread, which calls `join`
  // first. Errors: invalid options, or what LocalDisk::Open /
  // MakeRankTransport report.
  static Result<std::unique_ptr<RankAgent>> Start(RankAgentOptions options, RankJoin join,
                                                  std::unique_ptr<Transfers> transfers);
  // Stop(), then waits for the agent's thread (bounded by the join and drain
  // timeouts).
  ~RankAgent();
  RankAgent(const RankAgent&) = delete;
  RankAgent& operator=(const RankAgent&) = delete;

  // The agent's outcome once its thread ended, or nullopt at `deadline`. OK:
  // rank zero closed the session after a confirmed drain. Otherwise why it
  // ended; a message containing "keep device memory" means the drain was not
  // confirmed and the staging stays allocated.
  std::optional<Status> Wait(std::chrono::steady_clock::time_point deadline);
  // Asks the agent to end: it closes its link (rank zero stops its transport
  // if a job was outstanding), finishes accepted jobs within drain_timeout
  // and ends with kAborted. Returns at once. During the rendezvous it takes
  // effect when `join` returns.
  void Stop();

  AgentState state() const { return state_.load(); }
  AgentStats stats() const;
  // This rank's record directory.
  const std::string& record_dir() const { return record_dir_; }

 private:
  RankAgent(RankAgentOptions options, RankJoin join);
  void Run();
  Status Join();
  Status SendScan(std::chrono::steady_clock::time_point deadline);
  Status ReceiveAgreement(std::chrono::steady_clock::time_point deadline);
  Status Serve();
  Status Finish(Status outcome);
  // The next link event of the join, or why there is none.
  Result<wire::Message> Next(std::chrono::steady_clock::time_point deadline,
                             std::string_view waiting_for);
  // Send, retrying a full queue (large scan summaries) until `deadline`.
  Status SendPatiently(const wire::Message& message,
                       std::chrono::steady_clock::time_point deadline);
  // The record link's handlers: to the inbox while joining, to the serving
  // loop once BeginServing ran (both on the link's I/O thread).
  wire::LinkHandlers RecordLinkHandlers();
  // I/O thread: serving starts with `leftovers` (events the join took but did
  // not use) and then what the inbox still holds, in arrival order.
  void BeginServing(std::deque<wire::LinkEvent> leftovers);
  // I/O thread: one event from rank zero, served in arrival order, then the
  // pump (now, or by the state's holder before it lets go).
  void OnServingEvent(wire::LinkEvent event);
  // Any thread: posts one pump to the I/O thread unless one is already
  // posted (frames, a fetch's bytes and host-data jobs wait for it there).
  void PostPump();
  // Any thread (the transport's signal, after a completion): asks for a
  // pump and runs it here unless another thread holds the serving state,
  // which then runs it; a call this thread made under the state (a nested
  // notification) leaves it to this thread's own holder loop.
  void PumpHere();
  // Holds the serving state while it is free: on the I/O thread (`io`)
  // serves inbound_ in order, and pumps when asked; leaves at once when
  // another thread holds it. Never waits for the state.
  void ServeWhileFree(bool io);
  // Serving: one event from rank zero; how the session ended, if it did.
  std::optional<Status> Handle(const wire::LinkEvent& event, JobRunner& runner) REQUIRES(serve_mu_);
  void ServeEvent(const wire::LinkEvent& event) REQUIRES(serve_mu_);
  // Submits held jobs, collects the transport's completions, answers them,
  // and hands the agent's thread a due drain. Off the I/O thread (`io`
  // false), what belongs there (held host-data jobs, a fetch's bytes) is
  // posted to it.
  void ServePump(bool io) REQUIRES(serve_mu_);
  // Records how the session ended and wakes the agent's thread.
  void EndServing(Status outcome) REQUIRES(serve_mu_);
  // Sends answers_ to rank zero (and counts them), then clears it; a
  // fetch's bytes only on the I/O thread (`io`), otherwise posted there.
  Status SendAnswers(bool io) REQUIRES(serve_mu_);

  RankAgentOptions options_;
  RankJoin join_;
  std::string record_dir_;
  // Declaration order is destruction order in reverse: the link (whose
  // thread feeds the inbox) goes first, the transport before the disk.
  std::unique_ptr<LocalDisk> disk_;
  // The agent thread's one wait. Raised by the inbox (frames from rank zero
  // while joining, Stop), the transport outside serving, and the
  // serving loop (a due drain, the session's end).
  std::shared_ptr<WakeSignal> wake_;
  std::unique_ptr<DiskTransport> transport_;
  std::shared_ptr<wire::LinkInbox> inbox_;
  std::unique_ptr<wire::Link> link_;
  // link_ once dialed, for stats() on any thread (the link lives as long
  // as the agent).
  std::atomic<const wire::Link*> link_view_{nullptr};

  // Raised by the transport while serving; its hook runs the serving pump
  // on the notifying thread (PumpHere; detached in Finish).
  std::shared_ptr<WakeSignal> transport_wake_;
  std::atomic<bool> pump_posted_{false};
  // The serving state's one holder (ServeWhileFree); a pump was asked for
  // (any holder runs it); a pump posted to the I/O thread found the state
  // taken (the I/O thread runs it); the link's close is among the frames.
  std::atomic<bool> serving_busy_{false};
  std::atomic<bool> pump_wanted_{false};
  std::atomic<bool> io_pump_wanted_{false};
  std::atomic<bool> link_closed_{false};
  // Rank zero's frames waiting for the holder, served in arrival order on the
  // I/O thread (by any holder once link_closed_); the I/O thread waits for
  // room past kInboundFramesMax.
  Mutex inbound_mu_;
  CondVar inbound_room_;
  std::deque<wire::LinkEvent> inbound_ GUARDED_BY(inbound_mu_);

  // Agent thread only.
  std::deque<wire::LinkEvent> events_;  // taken from the inbox while joining
  bool transport_closed_ = false;       // transport_->Close ran
  Status drain_status_;                 // its result

  // Link I/O thread only: BeginServing ran.
  bool serving_on_io_ = false;

  // Serving state: its holder while serving (ServeWhileFree: the link's I/O
  // thread or a thread that finished a job); the agent's thread when it
  // drains and after the link closed. Until the agent's thread takes the
  // transport back (drain_handoff_, serve_end_, link closed), only the
  // holder calls transport_.
  Mutex serve_mu_;
  ServingRules rules_ GUARDED_BY(serve_mu_);
  bool serving_ GUARDED_BY(serve_mu_) = false;  // BeginServing ran
  // A holder off the I/O thread left it work (a fetch's bytes, held
  // host-data jobs): posted once that holder let go.
  bool io_wanted_ GUARDED_BY(serve_mu_) = false;
  JobAnswers answers_ GUARDED_BY(serve_mu_);  // not yet sent
  // The buffers of host-data jobs, until their answers are sent; leaked
  // with the transport when its drain is not confirmed (copies may still
  // use them).
  std::unique_ptr<HostDataJobs> host_jobs_ GUARDED_BY(serve_mu_);
  // Fetch answers whose bytes are on their way (they hold their buffers).
  PacedAnswers paced_answers_ GUARDED_BY(serve_mu_);
  std::vector<RecordJobDone> done_ GUARDED_BY(serve_mu_);
  // A drain is due: the agent's thread closes transport_ (the I/O thread no
  // longer touches it), then sends Drained.
  bool drain_handoff_ GUARDED_BY(serve_mu_) = false;
  // How the session ended, decided on the I/O thread.
  std::optional<Status> serve_end_ GUARDED_BY(serve_mu_);

  std::atomic<AgentState> state_{AgentState::kJoining};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> jobs_done_{0};
  std::atomic<uint64_t> jobs_failed_{0};
  std::atomic<uint64_t> bytes_{0};
  Mutex mu_;
  CondVar ended_;
  std::optional<Status> outcome_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace strata
