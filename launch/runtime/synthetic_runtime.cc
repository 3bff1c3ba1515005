#include "launch/runtime/synthetic_runtime.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "coordinator/pool/lookup_grace.h"
#include "store/base/splitmix.h"

namespace strata {

namespace {

constexpr uint32_t kVocabulary = 151'936;
constexpr auto kPollPause = std::chrono::microseconds(200);
constexpr int kMaxReoffers = 5000;  // about a second of store progress

}  // namespace

void SyntheticRuntime::PageBytes(const Digest128& page_prefix, uint32_t plane, uint32_t rank,
                                 std::span<uint8_t> out) {
  SyntheticPageBytes(page_prefix, plane, rank, out);
}

void SyntheticRuntime::RowBytes(const PrefixKey& endpoint, uint32_t rank, std::span<uint8_t> out) {
  SyntheticRowBytes(endpoint, rank, out);
}

SyntheticRuntime::SyntheticRuntime(DevicePlanes& planes, HostStore* store,
                                   SyntheticRuntimeOptions options)
    : planes_(planes),
      store_(store),
      options_(options),
      page_tokens_(planes.geometry().page_tokens),
      evictions_(options.eviction_notices_max),
      start_(std::chrono::steady_clock::now()) {
  const RankGeometry& g = planes.geometry().ranks[0];
  for (uint64_t i = g.page_count; i-- > 0;) free_pages_.push_back(PageId(static_cast<uint32_t>(i)));
  for (uint64_t i = g.row_count; i-- > 0;)
    free_rows_.push_back(StateSlot(static_cast<uint32_t>(i)));
}

uint32_t SyntheticRuntime::NewConversation() {
  Conversation c;
  c.seed = options_.seed * 1'000'003 + conversations_.size();
  conversations_.push_back(std::move(c));
  return static_cast<uint32_t>(conversations_.size() - 1);
}

uint32_t SyntheticRuntime::Branch(uint32_t parent, uint64_t at_tokens) {
  const Conversation& p = conversations_.at(parent);
  Conversation c;
  c.seed = options_.seed * 1'000'003 + conversations_.size();
  c.tokens.assign(p.tokens.begin(),
                  p.tokens.begin() + std::min<uint64_t>(at_tokens, p.tokens.size()));
  for (uint64_t e : p.endpoints) {
    if (e <= c.tokens.size()) c.endpoints.push_back(e);
  }
  conversations_.push_back(std::move(c));
  return static_cast<uint32_t>(conversations_.size() - 1);
}

uint64_t SyntheticRuntime::conversation_tokens(uint32_t conversation) const {
  return conversations_.at(conversation).tokens.size();
}

void SyntheticRuntime::Extend(Conversation& c, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t state = c.seed ^ (c.tokens.size() * 0x2545f4914f6cdd1dULL);
    c.tokens.push_back(static_cast<Token>(SplitMix64(state) % kVocabulary));
  }
}

std::optional<PrefixKey> SyntheticRuntime::ResidentPrefix(const Conversation& c,
                                                          const PrefixHistory& h,
                                                          uint64_t limit) const {
  for (auto it = c.endpoints.rbegin(); it != c.endpoints.rend(); ++it) {
    if (*it >= limit) continue;
    PrefixKey k = h.key_at(*it);
    if (nodes_.count(k) != 0) return k;
  }
  return std::nullopt;
}

bool SyntheticRuntime::EvictOne() {
  auto victim = nodes_.end();
  for (auto it = nodes_.begin(); it != nodes_.end(); ++it) {
    if (it->second.children != 0 || it->second.pins != 0) continue;
    if (victim == nodes_.end() || it->second.last_use < victim->second.last_use) victim = it;
  }
  if (victim == nodes_.end()) return false;
  if (store_ != nullptr) {
    evictions_.Push({.key = victim->first, .generation = victim->second.generation});
  }
  Release(victim->first);
  ++stats_.gpu_evictions;
  return true;
}

void SyntheticRuntime::Release(const PrefixKey& key) {
  auto it = nodes_.find(key);
  STRATA_ASSERT(it != nodes_.end(), "releasing an unknown GPU checkpoint");
  Node& n = it->second;
  free_pages_.insert(free_pages_.end(), n.tail.begin(), n.tail.end());
  free_rows_.push_back(n.row);
  if (n.parent) --nodes_.at(*n.parent).children;
  nodes_.erase(it);
}

Status SyntheticRuntime::Reserve(uint64_t pages, std::vector<PageId>& out_pages,
                                 StateSlot& out_row) {
  while (free_pages_.size() < pages || free_rows_.empty()) {
    if (!EvictOne()) {
      return Status::Busy("synthetic GPU cache: every checkpoint is pinned; need " +
                          std::to_string(pages) + " pages");
    }
  }
  out_pages.assign(free_pages_.end() - static_cast<std::ptrdiff_t>(pages), free_pages_.end());
  free_pages_.resize(free_pages_.size() - pages);
  out_row = free_rows_.back();
  free_rows_.pop_back();
  return Status::Ok();
}

std::vector<PageId> SyntheticRuntime::Chain(const PrefixKey& key) const {
  std::vector<const Node*> path;
  for (const Node* n = &nodes_.at(key);; n = &nodes_.at(*n->parent)) {
    path.push_back(n);
    if (!n->parent) break;
  }
  std::vector<PageId> chain;
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    chain.insert(chain.end(), (*it)->tail.begin(), (*it)->tail.end());
  }
  return chain;
}

void SyntheticRuntime::AddNode(const PrefixKey& key, std::optional<PrefixKey> parent,
                               std::vector<PageId> tail, StateSlot row) {
  if (parent) ++nodes_.at(*parent).children;
  Node n;
  n.parent = parent;
  n.tail = std::move(tail);
  n.row = row;
  n.last_use = ++tick_;
  n.generation = next_generation_++;
  nodes_[key] = std::move(n);
}

PageWork SyntheticRuntime::Work(PageWorkKind kind, const PrefixHistory& h, uint64_t from_page,
                                const std::vector<PageId>& pages, StateSlot row,
                                const PrefixKey& endpoint) const {
  PageWork work{
      .kind = kind, .page_prefixes = {}, .pages = pages, .row = row, .endpoint = endpoint};
  for (size_t i = 0; i < pages.size(); ++i) {
    work.page_prefixes.push_back(h.key_at((from_page + i + 1) * page_tokens_).digest);
  }
  return work;
}

Result<PageWorkReport> SyntheticRuntime::ApplyEverywhere(const PageWork& work) {
  PageWorkReport total;
  // The planes here hold ranks 0..k-1 of the job; peers_ every other rank.
  for (uint32_t r = 0; r < planes_.geometry().rank_count(); ++r) {
    STRATA_ASSIGN_OR_RETURN(PageWorkReport own, ApplyPageWork(planes_, r, r, work));
    total.checked_bytes += own.checked_bytes;
  }
  if (peers_ != nullptr) {
    STRATA_ASSIGN_OR_RETURN(PageWorkReport theirs, peers_->Apply(work));
    total.checked_bytes += theirs.checked_bytes;
  }
  return total;
}

Status SyntheticRuntime::Compute(const PrefixHistory& h, uint64_t from_page,
                                 const std::vector<PageId>& pages, StateSlot row,
                                 const PrefixKey& endpoint) {
  return ApplyEverywhere(Work(PageWorkKind::kCompute, h, from_page, pages, row, endpoint)).status();
}

Status SyntheticRuntime::VerifyRestore(const PrefixHistory& h, uint64_t first_page,
                                       const InboundTicket& t, const PrefixKey& endpoint) {
  Result<PageWorkReport> checked =
      ApplyEverywhere(Work(PageWorkKind::kVerify, h, first_page, t.page_ids, t.row_slot, endpoint));
  if (!checked.ok()) {
    if (checked.status().code() == StatusCode::kCorruption) ++stats_.mismatches;
    return checked.status();
  }
  stats_.restored_bytes += checked->checked_bytes;
  stats_.restored_pages += t.page_ids.size();
  return Status::Ok();
}

void SyntheticRuntime::PollStore() {
  if (store_ == nullptr) return;
  // Store time is wall-clock milliseconds: record ages follow file mtimes.
  const uint64_t now_ms =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  std::vector<StoreEvent> fresh;
  StoreCall().Poll(now_ms, fresh);
  for (StoreEvent& e : fresh) {
    if (e.kind == StoreEvent::Kind::kExportRequested) {
      AnswerExport(e);
      continue;
    }
    if (e.kind == StoreEvent::Kind::kExportEnded) {
      EndExport(e.export_id);
      continue;
    }
    if (e.kind == StoreEvent::Kind::kStored || e.kind == StoreEvent::Kind::kStoreFailed) {
      auto it = in_flight_.find(e.checkpoint_id);
      if (it == in_flight_.end()) continue;
      auto node = nodes_.find(it->second);
      if (node != nodes_.end()) --node->second.pins;
      in_flight_.erase(it);
      ++(e.kind == StoreEvent::Kind::kStored ? stats_.stored : stats_.store_failed);
      continue;
    }
    events_.push_back(std::move(e));
  }
}

std::optional<HostHit> SyntheticRuntime::RetryOnLateAnswer(LookupTicket ticket,
                                                           const PrefixHistory& h,
                                                           uint64_t resident_tokens,
                                                           std::optional<HostHit> hit) {
  if (ticket == LookupTicket{}) return hit;
  PollStore();  // reads what has arrived since admission
  const LookupTicketStatus st = StoreCall().TicketStatus(ticket);
  if (st.state != LookupTicketState::kReady || !st.answered_late) return hit;
  const pool::LateAnswer late{
      .pool_consumed = st.pool_consumed,
      .admitted_consumed = hit ? hit->endpoint.consumed : 0,
      .retry_used = st.retry_used ? pool::RetryUsed::kYes : pool::RetryUsed::kNo,
      .prefill = pool::PrefillSubmitted::kNo,
      .inputs = pool::RequestInputs::kText,
      .drained = pool::LocalWorkDrained::kYes};
  if (pool::DecideLateAnswer(late) != pool::LateAnswerAction::kRetryNow) return hit;
  ++stats_.late_retries;
  std::optional<HostHit> retried = StoreCall().LookupFor(ticket, h, resident_tokens, h.size());
  return retried ? retried : hit;
}

Status SyntheticRuntime::Restore(const PrefixHistory& h, std::optional<PrefixKey>& resident,
                                 TurnReport& report) {
  const uint64_t a = resident ? resident->consumed : 0;
  ++stats_.host_lookups;
  // The request arrives and admits at once here: its pool lookup starts
  // (seed 2.15, "Lookups"), admission takes what the ticket has by then, and
  // an answer read after admission may retry it once (prefill not started).
  const LookupTicket lookup = StoreCall().BeginLookup(h, a, h.size());
  std::optional<HostHit> hit = StoreCall().LookupFor(lookup, h, a, h.size());
  hit = RetryOnLateAnswer(lookup, h, a, std::move(hit));
  StoreCall().EndLookup(lookup);
  if (!hit || (options_.use_policy && !policy_.ShouldFetch(*hit))) return Status::Ok();
  if (nodes_.count(hit->endpoint) != 0) {  // resident already, through another conversation
    resident = hit->endpoint;
    return Status::Ok();
  }
  if (resident) ++nodes_.at(*resident).pins;
  auto unpin = [&] {
    if (resident) --nodes_.at(*resident).pins;
  };
  InboundTicket ticket;
  ticket.ticket = JobId(next_ticket_++);
  if (Status s = Reserve(hit->pages, ticket.page_ids, ticket.row_slot); !s.ok()) {
    unpin();
    return Status::Ok();  // no room: prefill instead
  }
  auto give_back = [&] {
    free_pages_.insert(free_pages_.end(), ticket.page_ids.begin(), ticket.page_ids.end());
    free_rows_.push_back(ticket.row_slot);
    unpin();
  };
  const auto started = std::chrono::steady_clock::now();
  if (Status s = StoreCall().Fetch(*hit, ticket); !s.ok()) {
    give_back();
    return Status::Ok();
  }
  std::optional<StoreEvent> done;
  const auto deadline = started + options_.wait_bound;
  while (!done) {
    PollStore();
    for (auto it = events_.begin(); it != events_.end(); ++it) {
      if (it->kind == StoreEvent::Kind::kStopped) return it->status.WithContext("store stopped");
      if (it->ticket == ticket.ticket) {
        done = std::move(*it);
        events_.erase(it);
        break;
      }
    }
    if (done) break;
    if (Interrupted()) {
      unpin();  // as on a timeout: the copy may still run into the ids
      return Status::Aborted("restore of " + hit->endpoint.ToFileStem() +
                             " interrupted by a stop request");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      // The copy may still run into the ticket's ids: never reuse them.
      unpin();
      return Status::Aborted("restore of " + hit->endpoint.ToFileStem() +
                             " did not finish within " +
                             std::to_string(options_.wait_bound.count()) + " ms");
    }
    std::this_thread::sleep_for(kPollPause);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (done->kind != StoreEvent::Kind::kFetched) {
    give_back();
    return Status::Ok();  // a failed restore is a miss
  }
  policy_.RecordRestore(*hit, seconds);
  stats_.restore_seconds += seconds;
  const uint64_t first_page = a / page_tokens_;
  Status verified = VerifyRestore(h, first_page, ticket, hit->endpoint);
  AddNode(hit->endpoint, resident, ticket.page_ids, ticket.row_slot);
  unpin();
  STRATA_RETURN_IF_ERROR(verified);
  if (hit->tier == Tier::kDisk) PublishRestored(h, hit->endpoint);
  ++stats_.host_hits;
  stats_.host_reused_tokens += hit->endpoint.consumed - a;
  report.host_hit = true;
  report.host_reused_tokens = hit->endpoint.consumed - a;
  resident = hit->endpoint;
  return Status::Ok();
}

PublishedCheckpoint SyntheticRuntime::CheckpointOf(const PrefixHistory& h,
                                                   const PrefixKey& key) const {
  PublishedCheckpoint cp;
  cp.key = key;
  cp.bucket = h.bucket_digest(key.consumed);
  cp.chain = Chain(key);
  cp.row_slot = nodes_.at(key).row;
  cp.generation = nodes_.at(key).generation;
  uint64_t parent_consumed = 0;
  for (std::optional<PrefixKey> p = nodes_.at(key).parent; p; p = nodes_.at(*p).parent) {
    if (nodes_.at(*p).offered) {
      cp.parent = *p;
      parent_consumed = p->consumed;
      break;
    }
  }
  cp.tail_pages =
      static_cast<uint32_t>(key.consumed / page_tokens_ - parent_consumed / page_tokens_);
  return cp;
}

void SyntheticRuntime::PublishRestored(const PrefixHistory& h, const PrefixKey& key) {
  PublishedCheckpoint cp = CheckpointOf(h, key);
  cp.checkpoint_id = next_checkpoint_id_++;
  if (StoreCall().Store(cp) != StoreOutcome::kQueued) return;  // held already: nothing to do
  ++nodes_.at(key).pins;                                       // until the store copied it in
  in_flight_[cp.checkpoint_id] = key;
}

void SyntheticRuntime::Publish(const PrefixHistory& h, const PrefixKey& key, TurnReport& report) {
  if (store_ == nullptr) return;
  PublishedCheckpoint cp = CheckpointOf(h, key);
  cp.checkpoint_id = next_checkpoint_id_++;
  // Deferred and retry outcomes wait for store progress (an eviction's unlink,
  // a free transfer queue); a bounded number of re-offers, then give up.
  StoreOutcome outcome = StoreCall().Store(cp);
  for (int i = 0;
       i < kMaxReoffers && (outcome == StoreOutcome::kDeferred || outcome == StoreOutcome::kRetry);
       ++i) {
    std::this_thread::sleep_for(kPollPause);
    PollStore();
    outcome = StoreCall().Store(cp);
  }
  ++stats_.published;
  report.publish = outcome;
  Node& n = nodes_.at(key);
  if (outcome == StoreOutcome::kQueued) {
    ++n.pins;
    in_flight_[cp.checkpoint_id] = key;
  }
  n.offered = outcome == StoreOutcome::kQueued || outcome == StoreOutcome::kPresent;
}

Result<TurnReport> SyntheticRuntime::Turn(uint32_t conversation, uint64_t new_tokens) {
  if (conversation >= conversations_.size()) {
    return Status::InvalidArgument("no conversation " + std::to_string(conversation));
  }
  if (new_tokens == 0) return Status::InvalidArgument("a turn adds at least one token");
  if (Interrupted()) return Status::Aborted("turn not started: a stop was requested");
  PollStore();
  Conversation& c = conversations_[conversation];
  Extend(c, new_tokens);
  PrefixHistory h(c.tokens);
  const PrefixKey endpoint = h.key_at(h.size());
  TurnReport report;
  report.endpoint = endpoint.consumed;
  ++stats_.turns;

  std::optional<PrefixKey> resident = ResidentPrefix(c, h, h.size());
  if (resident) {
    ++stats_.gpu_hits;
    report.gpu_reused_tokens = resident->consumed;
    nodes_.at(*resident).last_use = ++tick_;
  }
  if (store_ != nullptr) STRATA_RETURN_IF_ERROR(Restore(h, resident, report));

  const uint64_t a = resident ? resident->consumed : 0;
  const uint64_t first_page = a / page_tokens_;
  const uint64_t pages = endpoint.consumed / page_tokens_ - first_page;
  next_step_pages_ = std::max(next_step_pages_, pages);
  if (resident) ++nodes_.at(*resident).pins;
  std::vector<PageId> ids;
  StateSlot row;
  Status reserved = Reserve(pages, ids, row);
  if (resident) --nodes_.at(*resident).pins;
  STRATA_RETURN_IF_ERROR(reserved);
  STRATA_RETURN_IF_ERROR(Compute(h, first_page, ids, row, endpoint));
  report.computed_tokens = endpoint.consumed - a;
  if (nodes_.count(endpoint) != 0) {
    // The same endpoint is already resident (a repeated conversation).
    free_pages_.insert(free_pages_.end(), ids.begin(), ids.end());
    free_rows_.push_back(row);
  } else {
    AddNode(endpoint, resident, std::move(ids), row);
    Publish(h, endpoint, report);
  }
  c.endpoints.push_back(endpoint.consumed);
  PollStore();
  return report;
}

void SyntheticRuntime::EvictGpu() {
  while (EvictOne()) {
  }
}

Status SyntheticRuntime::WaitForStores() {
  const auto deadline = std::chrono::steady_clock::now() + options_.wait_bound;
  while (!in_flight_.empty()) {
    PollStore();
    if (in_flight_.empty()) break;
    for (const StoreEvent& e : events_) {
      // A stopped store reports nothing more: its publications stay pinned.
      if (e.kind == StoreEvent::Kind::kStopped) {
        return e.status.WithContext("store stopped with " + std::to_string(in_flight_.size()) +
                                    " publications in flight");
      }
    }
    if (Interrupted()) {
      return Status::Aborted(std::to_string(in_flight_.size()) +
                             " publications still in flight at a stop request");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::Aborted(std::to_string(in_flight_.size()) +
                             " publications did not finish within the bound");
    }
    std::this_thread::sleep_for(kPollPause);
  }
  return Status::Ok();
}

}  // namespace strata
