// A synthetic runtime whose store is a real PooledStore (over a MemoryStore
// on host planes, its pool link given up at once: no manager), so the export
// hooks run through the real HostStore interface; the test plays the manager
// relay through PooledStore::RequestExport and FinishExport.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>

#include "coordinator/pool/pooled_store.h"
#include "launch/presets.h"
#include "launch/runtime/synthetic_runtime.h"
#include "store/record/record_layout.h"
#include "store/tier/memory_store.h"
#include "store/transfer/host_planes.h"

namespace strata::testing {

constexpr uint64_t kStagingPlenty = uint64_t{1} << 30;

struct ExportRig {
  explicit ExportRig(uint64_t page_count, size_t eviction_notices_max = 1024)
      : geometry(*PresetGeometry("tiny", 1, page_count, 16)), planes(geometry) {
    const RecordLayout layout(geometry);
    slabs =
        std::shared_ptr<SlabPool>(*SlabPool::Create(layout.page_record_bytes(), page_count + 8, 0));
    memory = std::make_unique<MemoryStore>(geometry, slabs, *MakeHostTransfers(planes));
    pool::PoolLinkOptions link;
    link.client.socket_path = "/nonexistent/strata-export-rig.sock";
    link.client.hello = pool::InstanceHello(geometry, NamespaceIdentity{3}, {"export-rig"});
    // Each clock reading is past the startup wait: no manager, local for good.
    auto fake_now = std::make_shared<std::chrono::steady_clock::time_point>();
    link.clock.steady = [fake_now] {
      return *fake_now += std::chrono::milliseconds(pool::kStartupAttachWaitMs);
    };
    pooled = std::make_unique<pool::PooledStore>(
        pool::PooledTiers{.local = memory.get(),
                          .landing = memory.get(),
                          .intake = memory.get(),
                          .record_sizes = {.page_record_bytes = layout.page_record_bytes(),
                                           .row_segment_bytes = layout.row_segment_bytes()}},
        pool::PoolLink::AttachAtStartup(link));
    runtime = std::make_unique<SyntheticRuntime>(
        planes, pooled.get(),
        SyntheticRuntimeOptions{.seed = 1, .eviction_notices_max = eviction_notices_max});
  }
  ~ExportRig() { runtime.reset(); }

  // A new one-turn conversation of `tokens`; its checkpoint.
  GpuCheckpointInfo Converse(uint64_t tokens) {
    const uint32_t c = runtime->NewConversation();
    EXPECT_TRUE(runtime->Turn(c, tokens).ok());
    EXPECT_TRUE(runtime->WaitForStores().ok());
    return Newest();
  }
  GpuCheckpointInfo Newest() const { return runtime->ListGpuCheckpoints().back(); }
  std::optional<GpuCheckpointInfo> Find(const PrefixKey& key) const {
    for (const GpuCheckpointInfo& c : runtime->ListGpuCheckpoints()) {
      if (c.key == key) return c;
    }
    return std::nullopt;
  }

  // Asks for an export as the relay will, then runs one loop iteration (the
  // runtime answers it there).
  ExportId Request(const GpuCheckpointInfo& c, uint64_t start_page,
                   uint64_t staging_bytes = kStagingPlenty) {
    return Request(c.key, c.generation, start_page, staging_bytes);
  }
  ExportId Request(const PrefixKey& key, uint64_t generation, uint64_t start_page,
                   uint64_t staging_bytes = kStagingPlenty) {
    const ExportId id = pooled->RequestExport({.key = key,
                                               .generation = generation,
                                               .start_page = start_page,
                                               .staging_bytes = staging_bytes});
    runtime->PollOnce();
    return id;
  }
  uint64_t Refused(ExportRefusal reason) const {
    return runtime->stats().exports_refused[static_cast<size_t>(reason)];
  }

  CacheGeometry geometry;
  HostPlanes planes;
  std::shared_ptr<SlabPool> slabs;
  std::unique_ptr<MemoryStore> memory;
  std::unique_ptr<pool::PooledStore> pooled;
  std::unique_ptr<SyntheticRuntime> runtime;
};

}  // namespace strata::testing
