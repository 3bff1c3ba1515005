#include "coordinator/agreement.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace strata {
namespace {

// What the union of summaries says about one key.
struct KeySeen {
  const wire::ScanRecord* first = nullptr;  // the lowest rank's summary entry
  uint32_t ranks = 0;                       // ranks that summarized it
  bool same_header = true;
  bool row_everywhere = true;
  bool row_somewhere = false;
};

}  // namespace

Result<AgreementPlan> Agree(const std::vector<RankScan>& scans) {
  const size_t world = scans.size();
  std::map<PrefixKey, KeySeen> seen;  // ascending: parents before children
  for (size_t r = 0; r < world; ++r) {
    std::set<PrefixKey> mine;
    for (const wire::ScanRecord& record : scans[r]) {
      if (!mine.insert(record.key).second) {
        return Status::InvalidArgument("rank " + std::to_string(r) + " summarized record " +
                                       record.key.ToFileStem() + " twice");
      }
      KeySeen& k = seen[record.key];
      if (k.first == nullptr) {
        k.first = &record;
      } else if (k.first->header_digest != record.header_digest) {
        k.same_header = false;
      }
      ++k.ranks;
      k.row_everywhere &= record.row_present;
      k.row_somewhere |= record.row_present;
    }
  }

  AgreementPlan plan;
  plan.ranks.resize(world);
  std::set<PrefixKey> kept;
  std::set<PrefixKey> rowless;  // kept without their row
  for (const auto& [key, k] : seen) {
    if (k.ranks < world) {
      ++plan.counts.missing;
    } else if (!k.same_header) {
      ++plan.counts.mismatched;
    } else if (k.first->parent && kept.count(*k.first->parent) == 0) {
      ++plan.counts.orphaned;
    } else {
      kept.insert(key);
      plan.kept.push_back(key);
      ++plan.counts.kept;
      if (k.row_somewhere && !k.row_everywhere) {
        rowless.insert(key);
        ++plan.counts.rows_dropped;
      }
    }
  }
  for (size_t r = 0; r < world; ++r) {
    RankChanges& changes = plan.ranks[r];
    for (const wire::ScanRecord& record : scans[r]) {
      if (kept.count(record.key) == 0) {
        changes.delete_keys.push_back(record.key);
      } else if (record.row_present && rowless.count(record.key) != 0) {
        changes.truncate_keys.push_back(record.key);
      }
    }
    std::sort(changes.delete_keys.begin(), changes.delete_keys.end());
    std::sort(changes.truncate_keys.begin(), changes.truncate_keys.end());
  }
  return plan;
}

std::vector<wire::AgreementEntry> VerdictsFor(const RankScan& scan, const RankChanges& changes) {
  const std::set<PrefixKey> deleted(changes.delete_keys.begin(), changes.delete_keys.end());
  const std::set<PrefixKey> truncated(changes.truncate_keys.begin(), changes.truncate_keys.end());
  std::vector<wire::AgreementEntry> out;
  out.reserve(scan.size());
  for (const wire::ScanRecord& record : scan) {
    wire::Verdict verdict = wire::Verdict::kKeep;
    if (deleted.count(record.key) != 0) {
      verdict = wire::Verdict::kDelete;
    } else if (truncated.count(record.key) != 0) {
      verdict = wire::Verdict::kTruncate;
    }
    out.push_back({record.key, verdict});
  }
  return out;
}

}  // namespace strata
