#include "common/error.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "common/result.h"

namespace asb {
namespace {

TEST(ErrorTest, FromErrnoMapsCodeAndKeepsErrno) {
  Error e = Error::FromErrno(ENOENT, "open /x");
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_EQ(e.sys_errno(), ENOENT);
  EXPECT_EQ(e.message(), "open /x: No such file or directory");
  EXPECT_EQ(e.ToString(), "not_found: open /x: No such file or directory");
}

TEST(ErrorTest, WithContextPrepends) {
  Error e = Error::FromErrno(ENOSPC, "write").WithContext("save file");
  EXPECT_EQ(e.message(), "save file: write: No space left on device");
  EXPECT_EQ(e.code(), ErrorCode::kLimitExceeded);
}

TEST(ErrorTest, FromErrnoMarksAHostCallAndKeepsItsContextApart) {
  Error e = Error::FromErrno(EBUSY, "umount /var/lib/x").WithContext("rollback sb_1 to snap_2");
  EXPECT_TRUE(e.from_host_call());
  EXPECT_EQ(e.ContextOnly(), "rollback sb_1 to snap_2");
  EXPECT_EQ(Error::FromErrno(ErrorCode::kBackend, EIO, "read").ContextOnly(), "");
  EXPECT_TRUE(Error::FromErrno(ErrorCode::kBackend, EIO, "read").from_host_call());
  // An error built from its parts (as one decoded from sandboxd's wire) is not a host call's.
  Error wire(ErrorCode::kNotFound, "open /workspace/x: No such file or directory", ENOENT);
  EXPECT_FALSE(wire.from_host_call());
  EXPECT_EQ(wire.ContextOnly(), wire.message());
  EXPECT_FALSE(wire.WithContext("read").from_host_call());
}

TEST(ErrorTest, CodeNamesRoundTrip) {
  for (auto code : {ErrorCode::kInvalidArgument, ErrorCode::kNotFound, ErrorCode::kTooLarge,
                    ErrorCode::kLimitExceeded, ErrorCode::kBackend, ErrorCode::kUnavailable}) {
    EXPECT_EQ(ErrorCodeFromName(ErrorCodeName(code)), code);
  }
  EXPECT_EQ(ErrorCodeFromName("no_such_code"), ErrorCode::kInternal);
}

Result<int> Half(int x) {
  if (x % 2) return Fail(Error::InvalidArgument("odd"));
  return x / 2;
}

Result<int> Quarter(int x) {
  ASB_ASSIGN_OR_RETURN(int h, Half(x));
  ASB_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  ASB_TRY_CTX(Half(x), "check");
  return {};
}

TEST(ResultTest, MacrosPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_FALSE(Quarter(6).has_value());
  EXPECT_EQ(Quarter(6).error().message(), "odd");
  EXPECT_TRUE(CheckEven(2).has_value());
  EXPECT_EQ(CheckEven(3).error().message(), "check: odd");
}

}  // namespace
}  // namespace asb
