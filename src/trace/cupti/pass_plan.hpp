#pragma once
// The pass plan of a metric set on one GPU chip, from CUPTI's Profiler Host API: which entries of
// the set the chip offers (an "a|b" entry: the first it offers), how many passes CUPTI schedules,
// and the metrics grouped pass by pass. Needs CUPTI, not a GPU: a chip name ("GH100") is enough.
#include <cstdint>
#include <string>
#include <vector>

#include "ridge/trace/counters.hpp"

namespace ridge::detail {

/// `availability`: the counter availability image of a context (nullptr offline). A `required`
/// entry the chip lacks throws ridge::Error; the others are named in metrics_not_offered.
/// `with_groups`: also group the metrics pass by pass (a Host API query per metric and group).
trace::CounterPassPlan plan_counter_passes(const std::string& chip, const std::vector<std::string>& entries,
                                           const std::vector<std::string>& required = {},
                                           const std::vector<std::uint8_t>* availability = nullptr,
                                           bool with_groups = true);

/// The chip name of CUDA device `device` ("GH100"); the driver must be initialized.
std::string counter_chip_name(int device);

}  // namespace ridge::detail
