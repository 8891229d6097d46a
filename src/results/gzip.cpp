#include "results/gzip.hpp"

#include <zlib.h>

#include <fmt/format.h>

#include "ridge/errors.hpp"

namespace ridge::detail {

std::string gunzip_if_compressed(std::string bytes, const std::string& source) {
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f || static_cast<unsigned char>(bytes[1]) != 0x8b)
    return bytes;
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK)  // 15 + 16: a gzip wrapper, the largest window
    throw Error(fmt::format("{}: cannot start zlib to decompress it", source));
  stream.next_in = reinterpret_cast<Bytef*>(bytes.data());
  stream.avail_in = static_cast<uInt>(bytes.size());
  std::string out;
  char chunk[1 << 16];
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    stream.next_out = reinterpret_cast<Bytef*>(chunk);
    stream.avail_out = sizeof chunk;
    status = inflate(&stream, Z_NO_FLUSH);
    if (status != Z_OK && status != Z_STREAM_END) {
      const std::string why = stream.msg ? stream.msg : (status == Z_BUF_ERROR ? "truncated" : zError(status));
      inflateEnd(&stream);
      throw UsageError(fmt::format("{}: the gzip stream is corrupt ({})", source, why));
    }
    out.append(chunk, sizeof chunk - stream.avail_out);
    if (out.size() > max_gunzip_bytes) {
      inflateEnd(&stream);
      throw UsageError(fmt::format("{}: decompresses to more than {} bytes; not a ridge result file", source,
                                   max_gunzip_bytes));
    }
    if (status == Z_OK && stream.avail_in == 0 && stream.avail_out != 0) {
      inflateEnd(&stream);
      throw UsageError(fmt::format("{}: the gzip stream is corrupt (truncated)", source));
    }
  }
  inflateEnd(&stream);
  return out;
}

}  // namespace ridge::detail
