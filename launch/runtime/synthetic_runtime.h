// SyntheticRuntime: a stand-in for an inference engine's model thread, and the
// worked example of the HostStore API (docs/embedding.md).
//
// It owns a rank set's page planes and state rows (DevicePlanes: GPU memory or
// host buffers), runs multi-turn, branching conversations, keeps its own small
// "GPU cache" of checkpoints with LRU leaf eviction, publishes a checkpoint per
// turn whose bytes are derived from (prefix, page, plane, rank), restores host
// hits into different free ids through the store, and checks every restored
// byte against what it published. It answers a pooled store's export
// requests for real (synthetic_runtime_exports.cc: launch/runtime/export_rules.h
// decides, export_pins.h keeps the export map) and tells the store what it
// evicts through a bounded notice queue (eviction_notices.h).
//
// Thread: single-threaded, like a model worker. The store is only called
// from here, and every wait is bounded.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "launch/runtime/eviction_notices.h"
#include "launch/runtime/export_pins.h"
#include "launch/runtime/export_rules.h"
#include "launch/runtime/page_work.h"
#include "store/tier/host_store.h"
#include "store/tier/inbound_policy.h"
#include "store/transfer/device_planes.h"

namespace strata {

struct SyntheticRuntimeOptions {
  uint64_t seed = 1;                             // token streams derive from it
  bool use_policy = false;                       // false: fetch every host hit (qualification)
  std::chrono::milliseconds wait_bound{60'000};  // bound on one fetch or drain
  size_t eviction_notices_max = 1024;            // bound of the eviction-notice queue
};

struct TurnReport {
  uint64_t endpoint = 0;            // consumed tokens after the turn
  uint64_t gpu_reused_tokens = 0;   // resident GPU prefix used
  uint64_t host_reused_tokens = 0;  // tokens gained by a host restore
  uint64_t computed_tokens = 0;     // "prefilled" here
  bool host_hit = false;
  StoreOutcome publish = StoreOutcome::kDisabled;
};

struct RuntimeStats {
  uint64_t turns = 0;
  uint64_t gpu_hits = 0;  // turns that reused a resident GPU prefix
  uint64_t host_lookups = 0;
  uint64_t host_hits = 0;
  uint64_t host_reused_tokens = 0;
  uint64_t restored_pages = 0;
  uint64_t restored_bytes = 0;  // unpadded bytes checked after restores
  uint64_t mismatches = 0;      // restored bytes that differed (must stay 0)
  uint64_t published = 0;
  uint64_t stored = 0;  // kStored events
  uint64_t store_failed = 0;
  uint64_t gpu_evictions = 0;
  double restore_seconds = 0;  // wall time of restores, fetch to event
  uint64_t exports_pinned = 0;
  uint64_t exports_ended = 0;                                   // pins released by kExportEnded
  std::array<uint64_t, kExportRefusalCount> exports_refused{};  // by ExportRefusal
  uint64_t evictions_lost = 0;  // EvictionsLost calls (notice queue overflows)
  uint64_t late_retries = 0;    // admissions retried on a late, longer pool answer
};

// A GPU checkpoint as tests and tools see it.
struct GpuCheckpointInfo {
  PrefixKey key;
  uint64_t generation = 0;
  uint64_t chain_pages = 0;  // pages from the root to its endpoint
  uint32_t pins = 0;         // publications, restores and exports holding it
};

class SyntheticRuntime {
 public:
  // `planes` and `store` (may be null: GPU cache only) must outlive it.
  SyntheticRuntime(DevicePlanes& planes, HostStore* store, SyntheticRuntimeOptions options = {});

  // A new conversation; returns its id.
  uint32_t NewConversation();
  // A conversation sharing `parent`'s first `at_tokens` tokens, then its own.
  uint32_t Branch(uint32_t parent, uint64_t at_tokens);
  // Appends `new_tokens` tokens, reusing the deepest GPU prefix, then a host
  // restore if the store has a deeper one, "prefills" the rest and publishes
  // the endpoint. A restored byte that differs is an error.
  Result<TurnReport> Turn(uint32_t conversation, uint64_t new_tokens);
  // Drops every unpinned GPU checkpoint, as heavy pressure or a restart would.
  void EvictGpu();
  // One loop iteration's store work: hands the queued eviction notices over,
  // polls, answers export requests and releases ended exports. Turn and the
  // waits do it too; a runtime idle between turns calls it.
  void PollOnce() { PollStore(); }
  // Polls the store until every publication has its event, within the bound;
  // a stopped store ends the wait at once with its reason.
  Status WaitForStores();
  // From now on Turn and every wait end with kAborted as soon as
  // `interrupted` returns true (a signal asked the process to stop), leaving
  // in-flight copies' ids pinned as a timeout does. Null: never.
  void SetInterrupt(std::function<bool()> interrupted) { interrupted_ = std::move(interrupted); }
  // The job's other ranks, when their planes live in other processes: every
  // page computed or restored here is also computed or verified there.
  // `planes` then holds rank 0 only. Null (default): `planes` holds every rank.
  // `peers` must outlive this runtime.
  void SetPeers(RankPeers* peers) { peers_ = peers; }

  const RuntimeStats& stats() const { return stats_; }
  uint64_t conversation_tokens(uint32_t conversation) const;
  // The conversation's tokens so far (a test builds its history from them).
  std::span<const Token> tokens(uint32_t conversation) const {
    return conversations_.at(conversation).tokens;
  }
  uint64_t gpu_checkpoints() const { return nodes_.size(); }
  std::vector<GpuCheckpointInfo> ListGpuCheckpoints() const;
  // Exports pinned and not yet ended.
  size_t export_pins() const { return export_pins_.size(); }

  // The bytes the runtime publishes, exposed so tests can check stored data.
  static void PageBytes(const Digest128& page_prefix, uint32_t plane, uint32_t rank,
                        std::span<uint8_t> out);
  static void RowBytes(const PrefixKey& endpoint, uint32_t rank, std::span<uint8_t> out);

 private:
  struct Node {
    std::optional<PrefixKey> parent;  // GPU parent
    std::vector<PageId> tail;         // pages since the GPU parent
    StateSlot row;
    uint32_t children = 0;
    uint32_t pins = 0;
    uint64_t last_use = 0;
    uint64_t generation = 0;  // unique per checkpoint made, never reused
    bool offered = false;
  };
  struct Conversation {
    uint64_t seed = 0;
    std::vector<Token> tokens;
    std::vector<uint64_t> endpoints;  // checkpointed turn ends, ascending
  };

  void Extend(Conversation& c, uint64_t n);
  // The deepest resident endpoint of `c` below `limit`.
  std::optional<PrefixKey> ResidentPrefix(const Conversation& c, const PrefixHistory& h,
                                          uint64_t limit) const;
  Status Reserve(uint64_t pages, std::vector<PageId>& out_pages, StateSlot& out_row);
  bool EvictOne();
  void Release(const PrefixKey& key);
  std::vector<PageId> Chain(const PrefixKey& key) const;
  Status Restore(const PrefixHistory& h, std::optional<PrefixKey>& resident, TurnReport& report);
  // After admission answered `hit`: a late pool answer that is longer
  // retries admission once (pool::DecideLateAnswer); the better hit.
  std::optional<HostHit> RetryOnLateAnswer(LookupTicket ticket, const PrefixHistory& h,
                                           uint64_t resident_tokens, std::optional<HostHit> hit);
  PageWork Work(PageWorkKind kind, const PrefixHistory& h, uint64_t from_page,
                const std::vector<PageId>& pages, StateSlot row, const PrefixKey& endpoint) const;
  // Applies `work` to every local rank, then to peers_.
  Result<PageWorkReport> ApplyEverywhere(const PageWork& work);
  Status Compute(const PrefixHistory& h, uint64_t from_page, const std::vector<PageId>& pages,
                 StateSlot row, const PrefixKey& endpoint);
  Status VerifyRestore(const PrefixHistory& h, uint64_t first_page, const InboundTicket& t,
                       const PrefixKey& endpoint);
  void Publish(const PrefixHistory& h, const PrefixKey& key, TurnReport& report);
  // The checkpoint of node `key` as the store is offered it (its parent the
  // nearest offered ancestor); no id.
  PublishedCheckpoint CheckpointOf(const PrefixHistory& h, const PrefixKey& key) const;
  // A checkpoint restored from the disk tier offered once more (seed 2.7,
  // finish_inbound publishes it): a store holding it answers kPresent; a
  // composite whose restore came straight from its files copies it into
  // memory (kQueued: pinned until stored). Changes neither the node's
  // offered flag nor the turn's report. Memory and pool hits are not
  // offered again (their tiers hold them).
  void PublishRestored(const PrefixHistory& h, const PrefixKey& key);
  void PollStore();
  // The store, after handing it the queued eviction notices (and
  // EvictionsLost after an overflow): every store call goes through it.
  HostStore& StoreCall();
  // Answers a kExportRequested in this loop iteration: pins and calls
  // ExportPinned, or calls ExportRefused.
  void AnswerExport(const StoreEvent& request);
  // Releases the pin of an ended export, once; a second end finds nothing.
  void EndExport(ExportId export_id);
  // The headroom rule's inputs with `key` pinned (export_rules.h).
  HeadroomInputs Headroom(const PrefixKey& key) const;
  void AddNode(const PrefixKey& key, std::optional<PrefixKey> parent, std::vector<PageId> tail,
               StateSlot row);

  bool Interrupted() const { return interrupted_ && interrupted_(); }

  DevicePlanes& planes_;
  RankPeers* peers_ = nullptr;
  std::function<bool()> interrupted_;
  HostStore* store_;
  SyntheticRuntimeOptions options_;
  InboundPolicy policy_;
  uint32_t page_tokens_;
  std::vector<PageId> free_pages_;
  std::vector<StateSlot> free_rows_;
  std::unordered_map<PrefixKey, Node> nodes_;
  std::vector<Conversation> conversations_;
  std::unordered_map<uint64_t, PrefixKey> in_flight_;  // checkpoint id -> pinned key
  ExportPins export_pins_;
  EvictionNoticeQueue evictions_;
  uint64_t next_generation_ = 1;
  uint64_t next_step_pages_ = 0;  // the largest reservation a turn made: its next step
  std::vector<StoreEvent> events_;
  uint64_t tick_ = 0;
  uint64_t next_checkpoint_id_ = 1;
  uint64_t next_ticket_ = 1;
  std::chrono::steady_clock::time_point start_;
  RuntimeStats stats_;
};

}  // namespace strata
