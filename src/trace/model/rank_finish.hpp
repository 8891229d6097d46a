#pragma once
// The end of trace_program in a job of several ranks (src/trace/model/ranks.cpp; launch.cpp calls it).
#include <optional>

#include "ridge/trace/events.hpp"
#include "ridge/trace/launch.hpp"

namespace ridge::detail {

/// What trace_program does at the end for a job of several ranks: the rank's own file name, and
/// the merged trace: rank 0 waits up to options.merge_timeout_seconds for the other ranks' files
/// (not older than `started`, seconds since the epoch, less 2 s of launch skew), or, when the
/// program was the launcher (`ridge trace -- mpirun ...`), the rank files it left. Merge problems
/// become notes, never errors: the rank files stay and `ridge trace --merge` can merge them later.
void finish_rank_traces(const trace::ProgramTraceOptions& options, const std::optional<trace::DistributedInfo>& rank,
                        double started, trace::ProgramTrace& result);

}  // namespace ridge::detail
