// PoolSimWorld: the run, the manager's side and the faults (pool_sim_world.h).
#include "tests/sim/pool/pool_sim_world.h"

#include <cstdio>
#include <string>
#include <utility>

#include "coordinator/pool/claim_rules.h"

namespace strata::pool::sim {
namespace {

constexpr size_t kTailLines = 40;
constexpr uint32_t kDrainStepsMax = 200;

std::vector<Token> SubjectTokens(uint32_t subject) {
  std::vector<Token> t(kPageTokens);
  for (uint32_t i = 0; i < kPageTokens; ++i) t[i] = static_cast<Token>(1'000 * (subject + 1) + i);
  return t;
}

}  // namespace

std::string_view PoolPlantedBugName(PoolPlantedBug bug) {
  switch (bug) {
    case PoolPlantedBug::kNone: return "none";
    case PoolPlantedBug::kReleaseBeforeCopy: return "release-before-copy";
    case PoolPlantedBug::kSkipChecksum: return "skip-checksum";
    case PoolPlantedBug::kUsePendingTicket: return "use-pending-ticket";
    case PoolPlantedBug::kEvictPinned: return "evict-pinned";
  }
  return "?";
}

void PoolSimCounts::Add(const PoolSimCounts& o) {
  seeds += o.seeds;
  steps += o.steps;
  puts_committed += o.puts_committed;
  puts_refused += o.puts_refused;
  claims_granted += o.claims_granted;
  restores_ok += o.restores_ok;
  restores_refused += o.restores_refused;
  claims_failed += o.claims_failed;
  instance_crashes += o.instance_crashes;
  manager_restarts += o.manager_restarts;
  slots_damaged += o.slots_damaged;
  evictions += o.evictions;
  lookups += o.lookups;
  lookups_waited += o.lookups_waited;
  lookups_local += o.lookups_local;
  late_retries += o.late_retries;
  tickets_failed += o.tickets_failed;
  holdings += o.holdings;
  exports_started += o.exports_started;
  exports_relayed += o.exports_relayed;
  exports_refused += o.exports_refused;
  exports_failed += o.exports_failed;
  notices_lost += o.notices_lost;
  exports_expired += o.exports_expired;
}

PoolSimWorld::PoolSimWorld(const PoolSimOptions& options) : options_(options), rng_(options.seed) {
  for (uint32_t s = 0; s < kSubjects; ++s) {
    subjects_.emplace_back(SubjectTokens(s));
    subject_keys_.push_back(subjects_.back().key_at(kPageTokens));
  }
  for (uint32_t i = 0; i < kInstances; ++i) {
    SimInstance inst;
    inst.sources = {"sim-instance-" + std::to_string(i)};
    inst.id = ComputeInstanceId("sim-pool", inst.sources);
    instances_.push_back(std::move(inst));
  }
  identity_.pool_name = "sim-pool";
  identity_.slot_bytes = kSlotBytes;
  identity_.slot_count = kSlotCount;
}

PoolSimReport PoolSimWorld::Run() {
  StartManager();
  for (uint32_t i = 0; i < options_.steps && violation_.ok(); ++i) {
    Step(/*faults=*/true);
  }
  // The drain: no faults and no new work, until every claim and put ended.
  for (uint32_t i = 0; i < kDrainStepsMax && violation_.ok() && !Quiet(); ++i) {
    Step(/*faults=*/false);
  }
  if (violation_.ok() && !Quiet()) {
    Violation("claims or puts still open after " + std::to_string(kDrainStepsMax) +
              " steps of drain: a claim never ended");
  }
  // Every export ended: its pin was released exactly once.
  for (const SimInstance& inst : instances_) {
    for (const auto& [subject, h] : inst.gpu) {
      if (violation_.ok() && h.pins != 0) {
        Violation(Name(inst) + " still pins subject " + std::to_string(subject) + " " +
                  std::to_string(h.pins) + " times after every export ended");
      }
    }
  }
  counts_.seeds = 1;
  PoolSimReport report;
  report.seed = options_.seed;
  report.violation = violation_;
  report.counts = counts_;
  report.trace_tail.assign(tail_.begin(), tail_.end());
  return report;
}

void PoolSimWorld::Step(bool faults) {
  ++step_;
  ++counts_.steps;
  now_ms_ += kStepMs;
  if (catalog_ == nullptr && manager_restart_in_ > 0 && --manager_restart_in_ == 0) StartManager();
  if (catalog_ != nullptr) ExpireClaims();
  if (catalog_ != nullptr) {
    const uint64_t expired = relay_->counts().expired;
    DeliverRelayAnswers(relay_->Expire(now_ms_));
    counts_.exports_expired += relay_->counts().expired - expired;
  }
  for (SimInstance& inst : instances_) {
    if (!inst.up) {
      if (--inst.restart_in == 0) {
        inst.up = true;
        Event(Name(inst) + " restarts");
      }
      continue;
    }
    InstanceTurn(inst, /*new_work=*/faults);
    if (!violation_.ok()) return;
  }
  if (faults) {
    if (rng_.Chance(0.015)) {
      SimInstance& inst = instances_[rng_.Below(kInstances)];
      if (inst.up) CrashInstance(inst);
    }
    if (catalog_ != nullptr && rng_.Chance(0.005)) CrashManager();
    if (catalog_ != nullptr && rng_.Chance(0.04)) DamageSlot();
  }
  if (violation_.ok()) CheckStep();
}

void PoolSimWorld::StartManager() {
  ++identity_.generation;
  Result<std::unique_ptr<Arena>> arena =
      Arena::Create("strata-pool-sim", kSlotBytes, kSlotCount, HugePages::kNever);
  if (!arena.ok()) {
    Violation("the arena could not be created: " + arena.status().ToString());
    return;
  }
  arena_ = std::move(*arena);
  catalog_ = std::make_unique<PoolCatalog>(
      CatalogLimits{.slot_count = kSlotCount, .slot_bytes = kSlotBytes, .claims_in_flight_max = 4});
  relay_ = std::make_unique<ExportRelay>(kManagerSetupLimitMsDefault);
  evicted_seen_ = 0;
  damaged_slots_.clear();
  Event("manager starts, generation " + std::to_string(identity_.generation));
}

void PoolSimWorld::CrashManager() {
  ++counts_.manager_restarts;
  catalog_.reset();
  relay_.reset();
  arena_.reset();
  oracle_.clear();
  manager_restart_in_ = static_cast<uint32_t>(rng_.Between(1, 4));
  // Every link closes: the instances abort their copies and reattach later;
  // their pending lookups will never be answered.
  for (SimInstance& inst : instances_) {
    counts_.tickets_failed += inst.tickets.FailPending(std::nullopt);
    inst.session.reset();
    inst.claims.clear();
    inst.puts.clear();
    inst.zombie_session.reset();
    inst.zombie_claims.clear();
    inst.zombie_puts = 0;
    inst.waiting.clear();  // their connection went: they failed
    // Unanswered asks go with the session; pinned copies end, then release
    // (their session is gone: the next manager numbers sessions anew).
    std::erase_if(inst.exports, [](const SimExport& e) { return !e.pinned; });
    for (SimExport& e : inst.exports) e.session = SessionId();
  }
  Event("manager crashes");
}

void PoolSimWorld::CrashInstance(SimInstance& inst) {
  ++counts_.instance_crashes;
  inst.up = false;
  inst.restart_in = static_cast<uint32_t>(rng_.Between(1, 8));
  const bool seen = rng_.Chance(0.6);
  Event(Name(inst) + " crashes with " + std::to_string(inst.claims.size()) + " claims and " +
        std::to_string(inst.puts.size()) + " puts in flight, " +
        (seen ? "the manager sees it" : "the manager does not see it"));
  if (inst.session.has_value() && catalog_ != nullptr) {
    if (seen) {
      if (Status ended = catalog_->EndSession(*inst.session); !ended.ok()) {
        Violation("EndSession of a live session: " + ended.ToString());
      }
      const SessionId gone = *inst.session;
      inst.session.reset();  // its own waiting claims are dropped, not answered
      inst.waiting.clear();
      DeliverRelayAnswers(relay_->SessionEnded(*catalog_, gone));
      for (auto it = oracle_.begin(); it != oracle_.end();) {
        const bool leaves = it->second.owner == inst.id && it->second.kind == PutKind::kOwn;
        it = leaves ? oracle_.erase(it) : std::next(it);
      }
    } else {
      // A crash before this one went unseen too: its session was replaced
      // by the Hello since, so only the latest session lingers.
      inst.zombie_session = inst.session;
      inst.zombie_claims.clear();
      for (SimClaim& c : inst.claims) {
        if (c.registered) inst.zombie_claims.push_back(std::move(c));
      }
      inst.zombie_puts = inst.puts.size();
      for (const SimExport& e : inst.exports) inst.zombie_puts += e.session == inst.session ? 1 : 0;
    }
  }
  // The runtime is gone with the process: its planes, pins and asks.
  inst.gpu.clear();
  std::fill(inst.page_owner.begin(), inst.page_owner.end(), 0);
  inst.exports.clear();
  inst.waiting.clear();
  inst.session.reset();
  inst.claims.clear();
  inst.puts.clear();
  // The process is gone, and with it every ticket.
  inst.tickets = LookupTickets(kLocalGraceUs);
  inst.late_lookups.clear();
}

void PoolSimWorld::DamageSlot() {
  if (oracle_.empty()) return;
  auto it = oracle_.begin();
  std::advance(it, static_cast<long>(rng_.Below(oracle_.size())));
  const OracleRecord& r = it->second;
  const size_t i = rng_.Below(r.slots.size());
  const uint64_t used = std::min<uint64_t>(kSlotBytes, r.bytes.size() - i * kSlotBytes);
  const uint64_t at = rng_.Below(used);
  std::byte& b = arena_->Slot(r.slots[i])[at];
  b ^= std::byte{static_cast<uint8_t>(1u << rng_.Below(8))};
  damaged_slots_.insert(r.slots[i].value);
  ++counts_.slots_damaged;
  Event("a byte flips in slot " + std::to_string(r.slots[i].value) + " of subject " +
        std::to_string(it->first));
}

void PoolSimWorld::ExpireClaims() {
  for (const FailedClaim& f : catalog_->ExpireClaims(now_ms_)) {
    bool found = false;
    for (SimInstance& inst : instances_) {
      for (std::vector<SimClaim>* list : {&inst.claims, &inst.zombie_claims}) {
        const std::optional<SessionId>& holder =
            list == &inst.claims ? inst.session : inst.zombie_session;
        if (holder != f.session) continue;
        for (SimClaim& c : *list) {
          if (c.claim != f.claim || !c.registered) continue;
          c.failed = true;
          found = true;
        }
      }
    }
    if (!found) {
      Violation("the manager failed claim " + std::to_string(f.claim.value) +
                " that no instance holds");
      return;
    }
    ++counts_.claims_failed;
    Event("manager fails claim " + std::to_string(f.claim.value) + ": " +
          std::string(ClaimHealthName(f.why)));
  }
}

void PoolSimWorld::Violation(const std::string& what) {
  if (!violation_.ok()) return;
  violation_ = Status::Internal("seed " + std::to_string(options_.seed) + " step " +
                                std::to_string(step_) + ": " + what);
  Event("VIOLATION " + what);
}

void PoolSimWorld::Event(const std::string& what) {
  std::string line = "[" + std::to_string(step_) + " " + std::to_string(now_ms_) + "ms] " + what;
  if (options_.trace) std::fprintf(stderr, "%s\n", line.c_str());
  tail_.push_back(std::move(line));
  if (tail_.size() > kTailLines) tail_.pop_front();
}

std::string PoolSimWorld::Name(const SimInstance& inst) const { return inst.sources.front(); }

PoolSimReport RunPoolSimulation(const PoolSimOptions& options) {
  PoolSimWorld world(options);
  return world.Run();
}

}  // namespace strata::pool::sim
