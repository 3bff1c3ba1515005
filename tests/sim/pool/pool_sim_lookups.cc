// PoolSimWorld: lookups with tickets (pool_sim_world.h). A request begins its
// ticket when it arrives; the manager answers at once, and the answer reaches
// the instance inside the grace, after it, or steps later. Admission follows
// PooledStore::LookupFor over the real LookupTickets: what has arrived is
// filed, a pending ticket is waited for at most the rest of its grace, once.
// A late answer retries admission per DecideLateAnswer. The checks here judge
// each admission against the timeline, not against the table's own word.
#include <string>
#include <utility>

#include "tests/sim/pool/pool_sim_world.h"

namespace strata::pool::sim {
namespace {

constexpr uint64_t kStepUs = kStepMs * 1'000;

std::string Subject(uint32_t s) { return "subject " + std::to_string(s); }

}  // namespace

void PoolSimWorld::StartLookup(SimInstance& inst) {
  const uint32_t subject = static_cast<uint32_t>(rng_.Below(kSubjects));
  const PrefixHistory& h = subjects_[subject];
  const uint64_t id = next_request_++;
  PoolMessage looked =
      Ask(*inst.session, PoolLookup{.request_id = id,
                                    .tokens = {h.tokens().begin(), h.tokens().end()},
                                    .resident_tokens = 0,
                                    .before = kPageTokens});
  const auto* answer = std::get_if<PoolLookupAnswer>(&looked);
  if (answer == nullptr || !answer->status.ok()) {
    Violation("lookup failed");
    return;
  }
  const uint64_t connection = inst.session->value;
  const uint64_t begun = now_ms_ * 1'000 + rng_.Below(kStepUs / 2);
  const std::optional<LookupTicket> ticket = inst.tickets.Begin(connection, id, begun);
  if (!ticket) {
    Violation("the ticket table is full: tickets leak");
    return;
  }
  ++counts_.lookups;
  // When the answer reaches the instance: mostly inside the grace, else
  // after it, or steps later.
  const uint64_t pace = rng_.Below(100);
  const uint64_t delivery = pace < 60   ? begun + rng_.Below(1'500)
                            : pace < 85 ? begun + 1'500 + rng_.Below(6'000)
                                        : begun + rng_.Between(1, 4) * kStepUs;
  const uint64_t arrived_at_admission = begun + rng_.Below(3'000);

  // Admission (PooledStore::LookupFor).
  uint64_t at = arrived_at_admission;
  if (delivery <= at) (void)inst.tickets.Answer(connection, id, answer->chain);
  AdmissionLookup decision = inst.tickets.Admit(*ticket, at);
  if (decision == AdmissionLookup::kWait) {
    ++counts_.lookups_waited;
    const uint64_t until = at + inst.tickets.WaitLeftUs(*ticket, at);
    if (delivery <= until) {
      at = std::max(at, delivery);
      (void)inst.tickets.Answer(connection, id, answer->chain);
    } else {
      at = until;
    }
    decision = inst.tickets.Admit(*ticket, at);
    if (decision == AdmissionLookup::kWait) {
      Violation("a pending ticket still holds admission at the end of its grace");
      return;
    }
  }
  if (at > arrived_at_admission && at > begun + kLocalGraceUs) {
    Violation("admission of " + Subject(subject) + " held " + std::to_string(at - begun) +
              " us after its ticket began, past the grace");
    return;
  }
  const std::vector<PrefixKey>* chain =
      decision == AdmissionLookup::kWithPool ? inst.tickets.chain(*ticket) : nullptr;
  const bool planted = options_.planted_bug == PoolPlantedBug::kUsePendingTicket;
  if (chain == nullptr && planted && !answer->chain.empty()) chain = &answer->chain;
  if (chain != nullptr && delivery > at) {
    Violation("admission of " + Subject(subject) +
              " used pool candidates of a pending ticket (the answer reaches the instance " +
              std::to_string(delivery - at) + " us later)");
    return;
  }
  if (decision == AdmissionLookup::kLocalOnly) ++counts_.lookups_local;
  // A copy: ending the ticket below ends what `chain` points into.
  const std::optional<std::vector<PrefixKey>> claimed =
      chain != nullptr ? std::optional<std::vector<PrefixKey>>(*chain) : std::nullopt;
  inst.tickets.Admitted(*ticket, decision, claimed ? claimed->back().consumed : 0);
  if (inst.tickets.Status(*ticket).answered_late) {
    inst.late_lookups.push_back(
        SimLookup{.ticket = *ticket,
                  .subject = subject,
                  .connection = connection,
                  .request_id = id,
                  .begun_us = begun,
                  .delivery_us = delivery,
                  .chain = answer->chain,
                  .prefill = rng_.Chance(0.3) ? PrefillSubmitted::kYes : PrefillSubmitted::kNo,
                  .inputs = rng_.Chance(0.2) ? RequestInputs::kConditioned : RequestInputs::kText});
    Event(Name(inst) + " admits " + Subject(subject) + " without its pool answer (pending)");
  } else {
    (void)inst.tickets.End(*ticket);
  }
  if (claimed) Claim(inst, subject, *claimed, /*late_retry=*/false);
}

void PoolSimWorld::AdvanceLateLookups(SimInstance& inst) {
  const uint64_t now_us = now_ms_ * 1'000;
  const uint64_t live = inst.session->value;
  for (SimLookup& l : inst.late_lookups) {
    if (!violation_.ok()) return;
    if (l.connection == live && l.delivery_us <= now_us) {
      (void)inst.tickets.Answer(l.connection, l.request_id, l.chain);
    }
    const LookupTicketStatus st = inst.tickets.Status(l.ticket);
    if (st.state == LookupTicketState::kNone) {
      Violation("a late lookup's ticket ended before its answer");
      return;
    }
    if (st.state == LookupTicketState::kPending) continue;
    if (l.connection != live && inst.tickets.chain(l.ticket) != nullptr) {
      Violation("a ticket of a lost connection answered " + Subject(l.subject));
      return;
    }
    const LateAnswerAction action =
        DecideLateAnswer({.pool_consumed = st.pool_consumed,
                          .admitted_consumed = st.admitted_consumed,
                          .retry_used = st.retry_used ? RetryUsed::kYes : RetryUsed::kNo,
                          .prefill = l.prefill,
                          .inputs = l.inputs,
                          .drained = LocalWorkDrained::kYes});
    if (action == LateAnswerAction::kRetryNow) {
      const AdmissionLookup again = inst.tickets.Admit(l.ticket, now_us);
      const std::vector<PrefixKey>* chain = inst.tickets.chain(l.ticket);
      if (again != AdmissionLookup::kWithPool || chain == nullptr) {
        Violation("a late, longer answer did not admit with the pool");
        return;
      }
      const std::vector<PrefixKey> claimed = *chain;
      inst.tickets.Admitted(l.ticket, again, claimed.back().consumed);
      if (inst.tickets.Admit(l.ticket, now_us) != AdmissionLookup::kLocalOnly) {
        Violation("a late answer may retry admission a second time");
        return;
      }
      ++counts_.late_retries;
      Event(Name(inst) + " retries admission of " + Subject(l.subject) + " on its late answer");
      Claim(inst, l.subject, claimed, /*late_retry=*/true);
    }
    (void)inst.tickets.End(l.ticket);
    l.ticket = LookupTicket{};
  }
  std::erase_if(inst.late_lookups, [](const SimLookup& l) { return l.ticket == LookupTicket{}; });
}

}  // namespace strata::pool::sim
