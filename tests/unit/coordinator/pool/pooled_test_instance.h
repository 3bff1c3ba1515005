// An instance of the pooled-store tests: synthetic planes, a memory tier,
// its pool link and a synthetic runtime, in one process with a manager the
// test runs (pooled_store_test.cc, pooled_store_tickets_test.cc).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "coordinator/pool/pool_server.h"
#include "coordinator/pool/pooled_store.h"
#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/tier/memory_store.h"
#include "store/transfer/host_planes.h"

namespace strata::pool::pooled_test {

using namespace std::chrono_literals;

constexpr uint64_t kWarmSlots = 36;            // about three 10-page records
constexpr uint64_t kConversationTokens = 640;  // one 10-page record each
constexpr int kConversations = 6;

struct InstanceOptions {
  std::string socket_path;
  std::string source;
  uint8_t layout_salt = 0;  // nonzero: another layout fingerprint
  StoreClock clock{};
  ArenaRegistration registration = ArenaRegistration::kNone;
  // The lookup grace (PoolClientOptions::lookup_bound); unset: on the Unix
  // socket the answer bound (5 s), so that a loaded machine does not turn a
  // hit into a miss.
  std::optional<std::chrono::milliseconds> lookup_grace{};
  // Announce holdings and serve exports (an ExportCopier over the planes).
  bool exports = false;
  // Over TCP (socket_path tcp://...): the job secret, and how records move.
  std::optional<JobSecret> job_secret{};
  PoolDataPath data_path = PoolDataPath::kAuto;
  size_t eviction_notices_max = 1024;  // the runtime's notice queue
};

// The manager both pooled-store fixtures run: pool "shared" on
// `dir`/pool.sock, 512 slots of 64 KiB in ordinary pages.
inline PoolServerOptions ManagerOptions(const std::string& dir) {
  PoolServerOptions options;
  options.name = "shared";
  options.socket_path = dir + "/pool.sock";
  options.slot_bytes = 64 * 1024;
  options.slot_count = 512;
  options.huge_pages = HugePages::kNever;
  return options;
}

// A steady clock the test moves by hand.
struct ManualClock {
  std::shared_ptr<std::chrono::steady_clock::time_point> now =
      std::make_shared<std::chrono::steady_clock::time_point>();
  StoreClock AsStoreClock() const {
    StoreClock c;
    c.steady = [now = now] { return *now; };
    return c;
  }
  void Advance(std::chrono::milliseconds by) const { *now += by; }
};

// One instance: synthetic planes, a memory tier, its pool link and runtime.
struct Instance {
  explicit Instance(const InstanceOptions& o)
      : geometry(*PresetGeometry("tiny", 1, 512, 16)), planes(geometry) {
    RecordLayout layout(geometry);
    slabs = std::shared_ptr<SlabPool>(*SlabPool::Create(layout.page_record_bytes(), kWarmSlots, 0));
    memory = std::make_unique<MemoryStore>(geometry, slabs, *MakeHostTransfers(planes));
    PoolLinkOptions link;
    link.client.socket_path = o.socket_path;
    link.client.hello = InstanceHello(geometry, NamespaceIdentity{3}, {o.source});
    link.client.hello.layout[0] ^= o.layout_salt;
    link.client.lookup_bound = o.lookup_grace;
    link.client.job_secret = o.job_secret;
    link.client.data_path = o.data_path;
    link.startup_retry_interval = 10ms;
    link.clock = o.clock;
    link.registration = o.registration;
    if (o.exports) {
      export_copier = std::make_unique<ExportCopier>(*MakeHostTransfers(planes), geometry, nullptr);
    }
    pooled = std::make_unique<PooledStore>(
        PooledTiers{.local = memory.get(),
                    .landing = memory.get(),
                    .intake = memory.get(),
                    .record_sizes = {.page_record_bytes = layout.page_record_bytes(),
                                     .row_segment_bytes = layout.row_segment_bytes()},
                    .export_copier = export_copier.get()},
        PoolLink::AttachAtStartup(link));
    memory->SetEvictionSink(pooled.get());
    runtime = std::make_unique<SyntheticRuntime>(
        planes, pooled.get(),
        SyntheticRuntimeOptions{.seed = 1, .eviction_notices_max = o.eviction_notices_max});
  }
  ~Instance() {
    runtime.reset();
    memory->SetEvictionSink(nullptr);
  }

  // Runs kConversations one-turn conversations, draining stores after each;
  // then, with `flush_puts`, settles the puts their evictions parked (each
  // reaches the manager or waits for its gate), so counts are final.
  void Compute(bool flush_puts = true) {
    for (int i = 0; i < kConversations; ++i) {
      EXPECT_TRUE(runtime->Turn(runtime->NewConversation(), kConversationTokens).ok());
      EXPECT_TRUE(runtime->WaitForStores().ok());
    }
    if (flush_puts) (void)pooled->FlushPuts(10s);
  }

  CacheGeometry geometry;
  HostPlanes planes;
  std::shared_ptr<SlabPool> slabs;
  std::unique_ptr<MemoryStore> memory;
  std::unique_ptr<ExportCopier> export_copier;  // outlives `pooled`
  std::unique_ptr<PooledStore> pooled;
  std::unique_ptr<SyntheticRuntime> runtime;
};

}  // namespace strata::pool::pooled_test
