// The export checks and the headroom rule, as tables.
#include "launch/runtime/export_rules.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata {
namespace {

// root(4) -> a(2) -> b(3)
//         -> c(5)
// d(1) alone. Indices: root 0, a 1, b 2, c 3, d 4.
std::vector<CachedCheckpoint> Tree() {
  return {{.parent = std::nullopt, .pages = 4, .pinned = false},
          {.parent = 0, .pages = 2, .pinned = false},
          {.parent = 1, .pages = 3, .pinned = false},
          {.parent = 0, .pages = 5, .pinned = false},
          {.parent = std::nullopt, .pages = 1, .pinned = false}};
}

TEST(ExportHeadroomTest, PinningALeafKeepsItAndItsAncestors) {
  const PagesAndRows r = ReclaimableIfPinned(Tree(), 2);  // b: root, a, b stay
  EXPECT_EQ(r.pages, 5u + 1u);                            // c and d
  EXPECT_EQ(r.rows, 2u);
}

TEST(ExportHeadroomTest, PinningTheRootKeepsOnlyTheRoot) {
  const PagesAndRows r = ReclaimableIfPinned(Tree(), 0);
  EXPECT_EQ(r.pages, 2u + 3u + 5u + 1u);
  EXPECT_EQ(r.rows, 4u);
}

TEST(ExportHeadroomTest, ExistingPinsKeepTheirAncestorsToo) {
  std::vector<CachedCheckpoint> cache = Tree();
  cache[3].pinned = true;                                // c pins root
  const PagesAndRows r = ReclaimableIfPinned(cache, 4);  // d
  EXPECT_EQ(r.pages, 2u + 3u);                           // a and b only
  EXPECT_EQ(r.rows, 2u);
}

TEST(ExportHeadroomTest, FitsOnlyWhenPagesAndRowsAreBothCovered) {
  struct Row {
    PagesAndRows free, reclaimable, next;
    bool fits;
  };
  const Row rows[] = {
      {{10, 1}, {0, 0}, {10, 1}, true},   // exactly covered by free
      {{4, 0}, {6, 1}, {10, 1}, true},    // reclaim makes up the rest
      {{4, 1}, {5, 3}, {10, 1}, false},   // one page short
      {{20, 0}, {0, 0}, {10, 1}, false},  // no row
      {{0, 0}, {0, 0}, {0, 0}, true},     // nothing to run
  };
  for (const Row& r : rows) {
    EXPECT_EQ(ExportFits({.free = r.free, .reclaimable = r.reclaimable, .next_step = r.next}),
              r.fits)
        << r.free.pages << "+" << r.reclaimable.pages << " vs " << r.next.pages;
  }
}

TEST(ExportCheckTest, ChecksRunInTheSeedsOrder) {
  const HeadroomInputs room{.free = {10, 1}, .reclaimable = {}, .next_step = {10, 1}};
  const HeadroomInputs tight{.free = {9, 1}, .reclaimable = {}, .next_step = {10, 1}};
  struct Row {
    std::optional<uint64_t> held;
    uint64_t requested, chain, start;
    HeadroomInputs headroom;
    std::optional<ExportRefusal> want;
  };
  const Row rows[] = {
      {std::nullopt, 1, 0, 0, room, ExportRefusal::kNotFound},
      {2, 1, 8, 0, room, ExportRefusal::kGenerationChanged},
      {2, 2, 8, 9, room, ExportRefusal::kChainGap},
      {2, 2, 8, 9, tight, ExportRefusal::kChainGap},  // the gap is checked first
      {2, 2, 8, 3, tight, ExportRefusal::kNoHeadroom},
      {2, 2, 8, 3, room, std::nullopt},
      {2, 2, 8, 8, room, std::nullopt},  // the row alone
      {2, 2, 8, 0, room, std::nullopt},
  };
  for (const Row& r : rows) {
    const ExportCheck c{.held_generation = r.held,
                        .requested_generation = r.requested,
                        .chain_pages = r.chain,
                        .start_page = r.start,
                        .headroom = r.headroom};
    EXPECT_EQ(CheckExport(c), r.want) << "start " << r.start;
  }
}

}  // namespace
}  // namespace strata
