#include "coordinator/join_session.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "rank_agent/apply_agreement.h"
#include "rank_agent/scan_summary.h"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;

// Between retries of an agreement frame refused because the send queue was
// full (only with very large agreements).
constexpr auto kSendRetryPause = std::chrono::milliseconds(1);

}  // namespace

// ---- AcceptedLinks ---------------------------------------------------------

void AcceptedLinks::Add(std::unique_ptr<wire::Link> link) {
  MutexLock lock(mu_);
  const uint64_t tag = next_tag_++;
  link->Start(inbox_->HandlersFor(tag));
  links_.emplace(tag, std::move(link));
}

wire::Link* AcceptedLinks::Find(uint64_t tag) {
  MutexLock lock(mu_);
  auto it = links_.find(tag);
  return it == links_.end() ? nullptr : it->second.get();
}

std::unique_ptr<wire::Link> AcceptedLinks::Take(uint64_t tag) {
  MutexLock lock(mu_);
  auto it = links_.find(tag);
  if (it == links_.end()) return nullptr;
  std::unique_ptr<wire::Link> link = std::move(it->second);
  links_.erase(it);
  return link;
}

void AcceptedLinks::CloseAll() {
  std::map<uint64_t, std::unique_ptr<wire::Link>> all;
  {
    MutexLock lock(mu_);
    all.swap(links_);
  }
  for (auto& [tag, link] : all) link->Close();
}

// ---- JoinSession -----------------------------------------------------------

JoinSession::JoinSession(const PeerTable& peers, RankZeroFacts self, uint64_t own_disk_limit_bytes,
                         AcceptedLinks& links, wire::LinkInbox& inbox, uint64_t scan_records_max)
    : peers_(peers),
      self_(self),
      links_(links),
      inbox_(inbox),
      scan_records_max_(scan_records_max),
      joined_(self.world_size, false),
      tag_of_(self.world_size, 0),
      scans_(self.world_size),
      scan_complete_(self.world_size, false),
      applied_(self.world_size, false) {
  joined_[0] = true;
  scan_complete_[0] = true;
  applied_[0] = true;
  stats_.disk_limit_bytes = own_disk_limit_bytes;
}

bool JoinSession::NextEvents(std::vector<wire::LinkEvent>& out, Clock::time_point deadline) {
  out.clear();
  inbox_.Take(out);
  if (!out.empty()) return true;
  if (Clock::now() >= deadline) return false;
  (void)inbox_.WaitUntil(deadline);
  inbox_.Take(out);
  return true;
}

std::string JoinSession::Missing() const {
  std::string ranks;
  for (uint32_t r = 1; r < self_.world_size; ++r) {
    if (!joined_[r] || !scan_complete_[r]) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  }
  std::string out = "ranks not joined: " + (ranks.empty() ? std::string("none") : ranks);
  if (stats_.rejected_hellos > 0) {
    out += "; " + std::to_string(stats_.rejected_hellos) +
           " Hello(s) refused, the last: " + stats_.last_rejection;
  }
  return out;
}

Status JoinSession::CollectScans(Clock::time_point deadline) {
  std::vector<wire::LinkEvent> events;
  auto complete = [&] {
    return std::all_of(scan_complete_.begin(), scan_complete_.end(), [](bool b) { return b; });
  };
  while (!complete()) {
    if (!NextEvents(events, deadline)) {
      return Status::Unavailable("join deadline passed: " + Missing());
    }
    for (wire::LinkEvent& e : events) {
      auto rank = rank_of_.find(e.tag);
      Status s = rank == rank_of_.end() ? HandleStranger(e) : HandleJoined(rank->second, e);
      if (!s.ok()) return s;
    }
  }
  return Status::Ok();
}

void JoinSession::RejectLink(uint64_t tag, const std::string& reason) {
  ++stats_.rejected_hellos;
  stats_.last_rejection = reason;
  refused_.insert(tag);
  spdlog::warn("record link refused: {}", reason);
  std::unique_ptr<wire::Link> link = links_.Take(tag);
  if (link == nullptr) return;
  (void)link->Send(wire::HelloReject{wire::FitText(reason)});
  link->Close();
}

Status JoinSession::HandleStranger(wire::LinkEvent& e) {
  if (refused_.count(e.tag) != 0) return Status::Ok();  // a refused link's last events
  if (e.kind == wire::LinkEvent::Kind::kClosed) {
    ++stats_.dropped_links;
    if (e.state.cause == wire::CloseCause::kHandshakeFailed) {
      ++stats_.tls_refused;
      spdlog::warn("record connection refused: {}", wire::DescribeClose(e.state));
    } else {
      spdlog::info("a record connection closed before its Hello ({})",
                   wire::DescribeClose(e.state));
    }
    (void)links_.Take(e.tag);
    return Status::Ok();
  }
  wire::Link* link = links_.Find(e.tag);
  if (link == nullptr) return Status::Ok();
  const std::string from = link->remote_endpoint().address;
  if (e.kind == wire::LinkEvent::Kind::kOverflow) {
    RejectLink(e.tag, "connection from " + from + " flooded rank zero before its Hello");
    return Status::Ok();
  }
  auto* hello = std::get_if<wire::Hello>(&e.message);
  if (hello == nullptr) {
    RejectLink(e.tag, "connection from " + from + " sent " +
                          std::string(wire::MessageName(e.message)) + " before Hello");
    return Status::Ok();
  }
  HelloDecision d = CheckHello(*hello, from, peers_, joined_, self_);
  switch (d.verdict) {
    case HelloVerdict::kRejectLink: RejectLink(e.tag, d.reason); return Status::Ok();
    case HelloVerdict::kFailStartup:
      stats_.last_rejection = d.reason;
      (void)link->Send(wire::HelloReject{wire::FitText(d.reason)});
      return Status::FailedPrecondition(d.reason);
    case HelloVerdict::kAccept: break;
  }
  const uint32_t r = hello->rank.value;
  joined_[r] = true;
  tag_of_[r] = e.tag;
  rank_of_[e.tag] = hello->rank;
  stats_.disk_limit_bytes = std::min(stats_.disk_limit_bytes, hello->disk_limit_bytes);
  spdlog::info("rank {} joined from {}", r, from);
  link->AcceptHello();  // full frame limit and heartbeats before the peer hears back
  return link->Send(wire::HelloAccept{});
}

Status JoinSession::HandleJoined(RankId rank, wire::LinkEvent& e) {
  if (e.kind == wire::LinkEvent::Kind::kClosed) {
    return Status::Unavailable("the record link of " + RankName(rank) +
                               " closed during the join (" + wire::DescribeClose(e.state) + ")");
  }
  if (e.kind == wire::LinkEvent::Kind::kOverflow) {
    return Status::FailedPrecondition(RankName(rank) + " flooded rank zero during the join");
  }
  wire::Message& m = e.message;
  const uint32_t r = rank.value;
  if (auto* summary = std::get_if<wire::ScanSummary>(&m)) {
    if (scan_complete_[r]) {
      return Status::FailedPrecondition(RankName(rank) + " sent a scan summary after its last");
    }
    if (scans_[r].size() + summary->records.size() > scan_records_max_) {
      return Status::FailedPrecondition(RankName(rank) + " summarized more than " +
                                        std::to_string(scan_records_max_) + " records");
    }
    scans_[r].insert(scans_[r].end(), summary->records.begin(), summary->records.end());
    scan_complete_[r] = summary->last;
    return Status::Ok();
  }
  if (auto* applied = std::get_if<wire::AgreementApplied>(&m)) {
    if (!agreement_sent_ || applied_[r]) {
      return Status::FailedPrecondition(RankName(rank) + " sent AgreementApplied out of turn");
    }
    if (!applied->status.ok()) {
      return Status(applied->status.code(), RankName(rank) + " could not apply the agreement: " +
                                                applied->status.message());
    }
    applied_[r] = true;
    return Status::Ok();
  }
  if (auto* close = std::get_if<wire::Close>(&m)) {
    return Status::Unavailable(RankName(rank) + " left the join: " + close->reason);
  }
  if (std::holds_alternative<wire::Heartbeat>(m)) return Status::Ok();
  return Status::FailedPrecondition(RankName(rank) + " sent " + std::string(wire::MessageName(m)) +
                                    " during the join");
}

Status JoinSession::Agree(LocalDisk& own, Durability durability, Clock::time_point deadline) {
  for (const ScannedRecord& r : own.scan().records) {
    STRATA_ASSIGN_OR_RETURN(wire::ScanRecord summary, SummarizeRecord(r));
    scans_[0].push_back(summary);
  }
  STRATA_ASSIGN_OR_RETURN(AgreementPlan plan, strata::Agree(scans_));
  stats_.agreement = plan.counts;
  spdlog::info(
      "join agreement: {} records kept ({} without their row); dropped {} missing on some "
      "rank, {} with differing headers, {} whose parent was dropped",
      plan.counts.kept, plan.counts.rows_dropped, plan.counts.missing, plan.counts.mismatched,
      plan.counts.orphaned);
  for (uint32_t r = 1; r < self_.world_size; ++r) {
    wire::Link* link = links_.Find(tag_of_[r]);
    if (link == nullptr) return Status::Internal("the link of a joined rank is gone");
    const std::vector<wire::AgreementEntry> verdicts = VerdictsFor(scans_[r], plan.ranks[r]);
    size_t sent = 0;
    do {
      wire::Agreement chunk;
      const size_t n = std::min(verdicts.size() - sent, wire::kAgreementEntriesPerFrameMax);
      chunk.entries.assign(verdicts.begin() + static_cast<std::ptrdiff_t>(sent),
                           verdicts.begin() + static_cast<std::ptrdiff_t>(sent + n));
      sent += n;
      chunk.last = sent == verdicts.size();
      Status s;
      while ((s = link->Send(chunk)).code() == StatusCode::kBusy && Clock::now() < deadline) {
        std::this_thread::sleep_for(kSendRetryPause);
      }
      if (!s.ok()) return s.WithContext("sending the agreement to " + RankName(RankId(r)));
    } while (sent < verdicts.size());
  }
  agreement_sent_ = true;
  Status own_applied = ApplyAgreement(own, VerdictsFor(scans_[0], plan.ranks[0]), durability);
  if (!own_applied.ok()) return own_applied.WithContext("rank 0 could not apply the agreement");
  std::vector<wire::LinkEvent> events;
  while (!std::all_of(applied_.begin(), applied_.end(), [](bool b) { return b; })) {
    if (!NextEvents(events, deadline)) {
      std::string ranks;
      for (uint32_t r = 1; r < self_.world_size; ++r) {
        if (!applied_[r]) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
      }
      return Status::Unavailable("join deadline passed: ranks " + ranks +
                                 " did not confirm the agreement");
    }
    for (wire::LinkEvent& e : events) {
      auto rank = rank_of_.find(e.tag);
      Status s = rank == rank_of_.end() ? HandleStranger(e) : HandleJoined(rank->second, e);
      if (!s.ok()) return s;
    }
  }
  return Status::Ok();
}

std::vector<ShardedPeer> JoinSession::TakePeers() {
  std::vector<ShardedPeer> out;
  for (uint32_t r = 1; r < self_.world_size; ++r) {
    out.push_back({RankId(r), tag_of_[r], links_.Take(tag_of_[r])});
    STRATA_ASSERT(out.back().link != nullptr, "a joined rank's link is gone");
  }
  return out;
}

void JoinSession::FailAll(const Status& why) {
  const std::string reason = wire::FitText("rank zero failed to start: " + why.message());
  for (uint32_t r = 1; r < self_.world_size; ++r) {
    if (!joined_[r]) continue;
    if (wire::Link* link = links_.Find(tag_of_[r])) (void)link->Send(wire::Close{reason});
  }
  links_.CloseAll();
}

}  // namespace strata
