// PoolSimWorld: an instance's turn (pool_sim_world.h). It follows the
// client's protocol (pool_client.cc) against the manager's dispatch: Hello,
// lookup then claim, copy out with the checksum check, release; put, copy in
// hashing the arena's bytes, commit. A refused put waits for the manager's
// progress (put_rules.h).
#include <algorithm>
#include <string>
#include <utility>

#include "coordinator/pool/hashed_copy.h"
#include "coordinator/pool/pool_messages.h"
#include "store/record/checksum.h"
#include "tests/sim/pool/pool_sim_world.h"

namespace strata::pool::sim {
namespace {

constexpr size_t kClaimsPerInstanceMax = 3;
constexpr size_t kPutsPerInstanceMax = 2;
constexpr uint32_t kSlowCopySteps = 40;  // 20 s: past any claim's deadline

std::string Subject(uint32_t s) { return "subject " + std::to_string(s); }

}  // namespace

PoolMessage PoolSimWorld::Ask(SessionId session, const PoolMessage& request) {
  std::optional<PoolMessage> answer = AnswerRequest(*catalog_, session, request, now_ms_);
  if (!answer.has_value()) {
    Violation("the dispatch refused a request as not one");
    return PoolDone{};
  }
  return std::move(*answer);
}

void PoolSimWorld::Attach(SimInstance& inst) {
  PoolHello hello;
  hello.instance_sources = inst.sources;
  hello.layout[0] = 1;
  hello.rank_plane_bytes = {{1024, 2048}};
  hello.page_tokens = kPageTokens;
  auto accepted = AcceptHello(*catalog_, identity_, hello, now_ms_);
  if (const auto* reject = std::get_if<PoolHelloReject>(&accepted)) {
    Violation("Hello rejected: " + reject->reason);
    return;
  }
  const HelloAccepted& ok = std::get<HelloAccepted>(accepted);
  if (ok.accept.instance != inst.id || ok.accept.generation != identity_.generation) {
    Violation("Hello accepted with another instance id or generation");
    return;
  }
  // A lingering session of this instance is replaced: exports it was asked
  // for fail their waiting claims now.
  if (inst.zombie_session.has_value()) {
    DeliverRelayAnswers(relay_->SessionEnded(*catalog_, *inst.zombie_session));
  }
  inst.session = ok.session;
  // The new session starts without holdings: the runtime announces them all.
  if (!inst.gpu.empty()) {
    PoolAnnounce all{.request_id = next_request_++,
                     .reset = true,
                     .held = {},
                     .withdrawn = {},
                     .sizes = kExportSizes};
    for (const auto& [subject, h] : inst.gpu) {
      all.held.push_back(Holding{.key = subject_keys_[subject],
                                 .generation = h.generation,
                                 .bucket_digest = subjects_[subject].bucket_digest(kPageTokens)});
    }
    (void)Ask(*inst.session, all);
  }
  // Lookups asked on an earlier connection will never be answered.
  counts_.tickets_failed += inst.tickets.FailPending(ok.session.value);
  // A lingering session of the same instance is replaced: its claims end and
  // its puts abort (its records stay).
  inst.zombie_session.reset();
  inst.zombie_claims.clear();
  inst.zombie_puts = 0;
  Event(Name(inst) + " attaches, session " + std::to_string(ok.session.value));
}

void PoolSimWorld::InstanceTurn(SimInstance& inst, bool new_work) {
  if (catalog_ == nullptr) return;
  if (!inst.session.has_value()) {
    Attach(inst);
    return;
  }
  AdvanceClaims(inst);
  if (violation_.ok()) AdvancePuts(inst);
  if (violation_.ok()) ServeExports(inst);
  if (violation_.ok()) AdvanceLateLookups(inst);
  if (!violation_.ok() || !new_work) return;
  if (rng_.Chance(0.3)) {
    if (rng_.Chance(0.6)) {
      Hold(inst);
    } else {
      EvictGpu(inst);
    }
  }
  if (!violation_.ok() || !rng_.Chance(0.6)) return;
  if (rng_.Chance(0.5)) {
    if (inst.puts.size() < kPutsPerInstanceMax) StartPut(inst);
  } else if (inst.claims.size() < kClaimsPerInstanceMax) {
    StartLookup(inst);
  }
}

void PoolSimWorld::Release(SimInstance& inst, SimClaim& claim) {
  const uint64_t id = next_request_++;
  PoolMessage answer = Ask(*inst.session, PoolRelease{.request_id = id, .claim = claim.claim});
  const auto* done = std::get_if<PoolDone>(&answer);
  if (done == nullptr || !done->status.ok()) {
    Violation("release of claim " + std::to_string(claim.claim.value) + " refused: " +
              (done != nullptr ? done->status.ToString() : std::string("no answer")));
  }
  claim.registered = false;
}

void PoolSimWorld::AdvanceClaims(SimInstance& inst) {
  for (SimClaim& c : inst.claims) {
    if (!violation_.ok()) return;
    if (c.failed) {
      // The manager failed it: the copy stops, and the claim is released.
      if (c.registered) Release(inst, c);
      c.steps_left = 0;
      continue;
    }
    if (c.pace == CopyPace::kStalled) continue;
    if (--c.steps_left > 0) {
      if (c.registered && catalog_->ClaimProgress(*inst.session, c.claim, now_ms_).ok()) {
        c.last_progress_ms = now_ms_;
      }
      continue;
    }
    FinishCopy(inst, c);
    if (c.registered) Release(inst, c);
  }
  std::erase_if(inst.claims, [](const SimClaim& c) { return !c.registered && c.steps_left == 0; });
}

void PoolSimWorld::FinishCopy(SimInstance& inst, SimClaim& claim) {
  HashPipeline& hash = hash_;
  for (size_t i = 0; i < claim.records.size(); ++i) {
    const ClaimedRecord& r = claim.records[i];
    if (Status fit = CheckSlotsFit(r.slots, r.bytes, kSlotBytes, kSlotCount); !fit.ok()) {
      Violation("a claim granted slots that do not fit: " + fit.ToString());
      return;
    }
    std::vector<std::byte> out(r.bytes);
    hash.Reset();
    uint64_t at = 0;
    bool damaged = false;
    for (SlotId slot : r.slots) {
      const uint64_t n = std::min<uint64_t>(kSlotBytes, r.bytes - at);
      CopyHashed(std::span<std::byte>(out).subspan(at, n), arena_->Slot(slot).first(n), hash);
      damaged = damaged || damaged_slots_.contains(slot.value);
      at += n;
    }
    const bool passes =
        hash.Digest() == r.checksum || options_.planted_bug == PoolPlantedBug::kSkipChecksum;
    if (!passes) {
      if (!damaged) {
        Violation(Name(inst) + " claim " + std::to_string(claim.claim.value) + ": intact record " +
                  r.key.ToFileStem() + " fails its checksum");
        return;
      }
      ++counts_.restores_refused;
      Event(Name(inst) + " refuses damaged record " + r.key.ToFileStem() + " (checksum)");
      continue;
    }
    if (out != claim.expected[i]) {
      Violation(Name(inst) + " claim " + std::to_string(claim.claim.value) + " restored " +
                r.key.ToFileStem() + " with bytes other than those put");
      return;
    }
    ++counts_.restores_ok;
  }
  Event(Name(inst) + " finishes the copy of claim " + std::to_string(claim.claim.value));
}

void PoolSimWorld::AdvancePuts(SimInstance& inst) {
  for (SimPut& p : inst.puts) {
    if (!violation_.ok()) return;
    if (--p.steps_left > 0) continue;
    const uint64_t id = next_request_++;
    if (rng_.Chance(0.05)) {  // the handover failed: the instance aborts
      PoolMessage answer = Ask(*inst.session, PoolAbort{.request_id = id, .put = p.put});
      const auto* done = std::get_if<PoolDone>(&answer);
      if (done == nullptr || !done->status.ok()) Violation("abort of a live put refused");
      Event(Name(inst) + " aborts its put of " + Subject(p.subject));
      continue;
    }
    HashPipeline& hash = hash_;
    hash.Reset();
    uint64_t at = 0;
    for (SlotId slot : p.slots) {
      const uint64_t n = std::min<uint64_t>(kSlotBytes, p.bytes.size() - at);
      CopyHashed(arena_->Slot(slot).first(n), std::span<const std::byte>(p.bytes).subspan(at, n),
                 hash);
      damaged_slots_.erase(slot.value);
      at += n;
    }
    PoolMessage answer =
        Ask(*inst.session, PoolCommit{.request_id = id, .put = p.put, .checksum = hash.Digest()});
    const auto* done = std::get_if<PoolDone>(&answer);
    if (done == nullptr || !done->status.ok()) {
      Violation("commit of a live put refused: " +
                (done != nullptr ? done->status.ToString() : std::string("no answer")));
      return;
    }
    oracle_[p.subject] =
        OracleRecord{.bytes = p.bytes, .slots = p.slots, .owner = inst.id, .kind = p.kind};
    ++counts_.puts_committed;
    Event(Name(inst) + " commits " + Subject(p.subject));
  }
  std::erase_if(inst.puts, [](const SimPut& p) { return p.steps_left == 0; });
}

void PoolSimWorld::StartPut(SimInstance& inst) {
  if (!MayRetry(inst.gate, catalog_->progress_epoch(), now_ms_)) return;
  const uint32_t subject = static_cast<uint32_t>(rng_.Below(kSubjects));
  const PrefixHistory& h = subjects_[subject];
  SimPut p{.session = *inst.session,
           .put = {},
           .subject = subject,
           .kind = rng_.Chance(0.3) ? PutKind::kOwn : PutKind::kCascade,
           .slots = {},
           .bytes = std::vector<std::byte>(rng_.Between(1, 3 * kSlotBytes)),
           .steps_left = static_cast<uint32_t>(rng_.Between(1, 3))};
  for (std::byte& b : p.bytes) b = static_cast<std::byte>(rng_.Next());
  const uint64_t id = next_request_++;
  PoolMessage answer =
      Ask(*inst.session, PoolPut{.request_id = id,
                                 .put = PutRequest{.key = subject_keys_[subject],
                                                   .parent = std::nullopt,
                                                   .bucket_digest = h.bucket_digest(kPageTokens),
                                                   .bytes = p.bytes.size(),
                                                   .kind = p.kind}});
  const auto* a = std::get_if<PoolPutAnswer>(&answer);
  if (a == nullptr) {
    Violation("a put answered with another message");
    return;
  }
  // A put may evict, a refused one too (what it freed stays free).
  Reconcile();
  if (!violation_.ok()) return;
  if (a->status.code() == StatusCode::kBusy) {
    ++counts_.puts_refused;
    inst.gate =
        GateFor(DecidePut(PutEvent::kRefused, 0).action, catalog_->progress_epoch(), now_ms_);
    Event(Name(inst) + " put of " + Subject(subject) + " refused: " + a->status.message());
    return;
  }
  if (a->status.code() == StatusCode::kAlreadyExists) return;
  if (!a->status.ok()) {
    Violation("put refused unexpectedly: " + a->status.ToString());
    return;
  }
  p.put = a->put;
  p.slots = a->slots;
  Event(Name(inst) + " put of " + Subject(subject) + " granted " + std::to_string(p.slots.size()) +
        " slots");
  CheckPutSlots(p.slots, inst);
  inst.puts.push_back(std::move(p));
}

void PoolSimWorld::Claim(SimInstance& inst, uint32_t subject, const std::vector<PrefixKey>& chain,
                         bool late_retry) {
  const PoolClaim claim{.request_id = next_request_++, .chain = chain};
  // The server's order: a claim of a holding the pool lacks is an export's.
  if (ClaimThroughRelay(inst, subject, claim)) return;
  PoolMessage answer = Ask(*inst.session, claim);
  const auto* a = std::get_if<PoolClaimAnswer>(&answer);
  if (a == nullptr) {
    Violation("a claim answered with another message");
    return;
  }
  if (a->status.code() == StatusCode::kBusy) return;
  // The record may have gone (or be put again) since a late answer named it.
  if (late_retry && (a->status.code() == StatusCode::kNotFound ||
                     a->status.code() == StatusCode::kFailedPrecondition)) {
    return;
  }
  if (!a->status.ok()) {
    Violation("claim of a record the lookup just found refused: " + a->status.ToString());
    return;
  }
  TakeGrant(inst, subject, *a);
}

void PoolSimWorld::TakeGrant(SimInstance& inst, uint32_t subject, const PoolClaimAnswer& grant) {
  const PoolClaimAnswer* a = &grant;
  SimClaim c{.session = *inst.session,
             .claim = a->claim,
             .deadline_ms = now_ms_ + a->budget_ms,
             .last_progress_ms = now_ms_,
             .records = a->records,
             .expected = {},
             .pace = CopyPace::kNormal,
             .steps_left = static_cast<uint32_t>(rng_.Between(1, 4)),
             .registered = true,
             .failed = false};
  for (const ClaimedRecord& r : c.records) {
    auto it = std::find(subject_keys_.begin(), subject_keys_.end(), r.key);
    const auto oracle = it == subject_keys_.end()
                            ? oracle_.end()
                            : oracle_.find(static_cast<uint32_t>(it - subject_keys_.begin()));
    if (oracle == oracle_.end()) {
      Violation("claim granted record " + r.key.ToFileStem() + " that no put committed");
      return;
    }
    c.expected.push_back(oracle->second.bytes);
  }
  const uint64_t pace = rng_.Below(100);
  // The planted bug's copies all progress: the checks must catch the reuse.
  const bool early_release = options_.planted_bug == PoolPlantedBug::kReleaseBeforeCopy;
  if (pace < 8 && !early_release) c.pace = CopyPace::kStalled;
  if (pace >= 8 && pace < 12 && !early_release) {
    c.pace = CopyPace::kSlow;
    c.steps_left = kSlowCopySteps;
  }
  ++counts_.claims_granted;
  Event(Name(inst) + " claims " + Subject(subject) + " as claim " + std::to_string(c.claim.value) +
        (c.pace == CopyPace::kStalled ? " (its copy stalls)"
         : c.pace == CopyPace::kSlow  ? " (its copy is slow)"
                                      : ""));
  // The planted bug: let the claim go before the copy reads the slots.
  if (early_release) Release(inst, c);
  inst.claims.push_back(std::move(c));
}

}  // namespace strata::pool::sim
