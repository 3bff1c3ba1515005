// `strata bench pool`: puts and claims through a pool manager's shared-memory
// arena (docs/pool.md), next to a memcpy of the same bytes measured in the
// same run. One process: the manager (PoolServer, its own thread, on its real
// Unix socket) and two instances (PoolClient, the calls PooledStore makes):
// instance A puts every chain of a round (PoolClient::PutChain, as
// PooledStore calls it: per record a grant, the bytes copied into the slots
// and hashed in the same pass, a commit with the checksum, pipelined so the
// next grant and the last commit are answered during a copy), instance B claims every chain of it
// (PoolClient::ClaimInto, as PooledStore calls it: a claim, the bytes copied out into buffers
// reused from claim to claim and checked in the same pass, a release). Records are record images of
// a preset's pages (header + page records + row), in chains whose records name their parents, as an
// instance's cascade puts them.
//
// Each round puts and claims fresh keys; the manager evicts the oldest
// rounds as the arena fills. Warmup rounds first fill the whole arena, so
// every slot is faulted in before anything is timed. Each phase is followed
// by its baselines over the same bytes, in slot-sized pieces cycling through
// as much memory as the round touched, on a thread scheduled like the
// instance's: memcpy (the goal: ratio >= 0.8) and memcpy + XXH3. Every
// claimed byte is compared with what was put.
//
// A third instance, C, attaches over the manager's TCP address with the data
// channel forced (docs/pool.md, "The data channel"; as an instance on
// another host would) and claims every chain of each round too, window by
// window through its data connection; its baseline is a raw TCP transfer of
// the same bytes over one loopback connection in the same run (the goal:
// ratio >= 0.8, issue 22).
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "coordinator/pool/pool_client.h"
#include "coordinator/pool/pool_link.h"
#include "coordinator/pool/pool_record_image.h"
#include "coordinator/pool/pool_server.h"
#include "launch/bench/bench.h"
#include "launch/bench/bench_baseline.h"
#include "launch/bench/pool_bench_report.h"
#include "launch/bench/tcp_baseline.h"
#include "launch/presets.h"
#include "store/record/fingerprint.h"
#include "store/record/record_layout.h"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kModel[] = "bench/pool";
// The instances' thread: the memcpy baselines run with the same scheduling.
constexpr int kInstanceNice = 0;

struct PoolBenchOptions {
  bool json = false;
  std::string preset = "qwen-like";
  uint32_t pages = 16;         // tail pages of one record
  uint32_t records = 8;        // put and claimed per round
  uint32_t chain_records = 4;  // records per chain (one claim)
  uint32_t rounds = 5;
  uint32_t warmup_rounds = 2;
  uint64_t slot_kib = 2048;  // the manager's default
  std::string dir = "/tmp";
};

struct Setup {
  CacheGeometry geometry;
  uint64_t record_bytes = 0;
  uint32_t chains = 0;
  uint32_t slots = 0;  // twice a round's slots: warmup fills them all
};

Result<Setup> SetupOf(const PoolBenchOptions& o) {
  if (o.pages == 0 || o.records == 0 || o.chain_records == 0 || o.rounds == 0 || o.slot_kib == 0 ||
      o.slot_kib % 4 != 0 || o.records % o.chain_records != 0) {
    return Status::InvalidArgument(
        "--pages, --records, --chain-records, --rounds and --slot-kib must be > 0, --slot-kib a "
        "multiple of 4 and --records a multiple of --chain-records");
  }
  Setup s;
  STRATA_ASSIGN_OR_RETURN(s.geometry, PresetGeometry(o.preset, 1, o.pages, 1));
  const RecordLayout layout(s.geometry);
  s.record_bytes = pool::kRecordImageHeaderBytes + o.pages * layout.page_record_bytes() +
                   layout.row_segment_bytes();
  s.chains = o.records / o.chain_records;
  const uint64_t slot_bytes = o.slot_kib << 10;
  const uint64_t slots = 2 * o.records * ((s.record_bytes + slot_bytes - 1) / slot_bytes);
  if (slots > (1u << 20)) return Status::InvalidArgument("the arena would exceed 2^20 slots");
  s.slots = static_cast<uint32_t>(slots);
  return s;
}

// One chain's keys: round `round`'s chain `chain`, records of `pages` pages.
struct ChainKeys {
  std::vector<PrefixKey> keys;
  std::vector<Digest128> buckets;
};

ChainKeys KeysOf(const PoolBenchOptions& o, const Setup& s, uint32_t round, uint32_t chain) {
  const uint64_t record_tokens = uint64_t{o.pages} * s.geometry.page_tokens;
  std::vector<Token> tokens(record_tokens * o.chain_records);
  const auto seed = static_cast<Token>(uint64_t{round} * s.chains + chain + 1);
  // An odd multiplier: distinct seeds start with distinct tokens (mod 2^32).
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = seed * 100'003u + static_cast<Token>(i);
  const PrefixHistory history(tokens);
  ChainKeys out;
  for (uint32_t k = 1; k <= o.chain_records; ++k) {
    out.keys.push_back(history.key_at(k * record_tokens));
    out.buckets.push_back(history.bucket_digest(k * record_tokens));
  }
  return out;
}

// The bytes put for record `r` of a round (the same in every round).
std::vector<std::vector<std::byte>> Sources(const PoolBenchOptions& o, const Setup& s) {
  std::vector<std::vector<std::byte>> out(o.records, std::vector<std::byte>(s.record_bytes));
  for (uint32_t r = 0; r < o.records; ++r) {
    for (uint64_t b = 0; b < s.record_bytes; ++b) {
      out[r][b] = static_cast<std::byte>((r * 131 + b * 7) ^ (b >> 9));
    }
  }
  return out;
}

struct Instances {
  std::unique_ptr<pool::PoolClient> putter;   // instance A
  std::unique_ptr<pool::PoolClient> claimer;  // instance B
  std::unique_ptr<pool::PoolClient> remote;   // instance C: the TCP data channel
};

Result<Instances> Connect(const Setup& s, const std::string& socket, uint16_t tcp_port,
                          const JobSecret& secret) {
  auto options = [&](const std::string& id) {
    pool::PoolClientOptions c;
    c.socket_path = socket;
    c.hello = pool::InstanceHello(s.geometry,
                                  ComputeNamespaceIdentity(kModel, StateMode::kOrdinary), {id});
    return c;
  };
  Instances i;
  STRATA_ASSIGN_OR_RETURN(i.putter, pool::PoolClient::Connect(options("bench-a")));
  STRATA_ASSIGN_OR_RETURN(i.claimer, pool::PoolClient::Connect(options("bench-b")));
  pool::PoolClientOptions remote = options("bench-c");
  remote.socket_path = "tcp://127.0.0.1:" + std::to_string(tcp_port);
  remote.job_secret = secret;
  remote.data_path = pool::PoolDataPath::kChannel;
  STRATA_ASSIGN_OR_RETURN(i.remote, pool::PoolClient::Connect(remote));
  return i;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Instance A puts every chain of round `round`, parents first; one latency
// sample per chain.
Result<Sample> PutRound(const PoolBenchOptions& o, const Setup& s, pool::PoolClient& a,
                        const std::vector<std::vector<std::byte>>& sources, uint32_t round) {
  Sample sample;
  Status status;
  RunLikeWorkerThreads(kInstanceNice, [&] {
    const double cpu_before = ProcessCpuSeconds();
    std::vector<pool::PoolClient::PutItem> items;
    for (uint32_t c = 0; c < s.chains && status.ok(); ++c) {
      const ChainKeys chain = KeysOf(o, s, round, c);
      items.clear();
      for (uint32_t k = 0; k < o.chain_records; ++k) {
        items.push_back(pool::PoolClient::PutItem{
            .key = chain.keys[k],
            .parent = k == 0 ? std::nullopt : std::optional<PrefixKey>(chain.keys[k - 1]),
            .bucket_digest = chain.buckets[k],
            .bytes = sources[c * o.chain_records + k],
            .kind = pool::PutKind::kCascade});
      }
      const auto t0 = Clock::now();
      const std::vector<Status> outcomes = a.PutChain(items);
      const double seconds = Seconds(Clock::now() - t0);
      sample.seconds += seconds;
      sample.latency_ms.push_back(seconds * 1e3);
      sample.bytes += uint64_t{o.chain_records} * s.record_bytes;
      // Every record is fresh: anything but OK (kAlreadyExists included) fails the run.
      for (const Status& outcome : outcomes) {
        if (!outcome.ok()) status = outcome;
      }
      if (status.ok() && outcomes.size() != items.size()) {
        status = Status::Internal("a chain put stopped early");
      }
    }
    sample.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  });
  if (!status.ok()) return status;
  return sample;
}

// Instance B claims every chain of round `round` into `claimed`, buffers
// reused from claim to claim and round to round, as PooledStore reuses its
// own; `mismatches` counts the claimed bytes that differ from what was put
// (compared outside the timing).
Result<Sample> ClaimRound(const PoolBenchOptions& o, const Setup& s, pool::PoolClient& b,
                          const std::vector<std::vector<std::byte>>& sources, uint32_t round,
                          std::vector<std::vector<std::byte>>& claimed, uint64_t& mismatches) {
  Sample sample;
  Status status;
  double compare_cpu_seconds = 0;
  RunLikeWorkerThreads(kInstanceNice, [&] {
    const double cpu_before = ProcessCpuSeconds();
    for (uint32_t c = 0; c < s.chains && status.ok(); ++c) {
      const ChainKeys chain = KeysOf(o, s, round, c);
      const auto t0 = Clock::now();
      status = b.ClaimInto(chain.keys, claimed);
      const double seconds = Seconds(Clock::now() - t0);
      sample.seconds += seconds;
      sample.latency_ms.push_back(seconds * 1e3);
      if (!status.ok()) break;
      if (claimed.size() != o.chain_records) {
        status = Status::Internal("a claim returned " + std::to_string(claimed.size()) +
                                  " records of a chain of " + std::to_string(o.chain_records));
        break;
      }
      const double compare_before = ProcessCpuSeconds();
      for (uint32_t k = 0; k < o.chain_records; ++k) {
        const std::vector<std::byte>& want = sources[c * o.chain_records + k];
        const std::vector<std::byte>& got = claimed[k];
        sample.bytes += got.size();
        if (got.size() != want.size()) {
          mismatches += want.size();
          continue;
        }
        for (size_t i = 0; i < got.size(); ++i) mismatches += got[i] != want[i] ? 1 : 0;
      }
      compare_cpu_seconds += ProcessCpuSeconds() - compare_before;
    }
    sample.cpu_seconds = ProcessCpuSeconds() - cpu_before - compare_cpu_seconds;
  });
  if (!status.ok()) return status;
  return sample;
}

struct Phase {
  std::vector<Sample> pool, memcpy, memcpy_xxh3;
};

// The baselines of one phase's round, over the bytes the phase moved.
void Baselines(HandWork& hand, uint64_t bytes, Phase& phase) {
  const Sample copy = hand.Memcpy(bytes);
  const Sample parts[] = {copy, hand.Xxh3(bytes)};
  phase.memcpy.push_back(copy);
  phase.memcpy_xxh3.push_back(Serial(bytes, parts));
}

Result<nlohmann::json> Run(const PoolBenchOptions& o) {
  STRATA_ASSIGN_OR_RETURN(Setup s, SetupOf(o));
  // The manager's thread and the instances log only warnings: stdout
  // carries the result.
  spdlog::set_level(spdlog::level::warn);
  pool::PoolServerOptions server_options;
  server_options.name = "bench";
  server_options.socket_path =
      (std::filesystem::path(o.dir) / ("strata-bench-pool-" + std::to_string(::getpid()) + ".sock"))
          .string();
  server_options.slot_bytes = o.slot_kib << 10;
  server_options.slot_count = s.slots;
  // Instance C's TCP address: loopback, a secret of this run.
  server_options.tcp_host = "127.0.0.1";
  std::mt19937_64 draw{std::random_device{}()};
  STRATA_ASSIGN_OR_RETURN(
      const JobSecret secret,
      JobSecret::FromText(fmt::format("{:016x}{:016x}", draw(), draw()), "bench pool"));
  server_options.job_secret = secret;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<pool::PoolServer> server,
                          pool::PoolServer::Start(server_options, std::random_device{}()));
  STRATA_ASSIGN_OR_RETURN(Instances instances,
                          Connect(s, server_options.socket_path, server->tcp_port(), secret));
  const std::vector<std::vector<std::byte>> sources = Sources(o, s);
  const uint64_t round_bytes = uint64_t{o.records} * s.record_bytes;
  HandWork hand(round_bytes, server_options.slot_bytes, kInstanceNice);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RawTcp> raw_tcp,
                          RawTcp::Open(round_bytes, server_options.slot_bytes));
  uint64_t mismatches = 0;
  std::vector<std::vector<std::byte>> claimed;         // instance B's buffers
  std::vector<std::vector<std::byte>> claimed_remote;  // instance C's
  Phase put, claim;
  std::vector<Sample> tcp_claim, raw_tcp_samples;
  for (uint32_t round = 0; round < o.warmup_rounds + o.rounds; ++round) {
    STRATA_ASSIGN_OR_RETURN(Sample p, PutRound(o, s, *instances.putter, sources, round));
    if (round >= o.warmup_rounds) {
      put.pool.push_back(std::move(p));
      Baselines(hand, round_bytes, put);
    }
    STRATA_ASSIGN_OR_RETURN(
        Sample c, ClaimRound(o, s, *instances.claimer, sources, round, claimed, mismatches));
    if (round >= o.warmup_rounds) {
      claim.pool.push_back(std::move(c));
      Baselines(hand, round_bytes, claim);
    }
    STRATA_ASSIGN_OR_RETURN(
        Sample r, ClaimRound(o, s, *instances.remote, sources, round, claimed_remote, mismatches));
    STRATA_ASSIGN_OR_RETURN(Sample raw, raw_tcp->Transfer(round_bytes, kInstanceNice));
    if (round >= o.warmup_rounds) {
      tcp_claim.push_back(std::move(r));
      raw_tcp_samples.push_back(std::move(raw));
    }
  }
  const pool::PoolManagerStats stats = server->Stats();
  const bool huge = server->page_kind() == pool::PageKind::kHuge;
  instances = {};
  server->Stop();
  nlohmann::json j{{"benchmark", "pool"},
                   {"preset", o.preset},
                   {"pages", o.pages},
                   {"record_bytes", s.record_bytes},
                   {"records", o.records},
                   {"chain_records", o.chain_records},
                   {"rounds", o.rounds},
                   {"warmup_rounds", o.warmup_rounds},
                   {"slot_bytes", server_options.slot_bytes},
                   {"slots", s.slots},
                   {"page_kind", huge ? "huge" : "ordinary"},
                   {"baseline", "memcpy"},
                   {"put", PoolPhaseJson(put.pool, put.memcpy, put.memcpy_xxh3)},
                   {"claim", PoolPhaseJson(claim.pool, claim.memcpy, claim.memcpy_xxh3)},
                   {"tcp_claim", PoolTcpPhaseJson(tcp_claim, raw_tcp_samples)},
                   {"manager",
                    {{"puts_committed", stats.traffic.puts_committed},
                     {"claimed_records", stats.traffic.claimed_records},
                     {"evicted", stats.catalog.evicted},
                     {"data_windows_out", stats.data.windows_read},
                     {"data_bytes_out", stats.data.bytes_read}}},
                   {"byte_check", mismatches == 0 ? "ok" : "mismatch"},
                   {"goal_ratio", kPoolGoalRatio}};
  j["put_ratio"] = j["put"]["ratio"];
  j["claim_ratio"] = j["claim"]["ratio"];
  j["tcp_claim_ratio"] = j["tcp_claim"]["ratio"];
  j["goal"] = PoolGoalMet(j) ? "met" : "not met";
  j["tcp_goal"] = PoolTcpGoalMet(j) ? "met" : "not met";
  if (mismatches != 0) {
    return Status::Corruption(std::to_string(mismatches) + " claimed bytes differ from the put");
  }
  return j;
}

}  // namespace

void AddPoolBench(CLI::App& bench) {
  auto o = std::make_shared<PoolBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "pool",
      "Puts and claims through a pool manager's shared-memory arena (manager and two instances "
      "in this process, over the manager's Unix socket) vs memcpy of the same bytes, and claims "
      "through the TCP data channel (a third instance over loopback) vs a raw TCP transfer");
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->add_option("--preset", o->preset, "geometry preset of the records")->capture_default_str();
  cmd->add_option("--pages", o->pages, "tail pages per record")->capture_default_str();
  cmd->add_option("--records", o->records, "records put and claimed per round")
      ->capture_default_str();
  cmd->add_option("--chain-records", o->chain_records, "records per chain (one claim)")
      ->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "timed rounds")->capture_default_str();
  cmd->add_option("--warmup-rounds", o->warmup_rounds, "untimed rounds first")
      ->capture_default_str();
  cmd->add_option("--slot-kib", o->slot_kib, "the arena's slot size")->capture_default_str();
  cmd->add_option("--dir", o->dir, "where the manager's socket goes")->capture_default_str();
  cmd->callback([o] {
    Result<nlohmann::json> r = Run(*o);
    PrintBenchResult(
        "pool", r.status(), r.ok() ? *r : nlohmann::json(), o->json,
        [](const nlohmann::json& j) { std::fputs(PoolBenchTable(j).c_str(), stdout); });
  });
}

}  // namespace strata
