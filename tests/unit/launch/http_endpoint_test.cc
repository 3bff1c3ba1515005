#include "launch/ops/http_endpoint.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "launch/ops/metrics.h"

namespace strata {
namespace {

using namespace std::chrono_literals;

OpsSnapshot Snap() {
  OpsSnapshot s;
  s.rank = RankId(1);
  s.world_size = 2;
  s.store.lookups = 42;
  s.store.disk.records = 9;
  s.peers.push_back({RankId(0), "up", {{"timeout", 1}}});
  s.taken_at = std::chrono::steady_clock::now();
  return s;
}

std::unique_ptr<HttpEndpoint> StartLoopback(SnapshotPublisher* pub,
                                            std::chrono::milliseconds stale_after = 1h) {
  HttpEndpointOptions o;
  o.bind = "127.0.0.1";
  o.port = 0;
  o.stale_after = stale_after;
  Result<std::unique_ptr<HttpEndpoint>> e = HttpEndpoint::Start(o, [pub] { return pub->Latest(); });
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return std::move(e).value();
}

TEST(HttpEndpointTest, ServesMetricsHealthAndStatus) {
  SnapshotPublisher pub;
  pub.Publish(Snap());
  auto endpoint = StartLoopback(&pub);
  ASSERT_NE(endpoint->port(), 0);
  httplib::Client client("127.0.0.1", endpoint->port());
  client.set_read_timeout(10s);

  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->get_header_value("Content-Type"), kPrometheusContentType);
  EXPECT_EQ(metrics->body, RenderMetrics(*pub.Latest(), Health{.ok = true, .reason = "ok"}));
  EXPECT_NE(metrics->body.find("strata_lookups_total 42\n"), std::string::npos);
  EXPECT_NE(metrics->body.find("\nstrata_healthy 1\n"), std::string::npos);

  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");

  auto status = client.Get("/status");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->status, 200);
  nlohmann::json j = nlohmann::json::parse(status->body);
  EXPECT_EQ(j["rank"], 1);
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["peers"][0]["state"], "up");
  EXPECT_EQ(j["store"]["disk"]["records"], 9);

  auto missing = client.Get("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST(HttpEndpointTest, ServesTheNewestSnapshot) {
  SnapshotPublisher pub;
  pub.Publish(Snap());
  auto endpoint = StartLoopback(&pub);
  httplib::Client client("127.0.0.1", endpoint->port());
  OpsSnapshot next = Snap();
  next.store.lookups = 43;
  pub.Publish(next);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("strata_lookups_total 43\n"), std::string::npos);
}

TEST(HttpEndpointTest, UnhealthyBeforeTheFirstSnapshotAndWhenTheOwnerSaysSo) {
  SnapshotPublisher pub;
  auto endpoint = StartLoopback(&pub);
  httplib::Client client("127.0.0.1", endpoint->port());
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_NE(health->body.find("starting"), std::string::npos);
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 503);
  auto status = client.Get("/status");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->status, 503);
  EXPECT_EQ(nlohmann::json::parse(status->body)["healthy"], false);

  OpsSnapshot bad = Snap();
  bad.unhealthy_reason = "transport stopped: link to rank 0 lost";
  pub.Publish(bad);
  health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(health->body, "transport stopped: link to rank 0 lost\n");
  status = client.Get("/status");
  ASSERT_TRUE(status);
  nlohmann::json j = nlohmann::json::parse(status->body);
  EXPECT_EQ(j["healthy"], false);
  EXPECT_EQ(j["reason"], "transport stopped: link to rank 0 lost");
  metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("\nstrata_healthy 0\n"), std::string::npos);
}

TEST(HttpEndpointTest, StaleSnapshotIsUnhealthy) {
  SnapshotPublisher pub;
  OpsSnapshot old = Snap();
  old.taken_at = std::chrono::steady_clock::now() - 2h;
  pub.Publish(old);
  auto endpoint = StartLoopback(&pub, 1h);
  httplib::Client client("127.0.0.1", endpoint->port());
  auto health = client.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_NE(health->body.find("the owner thread stopped publishing"), std::string::npos);
  // /metrics still answers, and says what /healthz says.
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("\nstrata_healthy 0\n"), std::string::npos);
}

TEST(HttpEndpointTest, BusyPortIsAClearError) {
  SnapshotPublisher pub;
  auto first = StartLoopback(&pub);
  HttpEndpointOptions o;
  o.bind = "127.0.0.1";
  o.port = first->port();
  Result<std::unique_ptr<HttpEndpoint>> second =
      HttpEndpoint::Start(o, [&pub] { return pub.Latest(); });
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("metrics endpoint: cannot listen on 127.0.0.1:" +
                                           std::to_string(first->port())),
            std::string::npos)
      << second.status().message();
}

TEST(HttpEndpointTest, StopsPromptlyRightAfterStart) {
  SnapshotPublisher pub;
  for (int i = 0; i < 5; ++i) {
    auto endpoint = StartLoopback(&pub);
    EXPECT_NE(endpoint->port(), 0);
  }  // each destructor stops and joins
}

}  // namespace
}  // namespace strata
