// XXH3-64 (seed 0, default secret) of a byte sequence given as an ordered list
// of pieces, each followed by implicit zeros: the record format's stored page
// records and row segments (docs/formats.md, "Page records and rows") are
// planes padded with zeros to 4 KiB, and a GPU holds the planes unpadded.
//
// Why a hand implementation: the host computes record checksums with
// libxxhash (store/record/checksum.h), which has no GPU form; a GPUDirect
// transport must compute the same values on the device (record_checksum_kernel.cu).
// Everything here is `__host__ __device__` so that the host instantiation can
// be tested bit for bit against libxxhash (tests/unit/cuda/xxh3_core_test.cc)
// and the kernel runs the very same code. It follows the XXH3 specification,
// xxHash's doc/xxhash_spec.md ("XXH3 algorithm description"), and the scalar
// paths of xxhash.h 0.8: the length classes 0, 1-3, 4-8, 9-16, 17-128, 129-240
// and > 240 (stripes of 64 bytes, blocks of 16 stripes, a scramble after each
// block, the last stripe read at length - 64, then the merge of 8 accumulators).
// Only seed 0 with the default secret is provided: that is what the record
// format stores.
//
// Byte order: little-endian hosts and devices only (x86-64, NVIDIA GPUs).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define STRATA_HD __host__ __device__
#else
#define STRATA_HD
#endif

namespace strata::xxh3 {

// One piece of the hashed sequence: `data_bytes` bytes read from `data`, then
// `stored_bytes - data_bytes` zero bytes that are hashed but never read
// (stored_bytes >= data_bytes). `data` may be null when data_bytes is 0.
// The layout is shared with the kernel's device descriptors (24 bytes).
struct Piece {
  const unsigned char* data;
  uint64_t data_bytes;
  uint64_t stored_bytes;
};

inline constexpr uint32_t kStripeBytes = 64;
inline constexpr uint32_t kAccumulators = 8;
inline constexpr uint32_t kSecretBytes = 192;
inline constexpr uint32_t kSecretWords = kSecretBytes / 8;
inline constexpr uint32_t kStripesPerBlock = (kSecretBytes - kStripeBytes) / 8;  // 16
inline constexpr uint32_t kBlockBytes = kStripeBytes * kStripesPerBlock;         // 1024
inline constexpr uint32_t kMidsizeMax = 240;
inline constexpr uint32_t kScrambleSecretOffset = kSecretBytes - kStripeBytes;  // 128
inline constexpr uint32_t kLastStripeSecretOffset = kScrambleSecretOffset - 7;  // 121
inline constexpr uint32_t kMergeSecretOffset = 11;
inline constexpr uint32_t kMidsizeStartOffset = 3;
inline constexpr uint32_t kMidsizeLastOffset = 136 - 17;  // XXH3_SECRET_SIZE_MIN - 17

inline constexpr uint64_t kPrime32_1 = 0x9E3779B1ULL;
inline constexpr uint64_t kPrime32_2 = 0x85EBCA77ULL;
inline constexpr uint64_t kPrime32_3 = 0xC2B2AE3DULL;
inline constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87ULL;
inline constexpr uint64_t kPrime64_2 = 0xC2B2AE3D27D4EB4FULL;
inline constexpr uint64_t kPrime64_3 = 0x165667B19E3779F9ULL;
inline constexpr uint64_t kPrime64_4 = 0x85EBCA77C2B2AE63ULL;
inline constexpr uint64_t kPrime64_5 = 0x27D4EB2F165667C5ULL;
inline constexpr uint64_t kPrimeMx1 = 0x165667919E3779F9ULL;
inline constexpr uint64_t kPrimeMx2 = 0x9FB21C651E98DF25ULL;

// XXH3's default secret (XXH3_kSecret, 192 bytes) as little-endian words. The
// kernel copies it into __constant__ memory; host code uses it directly.
#define STRATA_XXH3_SECRET_WORDS                                                                  \
  0xbe4ba423396cfeb8ULL, 0x1cad21f72c81017cULL, 0xdb979083e96dd4deULL, 0x1f67b3b7a4a44072ULL,     \
      0x78e5c0cc4ee679cbULL, 0x2172ffcc7dd05a82ULL, 0x8e2443f7744608b8ULL, 0x4c263a81e69035e0ULL, \
      0xcb00c391bb52283cULL, 0xa32e531b8b65d088ULL, 0x4ef90da297486471ULL, 0xd8acdea946ef1938ULL, \
      0x3f349ce33f76faa8ULL, 0x1d4f0bc7c7bbdcf9ULL, 0x3159b4cd4be0518aULL, 0x647378d9c97e9fc8ULL, \
      0xc3ebd33483acc5eaULL, 0xeb6313faffa081c5ULL, 0x49daf0b751dd0d17ULL, 0x9e68d429265516d3ULL, \
      0xfca1477d58be162bULL, 0xce31d07ad1b8f88fULL, 0x280416958f3acb45ULL, 0x7e404bbbcafbd7afULL

// The secret's little-endian u64 at byte `offset` (offset + 8 <= 192).
STRATA_HD inline uint64_t SecretU64(const uint64_t* secret, uint32_t offset) {
  const uint32_t word = offset / 8;
  const uint32_t shift = (offset % 8) * 8;
  if (shift == 0) return secret[word];
  return (secret[word] >> shift) | (secret[word + 1] << (64 - shift));
}

STRATA_HD inline uint64_t Rotl64(uint64_t v, uint32_t r) { return (v << r) | (v >> (64 - r)); }

STRATA_HD inline uint64_t Swap64(uint64_t v) {
  uint64_t out = 0;
  for (int b = 0; b < 8; ++b) out |= ((v >> (8 * b)) & 0xffULL) << (8 * (7 - b));
  return out;
}

// Low 64 bits XOR high 64 bits of the 128-bit product.
STRATA_HD inline uint64_t Mul128Fold64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__)
  return (a * b) ^ __umul64hi(a, b);
#else
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
#endif
}

STRATA_HD inline uint64_t Xxh64Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kPrime64_2;
  h ^= h >> 29;
  h *= kPrime64_3;
  return h ^ (h >> 32);
}

STRATA_HD inline uint64_t Avalanche(uint64_t h) {
  h ^= h >> 37;
  h *= kPrimeMx1;
  return h ^ (h >> 32);
}

STRATA_HD inline uint64_t Rrmxmx(uint64_t h, uint64_t len) {
  h ^= Rotl64(h, 49) ^ Rotl64(h, 24);
  h *= kPrimeMx2;
  h ^= (h >> 35) + len;
  h *= kPrimeMx2;
  return h ^ (h >> 28);
}

// Reads the logical sequence of a piece list at any offset below its length.
// Reads are cheapest when they move forward; the cursor also steps back (the
// last stripe overlaps the ones before it). Not thread-shared: one per lane.
class PieceCursor {
 public:
  STRATA_HD PieceCursor(const Piece* pieces, uint64_t count) : pieces_(pieces), count_(count) {
    if (count_ > 0) piece_ = pieces_[0];
  }

  // Sum of stored_bytes: the length that is hashed.
  STRATA_HD uint64_t Length() const {
    uint64_t total = 0;
    for (uint64_t i = 0; i < count_; ++i) total += pieces_[i].stored_bytes;
    return total;
  }

  STRATA_HD unsigned char Byte(uint64_t offset) {
    Seek(offset);
    const uint64_t rel = offset - start_;
    return rel < piece_.data_bytes ? piece_.data[rel] : static_cast<unsigned char>(0);
  }

  // The little-endian u64 at `offset` (offset + 8 <= Length()).
  STRATA_HD uint64_t U64(uint64_t offset) {
    Seek(offset);
    const uint64_t rel = offset - start_;
    if (rel + 8 <= piece_.data_bytes) return LoadU64(piece_.data + rel);
    if (rel >= piece_.data_bytes && rel + 8 <= piece_.stored_bytes) return 0;
    uint64_t v = 0;
    for (uint32_t b = 0; b < 8; ++b) v |= static_cast<uint64_t>(Byte(offset + b)) << (8 * b);
    return v;
  }

  STRATA_HD uint32_t U32(uint64_t offset) {
    uint32_t v = 0;
    for (uint32_t b = 0; b < 4; ++b) v |= static_cast<uint32_t>(Byte(offset + b)) << (8 * b);
    return v;
  }

 private:
  // Makes piece_ the piece holding `offset`; skips empty pieces.
  STRATA_HD void Seek(uint64_t offset) {
    while (offset < start_) {
      --index_;
      piece_ = pieces_[index_];
      start_ -= piece_.stored_bytes;
    }
    while (offset >= start_ + piece_.stored_bytes && index_ + 1 < count_) {
      start_ += piece_.stored_bytes;
      ++index_;
      piece_ = pieces_[index_];
    }
  }

  STRATA_HD static uint64_t LoadU64(const unsigned char* p) {
#if defined(__CUDA_ARCH__)
    if ((reinterpret_cast<uintptr_t>(p) & 7u) == 0) return *reinterpret_cast<const uint64_t*>(p);
    uint64_t v = 0;
    for (uint32_t b = 0; b < 8; ++b) v |= static_cast<uint64_t>(p[b]) << (8 * b);
    return v;
#else
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
#endif
  }

  const Piece* pieces_;
  uint64_t count_;
  uint64_t index_ = 0;
  uint64_t start_ = 0;  // logical offset of pieces_[index_]
  Piece piece_{nullptr, 0, 0};
};

STRATA_HD inline uint64_t Mix16(PieceCursor& in, uint64_t offset, const uint64_t* secret,
                                uint32_t secret_offset) {
  return Mul128Fold64(in.U64(offset) ^ SecretU64(secret, secret_offset),
                      in.U64(offset + 8) ^ SecretU64(secret, secret_offset + 8));
}

// XXH3-64 of a sequence of `len` <= 240 bytes (every short length class).
STRATA_HD inline uint64_t HashShort(PieceCursor& in, uint64_t len, const uint64_t* secret) {
  if (len == 0) return Xxh64Avalanche(SecretU64(secret, 56) ^ SecretU64(secret, 64));
  if (len <= 3) {
    const uint32_t combined = (static_cast<uint32_t>(in.Byte(0)) << 16) |
                              (static_cast<uint32_t>(in.Byte(len >> 1)) << 24) |
                              static_cast<uint32_t>(in.Byte(len - 1)) |
                              (static_cast<uint32_t>(len) << 8);
    const uint64_t bitflip =
        static_cast<uint32_t>(secret[0]) ^ static_cast<uint32_t>(secret[0] >> 32);
    return Xxh64Avalanche(combined ^ bitflip);
  }
  if (len <= 8) {
    const uint64_t input64 = in.U32(len - 4) + (static_cast<uint64_t>(in.U32(0)) << 32);
    return Rrmxmx(input64 ^ (SecretU64(secret, 8) ^ SecretU64(secret, 16)), len);
  }
  if (len <= 16) {
    const uint64_t lo = in.U64(0) ^ (SecretU64(secret, 24) ^ SecretU64(secret, 32));
    const uint64_t hi = in.U64(len - 8) ^ (SecretU64(secret, 40) ^ SecretU64(secret, 48));
    return Avalanche(len + Swap64(lo) + hi + Mul128Fold64(lo, hi));
  }
  uint64_t acc = len * kPrime64_1;
  if (len <= 128) {
    // Pairs from both ends, outermost last: (0, len-16), (16, len-32), ...
    const uint32_t pairs = static_cast<uint32_t>((len - 1) / 32);  // 0..3 extra pairs
    for (uint32_t p = pairs + 1; p-- > 0;) {
      acc += Mix16(in, 16 * p, secret, 32 * p);
      acc += Mix16(in, len - 16 * (p + 1), secret, 32 * p + 16);
    }
    return Avalanche(acc);
  }
  const uint32_t rounds = static_cast<uint32_t>(len / 16);
  for (uint32_t i = 0; i < 8; ++i) acc += Mix16(in, 16 * i, secret, 16 * i);
  acc = Avalanche(acc);
  for (uint32_t i = 8; i < rounds; ++i) {
    acc += Mix16(in, 16 * i, secret, 16 * (i - 8) + kMidsizeStartOffset);
  }
  acc += Mix16(in, len - 16, secret, kMidsizeLastOffset);
  return Avalanche(acc);
}

// One accumulator's share of one stripe: `own` is the stripe's word `lane`,
// `neighbour` its word `lane ^ 1`, `key` the secret word at the stripe's
// secret offset + 8 * lane. Sums of these are order-free (mod 2^64), which is
// what lets the kernel spread a block's stripes over lanes.
STRATA_HD inline uint64_t StripeTerm(uint64_t own, uint64_t neighbour, uint64_t key) {
  const uint64_t keyed = own ^ key;
  return neighbour + (keyed & 0xffffffffULL) * (keyed >> 32);
}

STRATA_HD inline uint64_t ScrambleAcc(uint64_t acc, uint64_t key) {
  acc ^= acc >> 47;
  acc ^= key;
  return acc * kPrime32_1;
}

// Accumulator `i`'s initial value (a switch, so a lane's pick needs no local memory).
STRATA_HD inline uint64_t InitAcc(uint32_t i) {
  switch (i) {
    case 0: return kPrime32_3;
    case 1: return kPrime64_1;
    case 2: return kPrime64_2;
    case 3: return kPrime64_3;
    case 4: return kPrime64_4;
    case 5: return kPrime32_2;
    case 6: return kPrime64_5;
    default: return kPrime32_1;
  }
}

STRATA_HD inline uint64_t MergeAccs(const uint64_t acc[kAccumulators], uint64_t len,
                                    const uint64_t* secret) {
  uint64_t result = len * kPrime64_1;
  for (uint32_t i = 0; i < 4; ++i) {
    const uint32_t s = kMergeSecretOffset + 16 * i;
    result +=
        Mul128Fold64(acc[2 * i] ^ SecretU64(secret, s), acc[2 * i + 1] ^ SecretU64(secret, s + 8));
  }
  return Avalanche(result);
}

// Adds the stripe at `offset` (secret at byte `secret_offset`) to all accumulators.
STRATA_HD inline void AccumulateStripe(uint64_t acc[kAccumulators], PieceCursor& in,
                                       uint64_t offset, const uint64_t* secret,
                                       uint32_t secret_offset) {
  uint64_t words[kAccumulators];
  for (uint32_t i = 0; i < kAccumulators; ++i) words[i] = in.U64(offset + 8 * i);
  for (uint32_t i = 0; i < kAccumulators; ++i) {
    acc[i] += StripeTerm(words[i], words[i ^ 1], SecretU64(secret, secret_offset + 8 * i));
  }
}

// Stripes of the long path, shared by the sequential and the warp form:
// full blocks, then the stripes of the last partial block, then one stripe
// ending at the last byte. Valid for len > 240.
STRATA_HD inline uint64_t FullBlocks(uint64_t len) { return (len - 1) / kBlockBytes; }
STRATA_HD inline uint32_t TailStripes(uint64_t len) {
  return static_cast<uint32_t>(((len - 1) - kBlockBytes * FullBlocks(len)) / kStripeBytes);
}

// XXH3-64 of a sequence longer than 240 bytes, one stripe after the other.
STRATA_HD inline uint64_t HashLong(PieceCursor& in, uint64_t len, const uint64_t* secret) {
  uint64_t acc[kAccumulators];
  for (uint32_t i = 0; i < kAccumulators; ++i) acc[i] = InitAcc(i);
  const uint64_t blocks = FullBlocks(len);
  for (uint64_t b = 0; b < blocks; ++b) {
    for (uint32_t s = 0; s < kStripesPerBlock; ++s) {
      AccumulateStripe(acc, in, b * kBlockBytes + s * kStripeBytes, secret, 8 * s);
    }
    for (uint32_t i = 0; i < kAccumulators; ++i) {
      acc[i] = ScrambleAcc(acc[i], secret[kScrambleSecretOffset / 8 + i]);
    }
  }
  const uint32_t tail = TailStripes(len);
  for (uint32_t s = 0; s < tail; ++s) {
    AccumulateStripe(acc, in, blocks * kBlockBytes + s * kStripeBytes, secret, 8 * s);
  }
  AccumulateStripe(acc, in, len - kStripeBytes, secret, kLastStripeSecretOffset);
  return MergeAccs(acc, len, secret);
}

// XXH3_64bits of the concatenation of `pieces` (each with its zero padding).
STRATA_HD inline uint64_t HashPieces(const Piece* pieces, uint64_t count, const uint64_t* secret) {
  PieceCursor in(pieces, count);
  const uint64_t len = in.Length();
  return len <= kMidsizeMax ? HashShort(in, len, secret) : HashLong(in, len, secret);
}

#if !defined(__CUDA_ARCH__)
// Host form with the default secret.
inline uint64_t HashPieces(const Piece* pieces, uint64_t count) {
  static constexpr uint64_t kSecret[kSecretWords] = {STRATA_XXH3_SECRET_WORDS};
  return HashPieces(pieces, count, kSecret);
}
#endif

}  // namespace strata::xxh3
