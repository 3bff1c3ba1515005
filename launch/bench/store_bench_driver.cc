#include "launch/bench/store_bench_driver.h"

#include <cstring>
#include <deque>
#include <thread>
#include <unordered_map>

#include "launch/bench/bench_baseline.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;
// The bound on waiting for one phase's completions.
constexpr std::chrono::seconds kPhaseBound{120};
// Between polls of a store with nothing to report.
constexpr auto kPollPause = std::chrono::microseconds(100);

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

uint64_t WallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

std::vector<BenchRecord> MakeBenchRecords(uint32_t count, uint32_t pages, uint32_t page_tokens) {
  std::vector<BenchRecord> out;
  for (uint32_t i = 0; i < count; ++i) {
    BenchRecord r;
    uint64_t x = 0x9e3779b97f4a7c15ULL * (i + 1);
    for (uint64_t t = 0; t < uint64_t{pages} * page_tokens; ++t) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      r.tokens.push_back(static_cast<Token>(x % 151'936));
    }
    PrefixHistory h(r.tokens);
    PublishedCheckpoint& cp = r.checkpoint;
    cp.checkpoint_id = i + 1;
    cp.key = h.key_at(h.size());
    cp.bucket = h.bucket_digest(h.size());
    for (uint32_t p = 0; p < pages; ++p) cp.chain.push_back(PageId(p));
    cp.tail_pages = pages;
    cp.row_slot = StateSlot(0);
    out.push_back(std::move(r));
  }
  return out;
}

Result<DriveResult> StoreAll(HostStore& store, const std::vector<BenchRecord>& records) {
  DriveResult r;
  std::unordered_map<uint64_t, Clock::time_point> started;
  std::vector<StoreEvent> events;
  size_t stored = 0;
  auto collect = [&]() -> Status {
    events.clear();
    store.Poll(WallMs(), events);
    for (const StoreEvent& e : events) {
      if (e.kind != StoreEvent::Kind::kStored) {
        return Status::Internal("store of " + e.key.ToFileStem() +
                                " failed: " + e.status.ToString());
      }
      r.latency_ms.push_back(Ms(Clock::now() - started.at(e.checkpoint_id)));
      ++stored;
    }
    return Status::Ok();
  };
  const double cpu_before = ProcessCpuSeconds();
  const auto start = Clock::now();
  const auto deadline = start + kPhaseBound;
  for (const BenchRecord& rec : records) {
    started[rec.checkpoint.checkpoint_id] = Clock::now();
    for (;;) {
      const StoreOutcome o = store.Store(rec.checkpoint);
      if (o == StoreOutcome::kQueued) break;
      if (o != StoreOutcome::kDeferred && o != StoreOutcome::kRetry) {
        return Status::Internal("store of record " + std::to_string(rec.checkpoint.checkpoint_id) +
                                ": " + std::string(StoreOutcomeName(o)));
      }
      if (Clock::now() > deadline) return Status::Unavailable("stores made no progress");
      STRATA_RETURN_IF_ERROR(collect());
      std::this_thread::sleep_for(kPollPause);
    }
    STRATA_RETURN_IF_ERROR(collect());
  }
  while (stored < records.size()) {
    if (Clock::now() > deadline) return Status::Unavailable("stores did not finish in time");
    STRATA_RETURN_IF_ERROR(collect());
    if (stored < records.size()) std::this_thread::sleep_for(kPollPause);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  return r;
}

Result<DriveResult> FetchAll(HostStore& store, const std::vector<BenchRecord>& records,
                             uint32_t depth, const RestoredHook& on_restored) {
  DriveResult r;
  struct InFlight {
    uint32_t slot;
    Clock::time_point start;
  };
  std::unordered_map<uint64_t, InFlight> inflight;  // by ticket
  std::deque<uint32_t> free_slots;
  for (uint32_t j = 0; j < depth; ++j) free_slots.push_back(j);
  std::vector<StoreEvent> events;
  auto collect = [&]() -> Status {
    events.clear();
    store.Poll(WallMs(), events);
    for (const StoreEvent& e : events) {
      auto it = inflight.find(e.ticket.value);
      if (it == inflight.end()) continue;
      if (e.kind != StoreEvent::Kind::kFetched) {
        return Status::Internal("restore of " + e.key.ToFileStem() +
                                " failed: " + e.status.ToString());
      }
      r.latency_ms.push_back(Ms(Clock::now() - it->second.start));
      if (on_restored) STRATA_RETURN_IF_ERROR(on_restored(it->second.slot));
      free_slots.push_back(it->second.slot);
      inflight.erase(it);
    }
    return Status::Ok();
  };
  const double cpu_before = ProcessCpuSeconds();
  const auto start = Clock::now();
  const auto deadline = start + kPhaseBound;
  uint64_t next_ticket = 1;
  for (const BenchRecord& rec : records) {
    while (free_slots.empty()) {
      if (Clock::now() > deadline) return Status::Unavailable("restores did not finish in time");
      STRATA_RETURN_IF_ERROR(collect());
      if (free_slots.empty()) std::this_thread::sleep_for(kPollPause);
    }
    PrefixHistory h(rec.tokens);
    std::optional<HostHit> hit = store.Lookup(h, 0, h.size());
    if (!hit || hit->endpoint != rec.checkpoint.key) {
      return Status::NotFound("record " + rec.checkpoint.key.ToFileStem() + " is not in the store");
    }
    const uint32_t slot = free_slots.front();
    free_slots.pop_front();
    InboundTicket t;
    t.ticket = JobId(next_ticket++);
    for (uint64_t p = 0; p < hit->pages; ++p) {
      t.page_ids.push_back(PageId(static_cast<uint32_t>((1 + slot) * hit->pages + p)));
    }
    t.row_slot = StateSlot(1 + slot);
    inflight[t.ticket.value] = {slot, Clock::now()};
    STRATA_RETURN_IF_ERROR(store.Fetch(*hit, t));
  }
  while (!inflight.empty()) {
    if (Clock::now() > deadline) return Status::Unavailable("restores did not finish in time");
    STRATA_RETURN_IF_ERROR(collect());
    if (!inflight.empty()) std::this_thread::sleep_for(kPollPause);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  return r;
}

Status ClearWindow(DevicePlanes& planes, uint32_t pages, uint32_t slot) {
  const CacheGeometry& g = planes.geometry();
  std::vector<uint8_t> zeros;
  for (uint32_t rank = 0; rank < g.rank_count(); ++rank) {
    for (uint32_t plane = 0; plane < g.ranks[rank].page_planes.size(); ++plane) {
      zeros.assign(g.ranks[rank].page_planes[plane].unit_bytes, 0);
      for (uint32_t p = 0; p < pages; ++p) {
        STRATA_RETURN_IF_ERROR(
            planes.WritePage(rank, plane, PageId((1 + slot) * pages + p), zeros));
      }
    }
    zeros.assign(g.ranks[rank].row.unit_bytes, 0);
    STRATA_RETURN_IF_ERROR(planes.WriteRow(rank, StateSlot(1 + slot), zeros));
  }
  return Status::Ok();
}

Status CheckRestored(DevicePlanes& planes, uint32_t pages, uint32_t slot) {
  const CacheGeometry& g = planes.geometry();
  std::vector<uint8_t> stored;
  std::vector<uint8_t> restored;
  for (uint32_t rank = 0; rank < g.rank_count(); ++rank) {
    for (uint32_t plane = 0; plane < g.ranks[rank].page_planes.size(); ++plane) {
      const uint64_t unit = g.ranks[rank].page_planes[plane].unit_bytes;
      stored.resize(unit);
      restored.resize(unit);
      for (uint32_t p = 0; p < pages; ++p) {
        STRATA_RETURN_IF_ERROR(planes.ReadPage(rank, plane, PageId(p), stored));
        STRATA_RETURN_IF_ERROR(
            planes.ReadPage(rank, plane, PageId((1 + slot) * pages + p), restored));
        if (stored != restored) {
          return Status::Corruption("restored page " + std::to_string(p) + " plane " +
                                    std::to_string(plane) + " differs");
        }
      }
    }
    stored.resize(g.ranks[rank].row.unit_bytes);
    restored.resize(g.ranks[rank].row.unit_bytes);
    STRATA_RETURN_IF_ERROR(planes.ReadRow(rank, StateSlot(0), stored));
    STRATA_RETURN_IF_ERROR(planes.ReadRow(rank, StateSlot(1 + slot), restored));
    if (stored != restored) return Status::Corruption("restored row differs");
  }
  return Status::Ok();
}

}  // namespace strata
