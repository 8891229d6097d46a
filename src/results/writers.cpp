#include "ridge/writers.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>

#include "results/gzip.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"

namespace ridge {

namespace {

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}


std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

}  // namespace

std::string params_text(const nlohmann::json& params) {
  if (!params.is_object()) return params.dump();
  std::string out;
  for (auto it = params.begin(); it != params.end(); ++it) {
    if (!out.empty()) out += ' ';
    out += it.key() + "=" + (it->is_string() ? it->get<std::string>() : it->dump());
  }
  return out;
}

std::string to_csv(const ResultSet& set) {
  std::ostringstream out;
  out << "name,method,dtype,params,count,median_ms,min_ms,max_ms,mean_ms,stddev_ms,cv,p10_ms,p90_ms,"
         "median_ci_low_ms,median_ci_high_ms,repeats_per_sample,l2_flushed,bytes,flops,bytes_per_s,"
         "flops_per_s,intensity_flop_per_byte,verification,warnings\n";
  for (const auto& r : set.records) {
    const auto& s = r.summary;
    out << csv_escape(r.name) << ',' << csv_escape(to_string(r.method)) << ',' << csv_escape(to_string(r.dtype)) << ','
        << csv_escape(params_text(r.params)) << ','
        << fmt::format("{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.6g},{:.9g},{:.9g},{:.9g},{:.9g},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},",
                       s.count, s.median, s.min, s.max, s.mean, s.stddev, s.cv, s.p10, s.p90,
                       s.median_ci_low, s.median_ci_high, r.repeats_per_sample, r.l2_flushed ? 1 : 0,
                       r.bytes, r.flops, r.bytes_per_s(), r.flops_per_s(), r.intensity_flop_per_byte())
        << csv_escape(r.verification) << ',' << csv_escape(join(r.warnings, "; ")) << '\n';
  }
  return out.str();
}

std::string to_markdown(const ResultSet& set) {
  std::ostringstream out;
  const auto& c = set.context;
  out << "# ridge results\n\n";
  out << fmt::format("ridge {} ({}), {}", c.tool_version, c.git_sha, c.timestamp_utc);
  if (c.device) out << fmt::format(", {} (CC {}.{}, {} SMs)", c.device->name, c.device->compute_capability_major,
                                   c.device->compute_capability_minor, c.device->sm_count);
  out << "\n\n";
  // One table per name, names in order of first appearance (hashed: linear in the records).
  std::vector<std::string> names;
  std::unordered_map<std::string, std::vector<const Record*>> by_name;
  for (const auto& r : set.records) {
    auto& group = by_name[r.name];
    if (group.empty()) names.push_back(r.name);
    group.push_back(&r);
  }
  for (const auto& name : names) {
    out << "## " << name << "\n\n";
    out << "| params | dtype | method | median ms | min ms | max ms | CV | GB/s | TFLOP/s | check | warnings |\n";
    out << "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|\n";
    for (const Record* record : by_name[name]) {
      const Record& r = *record;
      const auto& s = r.summary;
      out << fmt::format("| {} | {} | {} | {} | {} | {} | {:.1f}% | {} | {} | {} | {} |\n", params_text(r.params),
                         to_string(r.dtype), to_string(r.method), format_ms(s.median), format_ms(s.min), format_ms(s.max), s.cv * 100,
                         r.bytes > 0 ? fmt::format("{:.1f}", r.bytes_per_s() / 1e9) : "",
                         r.flops > 0 ? fmt::format("{:.2f}", r.flops_per_s() / 1e12) : "", r.verification,
                         join(r.warnings, "; "));
    }
    out << "\n";
  }
  return out.str();
}

namespace {

// /dev/stdout, /dev/fd/N and /proc/self/fd/N name an open file of this process (their links read
// "pipe:[123]" and the like): the kernel follows them, ridge must not, and a regular file behind
// one is appended to, never replaced or truncated (`>> log` keeps the log).
bool names_a_descriptor(const std::filesystem::path& path) {
  const std::string& p = path.native();
  return p.rfind("/proc/", 0) == 0 || p.rfind("/dev/fd/", 0) == 0 || p == "/dev/stdout" || p == "/dev/stderr";
}

// Follows a chain of symbolic links to the path that gets the content; a dangling link yields
// the path it points to (which is then created). Relative targets are relative to the link's folder.
std::filesystem::path follow_links(std::filesystem::path path) {
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (names_a_descriptor(path) || ::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::read_symlink(path, ec);
    if (ec) throw Error(fmt::format("cannot read the symbolic link {}: {}", path.string(), ec.message()));
    path = target.is_absolute() ? target : path.parent_path() / target;
  }
  throw UsageError(fmt::format("{}: too many levels of symbolic links (a loop?)", path.string()));
}

void write_all(int fd, const std::string& content, const std::string& shown) {
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw Error(fmt::format("writing {} failed: {}{}", shown, std::strerror(errno),
                              errno == ENOSPC ? " (the disk is full: free space or write elsewhere)" : ""));
    done += static_cast<std::size_t>(n);
  }
}

void write_in_place(const std::filesystem::path& path, const std::string& content, const std::string& shown) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | (names_a_descriptor(path) ? O_APPEND : 0));
  if (fd < 0) throw Error(fmt::format("cannot open {} for writing: {}", shown, std::strerror(errno)));
  try {
    write_all(fd, content, shown);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

// Temporary file beside `target` (same file system, so rename is atomic), then rename over it. A
// file that existed keeps its permission bits; a new one gets 0666 less the umask, as open() gives.
void replace_atomically(const std::filesystem::path& target, const std::string& content, const std::string& shown) {
  const std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  static std::atomic<unsigned> counter{0};
  std::filesystem::path temporary;
  int fd = -1;
  for (int attempt = 0; fd < 0; ++attempt) {
    temporary = folder / fmt::format(".{}.tmp.{}.{}", target.filename().string(), static_cast<long>(::getpid()), counter++);
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt > 100))
      throw Error(fmt::format("cannot write {}: cannot create a temporary file in {}: {}", shown, folder.string(),
                              std::strerror(errno)));
  }
  try {
    struct stat old {};
    if (::stat(target.c_str(), &old) == 0 && ::fchmod(fd, old.st_mode & 07777) != 0)
      throw Error(fmt::format("cannot give {} the permissions of {}: {}", temporary.string(), shown, std::strerror(errno)));
    write_all(fd, content, shown);
    if (::fsync(fd) != 0 && errno != EINVAL)
      throw Error(fmt::format("writing {} failed: {}", shown, std::strerror(errno)));
    ::close(fd);
    fd = -1;
    if (std::rename(temporary.c_str(), target.c_str()) != 0)
      throw Error(fmt::format("cannot move {} into place as {}: {}", temporary.string(), shown, std::strerror(errno)));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temporary.c_str());
    throw;
  }
}

}  // namespace

OutputTarget resolve_output(const std::string& path) {
  if (path.empty()) throw UsageError("an output path is empty; give a file name, or '-' for stdout");
  if (path == "-") return {OutputKind::standard_output, {}};
  const std::filesystem::path target = follow_links(path);
  const std::string shown = target.string() == path ? path : fmt::format("{} (the link's target {})", path, target.string());
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0) {
    if (errno != ENOENT)
      throw UsageError(fmt::format("cannot write {}: {}", shown, std::strerror(errno)));
    if (path.back() == '/')
      throw UsageError(fmt::format("{} names a folder; give a file name inside it, e.g. {}results.json", path, path));
    return {OutputKind::replace_atomically, target};
  }
  if (S_ISDIR(st.st_mode))
    throw UsageError(fmt::format("{} is a folder; give a file name inside it, e.g. {}/results.json", shown,
                                 path.back() == '/' ? path.substr(0, path.size() - 1) : path));
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return {OutputKind::in_place, target};
  if (S_ISREG(st.st_mode))
    return {names_a_descriptor(target) ? OutputKind::in_place : OutputKind::replace_atomically, target};
  throw UsageError(fmt::format("{} is a {}; ridge writes regular files, character devices (/dev/null) and named pipes",
                               shown, S_ISBLK(st.st_mode) ? "block device" : "socket"));
}

void write_text(const std::string& path, const std::string& content) {
  const OutputTarget target = resolve_output(path);
  if (target.kind == OutputKind::standard_output) {
    std::cout << content << std::flush;
    if (!std::cout) throw Error("writing to stdout failed (closed pipe or full disk?)");
    return;
  }
  if (target.kind == OutputKind::in_place) {
    write_in_place(target.path, content, path);
    return;
  }
  if (target.path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(target.path.parent_path(), ec);
    if (ec)
      throw Error(fmt::format("cannot create folder {} for {}: {}", target.path.parent_path().string(), path, ec.message()));
  }
  replace_atomically(target.path, content, path);
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

void write_json(const std::string& path, const nlohmann::json& j) { write_text(path, json_text(j) + "\n"); }

std::string read_text(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UsageError(fmt::format("cannot read {}: it is a folder, not a file", path.string()));
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  std::string text;
  const auto size = std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
  if (!ec && size > 0) {  // one read into place: a 300 MB result file is not copied twice
    text.resize(size);
    f.read(text.data(), static_cast<std::streamsize>(size));
    text.resize(static_cast<std::size_t>(f.gcount()));
  }
  if (!f.eof()) {  // FIFOs and devices have no size; a file that grew meanwhile is read to its end
    std::ostringstream rest;
    rest << f.rdbuf();
    text += rest.str();
  }
  if (f.bad()) throw UsageError(fmt::format("reading {} failed: {}", path.string(), std::strerror(errno)));
  return text;
}

namespace {

// nlohmann's DOM parser, counting how deep objects and arrays nest and stopping past the limit
// before anything recursive (copy, dump, destruction of a deep tree) can run out of stack.
class DepthBoundedParser : public nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
 public:
  DepthBoundedParser(nlohmann::json& root, int limit) : json_sax_dom_parser(root), limit_(limit) {}
  bool start_object(std::size_t n) { return deeper() && json_sax_dom_parser::start_object(n); }
  bool start_array(std::size_t n) { return deeper() && json_sax_dom_parser::start_array(n); }
  bool end_object() { --depth_; return json_sax_dom_parser::end_object(); }
  bool end_array() { --depth_; return json_sax_dom_parser::end_array(); }
  bool too_deep() const { return too_deep_; }

 private:
  bool deeper() {
    if (++depth_ <= limit_) return true;
    too_deep_ = true;
    return false;  // stops the parser
  }
  int limit_, depth_ = 0;
  bool too_deep_ = false;
};

// Where a JSON text stops being JSON, in the words a reader of the file needs: line, column and
// the text there, never the parser's own message (it names the parser's internals).
std::string where_json_stops(std::string_view text, std::size_t byte) {
  const std::size_t at = std::min(byte > 0 ? byte - 1 : 0, text.size());
  const std::size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
  const std::size_t line = 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + at, '\n'));
  const std::size_t column = at - (line_start == std::string_view::npos || at == 0 ? 0 : line_start + 1) + 1;
  std::string near(text.substr(at, 20));
  for (char& c : near)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  if (at >= text.size()) return fmt::format("it ends too early (line {}, column {})", line, column);
  return fmt::format("it stops being JSON at line {}, column {} (at \"{}\")", line, column, near);
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& source) {
  nlohmann::json j;
  DepthBoundedParser parser(j, max_json_depth);
  try {
    nlohmann::json::sax_parse(text, &parser);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("{} is not valid JSON: {}", source, where_json_stops(text, e.byte)));
  } catch (const nlohmann::json::out_of_range&) {
    throw UsageError(fmt::format("{} is not valid JSON: a number is too large for a double (above 1.8e308)", source));
  } catch (const nlohmann::json::exception&) {
    throw UsageError(fmt::format("{} is not valid JSON", source));
  }
  if (parser.too_deep()) {
    j = nullptr;
    throw UsageError(fmt::format("{}: JSON nested deeper than {} levels; ridge's files nest a few levels (see "
                                 "docs/results-schema.md)",
                                 source, max_json_depth));
  }
  return j;
}

nlohmann::json read_json_file(const std::filesystem::path& path) { return parse_json(read_text(path), path.string()); }

ResultSet parse_result_text(std::string_view text, const std::string& source) {
  const nlohmann::json j = parse_json(text, source);
  try {
    return result_set_from_json(j);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", source, e.what()));
  }
}

ResultSet load_result_file(const std::filesystem::path& path) {
  std::filesystem::path file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    file = path / "results.json";
    if (!std::filesystem::exists(file, ec) && std::filesystem::exists(path / "results.json.gz", ec))
      file = path / "results.json.gz";
  }
  return parse_result_text(detail::gunzip_if_compressed(read_text(file), file.string()), file.string());
}

void export_results(const ResultSet& set, const std::string& json_path, const std::string& csv_path,
                    const std::string& markdown_path) {
  if (!json_path.empty()) write_json(json_path, to_json(set));
  if (!csv_path.empty()) write_text(csv_path, to_csv(set));
  if (!markdown_path.empty()) write_text(markdown_path, to_markdown(set));
}

}  // namespace ridge
