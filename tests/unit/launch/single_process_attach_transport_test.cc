// A runtime attached to a one-process `strata rank` (attach.socket with
// cluster.single_process) never gets the direct transport: its direct side
// would run on the rank's own planes, not the attached runtime's, and with
// no attach gate. "auto" runs staged and says why; "direct" fails startup.
#include <gtest/gtest.h>

#include "launch/rank/rank_stores.h"
#include "tests/unit/store/record/record_test_support.h"

namespace strata {
namespace {

RankConfig AttachedOneProcess(const std::string& dir, TransportChoice transport) {
  RankConfig config;
  config.cluster.world_size = 1;
  config.cluster.single_process = true;
  config.attach.socket = dir + "/attach.sock";
  config.prefix_cache.disk_dir = dir;
  config.prefix_cache.disk_limit_bytes = uint64_t{1} << 30;
  config.prefix_cache.transport = transport;
  return config;
}

TEST(SingleProcessAttachTransportTest, AutoRunsStagedAndSaysWhy) {
  testing::ScratchDir dir;
  Result<RankRole> opened =
      OpenRankStores(AttachedOneProcess(dir.path(), TransportChoice::kAuto), /*seed=*/3);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  RankServices& services = ServicesOf(*opened);
  const TransportDecision d = services.Transport();
  EXPECT_EQ(d.kind, TransportKind::kStaged);
  EXPECT_NE(d.reason.find("separate processes"), std::string::npos) << d.reason;
  EXPECT_TRUE(services.Close().ok());
}

TEST(SingleProcessAttachTransportTest, DirectFailsStartupNamingWhy) {
  testing::ScratchDir dir;
  Result<RankRole> opened =
      OpenRankStores(AttachedOneProcess(dir.path(), TransportChoice::kDirect), /*seed=*/3);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(opened.status().message().find("separate processes"), std::string::npos)
      << opened.status().ToString();
}

}  // namespace
}  // namespace strata
