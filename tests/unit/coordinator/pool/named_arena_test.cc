// Named arenas (named_arena.h): the stamp's one line round-trips and anything
// else is refused; a reopen with the same sizes keeps the memory and the
// generation; other sizes or a damaged stamp start a new, zeroed generation;
// a file open to others is refused.
#include "coordinator/pool/named_arena.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/unit/store/record/record_test_support.h"

namespace strata::pool {
namespace {

constexpr uint64_t kSlotBytes = 64 * 1024;

TEST(ArenaStampTest, OneLineRoundTripsAndAnythingElseIsRefused) {
  const ArenaStamp s{.generation = 0x0123456789abcdef, .slot_bytes = 2 << 20, .slot_count = 512};
  const std::string line = FormatArenaStamp(s);
  EXPECT_EQ(line, "strata-pool-arena 1 0123456789abcdef 2097152 512\n");
  EXPECT_EQ(ParseArenaStamp(line), s);
  for (const char* bad : {
           "",
           "strata-pool-arena 1 0123456789abcdef 2097152 512",      // torn: no newline
           "strata-pool-arena 2 0123456789abcdef 2097152 512\n",    // another version
           "strata-pool-arena 1 123456789abcdef 2097152 512\n",     // 15 hex digits
           "strata-pool-arena 1 0123456789abcdeg 2097152 512\n",    // not hex
           "strata-pool-arena 1 0123456789abcdef 2097152 512 7\n",  // trailing field
           "strata-pool-arena 1 0123456789abcdef -1 512\n",
           "strata-pool-arena 1 0123456789abcdef 2097152 4294967296\n",  // slot count overflows
       }) {
    EXPECT_FALSE(ParseArenaStamp(bad).has_value()) << bad;
  }
}

TEST(NamedArenaTest, AReopenWithTheSameSizesKeepsTheMemoryAndTheGeneration) {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/arena";
  auto first = OpenNamedArena(path, kSlotBytes, 4, 111);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->reopened);
  EXPECT_EQ(first->generation, 111u);
  first->arena->Slot(SlotId(3))[7] = std::byte{0x5a};
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // The manager is gone; an instance's mapping of the same memory remains.
  std::unique_ptr<Arena> instance_view = std::move(first->arena);
  auto again = OpenNamedArena(path, kSlotBytes, 4, 222);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->reopened);
  EXPECT_EQ(again->generation, 111u) << "the stamp's generation, not the fresh one";
  EXPECT_EQ(again->arena->Slot(SlotId(3))[7], std::byte{0x5a});
  again->arena->Slot(SlotId(0))[0] = std::byte{0x11};
  EXPECT_EQ(instance_view->Slot(SlotId(0))[0], std::byte{0x11}) << "one memory, two mappings";
}

TEST(NamedArenaTest, OtherSizesOrADamagedStampStartANewZeroedGeneration) {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/arena";
  {
    auto a = OpenNamedArena(path, kSlotBytes, 4, 1);
    ASSERT_TRUE(a.ok());
    a->arena->Slot(SlotId(1))[0] = std::byte{0x77};
  }
  auto bigger = OpenNamedArena(path, kSlotBytes, 8, 2);
  ASSERT_TRUE(bigger.ok());
  EXPECT_FALSE(bigger->reopened);
  EXPECT_EQ(bigger->generation, 2u);
  EXPECT_EQ(bigger->arena->Slot(SlotId(1))[0], std::byte{0}) << "a new arena starts zeroed";
  bigger->arena.reset();

  std::ofstream(path + ".generation", std::ios::trunc) << "strata-pool-arena 1 00000000000";
  auto torn = OpenNamedArena(path, kSlotBytes, 8, 3);
  ASSERT_TRUE(torn.ok());
  EXPECT_FALSE(torn->reopened);
  EXPECT_EQ(torn->generation, 3u);
}

TEST(NamedArenaTest, AFileOthersCanReadIsRefused) {
  testing::ScratchDir dir;
  const std::string path = dir.path() + "/arena";
  std::ofstream(path) << "x";
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto opened = OpenNamedArena(path, kSlotBytes, 4, 1);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(opened.status().message().find("no group or other access"), std::string::npos);
}

}  // namespace
}  // namespace strata::pool
