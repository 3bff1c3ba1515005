#include "rank_agent/scan_summary.h"

#include "store/record/record_header.h"

namespace strata {

Result<wire::ScanRecord> SummarizeRecord(const ScannedRecord& record) {
  wire::ScanRecord out;
  out.key = record.key;
  out.parent = record.parent;
  STRATA_ASSIGN_OR_RETURN(out.header_digest, HeaderAgreementDigest(record.header));
  out.row_present = record.row_present;
  out.size_bytes = record.file_bytes;
  return out;
}

}  // namespace strata
