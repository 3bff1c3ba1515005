// PooledStore's lookups (pooled_store.h): answers from the local chain and
// the own landing tier, lookup tickets to the manager begun when a request
// arrives, and admission with the pool's answer when it came in time.
#include <spdlog/spdlog.h>

#include <array>

#include "coordinator/pool/pooled_store.h"
#include "coordinator/pool/source_choice.h"

namespace strata::pool {

namespace {

// A SourceCandidate naming only what ChooseSource reads: the chain's keys.
SourceCandidate Candidate(SourceTier tier, const std::vector<PrefixKey>& chain) {
  SourceCandidate c{.tier = tier, .hit = {}};
  for (const PrefixKey& k : chain) {
    ChainLink link;
    link.key = k;
    c.hit.chain.push_back(link);
  }
  return c;
}

SourceTier TierOf(Tier tier) {
  return tier == Tier::kMemory ? SourceTier::kHostDram : SourceTier::kHostNvme;
}

}  // namespace

PooledStore::LocalAnswer PooledStore::LocalLookup(const PrefixHistory& history,
                                                  uint64_t resident_tokens, uint64_t before) {
  std::optional<HostHit> local = tiers_.local != nullptr
                                     ? tiers_.local->Lookup(history, resident_tokens, before)
                                     : std::nullopt;
  if (!own_landing()) return {.hit = std::move(local)};
  std::optional<HostHit> landed = tiers_.landing->Lookup(history, resident_tokens, before);
  if (!landed) return {.hit = std::move(local)};
  if (!local) return {.hit = std::move(landed), .from_landing = true};
  // The landing tier is DRAM: ChooseSource prefers it only for a longer
  // prefix than a local DRAM hit, and at equal length over NVMe.
  std::array<SourceCandidate, 2> candidates{Candidate(TierOf(local->tier), local->chain),
                                            Candidate(SourceTier::kHostDram, landed->chain)};
  if (ChooseSource(candidates) == 1) return {.hit = std::move(landed), .from_landing = true};
  return {.hit = std::move(local)};
}

std::optional<HostHit> PooledStore::Answer(LocalAnswer a) {
  if (a.hit) pool_hits_.erase(a.hit->endpoint);
  if (a.hit && a.from_landing) {
    landing_hits_.insert(a.hit->endpoint);
  } else if (a.hit) {
    landing_hits_.erase(a.hit->endpoint);
  }
  return std::move(a.hit);
}

std::optional<HostHit> PooledStore::Lookup(const PrefixHistory& history, uint64_t resident_tokens,
                                           uint64_t before) {
  const LookupTicket ticket = BeginLookup(history, resident_tokens, before);
  std::optional<HostHit> hit = LookupFor(ticket, history, resident_tokens, before);
  EndLookup(ticket);
  return hit;
}

LookupTicket PooledStore::BeginLookup(const PrefixHistory& history, uint64_t /*resident_tokens*/,
                                      uint64_t before) {
  PoolClient* client = link_->client();
  if (client == nullptr) return LookupTicket{};
  if (tickets_.open() >= kLookupTicketsMax) {
    ++stats_.lookup_tickets_refused;
    return LookupTicket{};
  }
  // The chain from its root (resident 0): a claim carries the GPU-held
  // records down to one the landing tier holds (PooledHitOf), since an
  // import never lands on a parent the tier lacks.
  Result<uint64_t> sent = client->SendLookup(history.tokens(), 0, before);
  if (!sent.ok()) {
    ++stats_.lookup_failures;
    if (ConnectionLost(sent.status())) LoseLink(sent.status());
    return LookupTicket{};
  }
  ++stats_.lookups;
  // Never nullopt: the table had room.
  return tickets_.Begin(link_->connection(), *sent, link_->NowUs()).value_or(LookupTicket{});
}

void PooledStore::FileAnswers(PoolClient& client) {
  for (uint64_t id : client.TakeAnsweredLookups()) {
    std::optional<PoolLookupAnswer> a = client.TakeLookupAnswer(id);
    if (!a) continue;
    // A refused lookup is an answer with nothing in it.
    std::vector<PrefixKey> chain;
    ChainSizes sizes;
    if (a->status.ok()) {
      chain = std::move(a->chain);
      sizes = ChainSizes{.base_consumed = a->base_consumed, .tail_pages = std::move(a->tail_pages)};
    }
    const std::optional<LookupTicket> t =
        tickets_.Answer(link_->connection(), id, std::move(chain), std::move(sizes));
    if (t && tickets_.use(*t) == TicketUse::kAdmittedEarly) ++stats_.late_answers;
  }
}

void PooledStore::LoseLink(const Status& why) {
  if (PoolClient* client = link_->connected(); client != nullptr) FileAnswers(*client);
  link_->Lost(why);
  puts_.Lost();
  (void)tickets_.FailPending(std::nullopt);
}

void PooledStore::PumpTickets() {
  PoolClient* client = link_->connected();
  (void)tickets_.FailPending(client != nullptr ? std::optional<uint64_t>(link_->connection())
                                               : std::nullopt);
  if (client == nullptr) return;
  // Each connection measured its own round trip (a network manager's grace).
  tickets_.set_grace_us(client->lookup_grace_us());
  if (Status s = client->Pump(); !s.ok()) {
    LoseLink(s);
    return;
  }
  FileAnswers(*client);
}

namespace {

// Whether the pool's `chain` answers this admission: an endpoint of
// `history` beyond what the GPU holds and within `before`.
bool ChainFits(const std::vector<PrefixKey>& chain, const PrefixHistory& history,
               uint64_t resident_tokens, uint64_t before) {
  if (chain.empty()) return false;
  const PrefixKey& end = chain.back();
  return end.consumed > resident_tokens && end.consumed <= before &&
         end.consumed <= history.size() && history.key_at(end.consumed) == end;
}

}  // namespace

std::optional<HostHit> PooledStore::LookupFor(LookupTicket ticket, const PrefixHistory& history,
                                              uint64_t resident_tokens, uint64_t before) {
  LocalAnswer local = LocalLookup(history, resident_tokens, before);
  if (ticket == LookupTicket{}) return Answer(std::move(local));
  PumpTickets();
  AdmissionLookup decision = tickets_.Admit(ticket, link_->NowUs());
  if (decision == AdmissionLookup::kWait) {
    // Once, for what is left of the grace; then admission goes on.
    ++stats_.lookup_waits;
    PoolClient* client = link_->connected();
    const std::optional<uint64_t> request = tickets_.PendingRequest(ticket, link_->connection());
    if (client != nullptr && request) {
      const std::chrono::microseconds left(tickets_.WaitLeftUs(ticket, link_->NowUs()));
      if (Status s = client->WaitAnswer(*request, left); !s.ok()) LoseLink(s);
    }
    PumpTickets();
    decision = tickets_.Admit(ticket, link_->NowUs());
    if (decision == AdmissionLookup::kWait) decision = AdmissionLookup::kLocalOnly;
  }
  if (decision == AdmissionLookup::kLocalOnly &&
      tickets_.Status(ticket).state == LookupTicketState::kPending) {
    ++stats_.lookup_failures;
  }
  std::vector<PrefixKey> chain;
  if (const std::vector<PrefixKey>* ready = tickets_.chain(ticket);
      decision == AdmissionLookup::kWithPool && ready != nullptr &&
      ChainFits(*ready, history, resident_tokens, before)) {
    chain = *ready;
  }
  const bool late = tickets_.use(ticket) == TicketUse::kAdmittedEarly;
  std::optional<HostHit> hit = AdmitWithPool(
      std::move(local), chain, chain.empty() ? nullptr : tickets_.sizes(ticket), resident_tokens);
  tickets_.Admitted(ticket, decision, hit ? hit->endpoint.consumed : 0);
  if (late && tickets_.use(ticket) == TicketUse::kRetried) ++stats_.late_retries;
  return hit;
}

LookupTicketStatus PooledStore::TicketStatus(LookupTicket ticket) const {
  return tickets_.Status(ticket);
}

void PooledStore::EndLookup(LookupTicket ticket) {
  const std::optional<LookupTickets::Request> request = tickets_.End(ticket);
  PoolClient* client = link_->connected();
  if (request && client != nullptr && request->connection == link_->connection()) {
    client->ForgetLookup(request->request_id);
  }
}

std::optional<HostHit> PooledStore::AdmitWithPool(LocalAnswer local,
                                                  const std::vector<PrefixKey>& chain,
                                                  const ChainSizes* sizes,
                                                  uint64_t resident_tokens) {
  if (chain.empty() || sizes == nullptr) return Answer(std::move(local));
  const SourceTier local_tier =
      local.from_landing || !local.hit ? SourceTier::kHostDram : TierOf(local.hit->tier);
  std::array<SourceCandidate, 2> candidates{
      Candidate(SourceTier::kPool, chain),
      local.hit ? Candidate(local_tier, local.hit->chain) : SourceCandidate{}};
  const std::optional<size_t> chosen = ChooseSource(candidates);
  if (!chosen || candidates[*chosen].tier != SourceTier::kPool) return Answer(std::move(local));
  std::optional<HostHit> pooled =
      PooledHitOf(chain, *sizes, resident_tokens, link_->page_tokens(),
                  HitRecordBytes{.page = tiers_.record_sizes.page_record_bytes,
                                 .row = tiers_.record_sizes.row_segment_bytes},
                  tiers_.disk_landing != nullptr ? Tier::kDisk : Tier::kMemory,
                  [this](const PrefixKey& k) { return tiers_.intake->Holds(k); });
  if (!pooled) {
    spdlog::debug("prefix cache pool: the manager's chain to {} does not size this admission",
                  chain.back().ToFileStem());
    return Answer(std::move(local));
  }
  landing_hits_.erase(pooled->endpoint);
  pool_hits_.insert(pooled->endpoint);
  return pooled;
}

}  // namespace strata::pool
