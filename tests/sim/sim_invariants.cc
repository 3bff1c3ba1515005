// The simulation's invariants (simulation.h lists them) and the restart with
// its agreement.
#include <algorithm>
#include <functional>

#include "coordinator/agreement.h"
#include "tests/sim/sim_oracle.h"
#include "tests/sim/sim_world.h"

namespace strata::sim {
namespace {

std::string Stem(const PrefixKey& key) { return key.ToFileStem().substr(0, 24); }

std::string JobName(const RecordJob& job) {
  return "job " + std::to_string(job.id.value) + " (" + std::string(RecordJobKindName(job.kind)) +
         " of " + Stem(job.key) + ")";
}

}  // namespace

bool SimWorld::InFlightAt(uint32_t rank, JobId id, std::string& where) const {
  if (rank == 0) {
    where = "its disk";
    return disks_[0]->Running(id);
  }
  if (agents_[rank - 1]->InFlight(id)) {
    where = "its hold queue or disk";
    return true;
  }
  bool on_wire = false;
  network_->ForEachJobToPeer(RankId(rank), [&](const RecordJob& j) { on_wire |= j.id == id; });
  where = "the network";
  return on_wire;
}

bool SimWorld::HeldAnywhere(const PrefixKey& key, uint32_t& rank) const {
  for (uint32_t r = 0; r < world(); ++r) {
    if (disks_[r]->files().count(key) != 0) {
      rank = r;
      return true;
    }
  }
  return false;
}

void SimWorld::CheckCompletion(const RecordJob& job, const RecordJobDone& done,
                               bool cleanup_failed) {
  for (uint32_t r = 0; r < world(); ++r) {
    std::string where;
    if (InFlightAt(r, job.id, where)) {
      Violation(JobName(job) + " was reported (" + done.status.ToString() + ") while rank " +
                std::to_string(r) + " still has it in " + where);
      return;
    }
    if (done.status.ok() && !disks_[r]->FinishedOk(job.id)) {
      Violation(JobName(job) + " was reported OK but rank " + std::to_string(r) +
                " did not finish it");
      return;
    }
    if (disks_[r]->FailedFull(job.id) && !done.fs_full) {
      Violation(JobName(job) + " ran out of space on rank " + std::to_string(r) +
                " but its completion lost the filesystem-full flag: " + done.status.ToString());
      return;
    }
  }
  uint32_t holder = 0;
  const bool gone_expected =
      (job.kind == RecordJobKind::kStore && !done.status.ok() && !cleanup_failed) ||
      (job.kind == RecordJobKind::kUnlink && done.status.ok());
  if (gone_expected && HeldAnywhere(job.key, holder)) {
    Violation(JobName(job) + " ended (" + done.status.ToString() + ") but rank " +
              std::to_string(holder) + " still holds the record");
    return;
  }
  if (job.kind == RecordJobKind::kTruncate && done.status.ok()) {
    for (uint32_t r = 0; r < world(); ++r) {
      auto f = disks_[r]->files().find(job.key);
      if (f != disks_[r]->files().end() && f->second.row) {
        Violation(JobName(job) + " was reported OK but rank " + std::to_string(r) +
                  " still holds the row");
        return;
      }
    }
  }
}

void SimWorld::CheckIdsHeld(uint32_t rank, const RecordJob& job, const char* where) {
  if (failed()) return;
  auto say = [&](const std::string& id, uint64_t owner) {
    Violation("rank " + std::to_string(rank) + " may still copy " + id + " for " + JobName(job) +
              " (in " + where + "), but the store holds it for " +
              (owner == 0 ? std::string("no job") : "job " + std::to_string(owner)) +
              ": an id reused under a copy in flight");
  };
  for (PageId p : job.page_ids) {
    if (pages_.Owner(p.value) != job.id.value)
      return say("page " + std::to_string(p.value), pages_.Owner(p.value));
  }
  if (job.row_slot && slots_.Owner(job.row_slot->value) != job.id.value) {
    say("state slot " + std::to_string(job.row_slot->value), slots_.Owner(job.row_slot->value));
  }
}

void SimWorld::CheckEveryStep() {
  if (failed()) return;
  // Every id a rank may still touch is held for that rank's job.
  for (const SimDiskJob& j : disks_[0]->running()) CheckIdsHeld(0, j.job, "its disk");
  for (uint32_t r = 1; r < world(); ++r) {
    agents_[r - 1]->ForEachInFlight(
        [&](const RecordJob& j) { CheckIdsHeld(r, j, "its hold queue or disk"); });
    network_->ForEachJobToPeer(RankId(r),
                               [&](const RecordJob& j) { CheckIdsHeld(r, j, "the network"); });
  }
  // Every committed record is on every rank as it was written, except while
  // an unlink or truncate of it is outstanding.
  std::map<PrefixKey, RecordJobKind> changing;
  for (const auto& [id, job] : outstanding_) changing[job.key] = job.kind;
  for (const auto& [key, known] : committed_) {
    auto c = changing.find(key);
    if (c != changing.end() && c->second == RecordJobKind::kUnlink) continue;
    const bool row_settled =
        !known.row_uncertain && (c == changing.end() || c->second != RecordJobKind::kTruncate);
    for (uint32_t r = 0; r < world() && !failed(); ++r) {
      auto f = disks_[r]->files().find(key);
      if (f == disks_[r]->files().end()) {
        Violation("committed record " + Stem(key) + " is missing on rank " + std::to_string(r));
      } else if (f->second.digest != known.digest) {
        Violation("committed record " + Stem(key) + " differs on rank " + std::to_string(r));
      } else if (row_settled && f->second.row != known.row) {
        Violation("committed record " + Stem(key) + " has " + (f->second.row ? "a" : "no") +
                  " row on rank " + std::to_string(r) + ", expected the opposite");
      }
    }
  }
}

// ---- restart -----------------------------------------------------------------

void SimWorld::Damage() {
  const uint32_t r = static_cast<uint32_t>(random_.Below(world()));
  SimFiles& files = disks_[r]->mutable_files();
  if (files.empty()) return;
  auto it = files.begin();
  std::advance(it, static_cast<long>(random_.Below(files.size())));
  const uint64_t how = random_.Below(3);
  std::string what;
  if (how == 0) {
    it->second.digest[random_.Below(16)] ^= 0x5a;
    what = "its header differs";
  } else if (how == 1 && it->second.row) {
    it->second.row = false;
    what = "its row is gone";
  } else {
    what = "its file is gone";
    damaged_.insert(it->first);
    Trace("damage: rank " + std::to_string(r) + " record " + Stem(it->first) + ": " + what);
    files.erase(it);
    ++report_.counts.damaged_records;
    return;
  }
  damaged_.insert(it->first);
  Trace("damage: rank " + std::to_string(r) + " record " + Stem(it->first) + ": " + what);
  ++report_.counts.damaged_records;
}

void SimWorld::Restart() {
  ++report_.counts.restarts;
  damaged_.clear();
  if (random_.Chance(rates_.damage)) Damage();
  // Every rank's scan summary, in an arbitrary order.
  std::vector<RankScan> scans(world());
  std::vector<const SimFiles*> files;
  for (uint32_t r = 0; r < world(); ++r) {
    files.push_back(&disks_[r]->files());
    for (const auto& [key, rec] : disks_[r]->files()) {
      scans[r].push_back(
          {key, rec.parent, rec.digest, rec.row, uint64_t{rec.tail_pages} * 4096 + 1});
    }
    for (size_t i = scans[r].size(); i > 1; --i) {
      std::swap(scans[r][i - 1], scans[r][random_.Below(i)]);
    }
  }
  Result<AgreementPlan> plan = Agree(scans);
  if (!plan.ok()) return Violation("Agree refused the scans: " + plan.status().ToString());
  const ExpectedAgreement expected = IntersectionRule(files);
  const std::set<PrefixKey> kept(plan->kept.begin(), plan->kept.end());
  if (kept != expected.kept) {
    return Violation("Agree kept " + std::to_string(kept.size()) +
                     " records, the intersection rule " + std::to_string(expected.kept.size()));
  }
  for (uint32_t r = 0; r < world(); ++r) {
    const RankChanges& c = plan->ranks[r];
    if (std::set<PrefixKey>(c.delete_keys.begin(), c.delete_keys.end()) != expected.deletes[r] ||
        std::set<PrefixKey>(c.truncate_keys.begin(), c.truncate_keys.end()) !=
            expected.truncates[r]) {
      return Violation("Agree's changes for rank " + std::to_string(r) +
                       " differ from the intersection rule");
    }
  }
  // Each rank applies its verdicts, as ApplyAgreement does to its files.
  for (uint32_t r = 0; r < world(); ++r) {
    const std::vector<wire::AgreementEntry> verdicts = VerdictsFor(scans[r], plan->ranks[r]);
    if (verdicts.size() != scans[r].size()) {
      return Violation("VerdictsFor gave rank " + std::to_string(r) + " " +
                       std::to_string(verdicts.size()) + " verdicts for " +
                       std::to_string(scans[r].size()) + " records");
    }
    SimFiles& mine = disks_[r]->mutable_files();
    for (const wire::AgreementEntry& e : verdicts) {
      if (e.verdict == wire::Verdict::kDelete) mine.erase(e.key);
      if (e.verdict == wire::Verdict::kTruncate) mine.at(e.key).row = false;
    }
  }
  for (uint32_t r = 1; r < world(); ++r) {
    if (disks_[r]->files() != disks_[0]->files()) {
      return Violation("after the agreement rank " + std::to_string(r) +
                       " holds other records than rank zero");
    }
  }
  CheckDurability(kept);
  if (failed()) return;
  report_.counts.records_checked += kept.size() * world();
  std::map<PrefixKey, Known> now_known;
  for (const auto& [key, rec] : disks_[0]->files()) {
    now_known[key] = {rec.parent, rec.digest, rec.tail_pages, rec.row, false};
  }
  committed_ = std::move(now_known);
  uncertain_.clear();
  Trace("restart: agreement kept " + std::to_string(kept.size()) + " records");
}

void SimWorld::CheckDurability(const std::set<PrefixKey>& kept) {
  // A record damaged on purpose, and its descendants, may go.
  std::function<bool(const PrefixKey&)> exempt = [&](const PrefixKey& key) {
    if (damaged_.count(key) != 0) return true;
    auto c = committed_.find(key);
    return c != committed_.end() && c->second.parent && exempt(*c->second.parent);
  };
  for (const auto& [key, known] : committed_) {
    if (exempt(key)) continue;
    if (kept.count(key) == 0) {
      return Violation("committed record " + Stem(key) + " was lost at the restart");
    }
    if (known.row && !known.row_uncertain && !disks_[0]->files().at(key).row) {
      return Violation("committed record " + Stem(key) + " lost its row at the restart");
    }
  }
  for (const PrefixKey& key : kept) {
    if (committed_.count(key) == 0 && uncertain_.count(key) == 0) {
      return Violation("record " + Stem(key) +
                       " survived the restart although no store of it succeeded or was left "
                       "unsettled");
    }
  }
}

}  // namespace strata::sim
