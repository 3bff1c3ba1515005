#include "store/record/checksum.h"

#include <xxhash.h>
// After xxhash.h: replaces XXH3_64bits* with the run-time dispatching versions.
#include <xxh_x86dispatch.h>

#include <algorithm>

#include "store/base/assert.h"

namespace strata {

struct Xxh3Stream::State {
  State() : state(XXH3_createState()) {
    STRATA_ASSERT(state != nullptr, "XXH3_createState failed");
  }
  ~State() { XXH3_freeState(state); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  XXH3_state_t* state;
};

namespace {

constexpr size_t kColdStep = 4096;
constexpr size_t kCacheLine = 64;

// Feeds bytes to state in kColdStep pieces, each next piece's lines
// prefetched first, so their loads overlap the hashing of this one.
void FeedCold(XXH3_state_t* state, const std::byte* data, size_t size) {
  for (size_t off = 0; off < size; off += kColdStep) {
    const size_t next = off + kColdStep;
    const size_t next_end = std::min(size, next + kColdStep);
    for (size_t line = next; line < next_end; line += kCacheLine) {
      __builtin_prefetch(data + line, 0, 3);
    }
    XXH_errorcode rc = XXH3_64bits_update(state, data + off, std::min(kColdStep, size - off));
    STRATA_ASSERT(rc == XXH_OK, "XXH3_64bits_update failed");
  }
}

}  // namespace

uint64_t Xxh3(std::span<const std::byte> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

uint64_t Xxh3Cold(std::span<const std::byte> bytes) {
  if (bytes.size() <= 4 * kColdStep) return Xxh3(bytes);
  // One state per thread: the disk thread hashes every page through it.
  thread_local Xxh3Stream stream;
  stream.Reset();
  stream.UpdateCold(bytes);
  return stream.Digest();
}

Xxh3Stream::Xxh3Stream() : state_(std::make_unique<State>()) { Reset(); }
Xxh3Stream::~Xxh3Stream() = default;
Xxh3Stream::Xxh3Stream(Xxh3Stream&&) noexcept = default;
Xxh3Stream& Xxh3Stream::operator=(Xxh3Stream&&) noexcept = default;

void Xxh3Stream::Reset() {
  XXH_errorcode rc = XXH3_64bits_reset(state_->state);
  STRATA_ASSERT(rc == XXH_OK, "XXH3_64bits_reset failed");
}

void Xxh3Stream::Update(std::span<const std::byte> bytes) {
  XXH_errorcode rc = XXH3_64bits_update(state_->state, bytes.data(), bytes.size());
  STRATA_ASSERT(rc == XXH_OK, "XXH3_64bits_update failed");
}

void Xxh3Stream::UpdateCold(std::span<const std::byte> bytes) {
  FeedCold(state_->state, bytes.data(), bytes.size());
}

uint64_t Xxh3Stream::Digest() const { return XXH3_64bits_digest(state_->state); }

}  // namespace strata
