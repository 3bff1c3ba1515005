// Inbound policy (seed 2.10): fetch a host hit only when its estimated
// transfer time is below half the estimated prefill time of the tokens it
// saves. Rates are the median of the last three completed transfers per tier,
// starting from fixed initial rates; a pooled hit (HostHit::pooled: a claim
// from the pool, an export among them, then the restore) has a rate of its
// own (seed 2.15: "Successful restores refine transfer costs without
// changing that priority; failed transfers and row-only restores do not
// update the rates"). Pure logic; the caller feeds it samples.
#pragma once

#include <array>
#include <cstdint>

#include "store/tier/host_store.h"

namespace strata {

struct InboundPolicyOptions {
  double memory_bytes_per_s = 20e9;  // initial memory-tier rate
  double disk_bytes_per_s = 3e9;     // initial disk-tier rate
  // Initial pool rate, claim and restore together: the seed's remote
  // initial rate (400 MiB/s), until pooled restores measure this host's.
  double pool_bytes_per_s = 400.0 * (1 << 20);
  double prefill_tokens_per_s = 8000;
};

class InboundPolicy {
 public:
  explicit InboundPolicy(InboundPolicyOptions options = {});

  bool ShouldFetch(const HostHit& hit) const;
  // Records a completed transfer of `bytes` in `seconds` from `tier`.
  // Failed transfers must not be recorded.
  void RecordTransfer(Tier tier, uint64_t bytes, double seconds);
  // Records the completed restore of `hit` in `seconds`: a pooled hit's
  // into the pool's rate, another's into its tier's; a row-only restore
  // (no pages) into none. Failed restores must not be recorded.
  void RecordRestore(const HostHit& hit, double seconds);
  double pool_rate() const { return pool_.Median(); }
  // The runtime's measured prefill throughput.
  void SetPrefillRate(double tokens_per_s);
  double rate(Tier tier) const;

 private:
  struct Window {
    std::array<double, 3> samples{};
    int count = 0;
    int next = 0;
    double initial = 0;
    double Median() const;
    void Add(uint64_t bytes, double seconds);
  };
  Window memory_;
  Window disk_;
  Window pool_;
  double prefill_tokens_per_s_;
};

}  // namespace strata
