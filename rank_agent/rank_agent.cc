#include "rank_agent/rank_agent.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "rank_agent/apply_agreement.h"
#include "rank_agent/scan_summary.h"
#include "store/base/deliberate_leak.h"
#include "store/record/fingerprint.h"
#include "store/record/record_dir.h"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;

// Between retries of a Send refused because the queue was full (join only).
constexpr auto kSendRetryPause = std::chrono::milliseconds(1);

}  // namespace

std::string_view AgentStateName(AgentState state) {
  switch (state) {
    case AgentState::kJoining: return "joining";
    case AgentState::kServing: return "serving";
    case AgentState::kDraining: return "draining";
    case AgentState::kClosed: return "closed";
    case AgentState::kFailed: return "failed";
  }
  return "unknown";
}

RankAgent::RankAgent(RankAgentOptions options, RankJoin join)
    : options_(std::move(options)),
      join_(std::move(join)),
      wake_(std::make_shared<WakeSignal>()),
      inbox_(std::make_shared<wire::LinkInbox>(options_.inbox_messages_max)),
      rules_(options_.rank, options_.held_jobs_max),
      host_jobs_(std::make_unique<HostDataJobs>(RecordLayout(options_.geometry))) {
  inbox_->NotifyOnEvent(wake_);
}

Result<std::unique_ptr<RankAgent>> RankAgent::Start(RankAgentOptions options, RankJoin join,
                                                    std::unique_ptr<Transfers> transfers) {
  if (options.world_size < 2 || options.world_size > wire::kWorldSizeMax) {
    return Status::InvalidArgument("a rank agent needs a world size of 2.." +
                                   std::to_string(wire::kWorldSizeMax) + ", not " +
                                   std::to_string(options.world_size));
  }
  if (options.rank.value == 0 || options.rank.value >= options.world_size) {
    return Status::InvalidArgument(RankName(options.rank) + " is not a peer rank of world size " +
                                   std::to_string(options.world_size));
  }
  if (options.geometry.rank_count() != 1) {
    return Status::InvalidArgument("a rank agent's geometry holds its own rank only, not " +
                                   std::to_string(options.geometry.rank_count()) + " ranks");
  }
  if (options.disk_limit_bytes == 0) return Status::InvalidArgument("disk limit is zero");
  if (transfers == nullptr) return Status::InvalidArgument("no transfers for this rank's planes");
  if (!join) return Status::InvalidArgument("no way to join rank zero");
  STRATA_RETURN_IF_ERROR(ValidateGeometry(options.geometry));
  std::unique_ptr<RankAgent> agent(new RankAgent(std::move(options), std::move(join)));
  const RankAgentOptions& o = agent->options_;
  const LayoutFingerprint fingerprint = ComputeRankLayoutFingerprint(
      o.geometry.ranks[0], o.geometry.page_tokens, o.rank.value, o.world_size);
  const std::string context = RankName(o.rank) + " cannot open its record service";
  Result<std::unique_ptr<LocalDisk>> disk =
      LocalDisk::Open(o.geometry, o.identity, fingerprint, o.disk);
  if (!disk.ok()) return disk.status().WithContext(context);
  agent->disk_ = std::move(*disk);
  agent->record_dir_ = agent->disk_->path();
  Result<std::unique_ptr<DiskTransport>> transport =
      MakeRankTransport(o.make_transport, *agent->disk_, std::move(transfers), o.staged);
  agent->options_.make_transport = nullptr;  // called once: what it refers to is not kept
  if (!transport.ok()) return transport.status().WithContext(context);
  agent->transport_ = std::move(*transport);
  agent->transport_->NotifyOnCompletion(agent->wake_);
  agent->thread_ = std::thread([a = agent.get()] { a->Run(); });
  return agent;
}

RankAgent::~RankAgent() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

void RankAgent::Stop() {
  stop_ = true;
  inbox_->Interrupt();
}

std::optional<Status> RankAgent::Wait(Clock::time_point deadline) {
  MutexLock lock(mu_);
  while (!outcome_.has_value() && ended_.WaitUntil(lock, deadline)) {
  }
  return outcome_;
}

AgentStats RankAgent::stats() const {
  const wire::Link* link = link_view_.load();
  return {.jobs_done = jobs_done_.load(),
          .jobs_failed = jobs_failed_.load(),
          .bytes = bytes_.load(),
          .link_idle_spin_hits = link != nullptr ? link->stats().idle_spin_hits : 0};
}

void RankAgent::Run() {
  Status outcome = Join();
  if (outcome.ok()) outcome = Serve();
  outcome = Finish(std::move(outcome));
  if (!outcome.ok())
    spdlog::warn("{} record service ended: {}", RankName(options_.rank), outcome.ToString());
  state_ = outcome.ok() ? AgentState::kClosed : AgentState::kFailed;
  {
    MutexLock lock(mu_);
    outcome_ = outcome;
  }
  ended_.NotifyAll();
}

// ---- join ------------------------------------------------------------------

Status RankAgent::Join() {
  const Clock::time_point deadline = Clock::now() + options_.join_timeout;
  Result<RecordLinkTicket> ticket = join_(deadline);
  if (!ticket.ok()) return ticket.status().WithContext(RankName(options_.rank) + " rendezvous");
  if (ticket->world_size != options_.world_size) {
    return Status::FailedPrecondition(
        "rank zero has world size " + std::to_string(ticket->world_size) + ", " +
        RankName(options_.rank) + " " + std::to_string(options_.world_size));
  }
  if (stop_) return Status::Aborted(RankName(options_.rank) + " was stopped while joining");
  wire::LinkOptions link_options = options_.link;
  link_options.name = "record link to rank zero";
  Result<std::unique_ptr<wire::Link>> link = wire::Dial(ticket->record, link_options);
  if (!link.ok()) return link.status().WithContext("dialing rank zero");
  link_ = std::move(*link);
  link_view_ = link_.get();
  link_->Start(RecordLinkHandlers());

  wire::Hello hello;
  hello.nonce = ticket->nonce;
  hello.rank = options_.rank;
  hello.world_size = options_.world_size;
  hello.layout_fingerprint = ComputeLayoutFingerprint(options_.geometry);
  hello.disk_limit_bytes = options_.disk_limit_bytes;
  hello.has_disk_store = true;
  STRATA_RETURN_IF_ERROR(link_->Send(hello));
  STRATA_ASSIGN_OR_RETURN(wire::Message answer, Next(deadline, "its answer to Hello"));
  if (auto* reject = std::get_if<wire::HelloReject>(&answer)) {
    return Status::FailedPrecondition("rank zero rejected " + RankName(options_.rank) + ": " +
                                      reject->reason);
  }
  auto* accept = std::get_if<wire::HelloAccept>(&answer);
  if (accept == nullptr) {
    return Status::FailedPrecondition("rank zero answered Hello with " +
                                      std::string(wire::MessageName(answer)));
  }
  if (accept->protocol_version != wire::kProtocolVersion) {
    return Status::FailedPrecondition("rank zero speaks protocol version " +
                                      std::to_string(accept->protocol_version) + ", this rank " +
                                      std::to_string(wire::kProtocolVersion));
  }
  STRATA_RETURN_IF_ERROR(SendScan(deadline));
  return ReceiveAgreement(deadline);
}

Status RankAgent::SendScan(Clock::time_point deadline) {
  std::vector<wire::ScanRecord> records;
  for (const ScannedRecord& r : disk_->scan().records) {
    STRATA_ASSIGN_OR_RETURN(wire::ScanRecord summary, SummarizeRecord(r));
    records.push_back(summary);
  }
  size_t sent = 0;
  do {
    wire::ScanSummary chunk;
    const size_t n = std::min(records.size() - sent, wire::kScanRecordsPerFrameMax);
    chunk.records.assign(records.begin() + static_cast<std::ptrdiff_t>(sent),
                         records.begin() + static_cast<std::ptrdiff_t>(sent + n));
    sent += n;
    chunk.last = sent == records.size();
    STRATA_RETURN_IF_ERROR(SendPatiently(chunk, deadline));
  } while (sent < records.size());
  return Status::Ok();
}

Status RankAgent::ReceiveAgreement(Clock::time_point deadline) {
  std::vector<wire::AgreementEntry> verdicts;
  const size_t summarized = disk_->scan().records.size();
  for (;;) {
    STRATA_ASSIGN_OR_RETURN(wire::Message m, Next(deadline, "the agreement"));
    auto* part = std::get_if<wire::Agreement>(&m);
    if (part == nullptr) {
      return Status::FailedPrecondition("rank zero sent " + std::string(wire::MessageName(m)) +
                                        " instead of the agreement");
    }
    if (verdicts.size() + part->entries.size() > summarized) {
      return Status::FailedPrecondition("rank zero sent more verdicts than this rank's " +
                                        std::to_string(summarized) + " records");
    }
    verdicts.insert(verdicts.end(), part->entries.begin(), part->entries.end());
    if (part->last) break;
  }
  Status applied = ApplyAgreement(*disk_, verdicts, options_.disk.durability);
  if (applied.ok()) transport_->Seed(disk_->scan());
  STRATA_RETURN_IF_ERROR(
      SendPatiently(wire::AgreementApplied{wire::FitForWire(applied)}, deadline));
  return applied.WithContext(RankName(options_.rank) + " applying the agreement");
}

Result<wire::Message> RankAgent::Next(Clock::time_point deadline, std::string_view waiting_for) {
  for (;;) {
    if (events_.empty()) {
      std::vector<wire::LinkEvent> fresh;
      inbox_->Take(fresh);
      for (wire::LinkEvent& e : fresh) events_.push_back(std::move(e));
    }
    if (!events_.empty()) {
      wire::LinkEvent e = std::move(events_.front());
      events_.pop_front();
      switch (e.kind) {
        case wire::LinkEvent::Kind::kMessage:
          if (auto* close = std::get_if<wire::Close>(&e.message)) {
            return Status::Unavailable("rank zero ended the join while this rank waited for " +
                                       std::string(waiting_for) + ": " + close->reason);
          }
          if (std::holds_alternative<wire::Heartbeat>(e.message)) continue;
          return std::move(e.message);
        case wire::LinkEvent::Kind::kClosed:
          return Status::Unavailable("the record link to rank zero closed (" +
                                     wire::DescribeClose(e.state) +
                                     ") while this rank waited for " + std::string(waiting_for));
        case wire::LinkEvent::Kind::kOverflow:
          return Status::FailedPrecondition("rank zero sent more messages than this rank queues");
      }
    }
    if (stop_) return Status::Aborted(RankName(options_.rank) + " was stopped while joining");
    if (Clock::now() >= deadline) {
      return Status::Unavailable("rank zero did not send " + std::string(waiting_for) +
                                 " within the join timeout of " +
                                 std::to_string(options_.join_timeout.count()) + " ms");
    }
    (void)inbox_->WaitUntil(deadline);
  }
}

Status RankAgent::SendPatiently(const wire::Message& message, Clock::time_point deadline) {
  for (;;) {
    Status s = link_->Send(message);
    if (s.code() != StatusCode::kBusy || Clock::now() >= deadline || stop_) return s;
    std::this_thread::sleep_for(kSendRetryPause);
  }
}

// ---- ending ----------------------------------------------------------------

Status RankAgent::Finish(Status outcome) {
  // No pump is posted to the link from now on (the disk thread may outlive
  // it when the drain is not confirmed).
  if (transport_wake_) transport_wake_->AlsoRun(nullptr);
  if (link_) {
    if (!outcome.ok()) {
      (void)link_->Send(wire::Close{wire::FitText(outcome.message())});
    }
    link_->Close();
  }
  if (!transport_closed_) {
    drain_status_ = transport_->Close(options_.drain_timeout);
    transport_closed_ = true;
  }
  if (!drain_status_.ok()) {
    // Copies or disk I/O may still use the staging and this rank's planes:
    // keep the transport, its threads, the pool and the directory alive.
    LeakOnPurpose(std::move(transport_));
    LeakOnPurpose(std::move(disk_));
    {
      MutexLock lock(serve_mu_);
      if (!serve_end_) serve_end_ = drain_status_;  // the link's handlers serve no more
      LeakOnPurpose(std::move(host_jobs_));
    }
    const std::string kept = RankName(options_.rank) +
                             " did not confirm its drain; its transport, threads and staging "
                             "stay alive (keep device memory allocated): " +
                             drain_status_.message();
    return Status::Aborted(outcome.ok() ? kept : outcome.message() + "; " + kept);
  }
  return outcome;
}

}  // namespace strata
