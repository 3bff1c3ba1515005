#include "store/tier/inbound_policy.h"

#include <algorithm>

namespace strata {

std::string_view TierName(Tier tier) { return tier == Tier::kMemory ? "memory" : "disk"; }

std::string_view StoreOutcomeName(StoreOutcome outcome) {
  switch (outcome) {
    case StoreOutcome::kQueued: return "queued";
    case StoreOutcome::kPresent: return "present";
    case StoreOutcome::kDeferred: return "deferred";
    case StoreOutcome::kRetry: return "retry";
    case StoreOutcome::kOversize: return "oversize";
    case StoreOutcome::kDisabled: return "disabled";
  }
  return "unknown";
}

double InboundPolicy::Window::Median() const {
  if (count == 0) return initial;
  if (count == 1) return samples[0];
  if (count == 2) return (samples[0] + samples[1]) / 2;
  const double a = samples[0], b = samples[1], c = samples[2];
  return std::max(std::min(a, b), std::min(std::max(a, b), c));
}

InboundPolicy::InboundPolicy(InboundPolicyOptions options)
    : prefill_tokens_per_s_(options.prefill_tokens_per_s) {
  memory_.initial = options.memory_bytes_per_s;
  disk_.initial = options.disk_bytes_per_s;
  pool_.initial = options.pool_bytes_per_s;
}

bool InboundPolicy::ShouldFetch(const HostHit& hit) const {
  if (hit.tokens_gained == 0) return false;
  const double bytes_per_s = hit.pooled ? pool_rate() : rate(hit.tier);
  double transfer_s = static_cast<double>(hit.bytes) / bytes_per_s;
  double prefill_s = static_cast<double>(hit.tokens_gained) / prefill_tokens_per_s_;
  return transfer_s < prefill_s / 2;
}

void InboundPolicy::Window::Add(uint64_t bytes, double seconds) {
  if (seconds <= 0 || bytes == 0) return;
  samples[next] = static_cast<double>(bytes) / seconds;
  next = (next + 1) % 3;
  count = std::min(count + 1, 3);
}

void InboundPolicy::RecordTransfer(Tier tier, uint64_t bytes, double seconds) {
  (tier == Tier::kMemory ? memory_ : disk_).Add(bytes, seconds);
}

void InboundPolicy::RecordRestore(const HostHit& hit, double seconds) {
  if (hit.pages == 0) return;  // row-only: too small to say anything of a rate
  if (hit.pooled) {
    pool_.Add(hit.bytes, seconds);
  } else {
    RecordTransfer(hit.tier, hit.bytes, seconds);
  }
}

void InboundPolicy::SetPrefillRate(double tokens_per_s) {
  if (tokens_per_s > 0) prefill_tokens_per_s_ = tokens_per_s;
}

double InboundPolicy::rate(Tier tier) const {
  return (tier == Tier::kMemory ? memory_ : disk_).Median();
}

}  // namespace strata
