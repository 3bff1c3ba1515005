#include "coordinator/pool/lookup_tickets.h"

#include <utility>

namespace strata::pool {

std::optional<LookupTicket> LookupTickets::Begin(uint64_t connection, uint64_t request_id,
                                                 uint64_t now_us) {
  if (tickets_.size() >= open_max_) return std::nullopt;
  const LookupTicket ticket(next_ticket_++);
  Entry e;
  e.connection = connection;
  e.request_id = request_id;
  e.begun_us = now_us;
  tickets_.emplace(ticket, std::move(e));
  return ticket;
}

std::optional<LookupTicket> LookupTickets::Answer(uint64_t connection, uint64_t request_id,
                                                  std::vector<PrefixKey> chain, ChainSizes sizes) {
  for (auto& [ticket, e] : tickets_) {
    if (e.connection != connection || e.request_id != request_id) continue;
    if (e.state != TicketState::kPending) return std::nullopt;
    e.state = TicketState::kReady;
    e.chain = std::move(chain);
    e.sizes = std::move(sizes);
    return ticket;
  }
  return std::nullopt;
}

size_t LookupTickets::FailPending(std::optional<uint64_t> live) {
  size_t failed = 0;
  for (auto& [ticket, e] : tickets_) {
    if (e.state != TicketState::kPending || (live && e.connection == *live)) continue;
    e.state = TicketState::kReady;
    e.chain.clear();
    e.sizes = {};
    ++failed;
  }
  return failed;
}

const LookupTickets::Entry* LookupTickets::Find(LookupTicket ticket) const {
  auto it = tickets_.find(ticket);
  return it == tickets_.end() ? nullptr : &it->second;
}

AdmissionLookup LookupTickets::Admit(LookupTicket ticket, uint64_t now_us) const {
  const Entry* e = Find(ticket);
  if (e == nullptr) return AdmissionLookup::kLocalOnly;
  switch (e->use) {
    case TicketUse::kNotAdmitted:
      return DecideAdmissionLookup(e->state, e->begun_us, now_us, grace_us_);
    case TicketUse::kAdmittedPool:
    case TicketUse::kAdmittedEarly:
      // A later admission never waits (no new grace period).
      return e->state == TicketState::kReady ? AdmissionLookup::kWithPool
                                             : AdmissionLookup::kLocalOnly;
    case TicketUse::kRetried: return AdmissionLookup::kLocalOnly;
  }
  return AdmissionLookup::kLocalOnly;
}

uint64_t LookupTickets::WaitLeftUs(LookupTicket ticket, uint64_t now_us) const {
  if (Admit(ticket, now_us) != AdmissionLookup::kWait) return 0;
  const Entry* e = Find(ticket);
  const uint64_t until = e->begun_us + grace_us_;
  // A clock before the begin (DecideAdmissionLookup counts it as no wait yet).
  return now_us < e->begun_us ? grace_us_ : until - now_us;
}

void LookupTickets::Admitted(LookupTicket ticket, AdmissionLookup decision, uint64_t consumed) {
  auto it = tickets_.find(ticket);
  if (it == tickets_.end()) return;
  Entry& e = it->second;
  e.admitted_consumed = consumed;
  ++e.admissions;
  switch (e.use) {
    case TicketUse::kNotAdmitted:
      e.use = decision == AdmissionLookup::kWithPool || e.state == TicketState::kReady
                  ? TicketUse::kAdmittedPool
                  : TicketUse::kAdmittedEarly;
      return;
    case TicketUse::kAdmittedEarly:
      // The retry is spent only by an admission that had the answer.
      if (decision == AdmissionLookup::kWithPool) e.use = TicketUse::kRetried;
      return;
    case TicketUse::kAdmittedPool:
    case TicketUse::kRetried: return;
  }
}

const std::vector<PrefixKey>* LookupTickets::chain(LookupTicket ticket) const {
  const Entry* e = Find(ticket);
  if (e == nullptr || e->state != TicketState::kReady || e->chain.empty()) return nullptr;
  return &e->chain;
}

const ChainSizes* LookupTickets::sizes(LookupTicket ticket) const {
  const Entry* e = Find(ticket);
  if (e == nullptr || e->state != TicketState::kReady || e->chain.empty()) return nullptr;
  return &e->sizes;
}

LookupTicketStatus LookupTickets::Status(LookupTicket ticket) const {
  const Entry* e = Find(ticket);
  if (e == nullptr) return {};
  LookupTicketStatus s;
  s.state =
      e->state == TicketState::kReady ? LookupTicketState::kReady : LookupTicketState::kPending;
  s.pool_consumed = e->chain.empty() ? 0 : e->chain.back().consumed;
  s.admitted_consumed = e->admitted_consumed;
  s.admissions = e->admissions;
  s.answered_late = e->use == TicketUse::kAdmittedEarly || e->use == TicketUse::kRetried;
  s.retry_used = e->use == TicketUse::kRetried;
  return s;
}

TicketUse LookupTickets::use(LookupTicket ticket) const {
  const Entry* e = Find(ticket);
  return e == nullptr ? TicketUse::kNotAdmitted : e->use;
}

std::optional<LookupTickets::Request> LookupTickets::End(LookupTicket ticket) {
  auto it = tickets_.find(ticket);
  if (it == tickets_.end()) return std::nullopt;
  const Request request{.connection = it->second.connection, .request_id = it->second.request_id};
  tickets_.erase(it);
  return request;
}

std::optional<uint64_t> LookupTickets::PendingRequest(LookupTicket ticket,
                                                      uint64_t connection) const {
  const Entry* e = Find(ticket);
  if (e == nullptr || e->state != TicketState::kPending || e->connection != connection) {
    return std::nullopt;
  }
  return e->request_id;
}

}  // namespace strata::pool
