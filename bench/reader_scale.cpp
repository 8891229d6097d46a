// reader_scale: how reading and comparing result files scale. Generates ridge result files of a
// given shape in a scratch folder, then times load_result_file (parse, check, summarize) and
// compare_results on them. CPU only. Figures: results/cpu/reader_scale/ (with the command).
//
//   reader_scale [--samples N] [--records N] [--samples-per-record N] [--dir DIR] [--keep 1]
// --keep 1 leaves the files in DIR, e.g. to time `ridge compare` on them.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ridge/compare.hpp"
#include "ridge/writers.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// A result set of `records` records with `samples` samples each, medians near 1 ms times `scale`.
ridge::ResultSet synthetic(std::size_t records, std::size_t samples, double scale, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> noise(0.0, 0.02);
  ridge::ResultSet set;
  set.context = ridge::make_context(0, nullptr);
  set.records.reserve(records);
  for (std::size_t i = 0; i < records; ++i) {
    ridge::Record r;
    r.name = "bench.add";
    r.method = ridge::Method::cuda_events;
    r.dtype = ridge::DType::fp32;
    r.params = {{"n", i}};
    r.samples_ms.resize(samples);
    for (auto& v : r.samples_ms) v = scale * noise(rng);
    set.records.push_back(std::move(r));
  }
  return set;
}

struct Figures {
  double write_s = 0, read_s = 0, compare_s = 0;
  std::uintmax_t bytes = 0;
};

Figures run(const std::filesystem::path& dir, const std::string& label, std::size_t records, std::size_t samples) {
  Figures f;
  const auto base_path = dir / (label + "_base.json"), next_path = dir / (label + "_new.json");
  auto t = Clock::now();
  ridge::write_json(base_path.string(), ridge::to_json(synthetic(records, samples, 1.0, 1)));
  ridge::write_json(next_path.string(), ridge::to_json(synthetic(records, samples, 1.01, 2)));
  f.write_s = seconds_since(t);
  f.bytes = std::filesystem::file_size(base_path);
  t = Clock::now();
  const ridge::ResultSet base = ridge::load_result_file(base_path);
  f.read_s = seconds_since(t);
  const ridge::ResultSet next = ridge::load_result_file(next_path);
  t = Clock::now();
  const ridge::Comparison c = ridge::compare_results(base, next);
  f.compare_s = seconds_since(t);
  std::printf("%-28s records %8zu  samples/record %9zu  file %7.1f MB  read %7.2f s  compare %7.2f s  (%zu matched)\n",
              label.c_str(), records, samples, f.bytes / 1e6, f.read_s, f.compare_s, c.geomean_count);
  std::fflush(stdout);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t big_samples = 10'000'000, many_records = 330'000, per_record = 20;
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "ridge-reader-scale";
  bool keep = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--samples") big_samples = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--records") many_records = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--samples-per-record") per_record = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--dir") dir = argv[i + 1];
    else if (flag == "--keep") keep = std::string(argv[i + 1]) == "1";
    else {
      std::fprintf(stderr, "usage: reader_scale [--samples N] [--records N] [--samples-per-record N] [--dir DIR] [--keep 1]\n");
      return 2;
    }
  }
  std::filesystem::create_directories(dir);
  std::printf("reader_scale: files in %s\n", dir.string().c_str());
  for (std::size_t n : {big_samples / 100, big_samples / 10, big_samples})
    run(dir, fmt::format("one_record_{}_samples", n), 1, n);
  for (std::size_t n : {many_records / 100, many_records / 10, many_records})
    run(dir, fmt::format("{}_records", n), n, per_record);
  if (!keep) std::filesystem::remove_all(dir);
  return 0;
}
