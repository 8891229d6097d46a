// A trace file read a chunk at a time, decompressed when it is gzip-compressed: traces of
// millions of events are read without holding their text in memory (src/trace/model/chunked_file.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

namespace ridge::detail {

class ChunkedFile {
 public:
  /// Opens `path`; throws UsageError naming it when it cannot be read or is a folder.
  explicit ChunkedFile(const std::string& path);
  ~ChunkedFile();
  ChunkedFile(const ChunkedFile&) = delete;
  ChunkedFile& operator=(const ChunkedFile&) = delete;

  /// True when every byte was read; refills the buffer otherwise. Throws UsageError on a corrupt
  /// or truncated gzip stream.
  bool at_end() { return pos_ >= size_ && !refill(); }
  char current() const { return buffer_[pos_]; }
  void advance() { ++pos_; }
  /// The next byte without consuming it, -1 at the end.
  int peek() { return at_end() ? -1 : static_cast<unsigned char>(current()); }
  /// The first `n` bytes of the file, or fewer when it is shorter (does not consume them).
  std::string head(std::size_t n);
  /// Appends the next `n` bytes to `out`; false when the file ends first.
  bool read(std::size_t n, std::string& out);
  const std::string& path() const { return path_; }

 private:
  bool refill();

  std::string path_;
  void* file_ = nullptr;  // gzFile
  std::vector<char> buffer_;
  std::size_t pos_ = 0, size_ = 0;
  bool done_ = false;
};

/// An input iterator over a ChunkedFile, the form nlohmann's parser reads; the default one is the end.
struct ChunkIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = char;
  ChunkedFile* file = nullptr;
  char operator*() const { return file->current(); }
  ChunkIterator& operator++() {
    file->advance();
    return *this;
  }
  bool operator==(const ChunkIterator& other) const {
    return (file == nullptr || file->at_end()) == (other.file == nullptr || other.file->at_end());
  }
  bool operator!=(const ChunkIterator& other) const { return !(*this == other); }
};

/// Reads the next length-delimited field `field` of a message streamed from `file` (a Perfetto
/// Trace's packets) into `out`; false at the end of the file. Throws UsageError when the bytes
/// are not such fields.
bool read_length_delimited(ChunkedFile& file, std::uint32_t field, std::string& out);

}  // namespace ridge::detail
