// ExportLedger driven by hand: each transition, each rejection, and that
// every pinned export ends exactly once or never (copies not drained).
#include "coordinator/pool/export_ledger.h"

#include <gtest/gtest.h>

namespace strata::pool {
namespace {

constexpr ExportRecordSizes kSizes{.page_record_bytes = 100, .row_segment_bytes = 10};

ExportAsk Ask(uint64_t staging_bytes) {
  return ExportAsk{.key = PrefixKey{.consumed = 256, .digest = {}},
                   .generation = 7,
                   .start_page = 1,
                   .staging_bytes = staging_bytes};
}

// Pages 1..3 of a 4-page chain and a row: 3 * 100 + 10 bytes.
ExportDescription ThreePages() {
  return ExportDescription{
      .start_page = 1, .pages = {PageId(5), PageId(6), PageId(7)}, .row_slot = StateSlot(2)};
}

std::vector<StoreEvent> Take(ExportLedger& l) {
  std::vector<StoreEvent> out;
  l.TakeEvents(out);
  return out;
}

TEST(ExportLedgerTest, ARequestIsReportedWithEverythingTheRuntimeNeeds) {
  ExportLedger l(kSizes);
  const ExportId id = l.Request(Ask(310));
  std::vector<StoreEvent> events = Take(l);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, StoreEvent::Kind::kExportRequested);
  EXPECT_EQ(events[0].export_id, id);
  EXPECT_EQ(events[0].key.consumed, 256u);
  EXPECT_EQ(events[0].generation, 7u);
  EXPECT_EQ(events[0].start_page, 1u);
  EXPECT_EQ(events[0].bytes, 310u);
  EXPECT_EQ(l.awaiting(), 1u);
  EXPECT_TRUE(Take(l).empty());
}

TEST(ExportLedgerTest, APinThatFitsOpensTheExportAndOnlyADrainEndsIt) {
  ExportLedger l(kSizes);
  const ExportId id = l.Request(Ask(310));
  Take(l);
  ASSERT_TRUE(l.Pinned(id, ThreePages()).ok());
  EXPECT_EQ(l.open(), 1u);
  ASSERT_NE(l.description(id), nullptr);
  EXPECT_EQ(l.description(id)->pages.size(), 3u);
  EXPECT_TRUE(Take(l).empty());  // copies not drained: the pin stays
  ASSERT_TRUE(l.Drained(id).ok());
  std::vector<StoreEvent> events = Take(l);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, StoreEvent::Kind::kExportEnded);
  EXPECT_EQ(events[0].export_id, id);
  EXPECT_TRUE(events[0].status.ok());
  EXPECT_EQ(l.open(), 0u);
}

TEST(ExportLedgerTest, ASecondEndFindsNothing) {
  ExportLedger l(kSizes);
  const ExportId id = l.Request(Ask(310));
  ASSERT_TRUE(l.Pinned(id, ThreePages()).ok());
  ASSERT_TRUE(l.Drained(id).ok());
  EXPECT_EQ(l.Drained(id).code(), StatusCode::kNotFound);
  Take(l);
  EXPECT_EQ(l.counts().ended, 1u);
}

TEST(ExportLedgerTest, APinLargerThanTheStagingIsHandedBackAtOnce) {
  ExportLedger l(kSizes);
  const ExportId id = l.Request(Ask(309));  // one byte short
  Take(l);
  EXPECT_EQ(l.Pinned(id, ThreePages()).code(), StatusCode::kInvalidArgument);
  std::vector<StoreEvent> events = Take(l);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, StoreEvent::Kind::kExportEnded);
  EXPECT_EQ(events[0].export_id, id);
  EXPECT_EQ(events[0].status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(l.open(), 0u);
  EXPECT_EQ(l.counts().rejected, 1u);
  EXPECT_EQ(l.Drained(id).code(), StatusCode::kNotFound);  // nothing left to end
}

TEST(ExportLedgerTest, UnknownRecordSizesRejectEveryPin) {
  ExportLedger l(ExportRecordSizes{});
  const ExportId id = l.Request(Ask(1 << 20));
  Take(l);
  EXPECT_EQ(l.Pinned(id, ThreePages()).code(), StatusCode::kFailedPrecondition);
  std::vector<StoreEvent> events = Take(l);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, StoreEvent::Kind::kExportEnded);
}

TEST(ExportLedgerTest, APinForAnExportNeverRequestedIsHandedBack) {
  ExportLedger l(kSizes);
  EXPECT_EQ(l.Pinned(ExportId(99), ThreePages()).code(), StatusCode::kNotFound);
  std::vector<StoreEvent> events = Take(l);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, StoreEvent::Kind::kExportEnded);
  EXPECT_EQ(events[0].export_id, ExportId(99));
  EXPECT_EQ(l.counts().stray_answers, 1u);
}

TEST(ExportLedgerTest, ASecondPinOfAnOpenExportDoesNotEndIt) {
  ExportLedger l(kSizes);
  const ExportId id = l.Request(Ask(310));
  Take(l);
  ASSERT_TRUE(l.Pinned(id, ThreePages()).ok());
  EXPECT_EQ(l.Pinned(id, ThreePages()).code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Take(l).empty());
  EXPECT_EQ(l.open(), 1u);
}

TEST(ExportLedgerTest, ARefusalForgetsTheExportWithoutAnEnd) {
  const ExportRefusal reasons[] = {ExportRefusal::kNotFound, ExportRefusal::kGenerationChanged,
                                   ExportRefusal::kChainGap, ExportRefusal::kNoHeadroom};
  for (ExportRefusal reason : reasons) {
    SCOPED_TRACE(ExportRefusalName(reason));
    ExportLedger l(kSizes);
    const ExportId id = l.Request(Ask(310));
    Take(l);
    ASSERT_TRUE(l.Refused(id, reason).ok());
    EXPECT_EQ(l.counts().refused[static_cast<size_t>(reason)], 1u);
    EXPECT_EQ(l.awaiting(), 0u);
    EXPECT_TRUE(Take(l).empty());
    EXPECT_EQ(l.Refused(id, reason).code(), StatusCode::kNotFound);
    EXPECT_EQ(l.Drained(id).code(), StatusCode::kNotFound);
  }
}

TEST(ExportLedgerTest, AnOpenExportCannotBeRefusedAfterItsPin) {
  ExportLedger l(kSizes);
  const ExportId id = l.Request(Ask(310));
  ASSERT_TRUE(l.Pinned(id, ThreePages()).ok());
  EXPECT_EQ(l.Refused(id, ExportRefusal::kNoHeadroom).code(), StatusCode::kNotFound);
  EXPECT_EQ(l.open(), 1u);
}

}  // namespace
}  // namespace strata::pool
