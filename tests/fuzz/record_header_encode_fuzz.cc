// Fuzz target: EncodeRecordHeader against DecodeRecordHeader
// (store/record/record_header.h), from RecordHeader values built out of the input.
// Properties:
//  - EncodeRecordHeader succeeds exactly when ComputeExtents does, and fails
//    with kCorruption otherwise;
//  - whatever the writer encodes, the reader decodes to the same header: no
//    file the store writes is one its own scan would refuse;
//  - nothing crashes, overflows or trips a sanitizer on extreme sizes.
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstdint>

#include "fuzz_check.h"
#include "store/record/record_header.h"

namespace strata::fuzz {
namespace {

template <size_t N>
std::array<uint8_t, N> Bytes(FuzzedDataProvider& in) {
  std::array<uint8_t, N> out{};
  for (uint8_t& b : out) b = in.ConsumeIntegral<uint8_t>();
  return out;
}

// Mostly plausible sizes, sometimes any value (zero and past the bounds).
uint64_t Size(FuzzedDataProvider& in, uint64_t typical_max) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: return in.ConsumeIntegral<uint64_t>();
    case 1: return in.ConsumeIntegralInRange<uint64_t>(typical_max - 16, typical_max + 16);
    default: return in.ConsumeIntegralInRange<uint64_t>(1, typical_max);
  }
}

PrefixKey Key(FuzzedDataProvider& in) {
  PrefixKey key;
  key.consumed = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint64_t>(0, 1 << 20)
                                  : in.ConsumeIntegral<uint64_t>();
  key.digest = Bytes<16>(in);
  return key;
}

RecordHeader BuildHeader(FuzzedDataProvider& in) {
  RecordHeader h;
  if (in.ConsumeProbability<float>() < 0.05F) h.format_version = in.ConsumeIntegral<uint32_t>();
  h.pages_replicated = in.ConsumeBool();
  h.row_replicated = in.ConsumeBool();
  h.identity = Bytes<32>(in);
  h.fingerprint = Bytes<16>(in);
  h.key = Key(in);
  if (in.ConsumeBool()) h.parent = Key(in);
  h.bucket = Bytes<16>(in);
  h.tail_page_count = in.ConsumeBool() ? in.ConsumeIntegralInRange<uint32_t>(0, 64)
                                       : in.ConsumeIntegral<uint32_t>();
  h.shape.page_tokens = in.ConsumeIntegralInRange<uint32_t>(0, 1024);
  // Up to 300 ranks of up to 600 planes: past what the rank table can hold.
  const bool same_shape = in.ConsumeBool();
  const size_t ranks = in.ConsumeIntegralInRange<size_t>(0, in.ConsumeBool() ? 8 : 300);
  for (size_t r = 0; r < ranks; ++r) {
    if (same_shape && r > 0) {
      h.shape.ranks.push_back(h.shape.ranks[0]);
      continue;
    }
    RankShape rank;
    const size_t planes = in.ConsumeIntegralInRange<size_t>(0, in.ConsumeBool() ? 4 : 600);
    for (size_t p = 0; p < planes; ++p) rank.plane_bytes.push_back(Size(in, kMaxPlaneBytes));
    rank.row_bytes = Size(in, kMaxRowBytes);
    h.shape.ranks.push_back(std::move(rank));
  }
  h.row_checksum = in.ConsumeIntegral<uint64_t>();
  h.created_unix_ns = in.ConsumeIntegral<uint64_t>();
  return h;
}

}  // namespace
}  // namespace strata::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  FuzzedDataProvider in(data, size);
  const RecordHeader h = fuzz::BuildHeader(in);
  std::array<std::byte, kRecordHeaderBytes> bytes{};
  const Status encoded = EncodeRecordHeader(h, bytes);
  const Result<RecordExtents> extents = ComputeExtents(h);
  FUZZ_CHECK(encoded.ok() == extents.ok(),
             "EncodeRecordHeader and ComputeExtents disagree: " + encoded.ToString());
  if (!encoded.ok()) {
    FUZZ_CHECK(encoded.code() == StatusCode::kCorruption, "encode error " + encoded.ToString());
    return 0;
  }
  const Result<RecordHeader> decoded = DecodeRecordHeader(bytes);
  FUZZ_CHECK(decoded.ok(),
             "the reader refuses a header the writer encoded: " + decoded.status().ToString());
  FUZZ_CHECK(*decoded == h, "decoding an encoded header changed it");
  return 0;
}
