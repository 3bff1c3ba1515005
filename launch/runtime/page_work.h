// PageWork: what one rank of the synthetic runtime does for one turn — the
// pages it "computes" (writes) into its planes, or the restored pages it
// checks — and the bytes every rank derives for them. Rank zero's runtime
// decides the work; each rank applies it to its own planes (ApplyPageWork),
// in its own process when ranks are separate (runtime_lockstep.h), so no
// rank's page bytes ever cross a process boundary.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "store/base/ids.h"
#include "store/base/prefix_key.h"
#include "store/base/status.h"
#include "store/transfer/device_planes.h"

namespace strata {

enum class PageWorkKind : unsigned char {
  kCompute,  // write every page and the row
  kVerify,   // compare every page and the row with what kCompute writes
};

struct PageWork {
  PageWorkKind kind = PageWorkKind::kCompute;
  std::vector<Digest128> page_prefixes;  // per page: the digest of its prefix
  std::vector<PageId> pages;             // per page: its id in the planes
  StateSlot row;
  PrefixKey endpoint;  // the row's bytes derive from it
};

// The bytes of one page of `plane` on `rank`, and of a rank's state row.
void SyntheticPageBytes(const Digest128& page_prefix, uint32_t plane, uint32_t rank,
                        std::span<uint8_t> out);
void SyntheticRowBytes(const PrefixKey& endpoint, uint32_t rank, std::span<uint8_t> out);

// What ApplyPageWork checked: unpadded bytes compared (kVerify; 0 for kCompute).
struct PageWorkReport {
  uint64_t checked_bytes = 0;
};

// Applies `work` to rank `local_rank` of `planes`, which is rank `rank` of
// the job (the bytes derive from `rank`). A kVerify mismatch is kCorruption
// naming the page, plane and rank and the first differing byte.
Result<PageWorkReport> ApplyPageWork(DevicePlanes& planes, uint32_t local_rank, uint32_t rank,
                                     const PageWork& work);

// The other ranks of the job, when their planes live in other processes:
// each applies the work to its own planes. Rank zero's runtime calls it
// between its own turn steps; the ranks answer in lockstep.
class RankPeers {
 public:
  virtual ~RankPeers() = default;
  // Every peer rank applies `work`; the sum of their reports. Fails with
  // the first peer's error (a mismatch, or a lost peer).
  virtual Result<PageWorkReport> Apply(const PageWork& work) = 0;
};

// PageWork as bytes (the lockstep channel's request body), and back:
// kInvalidArgument on a truncated or oversized body.
std::vector<uint8_t> EncodePageWork(const PageWork& work);
Result<PageWork> DecodePageWork(std::span<const uint8_t> bytes);

// Limits checked on decode.
inline constexpr size_t kPageWorkPagesMax = size_t{1} << 20;

}  // namespace strata
