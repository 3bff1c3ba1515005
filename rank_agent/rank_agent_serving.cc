// RankAgent's serving (rank_agent.h): the record link's handlers once the
// join is done, the serving state's one holder at a time, and the answers.
#include <algorithm>
#include <utility>
#include <variant>

#include "rank_agent/rank_agent.h"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;

// The longest the agent's thread sleeps while the link's I/O thread serves.
// A due drain, the session's end and Stop all raise its one wake signal, so
// this only bounds the wait; nothing waits for it to pass.
constexpr auto kServeWakeMax = std::chrono::milliseconds(500);
// Rank zero's frames that may wait for another thread's hold of the serving
// state; past it the link's I/O thread stops reading until the holder lets
// go (as when it waited for the state), so what waits stays bounded (4 MiB
// JobData chunks: 64 MiB).
constexpr size_t kInboundFramesMax = 16;

// The agent whose serving state this thread holds, if any (a completion
// notified by a transport call made under it must not try to take the
// state again: RankAgent::PumpHere), and whether this thread is that
// agent's link I/O thread.
struct ServingThread {
  const RankAgent* agent = nullptr;
  bool io = false;
};
thread_local ServingThread t_serving;

// Marks this thread as holding `agent`'s serving state for a scope: its
// link's I/O thread, or (io false) a thread that finished a job.
class ServingHere {
 public:
  ServingHere(const RankAgent* agent, bool io) : previous_(t_serving) { t_serving = {agent, io}; }
  ~ServingHere() { t_serving = previous_; }
  ServingHere(const ServingHere&) = delete;
  ServingHere& operator=(const ServingHere&) = delete;

 private:
  ServingThread previous_;
};

// ServingRules' runner: this rank's transport; a host-data job runs on the
// buffers `host` holds for it.
class TransportRunner final : public JobRunner {
 public:
  TransportRunner(DiskTransport& transport, HostDataJobs& host)
      : transport_(transport), host_(host) {}
  Status Submit(const RecordJob& job) override {
    if (!job.host_data) return transport_.Submit(job);
    Result<HostBuffers> buffers = host_.Begin(job);
    if (!buffers.ok()) return buffers.status();
    return transport_.SubmitHost(job, *buffers);
  }

 private:
  DiskTransport& transport_;
  HostDataJobs& host_;
};

}  // namespace

wire::LinkHandlers RankAgent::RecordLinkHandlers() {
  wire::LinkHandlers to_inbox = inbox_->HandlersFor(0);
  wire::LinkHandlers h;
  h.on_message = [this, forward = std::move(to_inbox.on_message)](wire::Message m) {
    if (!serving_on_io_) return forward(std::move(m));
    wire::LinkEvent e;
    e.kind = wire::LinkEvent::Kind::kMessage;
    e.message = std::move(m);
    OnServingEvent(std::move(e));
  };
  // A fetch's bytes wait for the link to drain (paced_answers_).
  h.on_drained = [this] {
    if (!serving_on_io_) return;
    pump_wanted_ = true;
    ServeWhileFree(/*io=*/true);
  };
  h.on_closed = [this, forward = std::move(to_inbox.on_closed)](const wire::LinkState& state) {
    if (!serving_on_io_) return forward(state);
    wire::LinkEvent e;
    e.kind = wire::LinkEvent::Kind::kClosed;
    e.state = state;
    OnServingEvent(std::move(e));
  };
  return h;
}

Status RankAgent::Serve() {
  state_ = AgentState::kServing;
  transport_wake_ = std::make_shared<WakeSignal>();
  transport_wake_->AlsoRun([this] { PumpHere(); });
  transport_->NotifyOnCompletion(transport_wake_);
  // From here on the serving state's holder calls transport_ (the link's
  // I/O thread, or a thread that finished a job), until this thread takes
  // it back (drain_handoff_, serve_end_, or the link closed).
  link_->Post(
      [this, leftovers = std::move(events_)]() mutable { BeginServing(std::move(leftovers)); });
  events_.clear();
  for (;;) {
    if (stop_) return Status::Aborted(RankName(options_.rank) + " was stopped by its owner");
    bool drain = false;
    {
      MutexLock lock(serve_mu_);
      if (serve_end_) return *serve_end_;
      drain = drain_handoff_ && !transport_closed_;
    }
    if (drain) {
      // Nothing is held or active: Close stops the threads and returns.
      drain_status_ = transport_->Close(options_.drain_timeout);
      transport_closed_ = true;
      MutexLock lock(serve_mu_);
      rules_.MarkDrained();
      STRATA_RETURN_IF_ERROR(link_->Send(wire::Drained{wire::FitForWire(drain_status_)}));
      if (!drain_status_.ok()) return drain_status_;
      continue;
    }
    (void)wake_->WaitUntil(Clock::now() + kServeWakeMax);
  }
}

void RankAgent::BeginServing(std::deque<wire::LinkEvent> leftovers) {
  std::vector<wire::LinkEvent> queued;
  inbox_->Take(queued);  // queued by this thread before now: after the leftovers
  for (wire::LinkEvent& e : queued) leftovers.push_back(std::move(e));
  serving_on_io_ = true;
  {
    MutexLock lock(inbound_mu_);
    for (wire::LinkEvent& e : leftovers) {
      if (e.kind == wire::LinkEvent::Kind::kClosed) link_closed_ = true;
      inbound_.push_back(std::move(e));
    }
  }
  {
    MutexLock lock(serve_mu_);  // until now a holder served nothing and pumped nothing
    serving_ = true;
  }
  pump_wanted_ = true;
  ServeWhileFree(/*io=*/true);
}

void RankAgent::OnServingEvent(wire::LinkEvent event) {
  // A heartbeat changes nothing (the link itself notes that it read).
  if (event.kind == wire::LinkEvent::Kind::kMessage &&
      std::holds_alternative<wire::Heartbeat>(event.message)) {
    return;
  }
  {
    MutexLock lock(inbound_mu_);
    // Before it can be seen: from then on any holder serves the frames (no
    // pump can be posted to this thread once the link is closing).
    if (event.kind == wire::LinkEvent::Kind::kClosed) link_closed_ = true;
    inbound_.push_back(std::move(event));
    while (inbound_.size() > kInboundFramesMax && serving_busy_.load()) inbound_room_.Wait(lock);
  }
  ServeWhileFree(/*io=*/true);
}

void RankAgent::PostPump() {
  if (pump_posted_.exchange(true)) return;
  link_->Post([this] {
    pump_posted_ = false;  // a request from now on posts another pump
    io_pump_wanted_ = true;
    ServeWhileFree(/*io=*/true);
  });
}

void RankAgent::PumpHere() {
  pump_wanted_ = true;
  // This thread holds the state (a call it made notified): it looks at
  // pump_wanted_ again before it lets go.
  if (t_serving.agent == this) return;
  ServeWhileFree(/*io=*/false);
}

void RankAgent::ServeWhileFree(bool io) {
  // serving_busy_ is the state's one holder. Whoever finds it taken leaves
  // its frame (inbound_) or request (pump_wanted_, io_pump_wanted_) behind,
  // and the holder looks at them again after it lets go: each side writes
  // its own, then reads the other's (sequentially consistent atomics, and
  // inbound_mu_ around the frames), so one of them sees the other's work.
  // Frames and a posted pump belong to the I/O thread: a holder elsewhere
  // posts them there, after it let go (so the post finds the state free).
  while (!serving_busy_.exchange(true)) {
    bool post = false;
    {
      MutexLock lock(serve_mu_);
      ServingHere here(this, io);
      bool pump = pump_wanted_.exchange(false);
      if (io) pump |= io_pump_wanted_.exchange(false);
      // Once the link is closing nothing can be posted to its I/O thread:
      // any holder serves what it left.
      if (serving_ && (io || link_closed_.load())) {
        std::deque<wire::LinkEvent> events;
        {
          MutexLock queue(inbound_mu_);
          events.swap(inbound_);
        }
        for (const wire::LinkEvent& e : events) ServeEvent(e);
        pump |= !events.empty();
      }
      // Before BeginServing a wanted pump is dropped: BeginServing pumps.
      if (pump && serving_) ServePump(io);
      post = std::exchange(io_wanted_, false);
    }
    bool frames_wait = false;
    {
      MutexLock queue(inbound_mu_);
      serving_busy_.store(false);
      inbound_room_.NotifyAll();  // the I/O thread may wait for a full inbound_
      frames_wait = !inbound_.empty();
    }
    if (!io && frames_wait && !link_closed_.load()) {
      post = true;
      frames_wait = false;
    }
    if (!io && io_pump_wanted_.load()) post = true;  // a posted pump found this hold
    if (post) PostPump();
    if (!frames_wait && !pump_wanted_.load() && !(io && io_pump_wanted_.load())) return;
  }
}

void RankAgent::ServeEvent(const wire::LinkEvent& e) {
  if (serve_end_) return;
  TransportRunner runner(*transport_, *host_jobs_);
  std::optional<Status> ended = Handle(e, runner);
  Status sent = SendAnswers(/*io=*/true);
  if (!sent.ok()) {
    EndServing(std::move(sent));
  } else if (ended) {
    EndServing(std::move(*ended));
  }
}

std::optional<Status> RankAgent::Handle(const wire::LinkEvent& e, JobRunner& runner) {
  switch (e.kind) {
    case wire::LinkEvent::Kind::kClosed: return rules_.OnLinkClosed(wire::DescribeClose(e.state));
    case wire::LinkEvent::Kind::kOverflow: return rules_.OnOverflow();
    case wire::LinkEvent::Kind::kMessage: break;
  }
  // A store's bytes, held until its Job runs; a chunk that breaks the rules
  // ends the session.
  if (const auto* data = std::get_if<wire::JobData>(&e.message)) {
    if (rules_.ended()) return std::nullopt;
    Status held = host_jobs_->OnData(*data);
    if (held.ok()) return std::nullopt;
    return Status::FailedPrecondition("rank zero broke the protocol: " + held.message());
  }
  if (const auto* job = std::get_if<wire::Job>(&e.message)) host_jobs_->OnJob(job->record.id);
  // Once draining, a Job is refused without reaching the runner.
  std::optional<Status> ended = rules_.OnMessage(e.message, runner, answers_);
  if (rules_.draining() && state_ == AgentState::kServing) state_ = AgentState::kDraining;
  return ended;
}

void RankAgent::ServePump(bool io) {
  if (serve_end_ || drain_handoff_) return;  // the agent's thread has the transport
  TransportRunner runner(*transport_, *host_jobs_);
  // A held host-data job allocates its share's buffers: on the I/O thread.
  const std::deque<RecordJob>& held = rules_.held();
  if (io ||
      std::none_of(held.begin(), held.end(), [](const RecordJob& j) { return j.host_data; })) {
    rules_.SubmitHeld(runner, answers_);
  } else {
    io_wanted_ = true;
  }
  done_.clear();
  transport_->Poll(done_);
  for (const RecordJobDone& d : done_) rules_.OnFinished(d, answers_);
  Status sent = SendAnswers(io);
  if (!sent.ok()) {
    EndServing(std::move(sent));
    return;
  }
  // Drained goes after every answer (rank zero drains only once it has them).
  if (paced_answers_.empty() && rules_.DrainDue()) {
    drain_handoff_ = true;
    wake_->Notify();
  }
}

void RankAgent::EndServing(Status outcome) {
  if (serve_end_) return;
  serve_end_ = std::move(outcome);
  wake_->Notify();
}

Status RankAgent::SendAnswers(bool io) {
  Status failed;
  std::vector<wire::JobDone> sent;
  for (wire::JobDone& done : answers_) {
    // A host-data fetch's bytes go first, paced; its answer follows them.
    if (std::optional<FetchedShare> share = host_jobs_->Finish(done.id, done.status.ok())) {
      paced_answers_.Add(std::move(*share), std::move(done));
      io_wanted_ |= !io;
      continue;
    }
    Status s = link_->Send(done);
    if (s.ok()) {
      sent.push_back(std::move(done));
    } else if (failed.ok()) {
      failed = s.WithContext("reporting job " + std::to_string(done.id.value) + " to rank zero");
    }
  }
  answers_.clear();
  // A fetch's bytes go from the link's I/O thread only (io_wanted_ above):
  // a thread that finished a job (the disk thread) must not spend its turn
  // copying them into the link. Bytes already waiting go on once the link
  // drained (on_drained).
  Status paced;
  if (io) paced = paced_answers_.Send(*link_, sent);
  if (failed.ok()) failed = std::move(paced);
  for (const wire::JobDone& done : sent) {
    ++(done.status.ok() ? jobs_done_ : jobs_failed_);
    bytes_ += done.bytes;
  }
  return failed;
}

}  // namespace strata
