// trace_analyze FILE: what `ridge trace --analyze FILE` does in the library (analyze_trace_file,
// then format_analysis), without the CLI around it, so that the same source builds against an
// older ridge_core for before/after figures (bench/trace_scale.sh). CPU only.
#include <cstdio>
#include <exception>

#include "ridge/trace/analysis.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: trace_analyze FILE\n");
    return 2;
  }
  try {
    const ridge::trace::TraceFileAnalysis f = ridge::trace::analyze_trace_file(argv[1]);
    std::fputs(ridge::trace::format_analysis(f.analysis).c_str(), stdout);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace_analyze: %s\n", e.what());
    return 1;
  }
  return 0;
}
