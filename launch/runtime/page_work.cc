#include "launch/runtime/page_work.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "store/base/splitmix.h"

namespace strata {

namespace {

void FillStream(uint64_t seed, std::span<uint8_t> out) {
  uint64_t state = seed;
  size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    uint64_t v = SplitMix64(state);
    std::memcpy(out.data() + i, &v, 8);
  }
  if (i < out.size()) {
    uint64_t v = SplitMix64(state);
    std::memcpy(out.data() + i, &v, out.size() - i);
  }
}

uint64_t DigestSeed(const Digest128& d) {
  uint64_t s;
  std::memcpy(&s, d.data(), sizeof s);
  return s;
}

// Compares `want` with `got`; a difference names `what` and its first byte.
Status Compare(std::span<const uint8_t> want, std::span<const uint8_t> got, const std::string& what,
               const PrefixKey& endpoint) {
  if (std::equal(want.begin(), want.end(), got.begin(), got.end())) return Status::Ok();
  const size_t at = std::mismatch(want.begin(), want.end(), got.begin()).first - want.begin();
  return Status::Corruption("restored " + what + " of " + endpoint.ToFileStem() +
                            " differs at byte " + std::to_string(at));
}

// Little-endian writer and bounds-checked reader of the encoded work.
void Put(std::vector<uint8_t>& out, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  bool Get(uint64_t& v, size_t bytes) {
    if (in_.size() - at_ < bytes) return false;
    v = 0;
    for (size_t i = 0; i < bytes; ++i) v |= uint64_t{in_[at_ + i]} << (8 * i);
    at_ += bytes;
    return true;
  }
  bool Get(Digest128& d) {
    if (in_.size() - at_ < d.size()) return false;
    std::memcpy(d.data(), in_.data() + at_, d.size());
    at_ += d.size();
    return true;
  }
  bool done() const { return at_ == in_.size(); }

 private:
  std::span<const uint8_t> in_;
  size_t at_ = 0;
};

}  // namespace

void SyntheticPageBytes(const Digest128& page_prefix, uint32_t plane, uint32_t rank,
                        std::span<uint8_t> out) {
  FillStream(DigestSeed(page_prefix) ^ (uint64_t{plane} << 32) ^ (uint64_t{rank} << 48), out);
}

void SyntheticRowBytes(const PrefixKey& endpoint, uint32_t rank, std::span<uint8_t> out) {
  FillStream(DigestSeed(endpoint.digest) ^ 0x5157ull ^ (uint64_t{rank} << 48), out);
  // Like a real row, it records its own consumed count.
  std::memcpy(out.data(), &endpoint.consumed, std::min<size_t>(8, out.size()));
}

Result<PageWorkReport> ApplyPageWork(DevicePlanes& planes, uint32_t local_rank, uint32_t rank,
                                     const PageWork& work) {
  if (work.page_prefixes.size() != work.pages.size()) {
    return Status::InvalidArgument("page work: one prefix per page");
  }
  const RankGeometry& g = planes.geometry().ranks.at(local_rank);
  const bool verify = work.kind == PageWorkKind::kVerify;
  PageWorkReport report;
  std::vector<uint8_t> want, got;
  for (size_t i = 0; i < work.pages.size(); ++i) {
    for (uint32_t p = 0; p < g.page_planes.size(); ++p) {
      want.resize(g.page_planes[p].unit_bytes);
      SyntheticPageBytes(work.page_prefixes[i], p, rank, want);
      if (!verify) {
        STRATA_RETURN_IF_ERROR(planes.WritePage(local_rank, p, work.pages[i], want));
        continue;
      }
      got.resize(want.size());
      STRATA_RETURN_IF_ERROR(planes.ReadPage(local_rank, p, work.pages[i], got));
      report.checked_bytes += got.size();
      STRATA_RETURN_IF_ERROR(Compare(want, got,
                                     "page id " + std::to_string(work.pages[i].value) + " plane " +
                                         std::to_string(p) + " rank " + std::to_string(rank),
                                     work.endpoint));
    }
  }
  want.resize(g.row.unit_bytes);
  SyntheticRowBytes(work.endpoint, rank, want);
  if (!verify) {
    STRATA_RETURN_IF_ERROR(planes.WriteRow(local_rank, work.row, want));
    return report;
  }
  got.resize(want.size());
  STRATA_RETURN_IF_ERROR(planes.ReadRow(local_rank, work.row, got));
  report.checked_bytes += got.size();
  STRATA_RETURN_IF_ERROR(Compare(want, got, "row of rank " + std::to_string(rank), work.endpoint));
  return report;
}

// kind (1) | pages (4) | per page: prefix (16) + id (4) | row (4) | consumed (8) | digest (16)
std::vector<uint8_t> EncodePageWork(const PageWork& work) {
  std::vector<uint8_t> out;
  out.reserve(1 + 4 + work.pages.size() * 20 + 28);
  Put(out, static_cast<uint64_t>(work.kind), 1);
  Put(out, work.pages.size(), 4);
  for (size_t i = 0; i < work.pages.size(); ++i) {
    out.insert(out.end(), work.page_prefixes[i].begin(), work.page_prefixes[i].end());
    Put(out, work.pages[i].value, 4);
  }
  Put(out, work.row.value, 4);
  Put(out, work.endpoint.consumed, 8);
  out.insert(out.end(), work.endpoint.digest.begin(), work.endpoint.digest.end());
  return out;
}

Result<PageWork> DecodePageWork(std::span<const uint8_t> bytes) {
  Reader in(bytes);
  PageWork work;
  uint64_t kind = 0, pages = 0, v = 0;
  if (!in.Get(kind, 1) || kind > static_cast<uint64_t>(PageWorkKind::kVerify)) {
    return Status::InvalidArgument("page work: no valid kind");
  }
  work.kind = static_cast<PageWorkKind>(kind);
  if (!in.Get(pages, 4) || pages > kPageWorkPagesMax) {
    return Status::InvalidArgument("page work: page count missing or above the limit");
  }
  work.page_prefixes.resize(pages);
  for (uint64_t i = 0; i < pages; ++i) {
    if (!in.Get(work.page_prefixes[i]) || !in.Get(v, 4)) {
      return Status::InvalidArgument("page work: truncated page list");
    }
    work.pages.push_back(PageId(static_cast<uint32_t>(v)));
  }
  if (!in.Get(v, 4)) return Status::InvalidArgument("page work: no row");
  work.row = StateSlot(static_cast<uint32_t>(v));
  if (!in.Get(work.endpoint.consumed, 8) || !in.Get(work.endpoint.digest) || !in.done()) {
    return Status::InvalidArgument("page work: bad endpoint or trailing bytes");
  }
  return work;
}

}  // namespace strata
