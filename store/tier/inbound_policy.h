// Inbound policy (seed 2.10): fetch a host hit only when its estimated
// transfer time is below half the estimated prefill time of the tokens it
// saves. Rates are the median of the last three completed transfers per tier,
// starting from fixed initial rates. Pure logic; the caller feeds it samples.
#pragma once

#include <array>
#include <cstdint>

#include "store/tier/host_store.h"

namespace strata {

struct InboundPolicyOptions {
  double memory_bytes_per_s = 20e9;  // initial memory-tier rate
  double disk_bytes_per_s = 3e9;     // initial disk-tier rate
  double prefill_tokens_per_s = 8000;
};

class InboundPolicy {
 public:
  explicit InboundPolicy(InboundPolicyOptions options = {});

  bool ShouldFetch(const HostHit& hit) const;
  // Records a completed transfer of `bytes` in `seconds` from `tier`.
  // Failed transfers must not be recorded.
  void RecordTransfer(Tier tier, uint64_t bytes, double seconds);
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
  };
  Window memory_;
  Window disk_;
  double prefill_tokens_per_s_;
};

}  // namespace strata
