#include "ridge/trace/trace_file.hpp"

#include "ridge/trace/chrome_json.hpp"
#include "ridge/trace/perfetto.hpp"
#include "trace/model/chunked_file.hpp"

namespace ridge::trace {

namespace {

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// A .pftrace name, or a file whose first bytes are a Perfetto TracePacket (field 1, length
/// delimited: 0x0a, then a length that is not JSON's whitespace or opening bracket).
bool is_perfetto_file(const std::string& path) {
  if (ends_with(path, ".pftrace") || ends_with(path, ".pftrace.gz")) return true;
  detail::ChunkedFile file(path);
  const std::string head = file.head(2);
  if (head.size() < 2 || head[0] != '\x0a') return false;
  const char second = head[1];
  return second != ' ' && second != '\t' && second != '\r' && second != '\n' && second != '{' && second != '[';
}

}  // namespace

TraceFormat resolve_trace_format(TraceFormat format, const std::string& path) {
  if (format != TraceFormat::from_file_name) return format;
  return ends_with(path, ".pftrace") ? TraceFormat::perfetto : TraceFormat::chrome_json;
}

void write_trace(const Trace& trace, const std::string& path, TraceFormat format) {
  if (resolve_trace_format(format, path) == TraceFormat::perfetto) write_perfetto_trace(trace, path);
  else write_chrome_trace(trace, path);
}

Trace load_trace(const std::string& path) {
  return is_perfetto_file(path) ? load_perfetto_trace(path) : load_chrome_trace(path);
}

bool trace_has_counters(const std::string& path) {
  try {
    return is_perfetto_file(path) ? perfetto_trace_has_counters(path) : chrome_trace_has_counters(path);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace ridge::trace
