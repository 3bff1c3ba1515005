#include "store/base/prefix_key.h"

#include <gtest/gtest.h>

#include <unordered_set>

namespace strata {
namespace {

PrefixKey SampleKey(uint64_t consumed, uint8_t seed) {
  PrefixKey k;
  k.consumed = consumed;
  for (size_t i = 0; i < k.digest.size(); ++i)
    k.digest[i] = static_cast<uint8_t>(seed * 31 + i * 7);
  return k;
}

TEST(PrefixKeyTest, FileStemFormat) {
  PrefixKey k = SampleKey(0x1234, 1);
  std::string stem = k.ToFileStem();
  ASSERT_EQ(stem.size(), 16u + 1 + 32);
  EXPECT_EQ(stem.substr(0, 17), "0000000000001234-");
  EXPECT_EQ(stem.substr(17), ToHex(k.digest));
}

TEST(PrefixKeyTest, HexRoundTrip) {
  for (uint64_t consumed :
       {uint64_t{0}, uint64_t{1}, uint64_t{64}, uint64_t{100000}, ~uint64_t{0}}) {
    for (uint8_t seed = 0; seed < 4; ++seed) {
      PrefixKey k = SampleKey(consumed, seed);
      Result<PrefixKey> back = PrefixKey::ParseFileStem(k.ToFileStem());
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_EQ(*back, k);
    }
  }
}

TEST(PrefixKeyTest, RejectsMalformedNames) {
  std::string good = SampleKey(77, 3).ToFileStem();
  struct Case {
    std::string name;
    std::string expect;  // a fragment of the error message
  } cases[] = {
      {"", "malformed record name"},
      {good.substr(1), "malformed record name"},
      {good + "0", "malformed record name"},
      {std::string(good).replace(16, 1, "_"), "malformed record name"},
      {std::string(good).replace(3, 1, "g"), "consumed count"},
      {std::string(good).replace(20, 1, "z"), "digest"},
      {std::string(good).replace(20, 1, "A"), "lowercase"},
  };
  for (const Case& c : cases) {
    Result<PrefixKey> r = PrefixKey::ParseFileStem(c.name);
    ASSERT_FALSE(r.ok()) << "accepted '" << c.name << "'";
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos)
        << c.name << " -> " << r.status().ToString();
  }
}

TEST(PrefixKeyTest, OrderingAndHashing) {
  PrefixKey a = SampleKey(10, 1), b = SampleKey(11, 1), c = SampleKey(10, 2);
  EXPECT_LT(a, b);
  EXPECT_NE(a, c);
  std::unordered_set<PrefixKey> set{a, b, c, a};
  EXPECT_EQ(set.size(), 3u);
}

TEST(HexTest, RejectsWrongLengthAndDigits) {
  uint8_t out[2];
  EXPECT_TRUE(ParseHex("0aFf", out).ok());
  EXPECT_EQ(out[0], 0x0a);
  EXPECT_EQ(out[1], 0xff);
  EXPECT_FALSE(ParseHex("0a", out).ok());
  EXPECT_FALSE(ParseHex("0a0g", out).ok());
}

}  // namespace
}  // namespace strata
