#include "launch/config/config_flags.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

namespace strata {
namespace {

using std::chrono::milliseconds;

// Parses `args` (without the program name) into `flags` through a real app.
void Parse(std::vector<std::string> args, ConfigFlags* flags) {
  CLI::App app("test");
  AddConfigFlags(&app, flags);
  std::vector<const char*> argv = {"strata"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
}

LauncherEnv Torchrun(uint32_t rank, uint32_t world) {
  LauncherEnv env;
  env.launcher = Launcher::kTorchrun;
  env.rank = rank;
  env.world_size = world;
  env.master_addr = "10.1.1.1";
  env.origin = {{"cluster.rank", "RANK"},
                {"cluster.world_size", "WORLD_SIZE"},
                {"cluster.master_addr", "MASTER_ADDR"}};
  return env;
}

TEST(ConfigFlagsTest, NoSourcesGiveTheDefaults) {
  ConfigFlags flags;
  Parse({}, &flags);
  Result<LoadedConfig> c = MergeConfig(flags, LauncherEnv{}, std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->config.cluster.world_size, 1u);
  for (const auto& [key, source] : c->source) EXPECT_EQ(source, "default") << key;
  EXPECT_EQ(c->source.size(), ConfigKeys().size());
}

TEST(ConfigFlagsTest, FlagBeatsFileBeatsEnvironmentBeatsDefault) {
  ConfigFlags flags;
  Parse({"--rank", "3"}, &flags);
  ConfigText file{"rank.toml", "[cluster]\nrank = 2\nworld_size = 4\n"};
  Result<LoadedConfig> c = MergeConfig(flags, Torchrun(1, 4), file);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->config.cluster.rank, 3u);
  EXPECT_EQ(c->source.at("cluster.rank"), "flag --rank");
  EXPECT_EQ(c->source.at("cluster.world_size"), "file rank.toml");
  EXPECT_EQ(c->config.cluster.master_addr, "10.1.1.1");
  EXPECT_EQ(c->source.at("cluster.master_addr"), "environment MASTER_ADDR (torchrun)");
  EXPECT_EQ(c->source.at("cluster.master_port"), "default");

  ConfigFlags none;
  Parse({}, &none);
  c = MergeConfig(none, Torchrun(1, 4), file);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->config.cluster.rank, 2u);  // the file beats RANK
  c = MergeConfig(none, Torchrun(1, 4), std::nullopt);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->config.cluster.rank, 1u);
  EXPECT_EQ(c->source.at("cluster.rank"), "environment RANK (torchrun)");
}

TEST(ConfigFlagsTest, EveryPrefixCacheFlag) {
  ConfigFlags flags;
  Parse({"--prefix-cache-memory", "2GiB", "--prefix-cache-disk", "/nvme",
         "--prefix-cache-disk-limit", "10GB", "--prefix-cache-drain-on-shutdown=90s",
         "--prefix-cache-max-age", "1h", "--prefix-cache-durability", "none"},
        &flags);
  Result<LoadedConfig> c = MergeConfig(flags, LauncherEnv{}, std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const PrefixCacheConfig& p = c->config.prefix_cache;
  EXPECT_EQ(p.memory_bytes, 2ULL << 30);
  EXPECT_EQ(p.disk_dir, "/nvme");
  EXPECT_EQ(p.disk_limit_bytes, 10'000'000'000ULL);
  EXPECT_EQ(p.drain_on_shutdown, (DrainOnShutdown{DrainMode::kBounded, milliseconds(90'000)}));
  EXPECT_EQ(p.max_age, milliseconds(3'600'000));
  EXPECT_EQ(p.durability, Durability::kNone);
}

TEST(ConfigFlagsTest, BareDrainFlagMeansOnAndOffOverridesTheFile) {
  ConfigText file{"f.toml", "[prefix_cache]\ndrain_on_shutdown = \"on\"\n"};
  ConfigFlags bare;
  Parse({"--prefix-cache-drain-on-shutdown"}, &bare);
  Result<LoadedConfig> c = MergeConfig(bare, LauncherEnv{}, std::nullopt);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->config.prefix_cache.drain_on_shutdown.mode, DrainMode::kUntilDone);
  ConfigFlags off;
  Parse({"--prefix-cache-drain-on-shutdown=off"}, &off);
  c = MergeConfig(off, LauncherEnv{}, file);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->config.prefix_cache.drain_on_shutdown.mode, DrainMode::kOff);
}

TEST(ConfigFlagsTest, BadFlagValueNamesTheFlag) {
  ConfigFlags flags;
  Parse({"--prefix-cache-memory", "64 gigs"}, &flags);
  Result<LoadedConfig> c = MergeConfig(flags, LauncherEnv{}, std::nullopt);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "--prefix-cache-memory: \"64 gigs\" is not a size (examples: 64GiB, 512MiB, 10GB, "
            "4096)");
}

TEST(ConfigFlagsTest, MemoryTierOnSeparateHostsIsRefusedWhateverTheSource) {
  ConfigFlags flags;
  Parse({"--prefix-cache-memory", "1GiB"}, &flags);
  Result<LoadedConfig> c = MergeConfig(flags, Torchrun(0, 2), std::nullopt);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("disk-only retention"), std::string::npos);
  ConfigFlags single;
  Parse({"--prefix-cache-memory", "1GiB", "--single-process", "--rank", "0"}, &single);
  c = MergeConfig(single, Torchrun(0, 2), std::nullopt);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
}

TEST(ConfigFlagsTest, SharedLinkThreadIsASwitch) {
  ConfigFlags off;
  Parse({}, &off);
  Result<LoadedConfig> c = MergeConfig(off, LauncherEnv{}, std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->config.cluster.shared_link_thread);
  ConfigFlags on;
  Parse({"--shared-link-thread"}, &on);
  c = MergeConfig(on, LauncherEnv{}, std::nullopt);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->config.cluster.shared_link_thread);
}

TEST(ConfigFlagsTest, OpenMpiWithoutAMasterAddressIsRefused) {
  LauncherEnv env;
  env.launcher = Launcher::kOpenMpi;
  env.rank = 1;
  env.world_size = 2;
  ConfigFlags flags;
  Parse({}, &flags);
  Result<LoadedConfig> c = MergeConfig(flags, env, std::nullopt);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("cluster.master_addr: required under openmpi with "
                                      "world_size 2"),
            std::string::npos)
      << c.status().message();
  ConfigFlags with;
  Parse({"--master-addr", "node0"}, &with);
  c = MergeConfig(with, env, std::nullopt);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->config.cluster.master_addr, "node0");
}

TEST(ConfigFlagsTest, WorldSizesThatDifferBetweenFlagAndRankFail) {
  ConfigFlags flags;
  Parse({"--world-size", "2"}, &flags);
  Result<LoadedConfig> c = MergeConfig(flags, Torchrun(3, 4), std::nullopt);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "cluster.rank: 3 is not below cluster.world_size 2 (ranks are 0..1)");
}

TEST(ConfigFlagsTest, LoadConfigReadsTheEnvironmentAndTheFile) {
  ConfigFlags flags;
  Parse({"--config", "/nonexistent/strata.toml"}, &flags);
  Result<LoadedConfig> c = LoadConfig(flags, EnvMap{});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/strata.toml"), std::string::npos);
  ConfigFlags plain;
  Parse({}, &plain);
  c = LoadConfig(plain, EnvMap{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h0"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->launcher.launcher, Launcher::kTorchrun);
  EXPECT_EQ(c->config.cluster.rank, 1u);
  EXPECT_EQ(c->config.cluster.master_addr, "h0");
}

}  // namespace
}  // namespace strata
