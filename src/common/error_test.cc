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
  EXPECT_EQ(e.detail(), "open /x: No such file or directory");
  EXPECT_EQ(e.ToString(), "not_found: open /x: No such file or directory");
}

TEST(ErrorTest, AHostCallsWordsAreInItsDetailOnly) {
  Error e = Error::FromErrno(EBUSY, "umount /var/lib/x").WithContext("rollback sb_1 to snap_2");
  EXPECT_TRUE(e.from_host_call());
  EXPECT_EQ(e.message(), "rollback sb_1 to snap_2: a host operation failed");
  EXPECT_EQ(e.detail(), "rollback sb_1 to snap_2: umount /var/lib/x: Device or resource busy");
  EXPECT_EQ(e.ClientSafeMessage(), e.message());
  EXPECT_EQ(Error::FromErrno(ErrorCode::kBackend, EIO, "read").message(),
            "a host operation failed");
  // A context above a host call names what the server did; its host paths are the operator's.
  Error ctx = Error::FromErrno(ENOSPC, "write").WithContext("import /var/lib/s.tar into sb_1");
  EXPECT_EQ(ctx.message(), "import (host path) into sb_1: a host operation failed");
  EXPECT_EQ(ctx.detail(), "import /var/lib/s.tar into sb_1: write: No space left on device");
  EXPECT_EQ(ctx.code(), ErrorCode::kLimitExceeded);
}

TEST(ErrorTest, ReWrappingByTextCannotCarryHostText) {
  // The form a handler might write: a new error made of another's message().
  Error host = Error::FromErrno(ENOENT, "mkdir /var/lib/agent-sandbox/sandboxes/sb_1");
  Error rewrapped = Error::Backend("create sb_1: " + host.message());
  EXPECT_EQ(rewrapped.message(), "create sb_1: a host operation failed");
  EXPECT_EQ(rewrapped.message().find("/var/lib"), std::string::npos);
  // Re-coding and context keep the detail and the mark.
  Error recoded = Error(host).WithCode(ErrorCode::kBackend).WithContext("create sb_1");
  EXPECT_TRUE(recoded.from_host_call());
  EXPECT_EQ(recoded.code(), ErrorCode::kBackend);
  EXPECT_NE(recoded.detail().find("/var/lib/agent-sandbox/sandboxes/sb_1"), std::string::npos);
  EXPECT_EQ(recoded.message().find("/var/lib"), std::string::npos);
}

TEST(ErrorTest, AnErrorFromItsPartsHasOneText) {
  // As one decoded from sandboxd's wire: a path inside the sandbox is the client's own.
  Error wire(ErrorCode::kNotFound, "open /workspace/x: No such file or directory", ENOENT);
  EXPECT_FALSE(wire.from_host_call());
  EXPECT_EQ(wire.detail(), wire.message());
  Error ctx = wire.WithContext("read");
  EXPECT_FALSE(ctx.from_host_call());
  EXPECT_EQ(ctx.message(), "read: open /workspace/x: No such file or directory");
  EXPECT_EQ(ctx.detail(), ctx.message());
  // A bug's words never reach a client.
  EXPECT_EQ(Error::Internal("bug at /srv/x").ClientSafeMessage(), "internal error");
}

TEST(ErrorTest, OperatorDetailWithoutAHostCall) {
  Error e = Error::WithOperatorDetail(ErrorCode::kConflict, "a database constraint failed",
                                      "step `INSERT INTO keys`: UNIQUE constraint failed");
  EXPECT_FALSE(e.from_host_call());
  EXPECT_EQ(e.message(), "a database constraint failed");
  EXPECT_EQ(e.WithContext("create key /x").message(),
            "create key (host path): a database constraint failed");
  EXPECT_EQ(e.WithContext("create key").detail(),
            "create key: step `INSERT INTO keys`: UNIQUE constraint failed");
  Error host = Error::FromHost(ErrorCode::kInternal, "open database /d.db", "disk I/O error");
  EXPECT_TRUE(host.from_host_call());
  EXPECT_EQ(host.ClientSafeMessage(), "a host operation failed");
  EXPECT_EQ(host.detail(), "open database /d.db: disk I/O error");
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
