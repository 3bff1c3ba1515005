// The join agreement between ranks on separate hosts (seed 2.14), as pure
// logic: from every rank's scan summary, which records all ranks keep and
// what each rank must delete or truncate to match. No I/O, threads or clocks.
//
// Rules, applied over the union of all summaries in ascending key order:
//   1. A record is kept only when every rank summarized it with the same
//      header digest (the header ignoring layout fingerprint, row checksum
//      and creation time: store/record/record_header.h HeaderAgreementDigest).
//   2. A record whose parent is not kept is dropped (transitively: parents
//      sort before their children).
//   3. A kept record keeps its row only when every rank holds the row; the
//      ranks that hold it truncate it.
// Every rank deletes the records that are not kept.
#pragma once

#include <cstdint>
#include <vector>

#include "store/base/prefix_key.h"
#include "store/base/status.h"
#include "wire/messages.h"

namespace strata {

// One rank's scan summary: the records its scan kept, in any order.
using RankScan = std::vector<wire::ScanRecord>;

// What one rank changes so that its files match the agreement.
struct RankChanges {
  std::vector<PrefixKey> delete_keys;    // unlink these record files
  std::vector<PrefixKey> truncate_keys;  // drop these files' row segments
  friend bool operator==(const RankChanges&, const RankChanges&) = default;
};

// Records by the rule that decided them (for logs and counters).
struct AgreementCounts {
  uint64_t kept = 0;          // kept on every rank
  uint64_t rows_dropped = 0;  // kept without the row some ranks held and some lacked
  uint64_t missing = 0;       // dropped: some rank has no file
  uint64_t mismatched = 0;    // dropped: headers differ between ranks
  uint64_t orphaned = 0;      // dropped: its parent is not kept
  friend bool operator==(const AgreementCounts&, const AgreementCounts&) = default;
};

struct AgreementPlan {
  std::vector<RankChanges> ranks;  // index = rank; keys ascending
  std::vector<PrefixKey> kept;     // ascending
  AgreementCounts counts;
};

// `scans[r]` is rank r's summary, rank zero included. Errors
// (kInvalidArgument, naming the rank and key): a rank that summarized one
// key twice. The same scans always give the same plan.
Result<AgreementPlan> Agree(const std::vector<RankScan>& scans);

// The Agreement message entries for one rank: one verdict per record it
// summarized, in its summary's order (keep, truncate or delete).
std::vector<wire::AgreementEntry> VerdictsFor(const RankScan& scan, const RankChanges& changes);

}  // namespace strata
