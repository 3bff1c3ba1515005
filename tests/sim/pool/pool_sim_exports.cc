// PoolSimWorld: exports (pool_sim_world.h; docs/pool.md, "Exports"). Each
// instance's runtime holds checkpoints in page ids of its planes and
// announces them; a claim of a holding goes through the real ExportRelay,
// which asks the holder. The holder's runtime pins what it still holds at
// the asked generation (else refuses: the put is aborted), its copy reads
// the pinned page ids for a few steps, then the pin goes back and the image
// is written into the granted slots and committed. The runtime never evicts
// a pinned checkpoint (the planted bug kEvictPinned does), and some eviction
// notices are lost, leaving stale holdings the manager learns of by a
// refusal.
#include <algorithm>
#include <string>
#include <utility>

#include "coordinator/pool/hashed_copy.h"
#include "coordinator/pool/pool_record_image.h"
#include "tests/sim/pool/pool_sim_world.h"

namespace strata::pool::sim {
namespace {

std::string Subject(uint32_t s) { return "subject " + std::to_string(s); }

// The image an export of a subject (one page, a root) writes.
constexpr uint64_t kImageBytes =
    kRecordImageHeaderBytes + kExportSizes.page_record_bytes + kExportSizes.row_segment_bytes;

}  // namespace

std::optional<uint32_t> PoolSimWorld::SubjectOf(const PrefixKey& key) const {
  auto it = std::find(subject_keys_.begin(), subject_keys_.end(), key);
  if (it == subject_keys_.end()) return std::nullopt;
  return static_cast<uint32_t>(it - subject_keys_.begin());
}

void PoolSimWorld::Hold(SimInstance& inst) {
  const uint32_t subject = static_cast<uint32_t>(rng_.Below(kSubjects));
  if (inst.gpu.contains(subject)) return;
  std::vector<uint32_t> pages;
  for (uint32_t p = 0; p < kGpuPages && pages.size() < kPagesPerHolding; ++p) {
    if (inst.page_owner[p] == 0) pages.push_back(p);
  }
  if (pages.size() < kPagesPerHolding) return;  // the planes are full
  SimHolding h{.generation = next_generation_++,
               .pages = pages,
               .pins = 0,
               .image = std::vector<std::byte>(kImageBytes)};
  for (std::byte& b : h.image) b = static_cast<std::byte>(rng_.Next());
  for (uint32_t p : pages) inst.page_owner[p] = h.generation;
  const Holding announced{.key = subject_keys_[subject],
                          .generation = h.generation,
                          .bucket_digest = subjects_[subject].bucket_digest(kPageTokens)};
  inst.gpu[subject] = std::move(h);
  ++counts_.holdings;
  PoolMessage answer = Ask(*inst.session, PoolAnnounce{.request_id = next_request_++,
                                                       .reset = false,
                                                       .held = {announced},
                                                       .withdrawn = {},
                                                       .sizes = kExportSizes});
  const auto* done = std::get_if<PoolDone>(&answer);
  if (done == nullptr || !done->status.ok()) Violation("an announcement was refused");
  Event(Name(inst) + " holds " + Subject(subject) + " in its planes");
}

void PoolSimWorld::EvictGpu(SimInstance& inst) {
  if (inst.gpu.empty()) return;
  auto it = inst.gpu.begin();
  std::advance(it, static_cast<long>(rng_.Below(inst.gpu.size())));
  // The runtime's rule: a pinned checkpoint stays until its export ends.
  if (it->second.pins != 0 && options_.planted_bug != PoolPlantedBug::kEvictPinned) return;
  for (uint32_t p : it->second.pages) inst.page_owner[p] = 0;
  const Holding retired{
      .key = subject_keys_[it->first], .generation = it->second.generation, .bucket_digest = {}};
  const uint32_t subject = it->first;
  inst.gpu.erase(it);
  if (rng_.Chance(0.2)) {
    ++counts_.notices_lost;
    Event(Name(inst) + " evicts " + Subject(subject) + " from its planes; the notice is lost");
    return;
  }
  (void)Ask(*inst.session, PoolAnnounce{.request_id = next_request_++,
                                        .reset = false,
                                        .held = {},
                                        .withdrawn = {retired},
                                        .sizes = kExportSizes});
  Event(Name(inst) + " evicts " + Subject(subject) + " from its planes");
}

bool PoolSimWorld::ClaimThroughRelay(SimInstance& inst, uint32_t subject, const PoolClaim& claim) {
  std::optional<ExportRelay::Begun> begun = relay_->Begin(*catalog_, *inst.session, claim, now_ms_);
  if (!begun.has_value()) return false;
  if (const auto* now = std::get_if<PoolClaimAnswer>(&*begun)) {
    Event(Name(inst) + " claim of " + Subject(subject) +
          " cannot export: " + now->status.message());
    return true;
  }
  inst.waiting.push_back(SimWaiting{.claim = claim, .subject = subject});
  const auto* ask = std::get_if<ExportRelay::Ask>(&*begun);
  if (ask == nullptr) {
    Event(Name(inst) + " claim of " + Subject(subject) + " joins an export");
    return true;
  }
  ++counts_.exports_started;
  Reconcile();  // the export's put may have evicted
  if (!violation_.ok()) return true;
  for (SimInstance& holder : instances_) {
    if (holder.session != ask->holder) continue;
    CheckPutSlots(ask->ask.ask.slots, holder);
    holder.exports.push_back(SimExport{.ask = ask->ask.ask,
                                       .subject = subject,
                                       .session = ask->holder,
                                       .pinned = false,
                                       .generation = 0,
                                       .pages = {},
                                       .steps_left = 0});
    Event("manager asks " + Name(holder) + " to export " + Subject(subject) + " for " + Name(inst));
    return true;
  }
  // The holder's session lingers after an unseen crash: nobody answers, and
  // the export's put stays pending until the session is replaced.
  for (SimInstance& holder : instances_) {
    if (holder.zombie_session == ask->holder) ++holder.zombie_puts;
  }
  Event("manager asks a lingering session to export " + Subject(subject));
  return true;
}

void PoolSimWorld::ServeExports(SimInstance& inst) {
  for (SimExport& e : inst.exports) {
    if (!violation_.ok()) return;
    const bool live = inst.session == e.session;
    if (!e.pinned) {
      auto held = inst.gpu.find(e.subject);
      if (!live) {
        e.steps_left = 0;  // the session went: nobody to answer
        continue;
      }
      if (held == inst.gpu.end() || held->second.generation != e.ask.generation) {
        ++counts_.exports_refused;
        (void)Ask(*inst.session, PoolAbort{.request_id = next_request_++, .put = e.ask.put});
        Event(Name(inst) + " refuses the export of " + Subject(e.subject) + " (stale holding)");
        DeliverRelayAnswers(relay_->PutEnded(*catalog_, *inst.session, e.ask.put,
                                             ExportRelay::Ended::kAborted, now_ms_));
        e.steps_left = 0;
        continue;
      }
      ++held->second.pins;
      e.pinned = true;
      e.generation = held->second.generation;
      e.pages = held->second.pages;
      // Mostly a few steps; sometimes past the export's deadline (10 s and
      // more), so that its claims fail while the holder still copies.
      e.steps_left =
          static_cast<uint32_t>(rng_.Chance(0.05) ? rng_.Between(24, 40) : rng_.Between(1, 3));
      Event(Name(inst) + " pins " + Subject(e.subject) + " for its export");
      continue;
    }
    // The copy reads the pinned page ids: none may be freed or reused.
    for (uint32_t p : e.pages) {
      if (inst.page_owner[p] != e.generation) {
        Violation(Name(inst) + " page id " + std::to_string(p) + " of " + Subject(e.subject) +
                  " was freed or reused under an export copy");
        return;
      }
    }
    if (--e.steps_left == 0) FinishExport(inst, e);
  }
  std::erase_if(inst.exports, [](const SimExport& e) { return e.steps_left == 0; });
}

void PoolSimWorld::FinishExport(SimInstance& inst, SimExport& e) {
  // The copy left the planes: the pin goes back, once.
  auto held = inst.gpu.find(e.subject);
  if (held == inst.gpu.end() || held->second.generation != e.generation || held->second.pins == 0) {
    Violation(Name(inst) + " ends an export of " + Subject(e.subject) + " that pins nothing");
    return;
  }
  --held->second.pins;
  if (inst.session != e.session || catalog_ == nullptr) {
    Event(Name(inst) + " ends the export of " + Subject(e.subject) + " for a session gone");
    return;
  }
  const std::vector<std::byte>& image = held->second.image;
  if (image.size() != e.ask.bytes) {
    Violation("the manager reserved " + std::to_string(e.ask.bytes) + " bytes for an image of " +
              std::to_string(image.size()));
    return;
  }
  hash_.Reset();
  uint64_t at = 0;
  for (SlotId slot : e.ask.slots) {
    const uint64_t n = std::min<uint64_t>(kSlotBytes, image.size() - at);
    CopyHashed(arena_->Slot(slot).first(n), std::span<const std::byte>(image).subspan(at, n),
               hash_);
    damaged_slots_.erase(slot.value);
    at += n;
  }
  PoolMessage answer =
      Ask(*inst.session,
          PoolCommit{.request_id = next_request_++, .put = e.ask.put, .checksum = hash_.Digest()});
  const auto* done = std::get_if<PoolDone>(&answer);
  const bool committed = done != nullptr && done->status.ok();
  if (committed) {
    oracle_[e.subject] = OracleRecord{
        .bytes = image, .slots = e.ask.slots, .owner = inst.id, .kind = PutKind::kCascade};
    ++counts_.puts_committed;
  }
  Event(Name(inst) + (committed ? " commits" : " fails to commit") + " its export of " +
        Subject(e.subject));
  DeliverRelayAnswers(relay_->PutEnded(
      *catalog_, *inst.session, e.ask.put,
      committed ? ExportRelay::Ended::kCommitted : ExportRelay::Ended::kCommitFailed, now_ms_));
}

void PoolSimWorld::DeliverRelayAnswers(std::vector<RelayAnswer> answers) {
  for (const RelayAnswer& a : answers) {
    if (!violation_.ok()) return;
    for (SimInstance& inst : instances_) {
      if (inst.zombie_session == a.requester && a.answer.status.ok()) {
        // Its process is gone, unseen: the manager holds the claim until
        // it fails it or the session is replaced; no copy runs.
        inst.zombie_claims.push_back(SimClaim{.session = a.requester,
                                              .claim = a.answer.claim,
                                              .deadline_ms = now_ms_ + a.answer.budget_ms,
                                              .last_progress_ms = now_ms_,
                                              .records = a.answer.records,
                                              .expected = {},
                                              .pace = CopyPace::kStalled,
                                              .steps_left = 0,
                                              .registered = true,
                                              .failed = false});
        continue;
      }
      if (inst.session != a.requester) continue;
      auto w = std::find_if(inst.waiting.begin(), inst.waiting.end(), [&](const SimWaiting& x) {
        return x.claim.request_id == a.claim.request_id;
      });
      if (w == inst.waiting.end()) {
        Violation("the relay answered a claim " + Name(inst) + " is not waiting for");
        return;
      }
      const uint32_t subject = w->subject;
      inst.waiting.erase(w);
      if (!a.answer.status.ok()) {
        ++counts_.exports_failed;
        Event(Name(inst) + " claim of " + Subject(subject) +
              " through an export fails: " + a.answer.status.message());
        continue;
      }
      ++counts_.exports_relayed;
      TakeGrant(inst, subject, a.answer);
    }
  }
}

}  // namespace strata::pool::sim
