// The CPU half of the ceilings: the one ceilings type, its JSON forms, the cache of measured
// ceilings, and the datasheet-vs-measured comparison. (The probes are in cuda/ceilings.cpp.)
#include "ridge/ceilings.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ridge/carried_over.hpp"
#include "ridge/catalog.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/measure.hpp"
#include "ridge/writers.hpp"

namespace ridge {

namespace {

constexpr const char* measured_schema = "ridge-ceilings-1";

CeilingsSource source_from_string(const std::string& s) {
  for (CeilingsSource c : {CeilingsSource::datasheet, CeilingsSource::measured, CeilingsSource::user})
    if (to_string(c) == s) return c;
  throw UsageError(fmt::format("ceilings source '{}' is not datasheet, measured or user", s));
}

}  // namespace

const std::vector<std::string>& ceiling_dtypes() {
  // In order of rising peak on a typical part.
  static const std::vector<std::string> dtypes = {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3"};
  return dtypes;
}

const std::vector<std::string>& peak_dtype_names() {
  static const std::vector<std::string> names = {"fp64", "fp64_vector", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp4"};
  return names;
}

std::string dtype_title(const std::string& dtype) {
  if (dtype == "fp8_e4m3") return "FP8";
  std::string s = dtype;
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string to_string(CeilingsSource source) {
  switch (source) {
    case CeilingsSource::datasheet: return "datasheet";
    case CeilingsSource::measured: return "measured";
    case CeilingsSource::user: return "user";
  }
  return "unknown";
}

// ---- DeviceCeilings --------------------------------------------------------------------------

namespace {
// The names of a peak dtype that DType does not have (the catalog's NVFP4 and FP64 vector peaks).
std::optional<std::string> peak_only_dtype(const std::string& name) {
  if (name == "fp4" || name == "nvfp4" || name == "float4_e2m1fn_x2" || name == "e2m1") return "fp4";
  if (name == "fp64_vector") return name;
  return std::nullopt;
}
}  // namespace

std::string peak_dtype_name(const std::string& name) {
  if (auto only = peak_only_dtype(name)) return *only;
  try {
    return to_string(dtype_from_string(name));
  } catch (const UsageError& e) {  // the DType names, and the peak-only ones
    throw UsageError(fmt::format("{}; peaks also: fp4 (nvfp4), fp64_vector", e.what()));
  }
}

double peak_dtype_bytes(const std::string& name) {
  const std::string canonical = peak_dtype_name(name);
  if (canonical == "fp4") return 0.5;
  if (canonical == "fp64_vector") return 8;
  return bytes_per_element(dtype_from_string(canonical));
}

double DeviceCeilings::peak_flops(const std::string& dtype) const {
  std::string name = dtype;
  try {
    name = peak_dtype_name(dtype);
  } catch (const UsageError&) {  // an unknown name has no peak
  }
  auto it = peak_flops_per_s.find(name);
  return it == peak_flops_per_s.end() ? 0 : it->second;
}

std::string peak_phrase(const DeviceCeilings& c, const std::string& dtype) {
  const std::string source = c.source_text.empty() ? to_string(c.source) : c.source_text;
  return fmt::format("the {} peak of {} {}{}", dtype_title(dtype), format_flops(c.peak_flops(dtype)),
                     c.source == CeilingsSource::datasheet ? "from the " : "", source);
}

std::vector<std::string> raise_to_attained(DeviceCeilings& c, const std::vector<Record>& records) {
  std::vector<std::string> notes;
  if (c.source != CeilingsSource::measured) return notes;
  // Only a rate the work was timed at can raise a ceiling: not the unsynchronized wall clock (it
  // times the launch queue), a trace's counters, a record its producer marks informational or
  // one whose output check failed.
  const auto attained = [](const Record& r) {
    return r.flops > 0 && is_timer(r.method) && r.method != Method::wall_naive && !(r.gate && r.gate->informational) &&
           r.verification != "failed";
  };
  for (auto& [dtype, peak] : c.peak_flops_per_s) {
    const Record* best = nullptr;
    for (const auto& r : records)
      if (to_string(r.dtype) == dtype && attained(r) && r.flops_per_s() > peak && (!best || r.flops_per_s() > best->flops_per_s()))
        best = &r;
    if (!best) continue;
    notes.push_back(fmt::format("The measured {} peak ({}, {}) is below the {} that {} ({}) attained in this run: a "
                                "ceiling cannot sit below an attained rate, so it is raised to {}.",
                                dtype_title(dtype), format_flops(peak), c.source_text, format_flops(best->flops_per_s()),
                                best->name, params_text(best->params), format_flops(best->flops_per_s())));
    peak = best->flops_per_s();
  }
  return notes;
}

std::optional<double> DeviceCeilings::peak(DType dtype) const {
  const double p = peak_flops(to_string(dtype));
  return p > 0 ? std::optional<double>(p) : std::nullopt;
}

double DeviceCeilings::highest_peak_flops() const {
  double best = 0;
  for (const auto& [dtype, rate] : peak_flops_per_s) best = std::max(best, rate);
  return best;
}

double DeviceCeilings::roof_for(const std::string& dtype) const {
  if (!dtype.empty()) peak_dtype_name(dtype);  // an unknown name is a UsageError listing the accepted ones
  if (double r = peak_flops(dtype); r > 0) return r;
  std::string listed;
  for (const auto& [name, rate] : peak_flops_per_s)
    if (rate > 0) listed += (listed.empty() ? "" : ", ") + name;
  const std::string where = source_text.empty() ? to_string(source) + " ceilings" : source_text;
  if (dtype.empty())
    throw UsageError(fmt::format("an operation without a dtype has no roof: name its dtype (one of {})",
                                 listed.empty() ? "none known" : listed));
  // Another dtype's peak would be a wrong answer: an operation runs on its own dtype's units.
  throw UsageError(fmt::format("dtype '{}' has no peak in {}: it lists {}; use a device that has {} or give "
                               "ceilings with a '{}' peak",
                               dtype, where, listed.empty() ? "no peak at all" : listed, dtype_title(dtype), dtype));
}

double DeviceCeilings::ridge_point(const std::string& dtype) const {
  const double p = peak_flops(dtype);
  return p > 0 && memory_bytes_per_s > 0 ? p / memory_bytes_per_s : 0;
}

double DeviceCeilings::ridge_point_of(const std::string& dtype) const {
  const double roof = roof_for(dtype);
  if (!(memory_bytes_per_s > 0))
    throw UsageError(fmt::format("{} give no memory bandwidth, so no ridge point",
                                 source_text.empty() ? "these ceilings" : source_text));
  return roof / memory_bytes_per_s;
}

bool DeviceCeilings::usable() const { return memory_bytes_per_s > 0 && highest_peak_flops() > 0; }

void DeviceCeilings::validate() const {
  if (!std::isfinite(memory_bytes_per_s) || !(memory_bytes_per_s > 0))
    throw UsageError(fmt::format("memory_bytes_per_s must be a finite number > 0 (bytes/s), got {}", memory_bytes_per_s));
  if (!std::isfinite(l2_bytes_per_s) || !(l2_bytes_per_s >= 0))
    throw UsageError(fmt::format("l2_bytes_per_s must be a finite number >= 0 (0 = unknown), got {}", l2_bytes_per_s));
  if (!std::isfinite(empty_launch_us) || !(empty_launch_us >= 0))
    throw UsageError(fmt::format("empty_launch_us must be a finite number >= 0 (0 = unknown), got {}", empty_launch_us));
  const auto& names = peak_dtype_names();
  for (const auto& [dtype, rate] : peak_flops_per_s) {
    if (std::find(names.begin(), names.end(), dtype) == names.end())
      throw UsageError(fmt::format("peak_flops_per_s: '{}' is not a known dtype name ({})", dtype, fmt::join(names, ", ")));
    if (!std::isfinite(rate) || !(rate > 0))
      throw UsageError(fmt::format("peak_flops_per_s['{}'] must be a finite number > 0 (FLOP/s), got {}", dtype, rate));
  }
}

nlohmann::json to_json(const DeviceCeilings& c) {
  nlohmann::json j{{"source", to_string(c.source)},
                   {"source_text", c.source_text},
                   {"memory_bytes_per_s", c.memory_bytes_per_s},
                   {"peak_flops_per_s", c.peak_flops_per_s}};
  if (c.l2_bytes_per_s > 0) j["l2_bytes_per_s"] = c.l2_bytes_per_s;
  if (c.empty_launch_us > 0) j["empty_launch_us"] = c.empty_launch_us;
  return j;
}

DeviceCeilings device_ceilings_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw UsageError("device ceilings must be a JSON object");
  DeviceCeilings c;
  try {
    c.source = source_from_string(j.value("source", std::string("datasheet")));
    c.source_text = j.value("source_text", std::string());
    c.memory_bytes_per_s = j.value("memory_bytes_per_s", 0.0);
    c.l2_bytes_per_s = j.value("l2_bytes_per_s", 0.0);
    c.peak_flops_per_s = j.value("peak_flops_per_s", std::map<std::string, double>{});
    c.empty_launch_us = j.value("empty_launch_us", 0.0);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("malformed device ceilings: {}", e.what()));
  }
  c.validate();
  return c;
}

// ---- the cache -------------------------------------------------------------------------------

std::filesystem::path cache_folder() {
  if (const char* d = std::getenv("RIDGE_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "ridge";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "ridge";
  return std::filesystem::temp_directory_path() / "ridge-cache";
}

std::string ceilings_cache_path(const std::string& uuid) {
  std::string safe = uuid.empty() ? "unknown-device" : uuid;
  for (auto& c : safe)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) c = '_';
  return (cache_folder() / fmt::format("ceilings-{}.json", safe)).string();
}

std::optional<MeasuredCeilings> cached_ceilings(const std::string& uuid, std::string* problem) {
  const std::string path = ceilings_cache_path(uuid);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  try {
    MeasuredCeilings c = ceilings_from_json(read_json_file(path));
    if (c.device_uuid != uuid)
      throw UsageError(fmt::format("it holds the ceilings of another device ({})", c.device_uuid));
    c.from_cache = true;
    c.cache_file = path;
    // Not measured in this run: compare and history show these records and never judge them.
    for (Record& r : c.records) mark_carried_over(r, {path, c.measured_at_utc});
    return c;
  } catch (const std::exception& e) {
    if (problem) *problem = fmt::format("{}: {}", path, e.what());
    return std::nullopt;
  }
}

namespace {

/// An exclusive flock on a file, held for the object's life. flock locks are released by the
/// kernel when the process dies, so a crashed measurement never blocks the next one.
class ExclusiveFileLock {
 public:
  explicit ExclusiveFileLock(const std::filesystem::path& path) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ < 0) return;  // a read-only cache folder: measure without the lock
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    waited_ = true;
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~ExclusiveFileLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  ExclusiveFileLock(const ExclusiveFileLock&) = delete;
  ExclusiveFileLock& operator=(const ExclusiveFileLock&) = delete;
  bool waited() const { return waited_; }

 private:
  int fd_ = -1;
  bool waited_ = false;
};

}  // namespace

MeasuredCeilings cached_or_measured_ceilings(const std::string& uuid, bool refresh,
                                             const std::function<MeasuredCeilings()>& measure, bool* waited) {
  if (waited) *waited = false;
  const std::string path = ceilings_cache_path(uuid);
  std::string cache_problem;
  if (!refresh)
    if (auto cached = cached_ceilings(uuid, &cache_problem)) return *cached;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const ExclusiveFileLock lock(path + ".lock");
  if (waited) *waited = lock.waited();
  // Another process measured while this one waited: its numbers are as fresh as ours would be.
  if (lock.waited())
    if (auto cached = cached_ceilings(uuid, &cache_problem)) {
      cached->notes.push_back("another ridge process was measuring this device: these are its numbers");
      return *cached;
    }
  MeasuredCeilings c = measure();
  if (!cache_problem.empty())
    c.notes.push_back(fmt::format("measured again: the cache file {} could not be used", cache_problem));
  c.cache_file = path;
  try {
    write_json(path, to_json(c));
  } catch (const std::exception& e) {
    c.notes.push_back(fmt::format("not cached: {}", e.what()));
  }
  return c;
}

// ---- the cache file's form ---------------------------------------------------------------------
// Kept as it was before DeviceCeilings existed (flat keys), so cache files written by older
// versions load unchanged: fp32 has its own key, the GEMM-measured dtypes share tensor_flops_per_s.

nlohmann::json to_json(const MeasuredCeilings& c) {
  nlohmann::json records = nlohmann::json::array();
  for (const auto& r : c.records) records.push_back(to_json(r));
  std::map<std::string, double> tensor = c.ceilings.peak_flops_per_s;
  tensor.erase("fp32");
  return {
      {"schema", measured_schema},
      {"device_uuid", c.device_uuid},
      {"device_name", c.device_name},
      {"measured_at_utc", c.measured_at_utc},
      {"measure_seconds", c.measure_seconds},
      {"hbm_bytes_per_s", c.ceilings.memory_bytes_per_s},
      {"hbm_kernel", c.hbm_kernel},
      {"l2_bytes_per_s", c.ceilings.l2_bytes_per_s},
      {"fp32_flops_per_s", c.ceilings.peak_flops("fp32")},
      {"fp32_observed_sm_mhz", c.fp32_observed_sm_mhz},
      {"max_sm_clock_mhz", c.max_sm_clock_mhz},
      {"tensor_flops_per_s", tensor},
      {"empty_launch_us", c.ceilings.empty_launch_us},
      {"empty_launch_graph_us", c.empty_launch_graph_us},
      {"clocks", to_json(c.clocks)},
      {"notes", c.notes},
      {"records", records},
  };
}

MeasuredCeilings ceilings_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw UsageError("measured ceilings must be a JSON object");
  if (j.value("schema", std::string()) != measured_schema)
    throw UsageError(fmt::format("measured ceilings have schema '{}', expected '{}'",
                                 j.value("schema", std::string("none")), measured_schema));
  MeasuredCeilings c;
  DeviceCeilings& d = c.ceilings;
  d.source = CeilingsSource::measured;
  try {
    c.device_uuid = j.at("device_uuid").get<std::string>();
    c.device_name = j.at("device_name").get<std::string>();
    c.measured_at_utc = j.at("measured_at_utc").get<std::string>();
    c.measure_seconds = j.value("measure_seconds", 0.0);
    d.memory_bytes_per_s = j.at("hbm_bytes_per_s").get<double>();
    c.hbm_kernel = j.value("hbm_kernel", std::string());
    d.l2_bytes_per_s = j.at("l2_bytes_per_s").get<double>();
    for (const auto& [dtype, rate] : j.at("tensor_flops_per_s").get<std::map<std::string, double>>())
      if (rate > 0) d.peak_flops_per_s[dtype] = rate;
    const double fp32 = j.at("fp32_flops_per_s").get<double>();
    if (fp32 > 0) d.peak_flops_per_s["fp32"] = fp32;
    c.fp32_observed_sm_mhz = j.value("fp32_observed_sm_mhz", 0.0);
    c.max_sm_clock_mhz = j.value("max_sm_clock_mhz", 0.0);
    d.empty_launch_us = j.value("empty_launch_us", 0.0);
    c.empty_launch_graph_us = j.value("empty_launch_graph_us", 0.0);
    if (j.contains("clocks")) c.clocks = clock_reading_from_json(j["clocks"]);
    c.notes = j.value("notes", std::vector<std::string>{});
    if (j.contains("records"))
      for (const auto& r : j["records"]) c.records.push_back(record_from_json(r));
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("malformed measured ceilings: {}", e.what()));
  }
  if (!(d.memory_bytes_per_s > 0) || !(d.peak_flops("fp32") > 0))
    throw UsageError("measured ceilings lack the HBM bandwidth or the FP32 peak");
  d.validate();
  d.source_text = fmt::format("measured on this GPU ({})", c.measured_at_utc);
  return c;
}

// ---- datasheet vs measured -----------------------------------------------------------------------

double CeilingComparison::fraction_of_datasheet() const {
  return measured > 0 && datasheet > 0 ? measured / datasheet : std::numeric_limits<double>::quiet_NaN();
}

std::vector<CeilingComparison> compare_ceilings(const std::optional<CatalogEntry>& datasheet,
                                                const std::optional<MeasuredCeilings>& measured) {
  const DeviceCeilings none;
  const DeviceCeilings& s = datasheet ? datasheet->ceilings : none;
  const DeviceCeilings& m = measured ? measured->ceilings : none;
  std::vector<CeilingComparison> rows;
  CeilingComparison memory{"memory bandwidth", "", true, s.memory_bytes_per_s, m.memory_bytes_per_s, ""};
  if (measured) memory.note = fmt::format("best of copy/read/triad: {}, bytes = reads + writes", measured->hbm_kernel);
  rows.push_back(memory);
  if (measured || s.l2_bytes_per_s > 0)
    rows.push_back({"L2 bandwidth", "", true, s.l2_bytes_per_s, m.l2_bytes_per_s,
                    measured ? "working set about 1/4 of the L2" : ""});
  for (const std::string& d : ceiling_dtypes()) {
    CeilingComparison row{dtype_title(d) + " peak", d, false, s.peak_flops(d), m.peak_flops(d), ""};
    if (row.datasheet <= 0 && row.measured <= 0) continue;
    if (measured && d == "fp32" && measured->fp32_observed_sm_mhz > 0 && measured->max_sm_clock_mhz > 0 &&
        row.datasheet > 0) {
      // The datasheet's FP32 peak is at the maximum clock: scale it to the clock the FMA kernel saw.
      const double at_clock = row.datasheet * measured->fp32_observed_sm_mhz / measured->max_sm_clock_mhz;
      row.note = fmt::format("FMA chains; SM clock {:.0f} of {:.0f} MHz: {:.0f}% of the datasheet at that clock",
                             measured->fp32_observed_sm_mhz, measured->max_sm_clock_mhz, 100 * row.measured / at_clock);
    } else if (measured && d != "fp32" && d != "fp64" && row.measured > 0) {
      row.note = "cuBLASLt GEMM 8192^3";
    } else if (measured && row.measured <= 0 && d != "fp64") {
      row.note = "not measured";
    }
    rows.push_back(row);
  }
  return rows;
}

// ---- what a command compares with ----------------------------------------------------------------

CeilingsMode ceilings_mode_from_string(const std::string& mode) {
  if (mode == "auto") return CeilingsMode::cached;
  if (mode == "measure") return CeilingsMode::measure;
  if (mode == "refresh") return CeilingsMode::refresh;
  if (mode == "none") return CeilingsMode::none;
  throw UsageError(fmt::format("ceilings must be auto, measure, refresh or none, got '{}'", mode));
}

std::optional<DeviceCeilings> CeilingsLookup::datasheet_ceilings() const {
  if (!datasheet) return std::nullopt;
  return datasheet->ceilings;
}

std::optional<DeviceCeilings> CeilingsLookup::best() const {
  if (measured) return measured->ceilings;
  return datasheet_ceilings();
}

}  // namespace ridge
