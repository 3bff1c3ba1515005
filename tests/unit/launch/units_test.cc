#include "launch/config/units.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

using std::chrono::milliseconds;

TEST(UnitsTest, SizesInEveryUnit) {
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize("0"), 0u);
  EXPECT_EQ(*ParseSize("64GiB"), 64ULL << 30);
  EXPECT_EQ(*ParseSize("512MiB"), 512ULL << 20);
  EXPECT_EQ(*ParseSize("10GB"), 10'000'000'000ULL);
  EXPECT_EQ(*ParseSize("3KiB"), 3072u);
  EXPECT_EQ(*ParseSize("2TiB"), 2ULL << 40);
  EXPECT_EQ(*ParseSize("7KB"), 7000u);
  EXPECT_EQ(*ParseSize("9MB"), 9'000'000u);
  EXPECT_EQ(*ParseSize("1TB"), 1'000'000'000'000ULL);
  EXPECT_EQ(*ParseSize("12B"), 12u);
}

TEST(UnitsTest, SizeUnitsAreCaseInsensitiveAndMayFollowOneSpace) {
  EXPECT_EQ(*ParseSize("64gib"), 64ULL << 30);
  EXPECT_EQ(*ParseSize("64 GiB"), 64ULL << 30);
  EXPECT_EQ(*ParseSize(" 1MiB "), 1ULL << 20);
}

TEST(UnitsTest, BadSizesNameTheTextAndTheForms) {
  for (const char* bad :
       {"64 gigs", "", "GiB", "-1", "1.5GiB", "64GiBs", "64  GiB", "0x10", "1e9"}) {
    Result<uint64_t> r = ParseSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(std::string("\"") + bad + "\" is not a size"),
              std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find("64GiB, 512MiB"), std::string::npos);
  }
}

TEST(UnitsTest, SizeOverflowIsAnError) {
  EXPECT_EQ(*ParseSize("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(ParseSize("18446744073709551616").ok());
  EXPECT_FALSE(ParseSize("17179869184GiB").ok());  // 2^34 GiB = 2^64 bytes
}

TEST(UnitsTest, DurationsInEveryUnit) {
  EXPECT_EQ(*ParseDuration("90s"), milliseconds(90'000));
  EXPECT_EQ(*ParseDuration("500ms"), milliseconds(500));
  EXPECT_EQ(*ParseDuration("2m"), milliseconds(120'000));
  EXPECT_EQ(*ParseDuration("1h"), milliseconds(3'600'000));
  EXPECT_EQ(*ParseDuration("30"), milliseconds(30'000));
  EXPECT_EQ(*ParseDuration("2 H"), milliseconds(7'200'000));
}

TEST(UnitsTest, BadDurations) {
  for (const char* bad : {"90 secs", "1d", "", "m", "1.5s", "-5s"}) {
    Result<milliseconds> r = ParseDuration(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("is not a duration"), std::string::npos)
        << r.status().message();
  }
  for (const char* zero : {"0", "0s", "0ms"}) {
    Result<milliseconds> r = ParseDuration(zero);
    ASSERT_FALSE(r.ok()) << zero;
    EXPECT_NE(r.status().message().find("not a positive duration"), std::string::npos);
  }
  EXPECT_FALSE(ParseDuration("9223372036854775807h").ok());
}

TEST(UnitsTest, FormattingReadsBack) {
  for (uint64_t bytes : {0ULL, 1ULL, 4096ULL, 4097ULL, 64ULL << 30, 10'000'000'000ULL, 1536ULL}) {
    EXPECT_EQ(*ParseSize(FormatSize(bytes)), bytes) << FormatSize(bytes);
  }
  EXPECT_EQ(FormatSize(64ULL << 30), "64GiB");
  EXPECT_EQ(FormatSize(10'000'000'000ULL), "10GB");
  EXPECT_EQ(FormatSize(4097), "4097");
  for (int64_t ms : {1, 500, 1500, 90'000, 120'000, 3'600'000}) {
    EXPECT_EQ(*ParseDuration(FormatDuration(milliseconds(ms))), milliseconds(ms));
  }
  EXPECT_EQ(FormatDuration(milliseconds(90'000)), "90s");
  EXPECT_EQ(FormatDuration(milliseconds(7'200'000)), "2h");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1500ms");
}

}  // namespace
}  // namespace strata
