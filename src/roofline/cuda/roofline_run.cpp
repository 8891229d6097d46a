// `ridge roofline` and `ridge info` as library calls: the parts that talk to the GPU (device
// description, clocks, measured ceilings) around the CPU analysis in ../roofline_analysis.cpp.
#include "ridge/catalog.hpp"
#include "ridge/device.hpp"
#include "ridge/roofline.hpp"
#include "ridge/sweep.hpp"

namespace ridge {

RooflineAnalysis run_roofline(const RooflineOptions& o, const std::function<void(const std::string&)>& on_progress) {
  o.validate();
  if (!o.catalog.empty()) load_catalog_file(o.catalog);
  // Operations are read first: a bad file is a usage error before any GPU work.
  std::vector<std::string> skipped;
  const std::vector<RooflineOperation> operations = load_roofline_operations(o.point_files, &skipped);
  auto with_skipped = [&](RooflineAnalysis a) {
    a.warnings.insert(a.warnings.begin(), skipped.begin(), skipped.end());
    return a;
  };
  std::vector<std::array<double, 3>> shapes;
  if (!o.matmul_shapes.empty())
    for (const MatmulDims& d : parse_shapes(o.matmul_shapes)) shapes.push_back({double(d.m), double(d.n), double(d.k)});
  const DType shape_dtype = dtype_from_string(o.matmul_dtype);
  if (o.model_only())
    return with_skipped(
        analyze_roofline(std::nullopt, catalog_entry(o.device), std::nullopt, operations, shapes, shape_dtype));

  const int index = std::stoi(o.device);
  require_gpu(index);
  DeviceDescription device = describe_device(index);
  const std::optional<CatalogEntry> datasheet = match_device(device);
  if (datasheet) device.catalog_key = datasheet->key;
  if (on_progress) on_progress(o.refresh ? "roofline: measuring ceilings" : "roofline: ceilings (cached or measured)");
  const MeasuredCeilings measured = measured_ceilings(index, o.refresh);
  if (on_progress) on_progress("");
  return with_skipped(analyze_roofline(device, datasheet, measured, operations, shapes, shape_dtype));
}

DeviceInfo device_info(int index) {
  require_gpu(index);
  DeviceInfo info;
  info.device = describe_device(index);
  info.datasheet = match_device(info.device);
  if (info.datasheet) info.device.catalog_key = info.datasheet->key;
  info.clocks = read_clocks(index);
  info.nvml_status = nvml_status();
  info.clock_limits = throttle_reason_names(info.clocks.throttle_reasons);
  return info;
}

}  // namespace ridge
