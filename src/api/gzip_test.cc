#include "api/gzip.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

namespace asb::api {
namespace {

// gzip of `data` made by zlib itself (deflateInit2 with the gzip header).
std::string Gzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

TEST(GzipTest, InflatesWithinTheLimitExactlyAndRefusesOneByteMore) {
  std::string data(100000, 'a');
  data += "tail\n";
  std::string gz = Gzip(data);
  EXPECT_LT(gz.size(), 1000u);  // a tiny body that inflates a hundredfold
  auto at = GunzipBounded(gz, data.size());
  ASSERT_TRUE(at) << at.error().message();
  EXPECT_EQ(*at, data);
  auto over = GunzipBounded(gz, data.size() - 1);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code(), ErrorCode::kTooLarge);
}

TEST(GzipTest, JoinsMembersAndRefusesWhatIsNotGzip) {
  auto two = GunzipBounded(Gzip("one ") + Gzip("two"), 100);
  ASSERT_TRUE(two);
  EXPECT_EQ(*two, "one two");
  auto empty = GunzipBounded(Gzip(""), 0);
  ASSERT_TRUE(empty);
  EXPECT_EQ(*empty, "");
  for (std::string bad : {std::string("plain text"), std::string(""), Gzip("cut").substr(0, 12),
                          Gzip("trailing") + "junk"}) {
    auto r = GunzipBounded(bad, 1000);
    ASSERT_FALSE(r) << bad.size();
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << r.error().message();
    EXPECT_EQ(r.error().message().rfind("gzip: ", 0), 0u) << r.error().message();
  }
}

}  // namespace
}  // namespace asb::api
