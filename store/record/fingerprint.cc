#include "store/record/fingerprint.h"

#include "store/base/byte_writer.h"

namespace strata {

namespace {

constexpr uint8_t kWholeLayoutTag = 'W';
constexpr uint8_t kRankLayoutTag = 'R';
constexpr std::string_view kIdentityDomain = "strata-prefix-state-v1";
constexpr size_t kIdentityPrefixBytes = 8;

void EncodeRank(ByteWriter& w, const RankGeometry& g) {
  w.U32(static_cast<uint32_t>(g.page_planes.size()));
  for (const PlaneSpec& p : g.page_planes) {
    w.String(p.name);
    w.U64(p.unit_bytes);
  }
  w.String(g.row.name);
  w.U64(g.row.unit_bytes);
}

}  // namespace

std::string_view StateModeName(StateMode mode) {
  switch (mode) {
    case StateMode::kOrdinary: return "ordinary";
    case StateMode::kLearnedSpeculation: return "learned-speculation";
    case StateMode::kCopySpeculation: return "copy-speculation";
  }
  return "unknown";
}

std::vector<uint8_t> EncodeLayout(const CacheGeometry& geometry) {
  ByteWriter w;
  w.U8(kWholeLayoutTag);
  w.U32(geometry.rank_count());
  w.U32(geometry.page_tokens);
  for (const RankGeometry& g : geometry.ranks) EncodeRank(w, g);
  return w.bytes();
}

std::vector<uint8_t> EncodeRankLayout(const RankGeometry& rank_geometry, uint32_t page_tokens,
                                      uint32_t rank, uint32_t world_size) {
  ByteWriter w;
  w.U8(kRankLayoutTag);
  w.U32(world_size);
  w.U32(page_tokens);
  w.U32(rank);
  EncodeRank(w, rank_geometry);
  return w.bytes();
}

LayoutFingerprint ComputeLayoutFingerprint(const CacheGeometry& geometry) {
  return Blake2b128(EncodeLayout(geometry));
}

LayoutFingerprint ComputeRankLayoutFingerprint(const RankGeometry& rank_geometry,
                                               uint32_t page_tokens, uint32_t rank,
                                               uint32_t world_size) {
  return Blake2b128(EncodeRankLayout(rank_geometry, page_tokens, rank, world_size));
}

NamespaceIdentity ComputeNamespaceIdentity(std::string_view model_identity, StateMode mode) {
  ByteWriter w;
  w.String(kIdentityDomain);
  w.String(model_identity);
  w.U8(static_cast<uint8_t>(mode));
  return Blake2b256(w.bytes());
}

std::string NamespaceDirName(const NamespaceIdentity& identity,
                             const LayoutFingerprint& fingerprint) {
  return ToHex(std::span(identity).first(kIdentityPrefixBytes)) + "-" + ToHex(fingerprint);
}

}  // namespace strata
