// `strata bench index`: PrefixIndex insert rate, lookup latency and memory
// per record with 10K, 100K and 1M records of 100K-token conversations whose
// continuations add 100-2,000 tokens. The baseline is the smallest size,
// measured in the same run: lookup cost should follow the new tokens, not the
// number of records (goal: p99 at 1M within 1.5x of 10K).
#include <malloc.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launch/bench/bench.h"
#include "store/base/splitmix.h"
#include "store/index/index.h"

namespace strata {

namespace {

constexpr uint64_t kConversationTokens = 100'000;
constexpr uint64_t kContinuationMin = 100;
constexpr uint64_t kContinuationMax = 2'000;
constexpr std::array<uint64_t, 3> kSizes = {10'000, 100'000, 1'000'000};
constexpr uint32_t kVocabulary = 151'936;
constexpr double kGoalRatio = 1.5;
// Bound on lookups drawn per timed sample when preempted ones are retried.
constexpr uint64_t kAttemptsPerLookup = 4;
// Untimed lookups before each size's timed ones (fewer when --lookups is
// smaller), so the first timed ones do not pay for cold caches.
constexpr uint64_t kWarmupLookups = 256;

struct IndexBenchOptions {
  bool json = false;
  uint64_t max_records = 1'000'000;  // sizes above this are skipped
  uint32_t lookups = 4'000;          // per size, half from an empty GPU
  uint32_t page_tokens = 64;
  uint64_t seed = 1;
};

// splitmix64: reproducible tokens and turn lengths per conversation.
using SplitMix = SplitMixRandom;

enum class Stream : uint64_t { kTokens = 1, kTurns = 2, kLookups = 3, kWarmup = 4 };

SplitMix StreamFor(uint64_t seed, uint64_t item, Stream stream) {
  SplitMix mix(seed ^ (item * 0xd1b54a32d192ed03ULL) ^ (static_cast<uint64_t>(stream) << 56));
  return SplitMix(mix.Next());
}

std::vector<Token> ConversationTokens(uint64_t seed, uint64_t conversation, uint64_t count) {
  SplitMix rng = StreamFor(seed, conversation, Stream::kTokens);
  std::vector<Token> tokens(count);
  for (Token& t : tokens) t = static_cast<Token>(rng.Next() % kVocabulary);
  return tokens;
}

// Record endpoints of one conversation: every turn adds 100-2,000 tokens.
std::vector<uint64_t> ConversationEndpoints(uint64_t seed, uint64_t conversation) {
  SplitMix rng = StreamFor(seed, conversation, Stream::kTurns);
  std::vector<uint64_t> ends;
  for (uint64_t c = rng.Between(kContinuationMin, kContinuationMax); c <= kConversationTokens;
       c += rng.Between(kContinuationMin, kContinuationMax)) {
    ends.push_back(c);
  }
  return ends;
}

// Every record's key, grouped by conversation in turn order. One history per
// conversation supplies all its keys.
struct Workload {
  struct Conversation {
    uint64_t first_record = 0;
    uint64_t record_count = 0;
  };
  std::vector<Conversation> conversations;
  std::vector<PrefixKey> keys;
  std::vector<Digest128> buckets;
};

Workload BuildWorkload(uint64_t seed, uint64_t records) {
  Workload w;
  w.keys.reserve(records);
  w.buckets.reserve(records);
  for (uint64_t conv = 0; w.keys.size() < records; ++conv) {
    std::vector<uint64_t> ends = ConversationEndpoints(seed, conv);
    PrefixHistory history(ConversationTokens(seed, conv, ends.back()));
    Workload::Conversation c{w.keys.size(), 0};
    for (uint64_t end : ends) {
      if (w.keys.size() == records) break;
      w.keys.push_back(history.key_at(end));
      w.buckets.push_back(history.bucket_digest(end));
      ++c.record_count;
    }
    w.conversations.push_back(c);
  }
  return w;
}

// The conversations holding the first `records` records, the last one cut.
std::vector<Workload::Conversation> FirstRecords(const Workload& w, uint64_t records) {
  std::vector<Workload::Conversation> out;
  for (const Workload::Conversation& c : w.conversations) {
    if (c.first_record >= records) break;
    out.push_back({c.first_record, std::min(c.record_count, records - c.first_record)});
  }
  return out;
}

// Involuntary context switches of this thread so far: a timed lookup during
// which one happened measured someone else's work too.
uint64_t InvoluntarySwitches() {
  struct rusage usage {};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<uint64_t>(usage.ru_nivcsw);
}

size_t HeapBytes() {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

// Nearest-rank percentile `q` (0..1) of `us`; 0 when empty.
double NearestRank(std::vector<double>& us, double q) {
  if (us.empty()) return 0;
  std::sort(us.begin(), us.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(us.size())));
  return us[std::clamp<size_t>(rank, 1, us.size()) - 1];
}

struct Latency {
  std::vector<double> us;            // trimmed: lookups no context switch hit
  std::vector<double> untrimmed_us;  // every timed lookup, preempted ones too
  double chain_records = 0;          // summed, then averaged
  double Percentile(double q) { return NearestRank(us, q); }
  double UntrimmedPercentile(double q) { return NearestRank(untrimmed_us, q); }
};

struct SizeResult {
  uint64_t records = 0;
  uint64_t conversations = 0;
  double insert_per_s = 0;
  double heap_bytes_per_record = 0;
  double index_bytes_per_record = 0;
  Latency empty_gpu;     // resident a = 0: the chain is the whole conversation
  Latency resident_gpu;  // a = an earlier turn's endpoint: the chain is the rest
  double probes_avg = 0;
  double key_hash_us = 0;  // one history.key_at of the endpoint: the hashing floor
  uint64_t preempted = 0;  // lookups not counted: a context switch hit them
};

double Micros(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// One lookup of the workload: a conversation's deepest record continued by
// 100-2,000 new tokens, with an earlier turn resident on the GPU or nothing.
struct DrawnLookup {
  const Workload::Conversation* conversation = nullptr;
  PrefixHistory history;
  bool resident = false;
  uint64_t resident_tokens = 0;  // a: tokens already on the GPU
  uint64_t want_chain = 0;       // records the hit must chain
};

// Odd lookups (`i`) find an earlier turn resident on the GPU, which
// leaf-first GPU eviction leaves behind; even ones find nothing resident.
DrawnLookup DrawLookup(SplitMix& rng, const IndexBenchOptions& o, const Workload& w,
                       const std::vector<Workload::Conversation>& convs, uint64_t i) {
  const uint64_t conv = rng.Between(0, convs.size() - 1);
  const Workload::Conversation& c = convs[conv];
  const PrefixKey& last = w.keys[c.first_record + c.record_count - 1];
  const uint64_t continuation = rng.Between(kContinuationMin, kContinuationMax);
  const bool resident = i % 2 == 1 && c.record_count > 1;
  const uint64_t resident_turn = resident ? rng.Between(0, c.record_count - 2) : 0;
  return {.conversation = &c,
          .history = PrefixHistory(ConversationTokens(o.seed, conv, last.consumed + continuation)),
          .resident = resident,
          .resident_tokens = resident ? w.keys[c.first_record + resident_turn].consumed : 0,
          .want_chain = resident ? c.record_count - resident_turn - 1 : c.record_count};
}

Result<SizeResult> MeasureSize(const IndexBenchOptions& o, const Workload& w, uint64_t records) {
  using Clock = std::chrono::steady_clock;
  const std::vector<Workload::Conversation> convs = FirstRecords(w, records);
  SizeResult r;
  r.records = records;
  r.conversations = convs.size();

  const size_t heap_before = HeapBytes();
  PrefixIndex index(o.page_tokens);
  index.Reserve(records);  // as a store does at startup
  // Conversations interleave turn by turn, as concurrent sessions do.
  uint64_t now_ms = 0;
  const Clock::time_point insert_start = Clock::now();
  for (uint64_t turn = 0, inserted = 0; inserted < records; ++turn) {
    for (const Workload::Conversation& c : convs) {
      if (turn >= c.record_count) continue;
      const uint64_t i = c.first_record + turn;
      NewRecord rec;
      rec.key = w.keys[i];
      if (turn > 0) rec.parent = w.keys[i - 1];
      rec.bucket_digest = w.buckets[i];
      rec.location = NodeLocation(i);
      rec.state = TransferState::kReady;
      Result<InsertResult> ins = index.Insert(rec, ++now_ms);
      if (!ins.ok()) return ins.status();
      if (ins->outcome != InsertOutcome::kInserted) {
        return Status::Internal("bench workload repeated a key");
      }
      ++inserted;
    }
  }
  r.insert_per_s = static_cast<double>(records) / (Micros(Clock::now() - insert_start) / 1e6);
  r.heap_bytes_per_record =
      static_cast<double>(HeapBytes() - heap_before) / static_cast<double>(records);
  r.index_bytes_per_record =
      static_cast<double>(index.MemoryBytes()) / static_cast<double>(records);

  const StateSet ready{TransferState::kReady};
  SplitMix warm = StreamFor(o.seed, records, Stream::kWarmup);
  for (uint64_t i = 0; i < std::min<uint64_t>(kWarmupLookups, o.lookups); ++i) {
    const DrawnLookup l = DrawLookup(warm, o, w, convs, i);
    if (!index.Lookup(l.history, l.resident_tokens, l.history.size(), ready)) {
      return Status::Internal("warm-up lookup " + std::to_string(i) + " missed");
    }
  }
  SplitMix rng = StreamFor(o.seed, records, Stream::kLookups);
  const uint64_t attempts_max = uint64_t{o.lookups} * kAttemptsPerLookup;
  for (uint64_t attempt = 0, i = 0; i < o.lookups; ++attempt) {
    if (attempt == attempts_max) {
      return Status::Aborted(std::to_string(r.preempted) + " of " + std::to_string(attempt) +
                             " lookups were preempted: the machine is too busy to measure");
    }
    const DrawnLookup drawn = DrawLookup(rng, o, w, convs, i);
    const Workload::Conversation& c = *drawn.conversation;
    const PrefixKey& last = w.keys[c.first_record + c.record_count - 1];
    const PrefixHistory& history = drawn.history;

    const uint64_t switches_before = InvoluntarySwitches();
    const Clock::time_point start = Clock::now();
    std::optional<LookupHit> hit =
        index.Lookup(history, drawn.resident_tokens, history.size(), ready);
    const double us = Micros(Clock::now() - start);
    const bool preempted = InvoluntarySwitches() != switches_before;

    if (!hit || hit->endpoint() != last || hit->chain.size() != drawn.want_chain) {
      return Status::Internal("lookup " + std::to_string(i) + " missed its conversation's " +
                              "deepest record");
    }
    Latency& l = drawn.resident ? r.resident_gpu : r.empty_gpu;
    l.untrimmed_us.push_back(us);  // the untrimmed percentiles keep every one
    if (preempted) {               // the machine is shared: time another lookup instead
      ++r.preempted;
      continue;
    }
    ++i;
    l.us.push_back(us);
    l.chain_records += static_cast<double>(hit->chain.size());
    const uint64_t probes = history.size() / PrefixHistory::kBlockTokens -
                            last.consumed / PrefixHistory::kBlockTokens + 1;
    r.probes_avg += static_cast<double>(probes);
    const Clock::time_point hash_start = Clock::now();
    const PrefixKey again = history.key_at(last.consumed);
    r.key_hash_us += Micros(Clock::now() - hash_start);
    if (again != last) return Status::Internal("history disagrees with the workload");
  }
  r.probes_avg /= o.lookups;
  r.key_hash_us /= o.lookups;
  for (Latency* l : {&r.empty_gpu, &r.resident_gpu}) {
    l->chain_records /= static_cast<double>(std::max<size_t>(l->us.size(), 1));
  }
  return r;
}

std::string SizeName(uint64_t records) {
  if (records % 1'000'000 == 0) return std::to_string(records / 1'000'000) + "M";
  if (records % 1'000 == 0) return std::to_string(records / 1'000) + "K";
  return std::to_string(records);
}

int RunIndexBench(const IndexBenchOptions& o) {
  std::vector<uint64_t> sizes;
  for (uint64_t s : kSizes) {
    if (s <= o.max_records) sizes.push_back(s);
  }
  if (sizes.empty()) sizes.push_back(o.max_records);
  if (!o.json) {
    std::printf(
        "strata bench index: %llu-token conversations, turns of %llu-%llu tokens, "
        "%u-token pages, %u lookups per size\n",
        static_cast<unsigned long long>(kConversationTokens),
        static_cast<unsigned long long>(kContinuationMin),
        static_cast<unsigned long long>(kContinuationMax), o.page_tokens, o.lookups);
    std::printf("building keys for %llu records...\n",
                static_cast<unsigned long long>(sizes.back()));
    std::fflush(stdout);
  }
  const Workload workload = BuildWorkload(o.seed, sizes.back());

  std::vector<SizeResult> results;
  for (uint64_t records : sizes) {
    Result<SizeResult> r = MeasureSize(o, workload, records);
    if (!r.ok()) {
      std::fprintf(stderr, "strata bench index: %s\n", r.status().ToString().c_str());
      return 1;
    }
    results.push_back(std::move(*r));
  }

  nlohmann::json out;
  out["benchmark"] = "index";
  out["page_tokens"] = o.page_tokens;
  out["conversation_tokens"] = kConversationTokens;
  out["continuation_tokens"] = {kContinuationMin, kContinuationMax};
  out["lookups_per_size"] = o.lookups;
  out["seed"] = o.seed;
  out["goal_lookup_p99_ratio"] = kGoalRatio;
  nlohmann::json p99 = nlohmann::json::object();
  nlohmann::json resident_p99 = nlohmann::json::object();
  nlohmann::json p99_untrimmed = nlohmann::json::object();
  if (!o.json) {
    std::printf("\n%8s %7s %10s %9s %9s %9s %7s %9s %9s %7s %6s %8s %9s %7s\n", "records", "convs",
                "insert/s", "p50 us", "p99 us", "p99 all", "chain", "res p50", "res p99", "chain",
                "probes", "hash us", "bytes/rec", "dropped");
  }
  for (SizeResult& r : results) {
    nlohmann::json s;
    s["records"] = r.records;
    s["conversations"] = r.conversations;
    s["insert_per_s"] = r.insert_per_s;
    s["heap_bytes_per_record"] = r.heap_bytes_per_record;
    s["index_bytes_per_record"] = r.index_bytes_per_record;
    s["lookup_p50_us"] = r.empty_gpu.Percentile(0.50);
    s["lookup_p99_us"] = r.empty_gpu.Percentile(0.99);
    s["lookup_p99_untrimmed_us"] = r.empty_gpu.UntrimmedPercentile(0.99);
    s["lookup_chain_records_avg"] = r.empty_gpu.chain_records;
    s["resident_lookup_p50_us"] = r.resident_gpu.Percentile(0.50);
    s["resident_lookup_p99_us"] = r.resident_gpu.Percentile(0.99);
    s["resident_lookup_p99_untrimmed_us"] = r.resident_gpu.UntrimmedPercentile(0.99);
    s["resident_chain_records_avg"] = r.resident_gpu.chain_records;
    s["probes_avg"] = r.probes_avg;
    s["key_hash_us"] = r.key_hash_us;
    s["preempted_lookups_dropped"] = r.preempted;
    s["warmup_lookups"] = std::min<uint64_t>(kWarmupLookups, o.lookups);
    out["sizes"].push_back(s);
    p99[std::to_string(r.records)] = s["lookup_p99_us"];
    p99_untrimmed[std::to_string(r.records)] = s["lookup_p99_untrimmed_us"];
    resident_p99[std::to_string(r.records)] = s["resident_lookup_p99_us"];
    if (!o.json) {
      std::printf(
          "%8s %7llu %10.0f %9.2f %9.2f %9.2f %7.1f %9.2f %9.2f %7.1f %6.1f %8.2f %9.1f %7llu\n",
          SizeName(r.records).c_str(), static_cast<unsigned long long>(r.conversations),
          r.insert_per_s, r.empty_gpu.Percentile(0.50), r.empty_gpu.Percentile(0.99),
          r.empty_gpu.UntrimmedPercentile(0.99), r.empty_gpu.chain_records,
          r.resident_gpu.Percentile(0.50), r.resident_gpu.Percentile(0.99),
          r.resident_gpu.chain_records, r.probes_avg, r.key_hash_us, r.heap_bytes_per_record,
          static_cast<unsigned long long>(r.preempted));
    }
  }
  out["lookup_p99_us"] = p99;
  out["resident_lookup_p99_us"] = resident_p99;
  out["lookup_p99_untrimmed_us"] = p99_untrimmed;
  // Ratios of the largest size to the smallest (the baseline), same run.
  auto ratio_of = [&](Latency SizeResult::*which, double q) {
    return (results.back().*which).Percentile(q) / (results.front().*which).Percentile(q);
  };
  const double ratio = ratio_of(&SizeResult::empty_gpu, 0.99);
  const double ratio_resident = ratio_of(&SizeResult::resident_gpu, 0.99);
  const double ratio_p50 = ratio_of(&SizeResult::empty_gpu, 0.50);
  const double ratio_untrimmed = results.back().empty_gpu.UntrimmedPercentile(0.99) /
                                 results.front().empty_gpu.UntrimmedPercentile(0.99);
  const double ratio_resident_p50 = ratio_of(&SizeResult::resident_gpu, 0.50);
  const std::string suffix = sizes.front() == kSizes.front() && sizes.back() == kSizes.back()
                                 ? "1m_vs_10k"
                                 : "largest_vs_smallest";
  out["lookup_p99_ratio_" + suffix] = ratio;
  out["resident_lookup_p99_ratio_" + suffix] = ratio_resident;
  out["lookup_p50_ratio_" + suffix] = ratio_p50;
  out["lookup_p99_untrimmed_ratio_" + suffix] = ratio_untrimmed;
  out["resident_lookup_p50_ratio_" + suffix] = ratio_resident_p50;
  if (o.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf(
      "\nlookup %s vs %s (baseline): p99 %.2fx with nothing resident, %.2fx with an earlier turn "
      "resident (goal <= %.1fx); p50 %.2fx and %.2fx; untrimmed p99 (preempted lookups kept) "
      "%.2fx\n",
      SizeName(results.back().records).c_str(), SizeName(results.front().records).c_str(), ratio,
      ratio_resident, kGoalRatio, ratio_p50, ratio_resident_p50, ratio_untrimmed);
  return 0;
}

}  // namespace

void AddIndexBench(CLI::App& bench) {
  auto opts = std::make_shared<IndexBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "index", "Prefix index: insert rate, lookup p50/p99 and bytes per record at 10K/100K/1M");
  cmd->add_flag("--json", opts->json, "Print one JSON object instead of the table");
  cmd->add_option("--max-records", opts->max_records,
                  "Largest size to measure (sizes are 10K, 100K, 1M)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{100}, uint64_t{10'000'000}));
  cmd->add_option("--lookups", opts->lookups, "Timed lookups per size")
      ->capture_default_str()
      ->check(CLI::Range(2u, 1'000'000u));
  cmd->add_option("--page-tokens", opts->page_tokens, "Tokens per page")
      ->capture_default_str()
      ->check(CLI::IsMember({64u, 128u, 256u}));
  cmd->add_option("--seed", opts->seed, "Workload seed")->capture_default_str();
  cmd->callback([opts] {
    int rc = RunIndexBench(*opts);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace strata
