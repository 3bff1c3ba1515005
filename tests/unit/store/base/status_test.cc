#include "store/base/status.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace strata {
namespace {

Result<int> Half(int v) {
  if (v % 2 != 0) return Status::InvalidArgument("odd");
  return v / 2;
}

Result<int> Quarter(int v) {
  STRATA_ASSIGN_OR_RETURN(int h, Half(v));
  return Half(h);
}

Status CheckEven(int v) {
  STRATA_RETURN_IF_ERROR(Half(v).status());
  return Status::Ok();
}

TEST(StatusTest, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, NamedConstructorsCarryCodeAndMessage) {
  Status s = Status::Corruption("bad page 3");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.ToString(), "corruption: bad page 3");
  EXPECT_EQ(s.WithContext("file x").message(), "file x: bad page 3");
}

TEST(StatusTest, RetryableOnlyForBusyAndFull) {
  EXPECT_TRUE(Status::Busy("q").retryable());
  EXPECT_TRUE(Status::FsFull("d").retryable());
  EXPECT_FALSE(Status::IoError("e").retryable());
  EXPECT_FALSE(Status::Corruption("c").retryable());
}

TEST(StatusTest, FromErrnoMapsSpaceErrorsToFsFull) {
  EXPECT_EQ(Status::FromErrno(ENOSPC, "write").code(), StatusCode::kFsFull);
  EXPECT_EQ(Status::FromErrno(EDQUOT, "write").code(), StatusCode::kFsFull);
  Status eio = Status::FromErrno(EIO, "read x");
  EXPECT_EQ(eio.code(), StatusCode::kIoError);
  EXPECT_NE(eio.message().find("read x: "), std::string::npos);
}

TEST(ResultTest, PropagatesValuesAndErrors) {
  ASSERT_TRUE(Quarter(8).ok());
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_FALSE(CheckEven(5).ok());
}

TEST(ResultDeathTest, ValueOfErrorIsABug) {
  Result<int> r = Status::NotFound("x");
  EXPECT_DEATH((void)r.value(), "value\\(\\) of an error Result");
}

}  // namespace
}  // namespace strata
