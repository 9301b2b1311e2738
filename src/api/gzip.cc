#include "api/gzip.h"

#include <zlib.h>

#include <algorithm>

namespace asb::api {

namespace {

// zlib's windowBits for "gzip only" (15 = 32 KiB window, +16 = expect a gzip header).
constexpr int kGzipWindowBits = 15 + 16;
constexpr size_t kChunk = 64 * 1024;

class Inflater {
 public:
  Inflater() { ok_ = inflateInit2(&z_, kGzipWindowBits) == Z_OK; }
  ~Inflater() {
    if (ok_) inflateEnd(&z_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  bool ok() const { return ok_; }
  z_stream* z() { return &z_; }

 private:
  z_stream z_{};
  bool ok_ = false;
};

}  // namespace

Result<std::string> GunzipBounded(std::string_view in, uint64_t max_bytes) {
  std::string out;
  Inflater inf;
  if (!inf.ok()) return Fail(Error::Internal("gzip: zlib could not start"));
  z_stream* z = inf.z();
  z->next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z->avail_in = static_cast<uInt>(std::min<size_t>(in.size(), UINT32_MAX));
  if (in.size() > UINT32_MAX) return Fail(Error::TooLarge("gzip: body too large"));
  for (;;) {
    size_t old = out.size();
    size_t room = static_cast<size_t>(std::min<uint64_t>(kChunk, max_bytes + 1 - old));
    out.resize(old + room);
    z->next_out = reinterpret_cast<Bytef*>(out.data() + old);
    z->avail_out = static_cast<uInt>(room);
    int rc = inflate(z, Z_NO_FLUSH);
    out.resize(old + room - z->avail_out);
    if (out.size() > max_bytes) {
      return Fail(Error::TooLarge("gzip: the body inflates to more than " +
                                  std::to_string(max_bytes) + " bytes"));
    }
    if (rc == Z_STREAM_END) {
      if (z->avail_in == 0) return out;
      // Another member follows (gzip allows concatenation).
      if (inflateReset(z) != Z_OK) return Fail(Error::Internal("gzip: zlib reset failed"));
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && z->avail_in == 0) {
      return Fail(Error::InvalidArgument("gzip: the data ends before its end"));
    }
    if (rc == Z_MEM_ERROR) return Fail(Error::Internal("gzip: out of memory"));
    return Fail(Error::InvalidArgument(std::string("gzip: ") +
                                       (z->msg != nullptr ? z->msg : "not gzip data")));
  }
}

}  // namespace asb::api
