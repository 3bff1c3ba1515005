// FaultPlan: which I/O operation fails, and how, for fault-injection tests.
// A pure value: Decide maps (operation kind, its 1-based ordinal among
// operations of that kind) to an outcome, from the plan's rules and seed
// alone, with no clock, thread or random state inside. The decorators in
// store/io/faulty_file_system.h and store/io/faulty_block_io.h count operations
// and apply the decision.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace strata {

// The operation kinds a plan can target: FileSystem calls (synchronous) and
// BlockIo requests (the disk thread's data path).
enum class FaultOp : unsigned char {
  kOpen,        // FileSystem::OpenAt / OpenDirectory
  kAllocate,    // fallocate
  kTruncate,    // ftruncate
  kReadAt,      // synchronous pread (headers, scans)
  kWriteAt,     // synchronous pwrite
  kRename,      // rename (record commit)
  kUnlink,      // unlink
  kSync,        // FileSystem fdatasync / fsync / syncfs
  kBlockRead,   // BlockIo preadv
  kBlockWrite,  // BlockIo pwritev
  kBlockSync,   // BlockIo fdatasync / fsync
};
inline constexpr size_t kFaultOpCount = 11;
std::string_view FaultOpName(FaultOp op);

enum class FaultEffect : unsigned char {
  kNone,
  kError,  // the call fails with `error` (an errno)
  kShort,  // reads return fewer bytes; BlockIo transfers complete short
};

struct FaultDecision {
  FaultEffect effect = FaultEffect::kNone;
  int error = 0;  // kError only
};

// One rule: fail the `nth` (1-based) operation of `op`, or, with nth == 0,
// each operation of `op` with probability `probability` (seeded).
struct FaultRule {
  FaultOp op = FaultOp::kBlockWrite;
  uint64_t nth = 0;
  double probability = 0;
  FaultEffect effect = FaultEffect::kError;
  int error = 0;  // kError: the errno (EIO, ENOSPC, EINTR, ...)
};

class FaultPlan {
 public:
  FaultPlan() = default;  // injects nothing
  FaultPlan(std::vector<FaultRule> rules, uint64_t seed) : rules_(std::move(rules)), seed_(seed) {}

  static FaultPlan Nth(FaultOp op, uint64_t nth, FaultEffect effect, int error);
  static FaultPlan Random(FaultOp op, double probability, FaultEffect effect, int error,
                          uint64_t seed);

  // The outcome for the `ordinal`-th (1-based) operation of kind `op`. The
  // first matching rule wins.
  FaultDecision Decide(FaultOp op, uint64_t ordinal) const;

  const std::vector<FaultRule>& rules() const { return rules_; }
  uint64_t seed() const { return seed_; }

 private:
  std::vector<FaultRule> rules_;
  uint64_t seed_ = 0;
};

// What the decorators saw and injected, by operation kind. Thread-safe; shared
// by every decorator applying one plan so that ordinals count across them.
class FaultCounters {
 public:
  // Counts one operation of `op` and returns its 1-based ordinal.
  uint64_t Next(FaultOp op) { return seen_[Index(op)].fetch_add(1) + 1; }
  void Fired(FaultOp op) { fired_[Index(op)].fetch_add(1); }
  uint64_t seen(FaultOp op) const { return seen_[Index(op)].load(); }
  uint64_t fired(FaultOp op) const { return fired_[Index(op)].load(); }
  uint64_t fired_total() const;

 private:
  static size_t Index(FaultOp op) { return static_cast<size_t>(op); }
  std::array<std::atomic<uint64_t>, kFaultOpCount> seen_{};
  std::array<std::atomic<uint64_t>, kFaultOpCount> fired_{};
};

}  // namespace strata
