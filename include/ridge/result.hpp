#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ridge/dtype.hpp"
#include "ridge/measure.hpp"
#include "ridge/record_keys.hpp"
#include "ridge/stats.hpp"

namespace ridge {

/// Version of the JSON layout written by `to_json`; bump on any incompatible change.
inline constexpr int result_schema_version = 1;

/// One reading of the device's clocks and sensors. Fields NVML could not provide are negative.
struct ClockReading {
  double sm_mhz = -1;
  double memory_mhz = -1;
  double power_w = -1;
  double temperature_c = -1;
  std::int64_t throttle_reasons = -1;  ///< NVML clock-event reason bit mask
  std::string source = "none";         ///< "nvml", "device_attributes" or "none"
};

/// What a device is, as read from the CUDA runtime (and NVML where present).
struct DeviceDescription {
  int index = 0;
  std::string name;
  std::string uuid;
  int compute_capability_major = 0, compute_capability_minor = 0;
  int sm_count = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t memory_bytes = 0;
  int memory_bus_bits = 0;
  double max_sm_clock_mhz = 0;      ///< from cudaDevAttrClockRate
  double max_memory_clock_mhz = 0;  ///< from cudaDevAttrMemoryClockRate
  int driver_version = 0;           ///< e.g. 13000 for CUDA 13.0
  int runtime_version = 0;
  std::string catalog_key;  ///< the datasheet entry it matched, empty if none
};

/// Where and how a result file was produced.
struct RunContext {
  std::string tool = "ridge";
  std::string tool_version;
  std::string git_sha;
  std::vector<std::string> argv;
  std::string timestamp_utc;  ///< ISO 8601
  std::string hostname;
  std::optional<DeviceDescription> device;
  ClockReading clocks_start, clocks_end;
  nlohmann::json predictions = nlohmann::json::object();  ///< user's --predict KEY=VALUE
};

/// How `ridge compare` may judge a record, as the code that measured it says. A record without
/// one is judged by the comparison's threshold alone.
struct RecordGate {
  /// Never judged: a method shown for what it demonstrates, or a number dominated by the host's
  /// launch latency, which moves from process to process.
  bool informational = false;
  /// A relative change of the median at or below this never counts as a regression or an
  /// improvement (the number's known run-to-run spread); 0 = none.
  double min_threshold = 0;
  std::string reason;  ///< why, in words (shown in the comparison)
};

/// The one record type for everything ridge measures. Times are milliseconds per operation.
struct Record {
  std::string name;    ///< what was measured, e.g. "matmul", "bandwidth.add"
  Method method = Method::cuda_events;  ///< how the samples were obtained (see measure.hpp)
  std::optional<DType> dtype;           ///< none when not applicable (JSON: "")
  nlohmann::json params = nlohmann::json::object();  ///< shape and settings, e.g. {"n": 4096} (keys: param_key)
  std::vector<double> samples_ms;                      ///< raw samples, per operation
  Summary summary;                                     ///< of samples_ms
  int repeats_per_sample = 1;
  bool l2_flushed = false;         ///< cold: L2 flushed before each sample
  double bytes = 0;                ///< bytes moved per operation (reads + writes); 0 = n/a
  double flops = 0;                ///< floating-point operations per operation; 0 = n/a
  std::string verification = "not_checked";  ///< "passed", "failed", "not_checked"
  std::vector<std::string> warnings;
  ClockReading clocks_start, clocks_end;
  nlohmann::json extra = nlohmann::json::object();  ///< derived values (keys: extra_key)
  std::optional<RecordGate> gate;  ///< how compare judges it; none = by the threshold alone

  double median_s() const { return summary.median * 1e-3; }
  /// bytes / median time, 0 when bytes are not counted.
  double bytes_per_s() const;
  /// flops / median time, 0 when flops are not counted.
  double flops_per_s() const;
  /// flops / bytes, 0 when either is not counted.
  double intensity_flop_per_byte() const;
};

/// The record's dtype, for code that needs one (a GEMM's, a collective's); throws UsageError naming
/// the record when it has none.
DType dtype_of(const Record& record);

/// Builds a record's summary from its samples (throws UsageError on empty/NaN samples).
void finalize(Record& record);

/// A result file: context plus records.
struct ResultSet {
  RunContext context;
  std::vector<Record> records;
};

nlohmann::json to_json(const ClockReading& c);
nlohmann::json to_json(const DeviceDescription& d);
nlohmann::json to_json(const RecordGate& g);
nlohmann::json to_json(const Record& r);
nlohmann::json to_json(const ResultSet& s);
/// Readers of the JSON that to_json writes. Each checks every field's type and range and throws
/// UsageError naming the JSON path of the first bad value, prefixed by `where` (e.g.
/// "records[3].samples_ms[7]: expected a positive finite number, got -1"). Absent or null
/// optional fields take their defaults.
ClockReading clock_reading_from_json(const nlohmann::json& j, const std::string& where = "clocks");
DeviceDescription device_from_json(const nlohmann::json& j, const std::string& where = "device");
RecordGate record_gate_from_json(const nlohmann::json& j, const std::string& where = "gate");
/// A record needs a name and at least one sample; every sample must be a positive finite time in
/// ms (>= 0 for method "none": a check that carries no time). `method` (absent: cuda_events) and
/// `dtype` ("" or absent: none) must be the to_string name of a Method or DType.
Record record_from_json(const nlohmann::json& j, const std::string& where = "record");
/// Parses a ridge result file's JSON (docs/results-schema.md); throws UsageError naming what is wrong.
ResultSet result_set_from_json(const nlohmann::json& j);

/// Context filled with version, git sha, argv, hostname and the current UTC time.
RunContext make_context(int argc, const char* const* argv);
std::string utc_timestamp_now();

}  // namespace ridge
