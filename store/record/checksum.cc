#include "store/record/checksum.h"

#include <xxhash.h>
// After xxhash.h: replaces XXH3_64bits* with the run-time dispatching versions.
#include <xxh_x86dispatch.h>

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

uint64_t Xxh3(std::span<const std::byte> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

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

uint64_t Xxh3Stream::Digest() const { return XXH3_64bits_digest(state_->state); }

}  // namespace strata
