#include "store/io/fault_plan.h"

#include "store/base/splitmix.h"

namespace strata {

std::string_view FaultOpName(FaultOp op) {
  switch (op) {
    case FaultOp::kOpen: return "open";
    case FaultOp::kAllocate: return "fallocate";
    case FaultOp::kTruncate: return "truncate";
    case FaultOp::kReadAt: return "pread";
    case FaultOp::kWriteAt: return "pwrite";
    case FaultOp::kRename: return "rename";
    case FaultOp::kUnlink: return "unlink";
    case FaultOp::kSync: return "fsync";
    case FaultOp::kBlockRead: return "block-read";
    case FaultOp::kBlockWrite: return "block-write";
    case FaultOp::kBlockSync: return "block-sync";
  }
  return "unknown";
}

FaultPlan FaultPlan::Nth(FaultOp op, uint64_t nth, FaultEffect effect, int error) {
  return FaultPlan({FaultRule{.op = op, .nth = nth, .effect = effect, .error = error}}, 0);
}

FaultPlan FaultPlan::Random(FaultOp op, double probability, FaultEffect effect, int error,
                            uint64_t seed) {
  return FaultPlan(
      {FaultRule{.op = op, .probability = probability, .effect = effect, .error = error}}, seed);
}

FaultDecision FaultPlan::Decide(FaultOp op, uint64_t ordinal) const {
  for (const FaultRule& r : rules_) {
    if (r.op != op) continue;
    bool fire = false;
    if (r.nth != 0) {
      fire = ordinal == r.nth;
    } else if (r.probability > 0) {
      // Mixed from (seed, op, ordinal) alone, so a random plan's decision for
      // one operation does not depend on any other.
      const uint64_t h =
          SplitMix64Of(seed_ ^ SplitMix64Of((static_cast<uint64_t>(op) << 56) ^ ordinal));
      // The top 53 bits as a uniform double in [0, 1).
      fire = static_cast<double>(h >> 11) * 0x1.0p-53 < r.probability;
    }
    if (fire) return FaultDecision{.effect = r.effect, .error = r.error};
  }
  return {};
}

uint64_t FaultCounters::fired_total() const {
  uint64_t total = 0;
  for (const auto& f : fired_) total += f.load();
  return total;
}

}  // namespace strata
