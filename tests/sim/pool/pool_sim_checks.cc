// PoolSimWorld: the invariants checked after every step (pool_sim.h).
#include <string>

#include "coordinator/pool/claim_rules.h"

#include "tests/sim/pool/pool_sim_world.h"

namespace strata::pool::sim {

bool PoolSimWorld::Quiet() const {
  for (const SimInstance& inst : instances_) {
    if (!inst.up || !inst.claims.empty() || !inst.puts.empty() || inst.zombie_session.has_value() ||
        !inst.late_lookups.empty() || !inst.exports.empty() || !inst.waiting.empty()) {
      return false;
    }
  }
  // Every claim waiting for an export was answered: the relay holds none.
  return catalog_ != nullptr && relay_->counts().waiting == 0;
}

void PoolSimWorld::Reconcile() {
  if (catalog_ == nullptr) return;
  std::optional<SessionId> any;
  for (const SimInstance& inst : instances_) {
    if (inst.session.has_value()) any = inst.session;
  }
  if (!any.has_value()) return;  // nothing can vanish without a session but evictions seen later
  uint64_t vanished = 0;
  for (uint32_t s = 0; s < kSubjects; ++s) {
    Result<std::optional<LookupHit>> hit = catalog_->Lookup(*any, subjects_[s], 0, kPageTokens);
    if (!hit.ok()) {
      Violation("lookup of an open session failed: " + hit.status().ToString());
      return;
    }
    const bool visible =
        hit->has_value() && !(*hit)->chain.empty() && (*hit)->chain.back().key == subject_keys_[s];
    const bool known = oracle_.contains(s);
    if (visible && !known) {
      Violation("subject " + std::to_string(s) + " is claimable but no put committed it");
      return;
    }
    if (!visible && known) {
      oracle_.erase(s);
      ++vanished;
    }
  }
  const uint64_t evicted = catalog_->counts().evicted;
  if (evicted - evicted_seen_ != vanished) {
    Violation(std::to_string(vanished) + " committed records vanished, the manager evicted " +
              std::to_string(evicted - evicted_seen_));
    return;
  }
  counts_.evictions += vanished;
  evicted_seen_ = evicted;
}

void PoolSimWorld::CheckPutSlots(const std::vector<SlotId>& granted, const SimInstance& putter) {
  auto in_use = [&](SlotId slot) -> std::string {
    for (const SimInstance& inst : instances_) {
      // Copies run for the live claims only (a crashed instance's stopped).
      for (const SimClaim& c : inst.claims) {
        for (const ClaimedRecord& r : c.records) {
          for (SlotId s : r.slots) {
            if (s == slot) return "a copy of claim " + std::to_string(c.claim.value) + " reads it";
          }
        }
      }
      for (const SimPut& p : inst.puts) {
        if (&inst == &putter && p.slots == granted) continue;
        for (SlotId s : p.slots) {
          if (s == slot) return "another put writes it";
        }
      }
    }
    for (const auto& [subject, r] : oracle_) {
      for (SlotId s : r.slots) {
        if (s == slot) return "committed subject " + std::to_string(subject) + " owns it";
      }
    }
    return "";
  };
  for (SlotId slot : granted) {
    if (const std::string why = in_use(slot); !why.empty()) {
      Violation("slot " + std::to_string(slot.value) + " granted to a put while " + why);
      return;
    }
  }
}

void PoolSimWorld::CheckStep() {
  uint64_t sessions = 0;
  uint64_t claims = 0;
  uint64_t pending = 0;
  for (const SimInstance& inst : instances_) {
    // Every ticket ends: only those waiting for a late answer stay open.
    if (inst.tickets.open() != inst.late_lookups.size()) {
      Violation(Name(inst) + " holds " + std::to_string(inst.tickets.open()) + " tickets for " +
                std::to_string(inst.late_lookups.size()) + " late lookups: tickets leak");
      return;
    }
    sessions += (inst.session.has_value() ? 1 : 0) + (inst.zombie_session.has_value() ? 1 : 0);
    pending += inst.puts.size() + inst.zombie_puts;
    // An export's put is pending in the catalog while its session lives.
    for (const SimExport& e : inst.exports) pending += e.session == inst.session ? 1 : 0;
    for (const std::vector<SimClaim>* list : {&inst.claims, &inst.zombie_claims}) {
      for (const SimClaim& c : *list) {
        if (c.failed && list == &inst.claims && c.registered) {
          Violation("claim " + std::to_string(c.claim.value) + " failed but not released");
          return;
        }
        if (c.registered && !c.failed) {
          ++claims;
          if (now_ms_ > c.deadline_ms + kStepMs) {
            Violation("claim " + std::to_string(c.claim.value) + " still runs " +
                      std::to_string(now_ms_ - c.deadline_ms) + " ms past its deadline");
            return;
          }
          if (now_ms_ > c.last_progress_ms + kNoProgressTimeoutMs + kStepMs) {
            Violation("claim " + std::to_string(c.claim.value) + " made no progress for " +
                      std::to_string(now_ms_ - c.last_progress_ms) + " ms and still runs");
            return;
          }
        }
      }
    }
  }
  if (catalog_ == nullptr) return;
  // The slot lifetime rule (slot_table.h): every slot a running copy reads is
  // held by the manager, so no put can be granted it.
  for (const SimInstance& inst : instances_) {
    for (const SimClaim& c : inst.claims) {
      for (const ClaimedRecord& r : c.records) {
        for (SlotId slot : r.slots) {
          if (catalog_->slots().IsHeld(slot)) continue;
          Violation("a copy of claim " + std::to_string(c.claim.value) + " reads slot " +
                    std::to_string(slot.value) + ", which the manager does not hold");
          return;
        }
      }
    }
  }
  if (Status ok = catalog_->CheckInvariants(); !ok.ok()) {
    Violation("catalog invariants: " + ok.ToString());
    return;
  }
  Reconcile();
  if (!violation_.ok()) return;
  const CatalogCounts c = catalog_->counts();
  if (c.sessions != sessions || c.claims_in_flight != claims ||
      c.records != oracle_.size() + pending) {
    Violation("catalog counts (sessions " + std::to_string(c.sessions) + ", claims " +
              std::to_string(c.claims_in_flight) + ", records " + std::to_string(c.records) +
              ") differ from the oracle's (" + std::to_string(sessions) + ", " +
              std::to_string(claims) + ", " + std::to_string(oracle_.size()) + " + " +
              std::to_string(pending) + " in flight)");
  }
}

}  // namespace strata::pool::sim
