// LookupTickets: an instance's pool lookups in flight (seed 2.15, "Lookups"),
// as pure logic: no threads, sockets or clock reads. A ticket is begun when a
// request arrives, with the lookup already sent to the manager; the answer is
// filed against it whenever the owner reads it. Admission asks the table what
// the ticket allows (lookup_grace.h):
//
//   - the first admission: pool candidates only if the ticket is ready; a
//     pending one may hold admission for what is left of its grace
//     (kWait, WaitLeftUs), then admission goes on local results;
//   - a later admission never waits: pool candidates if ready, else local;
//   - after a first admission that went local while the ticket was pending,
//     the late answer may serve at most one later admission (the retry);
//     every admission after that is local only.
//
// A ticket whose connection is lost never gets its answer: FailPending makes
// it ready with nothing, so admission goes local at once. At most
// kLookupTicketsMax tickets are open; Begin refuses more (that request's
// admission is local only).
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "coordinator/pool/lookup_grace.h"
#include "coordinator/pool/pooled_hit.h"
#include "store/base/prefix_key.h"
#include "store/tier/host_store.h"

namespace strata::pool {

inline constexpr size_t kLookupTicketsMax = 256;

// How a ticket's admissions went so far (LookupTicketStatus, Admitted).
enum class TicketUse : uint8_t {
  kNotAdmitted,    // no admission yet
  kAdmittedPool,   // the first admission had the answer (or the grace had passed with none)
  kAdmittedEarly,  // the first admission went local while the ticket was pending
  kRetried,        // a later admission after kAdmittedEarly: the one retry is spent
};

class LookupTickets {
 public:
  explicit LookupTickets(uint64_t grace_us, size_t open_max = kLookupTicketsMax)
      : grace_us_(grace_us), open_max_(open_max) {}

  // A ticket for the lookup sent as `request_id` on `connection` at `now_us`;
  // nullopt when open_max tickets are open.
  std::optional<LookupTicket> Begin(uint64_t connection, uint64_t request_id, uint64_t now_us);
  // The manager's answer to `request_id` on `connection` (an empty chain: the
  // pool holds nothing), with the chain's `sizes`: the ticket it readied.
  // Nullopt when no open pending ticket asked it (it was ended, or failed
  // with its connection): the answer is dropped.
  std::optional<LookupTicket> Answer(uint64_t connection, uint64_t request_id,
                                     std::vector<PrefixKey> chain, ChainSizes sizes = {});
  // Pending tickets of every connection but `live` (none: of all) will never
  // be answered: each becomes ready with an empty chain. Returns how many.
  size_t FailPending(std::optional<uint64_t> live);

  // What admission of `ticket` may do at `now_us` (an unknown ticket: local).
  AdmissionLookup Admit(LookupTicket ticket, uint64_t now_us) const;
  // Microseconds a kWait admission may still hold (0 otherwise).
  uint64_t WaitLeftUs(LookupTicket ticket, uint64_t now_us) const;
  // Admission of `ticket` ended as `decision` (kWait is taken as kLocalOnly:
  // the wait is over), answering `consumed` tokens (0: nothing).
  void Admitted(LookupTicket ticket, AdmissionLookup decision, uint64_t consumed);
  // The ready chain (null when pending, unknown or empty).
  const std::vector<PrefixKey>* chain(LookupTicket ticket) const;
  // The ready chain's sizes (null whenever chain() is).
  const ChainSizes* sizes(LookupTicket ticket) const;

  LookupTicketStatus Status(LookupTicket ticket) const;
  TicketUse use(LookupTicket ticket) const;
  // The lookup request behind a ticket.
  struct Request {
    uint64_t connection = 0;
    uint64_t request_id = 0;
  };
  // Ends `ticket`; the request the client may forget (nullopt: unknown).
  std::optional<Request> End(LookupTicket ticket);
  // The pending request of `ticket` on `connection` (to wait on); nullopt
  // when it is not pending there.
  std::optional<uint64_t> PendingRequest(LookupTicket ticket, uint64_t connection) const;

  size_t open() const { return tickets_.size(); }
  uint64_t grace_us() const { return grace_us_; }
  // A new connection measured another round trip: tickets decide on this
  // grace from now on, those open already included.
  void set_grace_us(uint64_t grace_us) { grace_us_ = grace_us; }

 private:
  struct Entry {
    uint64_t connection = 0;
    uint64_t request_id = 0;
    uint64_t begun_us = 0;
    TicketState state = TicketState::kPending;
    std::vector<PrefixKey> chain;
    ChainSizes sizes;
    TicketUse use = TicketUse::kNotAdmitted;
    uint64_t admitted_consumed = 0;
    uint32_t admissions = 0;
  };
  const Entry* Find(LookupTicket ticket) const;

  uint64_t grace_us_;
  size_t open_max_;
  uint64_t next_ticket_ = 1;
  std::unordered_map<LookupTicket, Entry> tickets_;
};

}  // namespace strata::pool
