#include "store/io/faulty_block_io.h"

#include <algorithm>
#include <vector>

namespace strata {

namespace {

constexpr uint64_t kShortAlignment = 4096;

FaultOp KindOf(BlockOp op) {
  switch (op) {
    case BlockOp::kRead: return FaultOp::kBlockRead;
    case BlockOp::kWrite: return FaultOp::kBlockWrite;
    case BlockOp::kSyncData:
    case BlockOp::kSync: return FaultOp::kBlockSync;
  }
  return FaultOp::kBlockSync;
}

uint64_t RequestBytes(const BlockRequest& r) {
  uint64_t total = 0;
  for (uint32_t i = 0; i < r.iov_count; ++i) total += r.iov[i].iov_len;
  return total;
}

}  // namespace

Status FaultyBlockIo::Submit(std::span<const BlockRequest> requests) {
  std::vector<BlockRequest> pass;
  pass.reserve(requests.size());
  for (const BlockRequest& r : requests) {
    const FaultOp op = KindOf(r.op);
    const FaultDecision d = plan_.Decide(op, counters_.Next(op));
    if (d.effect == FaultEffect::kError) {
      counters_.Fired(op);
      injected_.push_back({.tag = r.tag, .result = -static_cast<int64_t>(d.error)});
      continue;
    }
    if (d.effect == FaultEffect::kShort && op != FaultOp::kBlockSync) {
      const uint64_t reported = (RequestBytes(r) / 2) / kShortAlignment * kShortAlignment;
      if (reported > 0) {
        counters_.Fired(op);
        shortened_[r.tag] = static_cast<int64_t>(reported);
      }
    }
    pass.push_back(r);
  }
  if (pass.empty()) return Status::Ok();
  return inner_->Submit(pass);
}

Result<size_t> FaultyBlockIo::Reap(std::span<BlockCompletion> out,
                                   std::chrono::nanoseconds max_wait) {
  size_t n = 0;
  while (n < out.size() && !injected_.empty()) {
    out[n++] = injected_.front();
    injected_.pop_front();
  }
  if (n == out.size()) return n;
  // Injected completions are ready now: do not wait for real ones.
  Result<size_t> reaped =
      inner_->Reap(out.subspan(n), n > 0 ? std::chrono::nanoseconds(0) : max_wait);
  if (!reaped.ok()) {
    if (n > 0) return n;
    return reaped.status();
  }
  for (size_t i = n; i < n + *reaped; ++i) {
    auto it = shortened_.find(out[i].tag);
    if (it == shortened_.end()) continue;
    if (out[i].result > 0) out[i].result = std::min(out[i].result, it->second);
    shortened_.erase(it);
  }
  return n + *reaped;
}

}  // namespace strata
