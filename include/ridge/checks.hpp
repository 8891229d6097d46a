#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ridge/ceilings.hpp"
#include "ridge/dtype.hpp"
#include "ridge/measure.hpp"
#include "ridge/result.hpp"

namespace ridge {

/// A record for a measurement: name, method, dtype, params, samples and counted work.
Record to_record(const Measurement& m, const std::string& name, const std::string& dtype, nlohmann::json params,
                 double bytes = 0, double flops = 0);

/// The highest dense peak (FLOP/s) of any GPU ridge knows for this dtype: a rate above it is
/// physically impossible on any device.
double fastest_known_peak_flops(DType dtype);

/// Plausibility warnings for a record, appended to record.warnings and returned:
///  - "impossible": faster than the roofline floor for its bytes and FLOPs under `ceilings`: their
///    memory bandwidth and the peak of the record's dtype (the highest peak when that dtype has none);
///  - high spread (CV above `cv_limit`);
///  - working set fits in the L2 (when `l2_bytes` > 0 and params has "working_set_bytes");
///  - SM clock moved during sampling (extra.clocks_during from a ClockMonitor: more than 5%),
///    or by more than 10% between start and end.
std::vector<std::string> add_plausibility_warnings(Record& record, const std::optional<DeviceCeilings>& ceilings,
                                                   double l2_bytes = 0, double cv_limit = 0.10);

}  // namespace ridge
