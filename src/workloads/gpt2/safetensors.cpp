#include "ridge/gpt2/safetensors.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ridge/errors.hpp"
#include "ridge/gpt2/config.hpp"
#include "ridge/writers.hpp"

namespace ridge::gpt2 {

namespace {

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1f;
  std::uint32_t mantissa = h & 0x3ff;
  std::uint32_t bits = 0;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3ff;
      bits = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::uint64_t read_le64(const unsigned char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::int64_t SafetensorsEntry::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;  // the reader refused shapes whose product overflows
  return n;
}

std::optional<std::uint64_t> checked_byte_count(const std::vector<std::int64_t>& shape, int element_bytes) {
  std::uint64_t bytes = static_cast<std::uint64_t>(element_bytes);
  constexpr std::uint64_t limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t elements = 1;
  for (auto d : shape) {
    if (d < 0) return std::nullopt;
    const auto size = static_cast<std::uint64_t>(d);
    if (size != 0 && elements > limit / size) return std::nullopt;
    elements *= size;
  }
  if (elements != 0 && bytes > limit / elements) return std::nullopt;
  return elements * bytes;
}

int safetensors_element_bytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

std::string shape_string(const std::vector<std::int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

SafetensorsFile::SafetensorsFile(std::string path) : path_(std::move(path)) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path_, ec))
    throw UsageError(fmt::format("safetensors file '{}' does not exist or is not a regular file", path_));
  const std::uint64_t file_size = std::filesystem::file_size(path_, ec);
  if (ec) throw UsageError(fmt::format("cannot read the size of '{}': {}", path_, ec.message()));
  std::ifstream in(path_, std::ios::binary);
  if (!in) throw UsageError(fmt::format("cannot open safetensors file '{}'", path_));
  unsigned char length_field[8] = {};
  if (file_size >= 8) in.read(reinterpret_cast<char*>(length_field), 8);
  const std::uint64_t length = header_length(length_field, file_size);
  std::string header(length, '\0');
  in.read(header.data(), static_cast<std::streamsize>(length));
  if (!in || static_cast<std::uint64_t>(in.gcount()) != length)
    throw UsageError(fmt::format("'{}': could not read its {}-byte header (file truncated or changed?)", path_, length));
  parse_header(header, file_size);
}

SafetensorsFile SafetensorsFile::from_bytes(std::string bytes, std::string name) {
  SafetensorsFile file;
  file.path_ = std::move(name);
  const std::uint64_t size = bytes.size();
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::uint64_t length = file.header_length(data, size);
  file.parse_header(std::string_view(bytes).substr(8, length), size);
  file.bytes_ = std::move(bytes);
  return file;
}

std::uint64_t SafetensorsFile::header_length(const unsigned char* length_field, std::uint64_t file_size) const {
  if (file_size < 8)
    throw UsageError(fmt::format("'{}' is not a safetensors file: {} bytes, shorter than the 8-byte header length",
                                 path_, file_size));
  const std::uint64_t length = read_le64(length_field);
  if (length > max_safetensors_header_bytes)
    throw UsageError(fmt::format("'{}' is not a safetensors file: its header length field says {} bytes, more than "
                                 "the format's limit of {} bytes",
                                 path_, length, max_safetensors_header_bytes));
  if (length > file_size - 8)
    throw UsageError(fmt::format("'{}' is truncated or not a safetensors file: its header claims {} bytes but only {} "
                                 "follow the length field",
                                 path_, length, file_size - 8));
  return length;
}

void SafetensorsFile::parse_header(std::string_view header, std::uint64_t file_size) {
  data_start_ = 8 + header.size();
  const std::uint64_t data_size = file_size - data_start_;
  nlohmann::json j;
  try {
    j = parse_json(header, fmt::format("'{}': the safetensors header", path_));
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("'{}': the safetensors header is not valid JSON ({})", path_, e.what()));
  }
  if (!j.is_object()) throw UsageError(fmt::format("'{}': the safetensors header is not a JSON object", path_));
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      if (v.is_object())
        for (auto m = v.begin(); m != v.end(); ++m)
          metadata_[m.key()] = m.value().is_string() ? m.value().get<std::string>() : m.value().dump();
      continue;
    }
    auto bad = [&](const std::string& why) {
      return UsageError(fmt::format("'{}': tensor '{}' has a malformed header entry: {}", path_, name, why));
    };
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      throw bad("needs \"dtype\", \"shape\" and \"data_offsets\"");
    SafetensorsEntry e;
    e.name = name;
    if (!v["dtype"].is_string()) throw bad("dtype is not a string");
    e.dtype = v["dtype"].get<std::string>();
    if (!v["shape"].is_array()) throw bad("shape is not an array");
    for (const auto& d : v["shape"]) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < 0) throw bad("shape holds a non-integer or negative size");
      e.shape.push_back(d.get<std::int64_t>());
    }
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw bad("data_offsets must be two non-negative integers");
    e.begin = off[0].get<std::uint64_t>();
    e.end = off[1].get<std::uint64_t>();
    if (e.end < e.begin) throw bad("data_offsets end before they begin");
    const int element = safetensors_element_bytes(e.dtype);
    if (element == 0) throw bad(fmt::format("unknown dtype '{}'", e.dtype));
    const auto expected = checked_byte_count(e.shape, element);
    if (!expected)
      throw bad(fmt::format("shape {} of {} holds more than 2^63 bytes (its element count overflows)",
                            shape_string(e.shape), e.dtype));
    if (e.end - e.begin != *expected)
      throw bad(fmt::format("{} bytes of data for shape {} of {} ({} bytes expected)", e.end - e.begin,
                            shape_string(e.shape), e.dtype, *expected));
    if (e.end > data_size)
      throw UsageError(fmt::format("'{}' is truncated: tensor '{}' ends at data byte {} but the file holds only {} "
                                   "data bytes",
                                   path_, name, e.end, data_size));
    entries_[name] = std::move(e);
  }
  check_no_overlap();
}

void SafetensorsFile::check_no_overlap() const {
  std::vector<const SafetensorsEntry*> by_offset;
  for (const auto& [name, e] : entries_)
    if (e.end > e.begin) by_offset.push_back(&e);  // an empty tensor shares its offset with anything
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafetensorsEntry* a, const SafetensorsEntry* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const auto& before = *by_offset[i - 1];
    const auto& after = *by_offset[i];
    if (after.begin < before.end)
      throw UsageError(fmt::format("'{}': tensors '{}' (data bytes {}..{}) and '{}' (data bytes {}..{}) overlap; each "
                                   "tensor needs its own bytes",
                                   path_, before.name, before.begin, before.end, after.name, after.begin, after.end));
  }
}

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end())
    throw UsageError(fmt::format("'{}' has no tensor named '{}' ({} tensors in the file)", path_, name, entries_.size()));
  return it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

std::vector<unsigned char> SafetensorsFile::read_bytes(const std::string& name) const {
  const auto& e = entry(name);
  std::vector<unsigned char> bytes(e.end - e.begin);
  if (bytes_) {  // in memory: the header check kept every tensor inside the data section
    // std::copy_n, not memcpy: an empty tensor's vector has no buffer, and memcpy(nullptr, ...) is undefined.
    std::copy_n(bytes_->data() + data_start_ + e.begin, bytes.size(), bytes.begin());
    return bytes;
  }
  std::ifstream in(path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(data_start_ + e.begin));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!in || static_cast<std::size_t>(in.gcount()) != bytes.size())
    throw UsageError(fmt::format("'{}': could not read the {} bytes of tensor '{}' (file truncated or changed?)", path_,
                                 bytes.size(), name));
  return bytes;
}

std::vector<float> SafetensorsFile::read_floats(const std::string& name) const {
  const auto& e = entry(name);
  if (e.dtype != "F32" && e.dtype != "BF16" && e.dtype != "F16" && e.dtype != "F64")
    throw UsageError(fmt::format("'{}': tensor '{}' has dtype {}; expected a floating-point dtype (F32, BF16, F16)",
                                 path_, name, e.dtype));
  const auto bytes = read_bytes(name);
  const auto n = static_cast<std::size_t>(e.numel());
  std::vector<float> out(n);
  const unsigned char* p = bytes.data();
  if (e.dtype == "F32") {
    if (n != 0) std::memcpy(out.data(), p, n * 4);  // an empty tensor has no buffer to pass
  } else if (e.dtype == "F64") {
    for (std::size_t i = 0; i < n; ++i) {
      double d = 0;
      std::memcpy(&d, p + 8 * i, 8);
      out[i] = static_cast<float>(d);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint16_t h = static_cast<std::uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));
      if (e.dtype == "BF16") {
        const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
        std::memcpy(&out[i], &bits, 4);
      } else {
        out[i] = half_to_float(h);
      }
    }
  }
  return out;
}

std::vector<int> SafetensorsFile::read_ints(const std::string& name) const {
  const auto& e = entry(name);
  if (e.dtype != "I32" && e.dtype != "I64")
    throw UsageError(fmt::format("'{}': tensor '{}' has dtype {}; expected I32 or I64", path_, name, e.dtype));
  const auto bytes = read_bytes(name);
  const auto n = static_cast<std::size_t>(e.numel());
  std::vector<int> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (e.dtype == "I32") {
      std::int32_t v = 0;
      std::memcpy(&v, bytes.data() + 4 * i, 4);
      out[i] = v;
    } else {
      std::int64_t v = 0;
      std::memcpy(&v, bytes.data() + 8 * i, 8);
      if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
        throw UsageError(fmt::format("'{}': tensor '{}' holds {} at element {}, too large for int", path_, name, v, i));
      out[i] = static_cast<int>(v);
    }
  }
  return out;
}

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<std::vector<unsigned char>> blobs;
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    std::int64_t numel = 1;
    for (auto d : t.shape) numel *= d;
    std::vector<unsigned char> blob;
    if (t.dtype == "F32" || t.dtype == "BF16") {
      if (static_cast<std::int64_t>(t.floats.size()) != numel)
        throw UsageError(fmt::format("write_safetensors: tensor '{}' has {} values for shape {}", t.name,
                                     t.floats.size(), shape_string(t.shape)));
      if (t.dtype == "F32") {
        blob.resize(numel * 4);
        std::memcpy(blob.data(), t.floats.data(), blob.size());
      } else {
        blob.resize(numel * 2);
        for (std::int64_t i = 0; i < numel; ++i) {
          const float r = round_to_bf16(t.floats[i]);
          std::uint32_t bits = 0;
          std::memcpy(&bits, &r, 4);
          blob[2 * i] = static_cast<unsigned char>((bits >> 16) & 0xff);
          blob[2 * i + 1] = static_cast<unsigned char>(bits >> 24);
        }
      }
    } else if (t.dtype == "I32") {
      if (static_cast<std::int64_t>(t.ints.size()) != numel)
        throw UsageError(fmt::format("write_safetensors: tensor '{}' has {} values for shape {}", t.name, t.ints.size(),
                                     shape_string(t.shape)));
      blob.resize(numel * 4);
      std::memcpy(blob.data(), t.ints.data(), blob.size());
    } else {
      throw UsageError(fmt::format("write_safetensors: dtype '{}' of tensor '{}' is not supported (F32, BF16, I32)",
                                   t.dtype, t.name));
    }
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + blob.size()}}};
    offset += blob.size();
    blobs.push_back(std::move(blob));
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');  // keeps the data 8-byte aligned, as the format recommends
  std::string content(8, '\0');
  for (int i = 0; i < 8; ++i) content[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  content += text;
  for (const auto& b : blobs) content.append(reinterpret_cast<const char*>(b.data()), b.size());
  write_text(path, content);  // the one writer: atomic for a regular file, in place for a FIFO or device
}

}  // namespace ridge::gpt2
