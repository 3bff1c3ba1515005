// docs/operations.md must name every configuration key, flag and metric the
// code has, so the reference cannot silently fall behind.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "launch/config/config.h"
#include "launch/ops/metrics.h"

namespace strata {
namespace {

std::string ReadDoc() {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/docs/operations.md");
  EXPECT_TRUE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(OperationsDocTest, NamesEveryKeyAndFlag) {
  const std::string doc = ReadDoc();
  for (const ConfigKey& k : ConfigKeys()) {
    EXPECT_NE(doc.find("`" + std::string(k.name) + "`"), std::string::npos) << k.name;
    EXPECT_NE(doc.find("`" + std::string(k.flag)), std::string::npos) << k.flag;
  }
}

TEST(OperationsDocTest, NamesEveryMetric) {
  const std::string doc = ReadDoc();
  OpsSnapshot s;
  s.job_latency.push_back({"store", {}});
  s.peers.push_back({RankId(1), "up", {{"timeout", 1}}});
  std::istringstream text(RenderMetrics(s, Health{.ok = true, .reason = "ok"}));
  std::string line;
  int families = 0;
  while (std::getline(text, line)) {
    if (line.rfind("# TYPE ", 0) != 0) continue;
    const std::string name = line.substr(7, line.find(' ', 7) - 7);
    EXPECT_NE(doc.find("`" + name + "`"), std::string::npos) << name;
    ++families;
  }
  EXPECT_GT(families, 20);
}

}  // namespace
}  // namespace strata
