// The manager's traffic counts, as a table: each exchange adds to exactly
// the counters it should, refusals by operation and status.
#include "coordinator/pool/pool_traffic.h"

#include <gtest/gtest.h>

namespace strata::pool {
namespace {

// A message of type T with request id `id` and, for answers, `status`.
template <typename T>
T Message(uint64_t id, const Status& status = Status::Ok()) {
  T m;
  m.request_id = id;
  if constexpr (requires { m.status; }) m.status = status;
  return m;
}

PoolPut Put(uint64_t id, uint64_t bytes) {
  PoolPut p = Message<PoolPut>(id);
  p.put.bytes = bytes;
  return p;
}

PoolLookupAnswer Hit(uint64_t id) {
  PoolLookupAnswer a = Message<PoolLookupAnswer>(id);
  a.chain.push_back(PrefixKey{});
  return a;
}

PoolClaimAnswer Claimed(uint64_t id, const std::vector<uint64_t>& sizes) {
  PoolClaimAnswer a = Message<PoolClaimAnswer>(id);
  for (uint64_t bytes : sizes) {
    ClaimedRecord r;
    r.bytes = bytes;
    a.records.push_back(r);
  }
  return a;
}

TEST(PoolTrafficTest, CountsEachExchangeOnce) {
  PoolTraffic t;
  CountExchange(t, Message<PoolLookup>(1), Message<PoolLookupAnswer>(1));
  CountExchange(t, Message<PoolLookup>(2), Hit(2));
  CountExchange(t, Put(3, 1000), Message<PoolPutAnswer>(3));
  CountExchange(t, Put(4, 7), Message<PoolPutAnswer>(4, Status::Busy("full")));
  CountExchange(t, Message<PoolCommit>(5), Message<PoolDone>(5));
  CountExchange(t, Message<PoolAbort>(6), Message<PoolDone>(6));
  CountExchange(t, Message<PoolClaim>(7), Claimed(7, {10, 5}));
  CountExchange(t, Message<PoolClaim>(8), Message<PoolClaimAnswer>(8, Status::NotFound("gone")));
  CountExchange(t, Message<PoolRelease>(9), Message<PoolDone>(9));
  CountExchange(t, Message<PoolRelease>(10), Message<PoolDone>(10, Status::NotFound("no claim")));

  EXPECT_EQ(t.lookups, 2u);
  EXPECT_EQ(t.lookup_hits, 1u);
  EXPECT_EQ(t.puts_granted, 1u);
  EXPECT_EQ(t.put_bytes, 1000u);
  EXPECT_EQ(t.puts_committed, 1u);
  EXPECT_EQ(t.puts_aborted, 1u);
  EXPECT_EQ(t.claims, 1u);
  EXPECT_EQ(t.claimed_records, 2u);
  EXPECT_EQ(t.claimed_bytes, 15u);
  EXPECT_EQ(t.releases, 1u);
  const std::map<std::pair<std::string, std::string>, uint64_t> refusals = {
      {{"put", "busy"}, 1}, {{"claim", "not_found"}, 1}, {{"release", "not_found"}, 1}};
  EXPECT_EQ(t.refusals, refusals);
}

TEST(PoolTrafficTest, AnAnswerOfAnotherKindCountsNothing) {
  PoolTraffic t;
  CountExchange(t, Message<PoolLookup>(1), Message<PoolDone>(1));
  CountExchange(t, Message<PoolClaim>(2), Message<PoolLookupAnswer>(2));
  CountExchange(t, PoolHello{}, PoolHelloReject{});
  EXPECT_EQ(t.lookups, 0u);
  EXPECT_EQ(t.claims, 0u);
  EXPECT_TRUE(t.refusals.empty());
}

TEST(PoolTrafficTest, ReasonLabelsAreSnakeCase) {
  EXPECT_EQ(ReasonLabel(Status::NotFound("x")), "not_found");
  EXPECT_EQ(ReasonLabel(Status::FailedPrecondition("x")), "failed_precondition");
  EXPECT_EQ(ReasonLabel(Status::Busy("x")), "busy");
}

}  // namespace
}  // namespace strata::pool
