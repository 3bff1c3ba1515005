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

}  // namespace
}  // namespace strata::attach
