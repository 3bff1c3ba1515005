// The per-job tokens of the runtime processes' channels (job_token.h).
#include "launch/runtime/job_token.h"

#include <gtest/gtest.h>

#include <string>

namespace strata {
namespace {

JobSecret Secret(char fill) { return *JobSecret::FromText(std::string(40, fill), "test"); }

TEST(JobTokenTest, IsTheJobsSecretAndLabelDependentHex) {
  const std::string a = JobToken(Secret('a'), "label-1");
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(a, JobToken(Secret('a'), "label-1"));
  EXPECT_NE(a, JobToken(Secret('b'), "label-1"));
  EXPECT_NE(a, JobToken(Secret('a'), "label-2"));
}

TEST(JobTokenTest, MatchesOnlyTheSameToken) {
  const std::string t = JobToken(Secret('a'), "label");
  EXPECT_TRUE(TokenMatches(t, t));
  EXPECT_FALSE(TokenMatches(JobToken(Secret('b'), "label"), t));
  EXPECT_FALSE(TokenMatches(t.substr(1), t));
  EXPECT_FALSE(TokenMatches("", t));
}

}  // namespace
}  // namespace strata
