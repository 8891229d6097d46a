#include "ridge/catalog.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ridge/errors.hpp"
#include "ridge/writers.hpp"

namespace ridge {

namespace detail {
std::string_view builtin_catalog_json();  // generated from data/catalog.json (cmake/catalog.cpp.in)
}

namespace {

using nlohmann::json;

const std::set<std::string> entry_fields = {"key",       "name",        "match_names", "sm_count",
                                            "memory_gb", "bandwidth_gb_per_s", "l2_mib", "peak_tflops",
                                            "sparse_peak_tflops", "nvlink_gb_per_s", "pcie_gb_per_s",
                                            "interconnect_source", "notes", "source"};

// The largest figure any numeric field may hold (in its own unit: GB, GB/s, MiB, TFLOP/s, SMs):
// far above any datasheet, and small enough that scaling to bytes or FLOP/s stays finite and an SM
// count fits in an int.
constexpr double max_figure = 1e9;

// Reads and checks one entry; every error names the entry and the field.
class EntryReader {
 public:
  EntryReader(const json& j, std::size_t index) : j_(j) {
    label_ = fmt::format("catalog entry {}", index);
    if (!j.is_object()) fail("", "must be a JSON object");
    if (j.contains("key") && j["key"].is_string()) label_ += fmt::format(" ('{}')", j["key"].get<std::string>());
    for (const auto& [field, value] : j.items())
      if (!entry_fields.count(field)) fail(field, "is not a known field (typo?)");
  }

  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    if (field.empty()) throw UsageError(fmt::format("{} {}", label_, why));
    throw UsageError(fmt::format("{}: field '{}' {}", label_, field, why));
  }

  std::string text(const char* field, bool required) const {
    if (!j_.contains(field)) {
      if (required) fail(field, "is missing");
      return {};
    }
    if (!j_[field].is_string()) fail(field, "must be a string");
    std::string s = j_[field].get<std::string>();
    if (required && s.empty()) fail(field, "must not be empty");
    return s;
  }

  double positive(const char* field, bool required) const {
    if (!j_.contains(field)) {
      if (required) fail(field, "is missing");
      return 0;
    }
    const json& v = j_[field];
    if (!v.is_number()) fail(field, "must be a number");
    const double d = v.get<double>();
    if (!(d > 0) || !(d <= max_figure)) fail(field, fmt::format("must be > 0 and at most {:g}, got {}", max_figure, d));
    return d;
  }

  std::map<std::string, double> peaks(const char* field, bool required) const {
    std::map<std::string, double> out;
    if (!j_.contains(field)) {
      if (required) fail(field, "is missing");
      return out;
    }
    if (!j_[field].is_object()) fail(field, "must be an object of dtype -> TFLOP/s");
    for (const auto& [name, value] : j_[field].items()) {
      const auto& names = peak_dtype_names();
      if (std::find(names.begin(), names.end(), name) == names.end())
        fail(fmt::format("{}.{}", field, name), fmt::format("is not a known dtype ({})", fmt::join(names, ", ")));
      if (!value.is_number() || !(value.get<double>() > 0) || !(value.get<double>() <= max_figure))
        fail(fmt::format("{}.{}", field, name), fmt::format("must be a number > 0 and at most {:g} (TFLOP/s)", max_figure));
      out[name] = value.get<double>() * 1e12;
    }
    if (required && out.empty()) fail(field, "must list at least one dtype");
    return out;
  }

  const json& raw() const { return j_; }

 private:
  const json& j_;
  std::string label_;
};

CatalogEntry read_entry(const json& j, std::size_t index) {
  EntryReader r(j, index);
  CatalogEntry e;
  e.key = r.text("key", true);
  for (char c : e.key)
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-'))
      r.fail("key", fmt::format("'{}' must use only a-z, 0-9 and '-'", e.key));
  e.name = r.text("name", true);
  if (r.raw().contains("match_names")) {
    const json& names = r.raw()["match_names"];
    if (!names.is_array()) r.fail("match_names", "must be an array of strings");
    for (const auto& n : names) {
      if (!n.is_string() || n.get<std::string>().empty()) r.fail("match_names", "must hold non-empty strings");
      e.match_names.push_back(n.get<std::string>());
    }
  }
  const double sm = r.positive("sm_count", true);
  if (sm != std::floor(sm)) r.fail("sm_count", "must be a whole number");
  e.sm_count = static_cast<int>(sm);
  e.memory_bytes = r.positive("memory_gb", true) * 1e9;
  e.l2_bytes = r.positive("l2_mib", false) * 1024.0 * 1024.0;
  e.ceilings.source = CeilingsSource::datasheet;
  e.ceilings.source_text = "datasheet of " + e.name;
  e.ceilings.memory_bytes_per_s = r.positive("bandwidth_gb_per_s", true) * 1e9;
  e.ceilings.peak_flops_per_s = r.peaks("peak_tflops", true);
  e.sparse_peak_flops = r.peaks("sparse_peak_tflops", false);
  for (const auto& [name, sparse] : e.sparse_peak_flops) {
    auto dense = e.ceilings.peak_flops_per_s.find(name);
    if (dense != e.ceilings.peak_flops_per_s.end() && sparse < dense->second)
      r.fail(fmt::format("sparse_peak_tflops.{}", name),
             fmt::format("({:g}) is below the dense peak ({:g}); dense figures must exclude sparsity", sparse / 1e12,
                         dense->second / 1e12));
  }
  e.nvlink_bytes_per_s = r.positive("nvlink_gb_per_s", false) * 1e9;
  e.pcie_bytes_per_s = r.positive("pcie_gb_per_s", false) * 1e9;
  e.interconnect_source = r.text("interconnect_source", false);
  if ((e.nvlink_bytes_per_s > 0 || e.pcie_bytes_per_s > 0) && e.interconnect_source.empty())
    r.fail("interconnect_source", "is missing: link bandwidths need a source (document and URL)");
  e.notes = r.text("notes", false);
  e.source = r.text("source", true);
  return e;
}

struct CatalogState {
  std::mutex mutex;
  std::optional<std::vector<CatalogEntry>> active;
};

CatalogState& state() {
  static CatalogState s;
  return s;
}

std::vector<CatalogEntry> parse_file(const std::string& path, const char* how) {
  const std::string text = read_text(path);
  try {
    return parse_catalog(text);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("catalog file {}{}: {}", path, how, e.what()));
  }
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<CatalogEntry> parse_catalog(const std::string& json_text) {
  json j;
  try {
    j = parse_json(json_text, "the catalog");
  } catch (const json::parse_error& e) {
    throw UsageError(fmt::format("the catalog is not valid JSON: {}", e.what()));
  }
  const json* devices = &j;
  if (j.is_object()) {
    if (!j.contains("devices")) throw UsageError("the catalog has no \"devices\" array");
    devices = &j["devices"];
  }
  if (!devices->is_array()) throw UsageError("the catalog's \"devices\" must be an array of entries");
  std::vector<CatalogEntry> out;
  std::set<std::string> keys;
  for (std::size_t i = 0; i < devices->size(); ++i) {
    CatalogEntry e = read_entry((*devices)[i], i);
    if (!keys.insert(e.key).second)
      throw UsageError(fmt::format("catalog entry {} ('{}'): field 'key' repeats an earlier entry's key", i, e.key));
    out.push_back(std::move(e));
  }
  if (out.empty()) throw UsageError("the catalog has no entries");
  return out;
}

const std::vector<CatalogEntry>& builtin_catalog() {
  // Parsed once; a broken built-in file is a build defect, caught by the unit tests.
  static const std::vector<CatalogEntry> entries = parse_catalog(std::string(detail::builtin_catalog_json()));
  return entries;
}

const std::vector<CatalogEntry>& catalog() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.active) {
    const char* env = std::getenv("RIDGE_CATALOG");
    std::error_code ec;
    if (env && *env && !std::filesystem::is_regular_file(env, ec))
      throw UsageError(fmt::format("$RIDGE_CATALOG is '{}', which is not an existing file: point it at a catalog "
                                   "JSON file, or unset it to use the built-in catalog",
                                   env));
    if (env && *env)
      s.active = parse_file(env, " (from $RIDGE_CATALOG)");
    else
      s.active = builtin_catalog();
  }
  return *s.active;
}

void load_catalog_file(const std::string& path) {
  auto entries = parse_file(path, "");
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.active = std::move(entries);
}

std::string catalog_keys() {
  std::string out;
  for (const auto& e : catalog()) out += (out.empty() ? "" : ", ") + e.key;
  return out;
}

const CatalogEntry& catalog_entry(const std::string& key) {
  const std::string wanted = lower(key);
  for (const auto& e : catalog())
    if (e.key == wanted) return e;
  throw UsageError(fmt::format("no device '{}' in the catalog; known devices: {}", key, catalog_keys()));
}

std::optional<CatalogEntry> match_device(const DeviceDescription& device) {
  if (device.name.empty()) return std::nullopt;
  const auto& entries = catalog();
  auto same_sms = [&](const CatalogEntry& e) { return device.sm_count <= 0 || e.sm_count == device.sm_count; };
  auto memory_gap = [&](const CatalogEntry& e) {
    // Datasheets round memory in decimal GB while the runtime reports bytes (GiB-ish): compare loosely.
    if (device.memory_bytes <= 0) return 0.0;
    return std::abs(std::log(double(device.memory_bytes) / e.memory_bytes));
  };

  const CatalogEntry* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& e : entries) {
    std::size_t len = 0;
    for (const auto& n : e.match_names)
      if (device.name.find(n) != std::string::npos) len = std::max(len, n.size());
    if (len == 0) continue;
    if (len > best_len || (len == best_len && memory_gap(e) < memory_gap(*best))) {
      best = &e;
      best_len = len;
    }
  }
  if (best) {
    if (!same_sms(*best)) return std::nullopt;
    return *best;
  }
  // No name matched: an entry with the same SM count and about the same memory.
  if (device.sm_count <= 0 || device.memory_bytes <= 0) return std::nullopt;
  for (const auto& e : entries)
    if (e.sm_count == device.sm_count && memory_gap(e) < std::log(1.15)) return e;
  return std::nullopt;
}

}  // namespace ridge
