#include "trace/model/chunked_file.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <zlib.h>

#include "ridge/errors.hpp"

namespace ridge::detail {

namespace {
constexpr std::size_t chunk_bytes = std::size_t{1} << 18;
gzFile gz(void* f) { return static_cast<gzFile>(f); }
}  // namespace

ChunkedFile::ChunkedFile(const std::string& path) : path_(path), buffer_(chunk_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UsageError(fmt::format("cannot read {}: it is a folder, not a file", path));
  errno = 0;
  file_ = gzopen(path.c_str(), "rb");  // zlib reads a file that is not gzip-compressed as it is
  if (file_ == nullptr)
    throw UsageError(fmt::format("cannot read {}: {}", path, errno != 0 ? std::strerror(errno) : "out of memory"));
  gzbuffer(gz(file_), static_cast<unsigned>(chunk_bytes));
}

ChunkedFile::~ChunkedFile() {
  if (file_ != nullptr) gzclose(gz(file_));
}

bool ChunkedFile::refill() {
  if (done_) return false;
  const int n = gzread(gz(file_), buffer_.data(), static_cast<unsigned>(buffer_.size()));
  if (n <= 0) {
    int code = Z_OK;
    const char* why = gzerror(gz(file_), &code);
    if (n < 0 || code != Z_OK)
      throw UsageError(fmt::format("{}: the gzip stream is corrupt ({})", path_,
                                   code == Z_BUF_ERROR ? "truncated" : (why != nullptr ? why : "unknown error")));
    done_ = true;
    pos_ = size_ = 0;
    return false;
  }
  pos_ = 0;
  size_ = static_cast<std::size_t>(n);
  return true;
}

std::string ChunkedFile::head(std::size_t n) {
  if (pos_ >= size_) refill();
  return std::string(buffer_.data() + pos_, std::min(n, size_ - pos_));
}

bool ChunkedFile::read(std::size_t n, std::string& out) {
  while (n > 0) {
    if (at_end()) return false;
    const std::size_t take = std::min(n, size_ - pos_);
    out.append(buffer_.data() + pos_, take);
    pos_ += take;
    n -= take;
  }
  return true;
}

namespace {
/// A varint from the file; false at the end of the file before its first byte.
bool read_varint(ChunkedFile& file, std::uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (file.at_end()) {
      if (shift == 0) return false;
      throw UsageError(fmt::format("{}: not a Perfetto trace ridge can read: it ends inside a varint", file.path()));
    }
    const auto byte = static_cast<std::uint8_t>(file.current());
    file.advance();
    v |= std::uint64_t{byte & 0x7fu} << shift;
    if (byte < 0x80) return true;
  }
  throw UsageError(fmt::format("{}: not a Perfetto trace ridge can read: a varint longer than 10 bytes", file.path()));
}
}  // namespace

bool read_length_delimited(ChunkedFile& file, std::uint32_t field, std::string& out) {
  std::uint64_t key = 0;
  if (!read_varint(file, key)) return false;
  if (key != ((std::uint64_t{field} << 3) | 2))
    throw UsageError(fmt::format("{}: not a Perfetto trace ridge can read: field {} of wire type {} where packets "
                                 "(field {}, length-delimited) are expected",
                                 file.path(), key >> 3, key & 7, field));
  std::uint64_t length = 0;
  if (!read_varint(file, length))
    throw UsageError(fmt::format("{}: not a Perfetto trace ridge can read: it ends inside a packet", file.path()));
  out.clear();
  if (!file.read(static_cast<std::size_t>(length), out))
    throw UsageError(fmt::format("{}: not a Perfetto trace ridge can read: it ends inside a packet (truncated)", file.path()));
  return true;
}

}  // namespace ridge::detail
