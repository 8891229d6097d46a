// NVTX v3 (header-only, from the CUDA toolkit): ranges and marks that CUPTI records.
#include <nvtx3/nvToolsExt.h>

#include "ridge/trace/tracer.hpp"

namespace ridge {

NvtxRange::NvtxRange(const char* name) { nvtxRangePushA(name); }

NvtxRange::~NvtxRange() { nvtxRangePop(); }

void nvtx_mark(const char* name) { nvtxMarkA(name); }

}  // namespace ridge
