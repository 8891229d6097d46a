// Result files may be gzip-compressed (results/ keeps large ones as .json.gz).
#pragma once

#include <string>

namespace ridge::detail {

/// `bytes` itself, or its decompressed content when it starts with gzip's magic number. Throws
/// UsageError naming `source` when the stream is corrupt or would exceed max_gunzip_bytes.
std::string gunzip_if_compressed(std::string bytes, const std::string& source);

/// The most a compressed result file may expand to (a guard against decompression bombs).
inline constexpr std::size_t max_gunzip_bytes = std::size_t{2} << 30;

}  // namespace ridge::detail
