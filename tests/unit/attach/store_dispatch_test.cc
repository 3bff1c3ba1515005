#include "attach/store_dispatch.h"

#include <gtest/gtest.h>

#include "tests/unit/attach/attach_doubles.h"

namespace strata::attach {
namespace {

using testing::EventFor;
using testing::ScriptedStore;
constexpr auto Stopped = testing::StoppedEvent;

StoreRequest StoreOf(uint64_t checkpoint_id) {
  StoreRequest r;
  r.checkpoint.checkpoint_id = checkpoint_id;
  return r;
}

FetchRequest FetchOf(uint64_t ticket) {
  FetchRequest r;
  r.ticket.ticket = JobId(ticket);
  return r;
}

// A dispatch with checkpoints 1, 2 and ticket 7 accepted by the store.
struct Dispatch {
  Dispatch() {
    std::vector<AttachMessage> replies;
    EXPECT_TRUE(d.Handle(StoreOf(1), replies).ok());
    EXPECT_TRUE(d.Handle(StoreOf(2), replies).ok());
    EXPECT_TRUE(d.Handle(FetchOf(7), replies).ok());
  }
  ScriptedStore store;
  StoreDispatch d{store};
  std::vector<AttachMessage> out;
};

TEST(StoreDispatchTest, CountsAcceptedJobsUntilTheirEvents) {
  Dispatch f;
  EXPECT_EQ(f.d.in_flight(), 3u);
  f.d.OnEvents({EventFor(StoreEvent::Kind::kStored, 1), EventFor(StoreEvent::Kind::kFetched, 7)},
               f.out);
  EXPECT_EQ(f.d.in_flight(), 1u);
  EXPECT_EQ(f.out.size(), 2u);
  EXPECT_FALSE(f.d.store_stopped());
  EXPECT_TRUE(f.d.DetachStatus().ok());
}

TEST(StoreDispatchTest, StoppedStoreAbandonsEveryOutstandingJob) {
  Dispatch f;
  f.d.OnEvents({EventFor(StoreEvent::Kind::kStored, 1), Stopped()}, f.out);
  EXPECT_TRUE(f.d.store_stopped());
  EXPECT_EQ(f.d.in_flight(), 0u);
  EXPECT_EQ(f.d.abandoned().checkpoints, (std::set<uint64_t>{2}));
  EXPECT_EQ(f.d.abandoned().tickets, (std::set<uint64_t>{7}));
  ASSERT_EQ(f.out.size(), 2u);  // kStopped is forwarded
  EXPECT_EQ(std::get<StoreEvent>(f.out[1]).kind, StoreEvent::Kind::kStopped);
}

TEST(StoreDispatchTest, DetachStatusNamesTheAbandonedJobsAndTheStop) {
  Dispatch f;
  f.d.OnEvents({Stopped()}, f.out);
  const Status s = f.d.DetachStatus();
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_NE(s.message().find("lost rank 2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("checkpoint(s) 1, 2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("fetch ticket(s) 7"), std::string::npos) << s.message();
}

TEST(StoreDispatchTest, LateEventForAnAbandonedJobIsNoLongerNamed) {
  Dispatch f;
  f.d.OnEvents({Stopped(), EventFor(StoreEvent::Kind::kStoreFailed, 2)}, f.out);
  EXPECT_EQ(f.d.abandoned().checkpoints, (std::set<uint64_t>{1}));
  EXPECT_EQ(f.d.in_flight(), 0u);
}

TEST(StoreDispatchTest, NothingReachesAStoppedStore) {
  Dispatch f;
  f.d.OnEvents({Stopped()}, f.out);
  std::vector<AttachMessage> replies;
  ASSERT_TRUE(f.d.Handle(StoreOf(3), replies).ok());
  ASSERT_TRUE(f.d.Handle(FetchOf(8), replies).ok());
  EXPECT_EQ(f.store.stores, 2);
  EXPECT_EQ(f.store.fetches, 1);
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(std::get<StoreAnswer>(replies[0]).outcome, StoreOutcome::kDisabled);
  const auto& failed = std::get<StoreEvent>(replies[1]);
  EXPECT_EQ(failed.kind, StoreEvent::Kind::kFetchFailed);
  EXPECT_NE(failed.status.message().find("the store stopped"), std::string::npos);
  EXPECT_EQ(f.d.in_flight(), 0u);
}

TEST(StoreDispatchTest, AbandonedIdsStayInUse) {
  Dispatch f;
  f.d.OnEvents({Stopped()}, f.out);
  std::vector<AttachMessage> replies;
  EXPECT_EQ(f.d.Handle(StoreOf(2), replies).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(f.d.Handle(FetchOf(7), replies).code(), StatusCode::kInvalidArgument);
}

LookupRequest LookupOf(uint64_t id, LookupStep step, uint64_t begun = 0) {
  return LookupRequest{.request_id = id,
                       .tokens = {1, 2, 3, 4},
                       .resident_tokens = 0,
                       .before = 4,
                       .step = step,
                       .begun = begun};
}

TEST(StoreDispatchTest, ABegunLookupOpensATicketItsAdmissionAndEndUse) {
  ScriptedStore store;
  StoreDispatch d{store};
  std::vector<AttachMessage> out;
  ASSERT_TRUE(d.Handle(LookupOf(5, LookupStep::kBegin), out).ok());
  EXPECT_TRUE(out.empty()) << "a begin has no result";
  ASSERT_EQ(store.begun.size(), 1u);
  ASSERT_TRUE(d.Handle(LookupOf(6, LookupStep::kAdmit, 5), out).ok());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(std::get<LookupResult>(out[0]).request_id, 6u);
  EXPECT_EQ(store.admitted, store.begun);
  EXPECT_EQ(store.lookups, 0);
  ASSERT_TRUE(d.Handle(EndLookup{.begun = 5}, out).ok());
  EXPECT_EQ(store.ended, store.begun);
  ASSERT_TRUE(d.Handle(EndLookup{.begun = 5}, out).ok()) << "a second end is ignored";
  EXPECT_EQ(store.ended.size(), 1u);
  // Ended: its admission is a one-step lookup.
  ASSERT_TRUE(d.Handle(LookupOf(7, LookupStep::kAdmit, 5), out).ok());
  EXPECT_EQ(store.lookups, 1);
  EXPECT_EQ(store.admitted.size(), 1u);
}

TEST(StoreDispatchTest, ATicketsStatusIsTheStoresUnderItsRequestIdAndNoneOnceEnded) {
  ScriptedStore store;
  store.pool_consumed = 192;
  StoreDispatch d{store};
  std::vector<AttachMessage> out;
  const auto status_of = [&](uint64_t request_id, uint64_t begun) {
    out.clear();
    EXPECT_TRUE(d.Handle(TicketStatusRequest{.request_id = request_id, .begun = begun}, out).ok());
    EXPECT_EQ(out.size(), 1u);
    const auto& r = std::get<TicketStatusResult>(out.at(0));
    EXPECT_EQ(r.request_id, request_id);
    return r.status;
  };
  ASSERT_TRUE(d.Handle(LookupOf(5, LookupStep::kBegin), out).ok());
  EXPECT_EQ(status_of(8, 5).state, LookupTicketState::kPending);
  ASSERT_TRUE(d.Handle(LookupOf(6, LookupStep::kAdmit, 5), out).ok());
  const LookupTicketStatus ready = status_of(9, 5);
  EXPECT_EQ(ready.state, LookupTicketState::kReady);
  EXPECT_EQ(ready.pool_consumed, 192u);
  EXPECT_EQ(ready.admissions, 1u);
  EXPECT_EQ(status_of(10, 4).state, LookupTicketState::kNone) << "never begun";
  ASSERT_TRUE(d.Handle(EndLookup{.begun = 5}, out).ok());
  EXPECT_EQ(status_of(11, 5).state, LookupTicketState::kNone) << "ended";
}

TEST(StoreDispatchTest, ABeginTwiceUnderOneIdIsRefused) {
  ScriptedStore store;
  StoreDispatch d{store};
  std::vector<AttachMessage> out;
  ASSERT_TRUE(d.Handle(LookupOf(5, LookupStep::kBegin), out).ok());
  EXPECT_EQ(d.Handle(LookupOf(5, LookupStep::kBegin), out).code(), StatusCode::kInvalidArgument);
}

TEST(StoreDispatchTest, WithoutATicketAnAdmissionIsAOneStepLookup) {
  ScriptedStore store;
  store.give_tickets = false;  // a store without a pool
  StoreDispatch d{store};
  std::vector<AttachMessage> out;
  ASSERT_TRUE(d.Handle(LookupOf(5, LookupStep::kBegin), out).ok());
  ASSERT_TRUE(d.Handle(LookupOf(6, LookupStep::kAdmit, 5), out).ok());
  EXPECT_EQ(store.lookups, 1);
  EXPECT_TRUE(store.admitted.empty());
  ASSERT_EQ(out.size(), 1u);
}

TEST(StoreDispatchTest, AtMostTheBoundOfTicketsIsOpenAndADetachEndsThem) {
  ScriptedStore store;
  {
    StoreDispatch d{store};
    std::vector<AttachMessage> out;
    for (uint64_t id = 1; id <= kAttachTicketsMax + 3; ++id) {
      ASSERT_TRUE(d.Handle(LookupOf(id, LookupStep::kBegin), out).ok());
    }
    EXPECT_EQ(store.begun.size(), kAttachTicketsMax);
    ASSERT_TRUE(d.Handle(LookupOf(1'000, LookupStep::kAdmit, kAttachTicketsMax + 1), out).ok());
    EXPECT_EQ(store.lookups, 1) << "the ticket past the bound was never opened";
    EXPECT_TRUE(store.ended.empty());
  }
  EXPECT_EQ(store.ended.size(), kAttachTicketsMax) << "the runtime left: every ticket ends";
}

TEST(StoreDispatchTest, EvictionNoticesReachTheStoreWithoutAnAnswer) {
  Dispatch f;
  EvictedNotices notices;
  notices.notices.push_back({.key = PrefixKey{.consumed = 64, .digest = {}}, .generation = 3});
  notices.notices.push_back({.key = PrefixKey{.consumed = 128, .digest = {}}, .generation = 4});
  std::vector<AttachMessage> replies;
  ASSERT_TRUE(f.d.Handle(notices, replies).ok());
  ASSERT_TRUE(f.d.Handle(EvictionsLost{}, replies).ok());
  EXPECT_TRUE(replies.empty());
  ASSERT_EQ(f.store.evicted.size(), 2u);
  EXPECT_EQ(f.store.evicted[0].key.consumed, 64u);
  EXPECT_EQ(f.store.evicted[1].generation, 4u);
  EXPECT_EQ(f.store.evictions_lost, 1);
  EXPECT_EQ(f.d.in_flight(), 3u);  // the jobs under way are untouched
}

TEST(StoreDispatchTest, ExportRequestsReachTheRuntimeAndItsAnswersTheStore) {
  Dispatch f;
  StoreEvent request;
  request.kind = StoreEvent::Kind::kExportRequested;
  request.export_id = ExportId(5);
  request.generation = 2;
  request.start_page = 1;
  StoreEvent ended;
  ended.kind = StoreEvent::Kind::kExportEnded;
  ended.export_id = ExportId(4);
  f.d.OnEvents({request, ended}, f.out);
  ASSERT_EQ(f.out.size(), 2u) << "both go to the runtime";
  EXPECT_EQ(std::get<StoreEvent>(f.out[0]).export_id, ExportId(5));
  EXPECT_EQ(std::get<StoreEvent>(f.out[0]).generation, 2u);
  EXPECT_TRUE(f.store.refused.empty()) << "nothing refused on the runtime's behalf";

  std::vector<AttachMessage> replies;
  const ExportDescription d{
      .start_page = 1, .pages = {PageId(8), PageId(9)}, .row_slot = StateSlot(3)};
  ASSERT_TRUE(
      f.d.Handle(ExportPinnedReply{.export_id = ExportId(5), .description = d}, replies).ok());
  ASSERT_TRUE(
      f.d.Handle(ExportRefusedReply{.export_id = ExportId(6), .reason = ExportRefusal::kNoHeadroom},
                 replies)
          .ok());
  EXPECT_TRUE(replies.empty()) << "no answer to an answer";
  ASSERT_EQ(f.store.pinned.size(), 1u);
  EXPECT_EQ(f.store.pinned[0].first, ExportId(5));
  EXPECT_EQ(f.store.pinned[0].second.pages, d.pages);
  EXPECT_EQ(f.store.pinned[0].second.row_slot, StateSlot(3));
  ASSERT_EQ(f.store.refused.size(), 1u);
  EXPECT_EQ(f.store.refused[0].second, ExportRefusal::kNoHeadroom);
}

TEST(StoreDispatchTest, ADetachingRuntimePinsNothing) {
  Dispatch f;
  f.d.StopIssuing();
  StoreEvent request;
  request.kind = StoreEvent::Kind::kExportRequested;
  request.export_id = ExportId(5);
  f.d.OnEvents({request}, f.out);
  EXPECT_TRUE(f.out.empty()) << "not asked of a runtime whose planes are going";
  ASSERT_EQ(f.store.refused.size(), 1u);
  EXPECT_EQ(f.store.refused[0], std::make_pair(ExportId(5), ExportRefusal::kNotFound));
  std::vector<AttachMessage> replies;
  ASSERT_TRUE(
      f.d.Handle(ExportPinnedReply{.export_id = ExportId(7), .description = {}}, replies).ok());
  EXPECT_TRUE(f.store.pinned.empty()) << "a late pin is passed on as a refusal";
  ASSERT_EQ(f.store.refused.size(), 2u);
  EXPECT_EQ(f.store.refused[1].first, ExportId(7));
}

}  // namespace
}  // namespace strata::attach
