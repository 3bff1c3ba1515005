#include "coordinator/pool/pool_record_image.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

namespace strata::pool {

namespace {

constexpr std::array<char, 8> kMagic = {'S', 'T', 'R', 'P', 'R', 'E', 'C', '1'};

void Put32(std::byte* at, uint32_t v) { std::memcpy(at, &v, sizeof v); }
void Put64(std::byte* at, uint64_t v) { std::memcpy(at, &v, sizeof v); }
uint32_t Get32(const std::byte* at) {
  uint32_t v;
  std::memcpy(&v, at, sizeof v);
  return v;
}
uint64_t Get64(const std::byte* at) {
  uint64_t v;
  std::memcpy(&v, at, sizeof v);
  return v;
}
void PutKey(std::byte* at, const PrefixKey& k) {
  Put64(at, k.consumed);
  std::memcpy(at + 8, k.digest.data(), k.digest.size());
}
PrefixKey GetKey(const std::byte* at) {
  PrefixKey k;
  k.consumed = Get64(at);
  std::memcpy(k.digest.data(), at + 8, k.digest.size());
  return k;
}

uint64_t Total(std::span<const std::span<const std::byte>> pieces) {
  uint64_t n = 0;
  for (const auto& p : pieces) n += p.size();
  return n;
}

}  // namespace

std::vector<std::byte> EncodeRecordImage(const RecordView& record) {
  const uint64_t page_bytes = record.pages.empty() ? 0 : record.pages[0].size();
  const uint64_t row_bytes = Total(record.row);
  std::vector<std::byte> out(kRecordImageHeaderBytes + page_bytes * record.pages.size() +
                             row_bytes);
  std::byte* h = out.data();
  std::memcpy(h, kMagic.data(), kMagic.size());
  Put32(h + 8, static_cast<uint32_t>(record.pages.size()));
  uint32_t flags = 0;
  if (record.parent) flags |= kImageFlagParent;
  if (record.replicated_pages) flags |= kImageFlagPagesReplicated;
  if (record.replicated_row) flags |= kImageFlagRowReplicated;
  Put32(h + 12, flags);
  Put64(h + 16, page_bytes);
  Put64(h + 24, row_bytes);
  PutKey(h + 32, record.key);
  if (record.parent) PutKey(h + 56, *record.parent);
  std::memcpy(h + 80, record.bucket.data(), record.bucket.size());
  std::byte* at = h + kRecordImageHeaderBytes;
  for (const auto& p : record.pages) {
    std::memcpy(at, p.data(), p.size());
    at += page_bytes;
  }
  for (const auto& p : record.row) {
    std::memcpy(at, p.data(), p.size());
    at += p.size();
  }
  return out;
}

Result<RecordView> DecodeRecordImage(std::span<const std::byte> image) {
  if (image.size() < kRecordImageHeaderBytes) {
    return Status::Corruption("record image of " + std::to_string(image.size()) +
                              " bytes is shorter than its header");
  }
  const std::byte* h = image.data();
  if (std::memcmp(h, kMagic.data(), kMagic.size()) != 0) {
    return Status::Corruption("record image magic is wrong");
  }
  const uint32_t pages = Get32(h + 8);
  const uint32_t flags = Get32(h + 12);
  const uint64_t page_bytes = Get64(h + 16);
  const uint64_t row_bytes = Get64(h + 24);
  constexpr uint32_t kKnown =
      kImageFlagParent | kImageFlagPagesReplicated | kImageFlagRowReplicated;
  if ((flags & ~kKnown) != 0) return Status::Corruption("record image flags has unknown bits");
  if (pages > kImageMaxTailPages) return Status::Corruption("record image tail pages too many");
  if (page_bytes > kImageMaxPieceBytes || row_bytes > kImageMaxPieceBytes) {
    return Status::Corruption("record image piece sizes out of range");
  }
  if (std::any_of(h + 96, h + kRecordImageHeaderBytes,
                  [](std::byte b) { return b != std::byte{0}; })) {
    return Status::Corruption("record image reserved bytes are not zero");
  }
  // The sizes are the sender's: multiplied and added with overflow checks,
  // so that a product that wraps cannot match a short image.
  uint64_t want = 0;
  if (__builtin_mul_overflow(page_bytes, uint64_t{pages}, &want) ||
      __builtin_add_overflow(want, row_bytes, &want) ||
      __builtin_add_overflow(want, kRecordImageHeaderBytes, &want)) {
    return Status::Corruption("record image sizes overflow");
  }
  if (image.size() != want) {
    return Status::Corruption("record image holds " + std::to_string(image.size()) +
                              " bytes, its header says " + std::to_string(want));
  }
  RecordView v;
  v.key = GetKey(h + 32);
  if (v.key.consumed == 0) return Status::Corruption("record image key has no tokens");
  if ((flags & kImageFlagParent) != 0) {
    v.parent = GetKey(h + 56);
    if (v.parent->consumed == 0 || v.parent->consumed >= v.key.consumed) {
      return Status::Corruption("record image parent is not a shorter prefix");
    }
  }
  std::memcpy(v.bucket.data(), h + 80, v.bucket.size());
  v.tail_pages = pages;
  v.replicated_pages = (flags & kImageFlagPagesReplicated) != 0;
  v.replicated_row = (flags & kImageFlagRowReplicated) != 0;
  const std::byte* at = h + kRecordImageHeaderBytes;
  for (uint32_t i = 0; i < pages; ++i, at += page_bytes) v.pages.emplace_back(at, page_bytes);
  if (row_bytes > 0) v.row.emplace_back(at, row_bytes);
  return v;
}

}  // namespace strata::pool
