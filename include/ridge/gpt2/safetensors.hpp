#pragma once
// A reader and writer of the safetensors format: an 8-byte little-endian header length, a JSON
// header {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the
// raw little-endian data. CPU only; tensors are read one at a time so a 6 GB file is never held
// in memory whole.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ridge::gpt2 {

/// One tensor's entry in a safetensors header.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  ///< "F32", "BF16", "F16", "I32", "I64", ...
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0, end = 0;  ///< byte offsets into the data section
  std::int64_t numel() const;
};

/// Bytes of one element of a safetensors dtype name; 0 when unknown.
int safetensors_element_bytes(const std::string& dtype);

/// Bytes of a tensor of `shape` with elements of `element_bytes`; nullopt when a size is negative
/// or the count does not fit in 2^63 bytes.
std::optional<std::uint64_t> checked_byte_count(const std::vector<std::int64_t>& shape, int element_bytes);

/// The largest header the reader accepts, in bytes (the format's own limit: 100 MB).
inline constexpr std::uint64_t max_safetensors_header_bytes = 100'000'000;

/// "[768, 2304]".
std::string shape_string(const std::vector<std::int64_t>& shape);

class SafetensorsFile {
 public:
  /// Opens `path` and parses its header; reads no tensor data. Throws UsageError naming the file
  /// (and the tensor) and saying what is wrong: file missing, a header length past the end of the
  /// file or over 100 MB, a header that is not a JSON object, an entry without dtype/shape/offsets,
  /// an unknown dtype, negative sizes or offsets, a shape whose byte count overflows, offsets that
  /// disagree with shape x dtype, data past the end of the file (truncated), or two tensors whose
  /// bytes overlap.
  explicit SafetensorsFile(std::string path);
  /// The same reader over a whole file's bytes held in memory (e.g. received or mapped); `name`
  /// stands for the path in errors. Tensors are read from `bytes`, which the object keeps.
  static SafetensorsFile from_bytes(std::string bytes, std::string name);

  const std::string& path() const { return path_; }
  bool contains(const std::string& name) const { return entries_.count(name) != 0; }
  /// The entry, or throws UsageError naming the missing tensor and the file.
  const SafetensorsEntry& entry(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  /// Reads a floating-point tensor (F32, BF16, F16 or F64) converted to float. Throws UsageError
  /// naming the tensor for any other dtype.
  std::vector<float> read_floats(const std::string& name) const;
  /// Reads an integer tensor (I32 or I64; I64 values must fit in int). Throws UsageError otherwise.
  std::vector<int> read_ints(const std::string& name) const;
  /// The raw bytes of a tensor.
  std::vector<unsigned char> read_bytes(const std::string& name) const;

 private:
  SafetensorsFile() = default;
  /// Checks the 8-byte length field at the start of a file of `file_size` bytes; returns the
  /// header's length.
  std::uint64_t header_length(const unsigned char* length_field, std::uint64_t file_size) const;
  /// Parses the JSON header of a file of `file_size` bytes (the file reader and from_bytes share it).
  void parse_header(std::string_view header, std::uint64_t file_size);
  void check_no_overlap() const;

  std::string path_;
  std::optional<std::string> bytes_;  ///< the whole file, for from_bytes; nullopt: read from path_
  std::uint64_t data_start_ = 0;
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

/// A tensor to write: dtype "F32" (from `floats`), "BF16" (from `floats`, rounded to nearest
/// even), or "I32" (from `ints`).
struct SafetensorsTensor {
  std::string name;
  std::string dtype = "F32";
  std::vector<std::int64_t> shape;
  std::vector<float> floats;
  std::vector<int> ints;
};

/// Writes a safetensors file (atomically: to a temporary name, then renamed). Throws UsageError
/// when a tensor's data does not match its shape, Error when the file cannot be written.
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace ridge::gpt2
