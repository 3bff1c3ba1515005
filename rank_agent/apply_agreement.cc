#include "rank_agent/apply_agreement.h"

#include <map>
#include <string>

namespace strata {

Status ApplyAgreement(LocalDisk& disk, const std::vector<wire::AgreementEntry>& verdicts,
                      Durability durability) {
  std::map<PrefixKey, const ScannedRecord*> scanned;
  for (const ScannedRecord& r : disk.scan().records) scanned[r.key] = &r;
  std::map<PrefixKey, wire::Verdict> verdict_of;
  for (const wire::AgreementEntry& e : verdicts) {
    if (scanned.count(e.key) == 0) {
      return Status::InvalidArgument("the agreement names record " + e.key.ToFileStem() +
                                     ", which this rank did not summarize");
    }
    if (!verdict_of.emplace(e.key, e.verdict).second) {
      return Status::InvalidArgument("the agreement names record " + e.key.ToFileStem() + " twice");
    }
  }
  if (verdict_of.size() != scanned.size()) {
    return Status::InvalidArgument(
        "the agreement has verdicts for " + std::to_string(verdict_of.size()) + " of the " +
        std::to_string(scanned.size()) + " records this rank summarized");
  }
  for (const auto& [key, verdict] : verdict_of) {
    const ScannedRecord& r = *scanned.at(key);
    if (verdict == wire::Verdict::kDelete) {
      STRATA_RETURN_IF_ERROR(UnlinkRecord(disk.fs(), disk.dir().fd(), key, durability)
                                 .WithContext("deleting " + key.ToFileStem()));
    } else if (verdict == wire::Verdict::kTruncate && r.row_present) {
      STRATA_RETURN_IF_ERROR(TruncateRecordRow(disk.fs(), disk.dir().fd(), r.header, durability)
                                 .WithContext("truncating " + key.ToFileStem()));
    }
  }
  // What the scan must show now: the kept records, with their rows unless
  // truncated. (`scanned` points into the old scan: copy what is checked.)
  std::map<PrefixKey, bool> expected_row;
  for (const auto& [key, verdict] : verdict_of) {
    if (verdict == wire::Verdict::kDelete) continue;
    expected_row[key] = verdict == wire::Verdict::kKeep && scanned.at(key)->row_present;
  }
  STRATA_RETURN_IF_ERROR(disk.Rescan().WithContext("rescanning after the agreement"));
  std::map<PrefixKey, bool> found_row;
  for (const ScannedRecord& r : disk.scan().records) found_row[r.key] = r.row_present;
  for (const auto& [key, row] : expected_row) {
    auto it = found_row.find(key);
    if (it == found_row.end()) {
      return Status::Corruption("record " + key.ToFileStem() +
                                " is gone after applying the agreement");
    }
    if (it->second != row) {
      return Status::Corruption("record " + key.ToFileStem() + (row ? " lost" : " kept") +
                                " its row after applying the agreement");
    }
  }
  if (found_row.size() != expected_row.size()) {
    return Status::Corruption("the record directory holds " + std::to_string(found_row.size()) +
                              " records after applying the agreement, " +
                              std::to_string(expected_row.size()) + " were agreed");
  }
  return Status::Ok();
}

}  // namespace strata
