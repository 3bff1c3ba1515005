#include "coordinator/rendezvous/rendezvous_address.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(RendezvousAddressTest, RoundTripsIpv4AndBracketedIpv6) {
  for (const RendezvousAddress& a : {RendezvousAddress{.host = "127.0.0.1", .port = 29470},
                                     RendezvousAddress{.host = "::1", .port = 1},
                                     RendezvousAddress{.host = "rank0.example", .port = 65535}}) {
    const std::string text = FormatRendezvousAddress(a);
    Result<RendezvousAddress> back = ParseRendezvousAddress(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().ToString();
    EXPECT_EQ(back->host, a.host);
    EXPECT_EQ(back->port, a.port);
  }
  EXPECT_EQ(FormatRendezvousAddress({.host = "::1", .port = 7}), "[::1]:7");
}

TEST(RendezvousAddressTest, RefusesWhatIsNotHostColonPort) {
  for (const char* bad : {"", "127.0.0.1", ":80", "h:", "h:0", "h:65536", "h:8x", "::1:80"}) {
    Result<RendezvousAddress> r = ParseRendezvousAddress(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("host:port"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace strata
