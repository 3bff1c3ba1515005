// XXH3-64 checksums of many stored page records (or row segments) at once, on
// the GPU, bit-identical to libxxhash's XXH3_64bits (cuda/xxh3_core.h says
// why this is a hand implementation). Compiled to PTX by nvcc at build time
// (cuda/CMakeLists.txt) and loaded with cuModuleLoadData, like the gather
// kernel; the driver compiles the PTX for the device it runs on.
//
// One warp per record (warp w hashes records w, w + warps, ...). XXH3 keeps 8
// accumulators and scrambles them after every block of 16 stripes; inside a
// block the stripes' contributions are plain sums mod 2^64, so they may be
// added in any order. Lane l = 8 * g + i owns accumulator i for the stripes
// g, g + 4, g + 8, g + 12 of each block: a warp load reads 4 consecutive
// stripes (256 contiguous bytes), each lane has 4 independent loads in
// flight per block, and two shuffles (xor 8, xor 16) sum the four groups
// before the scramble. Every group then holds the same accumulators, so the
// last-stripe step and the merge need no further exchange; lane 0 merges.
// Records of at most 240 bytes (never a stored page record, which is whole
// 4 KiB units, but possible for test inputs) are hashed by lane 0 alone.
//
// Pieces: each record is an ordered run of pieces in device memory, each
// read for data_bytes and then hashed as zeros up to stored_bytes, so planes
// held unpadded on the GPU hash like the zero-padded stored page record.
// Loads are 8 bytes; a piece whose address or offset is not 8-byte aligned
// falls back to byte loads (planes from cuMemAlloc with 4 KiB-multiple or
// 8-byte-multiple sizes never do).
#include "cuda/xxh3_core.h"

namespace {

using strata::xxh3::Piece;
using strata::xxh3::PieceCursor;

struct StrataChecksumRecord {  // must match ChecksumRecord in record_checksum_kernel.h
  unsigned long long first_piece;
  unsigned long long piece_count;
};

__constant__ uint64_t kSecret[strata::xxh3::kSecretWords] = {STRATA_XXH3_SECRET_WORDS};

constexpr unsigned kFullMask = 0xffffffffu;
constexpr unsigned kGroups = 4;  // stripes of a block read side by side by one warp

// Sum over the warp's four stripe groups of each lane's accumulator term.
__device__ uint64_t SumGroups(uint64_t term) {
  term += __shfl_xor_sync(kFullMask, term, 8);
  return term + __shfl_xor_sync(kFullMask, term, 16);
}

// Runs on all 32 lanes of a warp; every lane returns the same checksum
// (lane 0's result is the one written).
__device__ uint64_t HashRecordWarp(const Piece* pieces, uint64_t piece_count, unsigned lane,
                                   const uint64_t (&stripe_keys)[kGroups], uint64_t scramble_key,
                                   uint64_t last_key) {
  namespace x = strata::xxh3;
  PieceCursor in(pieces, piece_count);
  const uint64_t len = in.Length();
  if (len <= x::kMidsizeMax) {
    return lane == 0 ? x::HashShort(in, len, kSecret) : 0;
  }
  const unsigned group = lane >> 3;
  const unsigned acc_index = lane & 7;
  const uint64_t lane_offset = uint64_t{group} * x::kStripeBytes + 8 * acc_index;
  uint64_t acc = x::InitAcc(acc_index);

  const uint64_t blocks = x::FullBlocks(len);
  for (uint64_t b = 0; b < blocks; ++b) {
    const uint64_t base = b * x::kBlockBytes + lane_offset;
    uint64_t words[kGroups];
#pragma unroll
    for (unsigned k = 0; k < kGroups; ++k) words[k] = in.U64(base + k * kGroups * x::kStripeBytes);
    uint64_t term = 0;
#pragma unroll
    for (unsigned k = 0; k < kGroups; ++k) {
      const uint64_t neighbour = __shfl_xor_sync(kFullMask, words[k], 1);
      term += x::StripeTerm(words[k], neighbour, stripe_keys[k]);
    }
    acc = x::ScrambleAcc(acc + SumGroups(term), scramble_key);
  }

  const unsigned tail = x::TailStripes(len);
  const uint64_t base = blocks * x::kBlockBytes + lane_offset;
  uint64_t term = 0;
#pragma unroll
  for (unsigned k = 0; k < kGroups; ++k) {
    const bool active = group + k * kGroups < tail;
    const uint64_t word = active ? in.U64(base + k * kGroups * x::kStripeBytes) : 0;
    const uint64_t neighbour = __shfl_xor_sync(kFullMask, word, 1);
    if (active) term += x::StripeTerm(word, neighbour, stripe_keys[k]);
  }
  acc += SumGroups(term);

  const uint64_t word = in.U64(len - x::kStripeBytes + 8 * acc_index);
  acc += x::StripeTerm(word, __shfl_xor_sync(kFullMask, word, 1), last_key);

  uint64_t accs[x::kAccumulators];
#pragma unroll
  for (unsigned i = 0; i < x::kAccumulators; ++i) accs[i] = __shfl_sync(kFullMask, acc, i);
  return lane == 0 ? x::MergeAccs(accs, len, kSecret) : 0;
}

}  // namespace

// out[r] = XXH3-64 of record r's pieces, for r < count. Launch with a block
// size that is a multiple of 32 (256: record_checksum_kernel.cc).
extern "C" __global__ void __launch_bounds__(256)
    strata_record_checksums(const Piece* pieces, const StrataChecksumRecord* records,
                            unsigned int count, unsigned long long* out) {
  namespace x = strata::xxh3;
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warps = (gridDim.x * blockDim.x) >> 5;
  const unsigned group = lane >> 3;
  const unsigned acc_index = lane & 7;
  // The secret words this lane uses, loaded once: stripe s of a block keys
  // accumulator i with secret word s + i.
  uint64_t stripe_keys[kGroups];
#pragma unroll
  for (unsigned k = 0; k < kGroups; ++k) stripe_keys[k] = kSecret[group + k * kGroups + acc_index];
  const uint64_t scramble_key = kSecret[x::kScrambleSecretOffset / 8 + acc_index];
  const uint64_t last_key = x::SecretU64(kSecret, x::kLastStripeSecretOffset + 8 * acc_index);

  for (unsigned r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; r < count; r += warps) {
    const StrataChecksumRecord rec = records[r];
    const uint64_t sum = HashRecordWarp(pieces + rec.first_piece, rec.piece_count, lane,
                                        stripe_keys, scramble_key, last_key);
    if (lane == 0) out[r] = sum;
  }
}
