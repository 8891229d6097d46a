// How the CUPTI collector reads an activity record's timestamps, decided apart from CUPTI so that
// it is unit-tested without a GPU (cupti/collector.cpp uses it).
#pragma once

#include "ridge/trace/events.hpp"

namespace ridge::detail {

enum class RecordTimes {
  complete,  ///< both timestamps set, end >= start
  missing,   ///< a timestamp is 0: the work was unfinished when tracing stopped
  reversed,  ///< end < start: a broken record, never a span
};

RecordTimes classify_record_times(trace::Nanoseconds start, trace::Nanoseconds end);

/// Reasons under which the collector counts records in Trace::rejected_events.
inline constexpr const char* reversed_gpu_records =
    "dropped: CUPTI kernel, copy or memset records that end before they begin";
inline constexpr const char* reversed_host_records =
    "kept with zero duration: CUPTI API, synchronization or NVTX records that end before they begin";

}  // namespace ridge::detail
