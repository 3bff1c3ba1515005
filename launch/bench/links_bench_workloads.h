// The workloads of `strata bench links` (launch/bench/bench_links.cc): a cluster
// of ranks as threads of this process joined over loopback, control-only
// job round trips through rank zero's sharded transport, a raw TCP
// ping-pong baseline, and whole-record store/fetch throughput. They measure;
// bench_links.cc compares and reports.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/coordinator.h"
#include "coordinator/rendezvous/in_process_rendezvous.h"
#include "rank_agent/rank_agent.h"
#include "store/transfer/host_planes.h"
#include "wire/tls.h"

namespace strata::links_bench {

using Clock = std::chrono::steady_clock;
// One job never takes longer on a healthy machine; a bound, not a measurement.
inline constexpr auto kJobWait = std::chrono::seconds(30);
inline constexpr uint32_t kThroughputWindow = 4;  // records in flight

struct Latency {
  double p50_us = 0;
  double p99_us = 0;
  double switches_per_trip = 0;  // context switches of the process per round trip
  double cpu_us_per_trip = 0;    // CPU time of the process per round trip (spins included)
};

// Round trips in microseconds, and the process's context switches and CPU
// time over them.
struct Trips {
  std::vector<double> us;
  uint64_t switches = 0;
  double cpu_seconds = 0;
};

Latency Summarize(const Trips& t);

struct Throughput {
  double store_gbps = 0;  // payload bytes of every rank per second
  double fetch_gbps = 0;
  double cpu_seconds_per_gb = 0;
};

// A scratch directory removed at the end; path() is empty when it could not
// be made.
class TempDir {
 public:
  explicit TempDir(const std::string& base);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// `world` ranks in this process: rank zero's coordinator and a RankAgent per
// peer, joined over loopback, each with its own host planes and record
// directory under `base`.
// How every rank of a BenchCluster runs: its disk thread's nice value, the
// idle spin of its disk thread and of rank zero's waits, that of every
// record link's I/O thread (both ends), and whether rank zero's links share
// one.
struct ClusterTuning {
  int disk_nice = DiskThreadOptions{}.nice;
  std::chrono::microseconds idle_spin = DefaultIdleSpin();
  std::chrono::microseconds link_idle_spin{0};
  // The peers' ends only, when set (rank zero's keep link_idle_spin): across
  // hosts each rank spins on its own cores, here they share the machine's.
  std::optional<std::chrono::microseconds> peer_link_idle_spin;
  // Rank zero's record links on one I/O thread (CoordinatorOptions).
  bool shared_link_thread = false;
};

class BenchCluster {
 public:
  static Result<std::unique_ptr<BenchCluster>> Start(
      uint32_t world, const std::string& base, uint64_t page_count, const ClusterTuning& tuning,
      const std::shared_ptr<const wire::TlsContext>& tls = nullptr);
  ~BenchCluster() { (void)Close(); }
  BenchCluster(const BenchCluster&) = delete;
  BenchCluster& operator=(const BenchCluster&) = delete;

  ShardedTransport& transport() { return coordinator_->transport(); }
  // Wake-ups rank zero's links saved by spinning (LinkStats::idle_spin_hits),
  // summed over the peers, or their shared thread's.
  uint64_t RankZeroLinkSpinHits() const;
  // The same for every peer's link to rank zero, summed.
  uint64_t PeerLinkSpinHits() const;
  // Closes rank zero (draining every peer) and waits for the agents.
  Status Close();

 private:
  BenchCluster();
  InProcessRendezvous rendezvous_;
  std::vector<std::unique_ptr<HostPlanes>> planes_;
  std::vector<std::unique_ptr<RankAgent>> agents_;
  std::unique_ptr<Coordinator> coordinator_;
};

// `count` round trips of unlinks of a missing file after `warmup` unmeasured;
// job ids come from `next_id`.
Result<Trips> ControlRoundTrips(ShardedTransport& t, uint32_t warmup, uint32_t count,
                                uint64_t& next_id);
// The same trips with nothing of the protocol: plain loopback TCP with
// TCP_NODELAY from the caller's thread to `peers` echo threads of this
// process (kPingBytes to each in turn, then every answer). One peer is a raw
// ping-pong; `peers` = world - 1 is the least any fan-out to that many ranks
// can take on this machine. The rig stays up between Run calls, so its trips
// can alternate with the cluster's in blocks (both then see the same
// machine); the echo threads end with it.
class RawFanoutRig {
 public:
  static Result<std::unique_ptr<RawFanoutRig>> Start(uint32_t peers);
  ~RawFanoutRig();
  RawFanoutRig(const RawFanoutRig&) = delete;
  RawFanoutRig& operator=(const RawFanoutRig&) = delete;
  // `count` trips after `warmup` unmeasured.
  Result<Trips> Run(uint32_t warmup, uint32_t count);

 private:
  RawFanoutRig() = default;
  struct State;
  std::unique_ptr<State> state_;
};
// Adds `block`'s trips, switches and CPU time to `into`.
void AppendTrips(Trips& into, const Trips& block);
// Stores `records` records of `pages` pages (+ row) on every rank, fetches
// them back, unlinks them.
Result<Throughput> StoreFetch(ShardedTransport& t, uint32_t records, uint32_t pages,
                              uint64_t& next_id);

}  // namespace strata::links_bench
