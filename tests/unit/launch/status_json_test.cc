#include "launch/ops/status_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace strata {
namespace {

TEST(StatusJsonTest, RankPeersStoreAndLatency) {
  OpsSnapshot s;
  s.rank = RankId(0);
  s.world_size = 3;
  s.store.lookups = 12;
  s.store.hits = 5;
  s.store.disk.records = 7;
  s.store.memory.bytes_out_total = 4096;
  s.peers.push_back({RankId(1), "up", {}});
  s.peers.push_back({RankId(2), "failed", {{"timeout", 2}}});
  LatencyHistogram h;
  h.Record(100);
  h.Record(300);
  s.job_latency.push_back({"fetch", h.Snapshot()});
  s.transport = "staged";
  s.transport_reason = "direct refused: libcufile.so.0 not found";
  nlohmann::json j = nlohmann::json::parse(RenderStatusJson(&s, Health{true, "ok"}));
  EXPECT_EQ(j["rank"], 0);
  EXPECT_EQ(j["world_size"], 3);
  EXPECT_EQ(j["healthy"], true);
  EXPECT_EQ(j["reason"], "ok");
  ASSERT_EQ(j["peers"].size(), 2u);
  EXPECT_EQ(j["peers"][1]["rank"], 2);
  EXPECT_EQ(j["peers"][1]["state"], "failed");
  EXPECT_EQ(j["peers"][1]["errors"]["timeout"], 2);
  EXPECT_EQ(j["store"]["lookups"], 12);
  EXPECT_EQ(j["store"]["hits"], 5);
  EXPECT_EQ(j["store"]["disk"]["records"], 7);
  EXPECT_EQ(j["store"]["memory"]["bytes_out_total"], 4096);
  EXPECT_EQ(j["store"].size(), 24u);  // 21 fields, the abandoned retries + two tiers
  EXPECT_EQ(j["store"]["retry_abandoned"].size(), kRetryCauseCount);
  EXPECT_EQ(j["store"]["retry_abandoned"]["slabs"], 0);
  EXPECT_EQ(j["store"]["memory"].size(), 13u);
  EXPECT_EQ(j["transport"]["kind"], "staged");
  EXPECT_EQ(j["transport"]["reason"], "direct refused: libcufile.so.0 not found");
  EXPECT_EQ(j["job_latency"]["fetch"]["count"], 2);
  EXPECT_EQ(j["job_latency"]["fetch"]["sum_us"], 400);
}

TEST(StatusJsonTest, NothingPublishedYet) {
  nlohmann::json j =
      nlohmann::json::parse(RenderStatusJson(nullptr, Health{false, "starting: no state"}));
  EXPECT_EQ(j["healthy"], false);
  EXPECT_EQ(j["reason"], "starting: no state");
  EXPECT_FALSE(j.contains("rank"));
}

TEST(StatusJsonTest, InvalidUtf8IsReplacedNotThrown) {
  OpsSnapshot s;
  s.peers.push_back({RankId(1), std::string("bad\xff"), {}});
  nlohmann::json j = nlohmann::json::parse(RenderStatusJson(&s, Health{true, "ok"}));
  EXPECT_EQ(j["peers"][0]["state"].get<std::string>().substr(0, 3), "bad");
}

}  // namespace
}  // namespace strata
