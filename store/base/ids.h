// Strong ids: no bare integers for page ids, state slots, ranks or jobs in APIs.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace strata {

template <typename Tag, typename Rep>
struct StrongId {
  using rep_type = Rep;
  Rep value{};

  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep v) : value(v) {}
  friend constexpr auto operator<=>(StrongId, StrongId) = default;
};

// A physical page id: one logical page occupies unit_bytes at base + id*unit
// in every page plane of a rank.
using PageId = StrongId<struct PageIdTag, uint32_t>;
// A row index in a rank's state-row allocation.
using StateSlot = StrongId<struct StateSlotTag, uint32_t>;
// A tensor-parallel rank, 0 .. world_size-1.
using RankId = StrongId<struct RankIdTag, uint32_t>;
// A transfer or wire job, unique within one store's lifetime.
using JobId = StrongId<struct JobIdTag, uint64_t>;

// "rank N", as logs and errors name a rank.
inline std::string RankName(RankId rank) { return "rank " + std::to_string(rank.value); }

}  // namespace strata

template <typename Tag, typename Rep>
struct std::hash<strata::StrongId<Tag, Rep>> {
  size_t operator()(strata::StrongId<Tag, Rep> id) const noexcept {
    return std::hash<Rep>{}(id.value);
  }
};
