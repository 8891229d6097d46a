#include "ridge/writers.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

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
    out << csv_escape(r.name) << ',' << csv_escape(r.method) << ',' << csv_escape(r.dtype) << ','
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
  std::vector<std::string> names;
  for (const auto& r : set.records)
    if (std::find(names.begin(), names.end(), r.name) == names.end()) names.push_back(r.name);
  for (const auto& name : names) {
    out << "## " << name << "\n\n";
    out << "| params | dtype | method | median ms | min ms | max ms | CV | GB/s | TFLOP/s | check | warnings |\n";
    out << "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|\n";
    for (const auto& r : set.records) {
      if (r.name != name) continue;
      const auto& s = r.summary;
      out << fmt::format("| {} | {} | {} | {} | {} | {} | {:.1f}% | {} | {} | {} | {} |\n", params_text(r.params),
                         r.dtype, r.method, format_ms(s.median), format_ms(s.min), format_ms(s.max), s.cv * 100,
                         r.bytes > 0 ? fmt::format("{:.1f}", r.bytes_per_s() / 1e9) : "",
                         r.flops > 0 ? fmt::format("{:.2f}", r.flops_per_s() / 1e12) : "", r.verification,
                         join(r.warnings, "; "));
    }
    out << "\n";
  }
  return out.str();
}

void write_text(const std::string& path, const std::string& content) {
  if (path == "-") {
    std::cout << content << std::flush;
    return;
  }
  const std::filesystem::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec) throw Error(fmt::format("cannot create folder {}: {}", target.parent_path().string(), ec.message()));
  }
  const std::string tmp = path + fmt::format(".tmp.{}", static_cast<long>(getpid()));
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw Error(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
    f << content;
    f.flush();
    if (!f) throw Error(fmt::format("writing {} failed (disk full?)", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw Error(fmt::format("cannot move {} into place as {}: {}", tmp, path, why));
  }
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UsageError(fmt::format("cannot read {}: {}", path.string(), std::strerror(errno)));
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

ResultSet load_result_file(const std::filesystem::path& path) {
  std::filesystem::path file = path;
  if (std::filesystem::is_directory(path)) file = path / "results.json";
  const std::string text = read_text(file);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw UsageError(fmt::format("{} is not valid JSON: {}", file.string(), e.what()));
  }
  try {
    return result_set_from_json(j);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", file.string(), e.what()));
  }
}

void export_results(const ResultSet& set, const std::string& json_path, const std::string& csv_path,
                    const std::string& markdown_path) {
  if (!json_path.empty()) write_text(json_path, to_json(set).dump(2) + "\n");
  if (!csv_path.empty()) write_text(csv_path, to_csv(set));
  if (!markdown_path.empty()) write_text(markdown_path, to_markdown(set));
}

}  // namespace ridge
