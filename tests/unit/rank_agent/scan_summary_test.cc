// The scan summary a rank sends at join carries its scan and the header's
// agreement digest, which ignores the row checksum (ranks' rows differ).
#include "rank_agent/scan_summary.h"

#include <gtest/gtest.h>

#include "store/record/record_header.h"
#include "tests/unit/wire/wire_test_util.h"

namespace strata {
namespace {

using wire::testing::Key;

TEST(ScanSummary, SummarizeRecordCarriesTheScanAndTheAgreementDigest) {
  ScannedRecord r;
  r.key = Key(128, 1);
  r.parent = Key(64, 2);
  r.row_present = true;
  r.file_bytes = 5 * 4096;
  r.header.key = r.key;
  r.header.parent = r.parent;
  r.header.tail_page_count = 1;
  r.header.shape.page_tokens = 64;
  r.header.shape.ranks = {RankShape{{4096}, 100}};
  r.header.row_checksum = 77;
  Result<wire::ScanRecord> summary = SummarizeRecord(r);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->key, r.key);
  EXPECT_EQ(summary->parent, r.parent);
  EXPECT_TRUE(summary->row_present);
  EXPECT_EQ(summary->size_bytes, 5u * 4096);
  EXPECT_EQ(summary->header_digest, *HeaderAgreementDigest(r.header));
  r.header.row_checksum = 78;  // another rank's row bytes
  EXPECT_EQ(SummarizeRecord(r)->header_digest, summary->header_digest);
}

}  // namespace
}  // namespace strata
