#include "launch/config/config_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace strata {
namespace {

using std::chrono::milliseconds;

TEST(ConfigFileTest, EveryTable) {
  RankConfig c;
  std::vector<std::string> keys;
  Status s = ApplyConfigToml(R"(
[prefix_cache]
memory = "0"
disk = "/nvme/strata"
disk_limit = "512MiB"
drain_on_shutdown = "90s"
max_age = "2h"
durability = "none"

[cluster]
rank = 2
world_size = 4
master_addr = "10.0.0.1"
master_port = 29471
record_port = 29472
job_timeout = "30s"
connect_timeout = 600

[metrics]
port = 9500
bind = "127.0.0.1"

[log]
level = "debug"
format = "json"

[runtime]
preset = "qwen-like"
pages = 64
rows = 4
)",
                             "rank.toml", &c, &keys);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(keys.size(), 20u);
  EXPECT_EQ(c.prefix_cache.disk_dir, "/nvme/strata");
  EXPECT_EQ(c.prefix_cache.disk_limit_bytes, 512ULL << 20);
  EXPECT_EQ(c.prefix_cache.drain_on_shutdown.write_limit, milliseconds(90'000));
  EXPECT_EQ(c.prefix_cache.max_age, milliseconds(7'200'000));
  EXPECT_EQ(c.prefix_cache.durability, Durability::kNone);
  EXPECT_EQ(c.cluster.rank, 2u);
  EXPECT_EQ(c.cluster.world_size, 4u);
  EXPECT_EQ(c.cluster.master_addr, "10.0.0.1");
  EXPECT_EQ(c.cluster.master_port, 29471);
  EXPECT_EQ(c.cluster.record_port, 29472);
  EXPECT_EQ(c.cluster.job_timeout, milliseconds(30'000));
  EXPECT_EQ(c.cluster.connect_timeout, milliseconds(600'000));
  EXPECT_EQ(c.metrics.port, 9500);
  EXPECT_EQ(c.metrics.bind, "127.0.0.1");
  EXPECT_EQ(c.log.level, LogLevel::kDebug);
  EXPECT_EQ(c.log.format, LogFormat::kJson);
  EXPECT_EQ(c.runtime.preset, "qwen-like");
  EXPECT_EQ(c.runtime.pages, 64u);
  EXPECT_EQ(c.runtime.rows, 4u);
}

TEST(ConfigFileTest, KeysNotInTheFileKeepTheirValue) {
  RankConfig c;
  c.cluster.world_size = 8;
  ASSERT_TRUE(ApplyConfigToml("[log]\nlevel = \"warn\"\n", "f.toml", &c).ok());
  EXPECT_EQ(c.cluster.world_size, 8u);
  EXPECT_EQ(c.log.level, LogLevel::kWarn);
  ASSERT_TRUE(ApplyConfigToml("", "empty.toml", &c).ok());
}

TEST(ConfigFileTest, BadSizeNamesFileLineKeyAndForms) {
  RankConfig c;
  Status s = ApplyConfigToml("[prefix_cache]\n\nmemory = \"64 gigs\"\n", "rank.toml", &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "rank.toml:3: prefix_cache.memory: \"64 gigs\" is not a size (examples: 64GiB, "
            "512MiB, 10GB, 4096)");
}

TEST(ConfigFileTest, UnknownKeyListsTheKnownOnes) {
  RankConfig c;
  Status s = ApplyConfigToml("[prefix_cache]\nmemroy = \"1GiB\"\n", "rank.toml", &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "rank.toml:2: prefix_cache.memroy: unknown key (keys in [prefix_cache]: memory, disk, "
            "disk_limit, drain_on_shutdown, max_age, durability, idle_spin_us, transport, pool, "
            "pool_data, pool_instance)");
}

TEST(ConfigFileTest, UnknownTableListsTheKnownOnes) {
  RankConfig c;
  Status s = ApplyConfigToml("[prefix-cache]\nmemory = 0\n", "rank.toml", &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unknown table [prefix-cache] (tables: prefix_cache, cluster, "
                             "metrics, log, runtime, tls, attach)"),
            std::string::npos)
      << s.message();
}

TEST(ConfigFileTest, KeysOutsideTablesAndNestedTablesAreUnknown) {
  RankConfig c;
  Status s = ApplyConfigToml("memory = \"1GiB\"\n", "rank.toml", &c);
  EXPECT_NE(s.message().find("memory: a key outside any table"), std::string::npos);
  s = ApplyConfigToml("[cluster.extra]\nx = 1\n", "rank.toml", &c);
  EXPECT_NE(s.message().find("cluster.extra: unknown key"), std::string::npos) << s.message();
}

TEST(ConfigFileTest, WrongTomlTypesAreNamed) {
  RankConfig c;
  Status s = ApplyConfigToml("[prefix_cache]\nmemory = 1.5\n", "rank.toml", &c);
  EXPECT_NE(s.message().find("prefix_cache.memory: a TOML floating-point is not allowed here "
                             "(allowed: a size"),
            std::string::npos)
      << s.message();
  s = ApplyConfigToml("[cluster]\nrank = [1]\n", "rank.toml", &c);
  EXPECT_NE(s.message().find("cluster.rank: a TOML array"), std::string::npos) << s.message();
}

TEST(ConfigFileTest, SyntaxErrorsNameTheLine) {
  RankConfig c;
  Status s = ApplyConfigToml("[log]\nlevel = \n", "rank.toml", &c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank.toml:2: not valid TOML"), std::string::npos) << s.message();
}

TEST(ConfigFileTest, ReadsAFileAndRefusesAMissingOne) {
  const std::string path = ::testing::TempDir() + "/strata_config_file_test.toml";
  {
    std::ofstream out(path);
    out << "[log]\nlevel = \"error\"\n";
  }
  Result<std::string> text = ReadConfigFile(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "[log]\nlevel = \"error\"\n");
  std::remove(path.c_str());
  Result<std::string> missing = ReadConfigFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace strata
