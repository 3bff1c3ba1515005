#include "launch/config/config.h"

#include <gtest/gtest.h>

#include <set>

namespace strata {
namespace {

using std::chrono::milliseconds;

Status Set(std::string_view key, const ConfigValue& value, RankConfig* c) {
  const ConfigKey* k = FindConfigKey(key);
  EXPECT_NE(k, nullptr) << key;
  return SetConfigValue(*k, value, key, c);
}

TEST(ConfigTest, DefaultsAreTheDocumentedOnes) {
  RankConfig c;
  EXPECT_EQ(c.prefix_cache.memory_bytes, 0u);
  EXPECT_FALSE(c.prefix_cache.disk_dir.has_value());
  EXPECT_FALSE(c.prefix_cache.disk_limit_bytes.has_value());
  EXPECT_EQ(c.prefix_cache.drain_on_shutdown.mode, DrainMode::kOff);
  EXPECT_FALSE(c.prefix_cache.max_age.has_value());
  EXPECT_EQ(c.prefix_cache.durability, Durability::kSync);
  EXPECT_EQ(c.cluster.rank, 0u);
  EXPECT_EQ(c.cluster.world_size, 1u);
  EXPECT_EQ(c.cluster.master_addr, "127.0.0.1");
  EXPECT_EQ(c.cluster.master_port, 29470);
  EXPECT_EQ(c.cluster.record_port, 0);
  EXPECT_EQ(c.cluster.job_timeout, milliseconds(60'000));
  EXPECT_EQ(c.cluster.connect_timeout, milliseconds(120'000));
  EXPECT_EQ(c.metrics.port, 9470);
  EXPECT_EQ(c.metrics.bind, "127.0.0.1");
  EXPECT_EQ(c.metrics.linger_after_failure, milliseconds(30'000));
  EXPECT_EQ(c.runtime.service_bind, "127.0.0.1");
  EXPECT_EQ(c.log.level, LogLevel::kInfo);
  EXPECT_EQ(c.log.format, LogFormat::kText);
  EXPECT_EQ(c.runtime.preset, "tiny");
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigTest, EveryKeyHasAFlagFormsAndADefault) {
  std::set<std::string_view> names;
  std::set<std::string_view> flags;
  for (const ConfigKey& k : ConfigKeys()) {
    EXPECT_TRUE(names.insert(k.name).second) << k.name;
    EXPECT_TRUE(flags.insert(k.flag).second) << k.flag;
    EXPECT_EQ(k.flag.substr(0, 2), "--") << k.name;
    EXPECT_FALSE(k.forms.empty()) << k.name;
    EXPECT_FALSE(k.default_text.empty()) << k.name;
    EXPECT_NE(k.name.find('.'), std::string_view::npos) << k.name;
  }
  EXPECT_EQ(ConfigTables(), (std::vector<std::string_view>{"prefix_cache", "cluster", "metrics",
                                                           "log", "runtime", "tls", "attach"}));
}

TEST(ConfigTest, PrefixCacheValues) {
  RankConfig c;
  ASSERT_TRUE(Set("prefix_cache.memory", std::string("64GiB"), &c).ok());
  EXPECT_EQ(c.prefix_cache.memory_bytes, 64ULL << 30);
  ASSERT_TRUE(Set("prefix_cache.memory", int64_t{4096}, &c).ok());
  EXPECT_EQ(c.prefix_cache.memory_bytes, 4096u);
  ASSERT_TRUE(Set("prefix_cache.disk", std::string("/var/cache/strata"), &c).ok());
  EXPECT_EQ(c.prefix_cache.disk_dir, "/var/cache/strata");
  ASSERT_TRUE(Set("prefix_cache.disk_limit", std::string("10GB"), &c).ok());
  EXPECT_EQ(c.prefix_cache.disk_limit_bytes, 10'000'000'000ULL);
  ASSERT_TRUE(Set("prefix_cache.max_age", std::string("2h"), &c).ok());
  EXPECT_EQ(c.prefix_cache.max_age, milliseconds(7'200'000));
  ASSERT_TRUE(Set("prefix_cache.max_age", int64_t{30}, &c).ok());
  EXPECT_EQ(c.prefix_cache.max_age, milliseconds(30'000));
  ASSERT_TRUE(Set("prefix_cache.max_age", std::string("off"), &c).ok());
  EXPECT_FALSE(c.prefix_cache.max_age.has_value());
}

TEST(ConfigTest, DrainOnShutdownForms) {
  RankConfig c;
  ASSERT_TRUE(Set("prefix_cache.drain_on_shutdown", std::string("on"), &c).ok());
  EXPECT_EQ(c.prefix_cache.drain_on_shutdown.mode, DrainMode::kUntilDone);
  ASSERT_TRUE(Set("prefix_cache.drain_on_shutdown", std::string("90s"), &c).ok());
  EXPECT_EQ(c.prefix_cache.drain_on_shutdown,
            (DrainOnShutdown{DrainMode::kBounded, milliseconds(90'000)}));
  EXPECT_EQ(DrainOnShutdownText(c.prefix_cache.drain_on_shutdown), "90s");
  ASSERT_TRUE(Set("prefix_cache.drain_on_shutdown", int64_t{5}, &c).ok());
  EXPECT_EQ(c.prefix_cache.drain_on_shutdown.write_limit, milliseconds(5000));
  ASSERT_TRUE(Set("prefix_cache.drain_on_shutdown", std::string("off"), &c).ok());
  EXPECT_EQ(c.prefix_cache.drain_on_shutdown.mode, DrainMode::kOff);
  ASSERT_TRUE(Set("prefix_cache.drain_on_shutdown", true, &c).ok());
  EXPECT_EQ(c.prefix_cache.drain_on_shutdown.mode, DrainMode::kUntilDone);
  Status bad = Set("prefix_cache.drain_on_shutdown", std::string("later"), &c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("prefix_cache.drain_on_shutdown: \"later\" is not \"on\", \"off\" "
                               "or a positive duration"),
            std::string::npos)
      << bad.message();
  EXPECT_FALSE(Set("prefix_cache.drain_on_shutdown", int64_t{0}, &c).ok());
}

TEST(ConfigTest, DurabilityIsSyncOrNone) {
  RankConfig c;
  ASSERT_TRUE(Set("prefix_cache.durability", std::string("none"), &c).ok());
  EXPECT_EQ(c.prefix_cache.durability, Durability::kNone);
  ASSERT_TRUE(Set("prefix_cache.durability", std::string("sync"), &c).ok());
  EXPECT_EQ(c.prefix_cache.durability, Durability::kSync);
  const Status bad = Set("prefix_cache.durability", std::string("fsync"), &c);
  EXPECT_EQ(bad.message(), "prefix_cache.durability: \"fsync\" is not \"sync\" or \"none\"");
  EXPECT_FALSE(Set("prefix_cache.durability", true, &c).ok());
  EXPECT_EQ(c.prefix_cache.durability, Durability::kSync);
}

TEST(ConfigTest, IdleSpinIsMicrosecondsOrTheMachinesDefault) {
  RankConfig c;
  EXPECT_EQ(IdleSpin(c.prefix_cache), DefaultIdleSpin());
  EXPECT_EQ(DefaultIdleSpin(),
            UsableCpus() >= kIdleSpinMinCpus ? kIdleSpinBudget : std::chrono::microseconds(0));
  ASSERT_TRUE(Set("prefix_cache.idle_spin_us", int64_t{250}, &c).ok());
  EXPECT_EQ(IdleSpin(c.prefix_cache), std::chrono::microseconds(250));
  ASSERT_TRUE(Set("prefix_cache.idle_spin_us", std::string("0"), &c).ok());
  EXPECT_EQ(IdleSpin(c.prefix_cache), std::chrono::microseconds(0));
  const Status s = Set("prefix_cache.idle_spin_us", int64_t{20'000}, &c);
  EXPECT_EQ(s.message(), "prefix_cache.idle_spin_us: 20000 is out of range (0..10000)");
  EXPECT_EQ(IdleSpin(c.prefix_cache), std::chrono::microseconds(0)) << "a refused value changed it";
}

TEST(ConfigTest, LinkIdleSpinIsOffUnlessSet) {
  RankConfig c;
  EXPECT_EQ(c.cluster.link_idle_spin_us, 0u);
  ASSERT_TRUE(Set("cluster.link_idle_spin_us", int64_t{80}, &c).ok());
  EXPECT_EQ(c.cluster.link_idle_spin_us, 80u);
  const Status s = Set("cluster.link_idle_spin_us", int64_t{10'001}, &c);
  EXPECT_EQ(s.message(), "cluster.link_idle_spin_us: 10001 is out of range (0..10000)");
  EXPECT_EQ(c.cluster.link_idle_spin_us, 80u) << "a refused value changed it";
}

TEST(ConfigTest, RankZeroLinksShareAThreadOnlyWhenAsked) {
  RankConfig c;
  EXPECT_FALSE(c.cluster.shared_link_thread);
  ASSERT_TRUE(Set("cluster.shared_link_thread", true, &c).ok());
  EXPECT_TRUE(c.cluster.shared_link_thread);
  const Status s = Set("cluster.shared_link_thread", std::string("sometimes"), &c);
  EXPECT_NE(s.message().find("is not true or false"), std::string::npos);
  EXPECT_TRUE(c.cluster.shared_link_thread) << "a refused value changed it";
}

TEST(ConfigTest, BadValuesNameTheKeyAndWhatIsAllowed) {
  RankConfig c;
  Status s = Set("prefix_cache.memory", std::string("64 gigs"), &c);
  EXPECT_EQ(s.message(),
            "prefix_cache.memory: \"64 gigs\" is not a size (examples: 64GiB, 512MiB, 10GB, 4096)");
  s = Set("prefix_cache.memory", int64_t{-1}, &c);
  EXPECT_NE(s.message().find("prefix_cache.memory: -1 is not a size"), std::string::npos);
  s = Set("prefix_cache.max_age", std::string("forever"), &c);
  EXPECT_NE(s.message().find("prefix_cache.max_age: \"forever\" is not \"off\" or a positive"),
            std::string::npos);
  s = Set("cluster.master_port", int64_t{70000}, &c);
  EXPECT_EQ(s.message(), "cluster.master_port: 70000 is out of range (1..65535)");
  s = Set("cluster.master_port", int64_t{0}, &c);
  EXPECT_FALSE(s.ok());
  s = Set("cluster.world_size", std::string("four"), &c);
  EXPECT_NE(s.message().find("cluster.world_size: \"four\" is not a whole number"),
            std::string::npos);
  s = Set("cluster.single_process", std::string("yes"), &c);
  EXPECT_NE(s.message().find("is not true or false"), std::string::npos);
  s = Set("log.level", std::string("loud"), &c);
  EXPECT_EQ(s.message(), "log.level: \"loud\" is not one of trace, debug, info, warn, error, off");
  s = Set("log.format", std::string("xml"), &c);
  EXPECT_NE(s.message().find("text, json"), std::string::npos);
  s = Set("runtime.preset", std::string("gpt-9"), &c);
  EXPECT_NE(s.message().find("runtime.preset: \"gpt-9\" is not a preset (tiny"), std::string::npos);
  s = Set("runtime.pages", int64_t{0}, &c);
  EXPECT_FALSE(s.ok());
  s = Set("prefix_cache.disk", std::string(""), &c);
  EXPECT_NE(s.message().find("is not a directory path"), std::string::npos);
  s = Set("cluster.job_timeout", true, &c);
  EXPECT_NE(s.message().find("cluster.job_timeout: true is not a duration"), std::string::npos);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(ConfigTest, AttachSocketServesEveryRankLayoutWithHostOrGpuPlanes) {
  RankConfig c;
  c.attach.socket = "/run/strata/rank.sock";
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.cluster.world_size = 2;  // ranks in separate processes: each serves its own runtime
  EXPECT_TRUE(ValidateConfig(c).ok()) << ValidateConfig(c).ToString();
  c.cluster.single_process = true;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.runtime.gpus = {0};  // the runtime's planes on GPU 0, shared as CUDA VMM allocations
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigTest, RendezvousFromAttachNeedsAttachedRanksInSeparateProcesses) {
  RankConfig c;
  ASSERT_TRUE(Set("cluster.rendezvous", std::string("attach"), &c).ok());
  EXPECT_EQ(c.cluster.rendezvous, RendezvousSource::kAttach);
  EXPECT_NE(Set("cluster.rendezvous", std::string("store"), &c)
                .message()
                .find("\"store\" is not \"tcp\" or \"attach\""),
            std::string::npos);
  c.cluster.world_size = 3;
  c.cluster.rank = 1;
  EXPECT_NE(ValidateConfig(c).message().find("cluster.rendezvous"), std::string::npos);
  c.attach.socket = "/run/strata/rank1.sock";
  EXPECT_TRUE(ValidateConfig(c).ok()) << ValidateConfig(c).ToString();
  c.cluster.single_process = true;
  c.cluster.rank = 0;
  EXPECT_NE(ValidateConfig(c).message().find("cluster.rendezvous"), std::string::npos);
}

TEST(ConfigTest, SeparateProcessRanksRefuseAMemoryTier) {
  RankConfig c;
  c.cluster.world_size = 4;
  c.cluster.rank = 1;
  c.prefix_cache.memory_bytes = 1ULL << 30;
  Status s = ValidateConfig(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("prefix_cache.memory: 1GiB with ranks in separate processes "
                             "(world_size 4): a memory tier keeps every rank's bytes in one "
                             "process, so ranks on separate hosts support disk-only retention"),
            std::string::npos)
      << s.message();
  c.cluster.single_process = true;
  c.cluster.rank = 0;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.cluster.single_process = false;
  c.prefix_cache.memory_bytes = 0;
  c.cluster.rank = 1;
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigTest, RankMustBeBelowWorldSize) {
  RankConfig c;
  c.cluster.world_size = 4;
  c.cluster.rank = 4;
  Status s = ValidateConfig(c);
  EXPECT_EQ(s.message(), "cluster.rank: 4 is not below cluster.world_size 4 (ranks are 0..3)");
  c.cluster.rank = 2;
  c.cluster.single_process = true;
  EXPECT_NE(ValidateConfig(c).message().find("cluster.single_process"), std::string::npos);
}

TEST(ConfigTest, PortsFitAndDoNotCollideOnRankZero) {
  RankConfig c;
  c.metrics.port = 65535;
  c.cluster.local_rank = 1;
  EXPECT_NE(ValidateConfig(c).message().find("metrics.port: 65535 + cluster.local_rank 1"),
            std::string::npos);
  c = RankConfig{};
  c.cluster.world_size = 2;
  c.cluster.record_port = c.cluster.master_port;
  EXPECT_NE(ValidateConfig(c).message().find("cluster.record_port"), std::string::npos);
  c.cluster.record_port = 0;
  c.metrics.port = c.cluster.master_port;
  EXPECT_NE(ValidateConfig(c).message().find("metrics.port"), std::string::npos);
  c.cluster.rank = 1;  // a peer listens on neither cluster port
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigTest, ListenersBindLoopbackUnlessConfigured) {
  RankConfig c;
  EXPECT_EQ(c.metrics.bind, "127.0.0.1");
  EXPECT_EQ(c.runtime.service_bind, "127.0.0.1");
  ASSERT_TRUE(Set("runtime.service_bind", std::string("10.0.0.2"), &c).ok());
  EXPECT_EQ(c.runtime.service_bind, "10.0.0.2");
  EXPECT_FALSE(Set("runtime.service_bind", std::string(""), &c).ok());
  ASSERT_TRUE(Set("metrics.bind", std::string("0.0.0.0"), &c).ok());
  EXPECT_EQ(c.metrics.bind, "0.0.0.0");
}

TEST(ConfigTest, RecordListenerAndLinkLiveness) {
  RankConfig c;
  EXPECT_FALSE(c.cluster.record_bind.has_value());  // the rendezvous's address
  EXPECT_EQ(c.cluster.heartbeat_interval, milliseconds(1000));
  EXPECT_EQ(c.cluster.silence_timeout, milliseconds(10'000));
  ASSERT_TRUE(Set("cluster.record_bind", std::string("10.0.0.1"), &c).ok());
  EXPECT_EQ(c.cluster.record_bind, "10.0.0.1");
  ASSERT_TRUE(Set("cluster.heartbeat_interval", std::string("500ms"), &c).ok());
  ASSERT_TRUE(Set("cluster.silence_timeout", std::string("3s"), &c).ok());
  EXPECT_TRUE(ValidateConfig(c).ok());
  ASSERT_TRUE(Set("cluster.silence_timeout", std::string("500ms"), &c).ok());
  EXPECT_NE(ValidateConfig(c).message().find("cluster.silence_timeout"), std::string::npos);
}

TEST(ConfigTest, TlsNeedsAllThreeFilesOrNone) {
  RankConfig c;
  EXPECT_TRUE(ValidateConfig(c).ok());
  EXPECT_FALSE(c.tls.enabled());
  ASSERT_TRUE(Set("tls.cert", std::string("/etc/strata/rank1.crt"), &c).ok());
  Status s = ValidateConfig(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tls.key, tls.ca not set"), std::string::npos) << s.ToString();
  ASSERT_TRUE(Set("tls.ca", std::string("/etc/strata/ca.crt"), &c).ok());
  s = ValidateConfig(c);
  EXPECT_NE(s.message().find("tls.key not set"), std::string::npos) << s.ToString();
  ASSERT_TRUE(Set("tls.key", std::string("/etc/strata/rank1.key"), &c).ok());
  EXPECT_TRUE(ValidateConfig(c).ok());
  EXPECT_TRUE(c.tls.enabled());
  EXPECT_EQ(*c.tls.key, "/etc/strata/rank1.key");
  EXPECT_FALSE(Set("tls.ca", int64_t{3}, &c).ok());
}

TEST(ConfigTest, DiskLimitNeedsADirectory) {
  RankConfig c;
  c.prefix_cache.disk_limit_bytes = 1 << 20;
  EXPECT_NE(ValidateConfig(c).message().find("prefix_cache.disk_limit: set without"),
            std::string::npos);
  c.prefix_cache.disk_dir = "/tmp/x";
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigTest, PoolWorksWithEveryLocalChain) {
  RankConfig c;
  ASSERT_TRUE(Set("prefix_cache.pool", std::string("/run/strata/pool.sock"), &c).ok());
  EXPECT_EQ(c.prefix_cache.pool, "/run/strata/pool.sock");
  EXPECT_TRUE(ValidateConfig(c).ok()) << "the pool alone";
  c.prefix_cache.memory_bytes = 1 << 20;
  EXPECT_TRUE(ValidateConfig(c).ok()) << "memory + pool";
  c.prefix_cache.disk_dir = "/tmp/x";
  EXPECT_TRUE(ValidateConfig(c).ok()) << "memory + disk + pool";
  c.prefix_cache.memory_bytes = 0;
  EXPECT_TRUE(ValidateConfig(c).ok()) << "disk + pool";
  c.cluster.world_size = 2;  // ranks in separate processes: rank zero owns the session
  EXPECT_TRUE(ValidateConfig(c).ok()) << "ranks in separate processes, disk + pool";
  c.cluster.world_size = 1;
  ASSERT_TRUE(Set("prefix_cache.pool_instance", std::string("node7-a"), &c).ok());
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.prefix_cache.pool.reset();
  EXPECT_NE(ValidateConfig(c).message().find("prefix_cache.pool_instance: set without"),
            std::string::npos);
}

TEST(ConfigTest, DiskLimitDefaultsToATenthOfFreeSpace) {
  PrefixCacheConfig p;
  p.disk_dir = "/d";
  EXPECT_EQ(ResolveDiskLimit(p, 1000), 100u);
  EXPECT_EQ(ResolveDiskLimit(p, 9), 0u);
  p.disk_limit_bytes = 12345;
  EXPECT_EQ(ResolveDiskLimit(p, 1000), 12345u);
  p.disk_limit_bytes = 0;  // explicit zero: no disk store
  EXPECT_EQ(ResolveDiskLimit(p, 1000), 0u);
}

TEST(ConfigTest, LingerAfterFailureIsADurationOrOff) {
  RankConfig c;
  ASSERT_TRUE(Set("metrics.linger_after_failure", std::string("500ms"), &c).ok());
  EXPECT_EQ(c.metrics.linger_after_failure, milliseconds(500));
  for (const ConfigValue& off :
       {ConfigValue{std::string("off")}, ConfigValue{std::string("0")}, ConfigValue{int64_t{0}}}) {
    c.metrics.linger_after_failure = milliseconds(1);
    ASSERT_TRUE(Set("metrics.linger_after_failure", off, &c).ok());
    EXPECT_EQ(c.metrics.linger_after_failure, milliseconds(0));
  }
  const Status s = Set("metrics.linger_after_failure", std::string("soon"), &c);
  EXPECT_NE(s.message().find("metrics.linger_after_failure"), std::string::npos) << s.ToString();
}

TEST(ConfigTest, CopyRatesAreSizesPerSecondAndReachTheTransferThreads) {
  RankConfig c;
  EXPECT_EQ(TransferThreads(c.runtime).copy_out_bytes_per_s, 0u);  // unbounded by default
  EXPECT_EQ(TransferThreads(c.runtime).restore_bytes_per_s, 0u);
  ASSERT_TRUE(Set("runtime.copy_out_rate", std::string("12GB"), &c).ok());
  ASSERT_TRUE(Set("runtime.restore_rate", std::string("800MiB"), &c).ok());
  const ThreadedTransfersOptions t = TransferThreads(c.runtime);
  EXPECT_EQ(t.copy_out_bytes_per_s, 12'000'000'000u);
  EXPECT_EQ(t.restore_bytes_per_s, 800u << 20);
  const Status s = Set("runtime.copy_out_rate", std::string("fast"), &c);
  EXPECT_NE(s.message().find("runtime.copy_out_rate"), std::string::npos) << s.ToString();
}

TEST(ConfigTest, MetricsPortIsOffsetByLocalRank) {
  RankConfig c;
  c.cluster.local_rank = 3;
  EXPECT_EQ(EffectiveMetricsPort(c), 9473);
  c.metrics.port = 0;
  EXPECT_EQ(EffectiveMetricsPort(c), 0);
}

}  // namespace
}  // namespace strata
