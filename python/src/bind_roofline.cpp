// The device catalog, ceilings (datasheet, measured, or the user's), shape placement and the
// roofline plot. Everything but measured_ceilings works without a GPU.
#include <filesystem>
#include <map>
#include <tuple>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.hpp"
#include "ridge/catalog.hpp"
#include "ridge/ceilings.hpp"
#include "ridge/checks.hpp"
#include "ridge/errors.hpp"
#include "ridge/format.hpp"
#include "ridge/plot.hpp"
#include "ridge/roofline.hpp"
#include "ridge/sweep.hpp"
#include "ridge/writers.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace ridge::python {
namespace {

// The pickled forms of Device and ShapePlacement (__getstate__ makes them, __setstate__ reads them).
using DeviceState = std::tuple<std::string, std::string, std::vector<std::string>, int, double, double, std::string,
                               std::map<std::string, double>, double, double, std::string, std::string, std::string>;
using PlacementState = std::tuple<std::string, std::string, double, double, double, double, double, double, double,
                                  double, double, double, bool, double, std::string>;

// A Plot as plain data, for the Python layer's matplotlib figure.
nb::dict plot_data(const Plot& plot) {
  nb::list series;
  for (const PlotSeries& s : plot.series) {
    nb::list points;
    for (const PlotPoint& p : s.points) points.append(nb::make_tuple(p.x, p.y, p.label));
    nb::dict d;
    d["name"] = s.name;
    d["points"] = points;
    d["line"] = s.line;
    d["markers"] = s.markers;
    d["dashed"] = s.dashed;
    d["color"] = s.color;
    d["end_label"] = s.end_label;
    d["in_legend"] = s.in_legend;
    series.append(d);
  }
  nb::dict d;
  d["title"] = plot.title;
  d["x_label"] = plot.x_label;
  d["y_label"] = plot.y_label;
  d["log_x"] = plot.log_x;
  d["log_y"] = plot.log_y;
  d["series"] = series;
  nb::list warnings;
  for (const std::string& w : plot.warnings) warnings.append(w);
  d["warnings"] = warnings;
  return d;
}

// The other direction: plot data from the Python layer, rendered by ridge's one SVG writer.
Plot plot_from_data(const nb::dict& d) {
  Plot plot;
  plot.title = nb::cast<std::string>(d["title"]);
  plot.x_label = nb::cast<std::string>(d["x_label"]);
  plot.y_label = nb::cast<std::string>(d["y_label"]);
  plot.log_x = nb::cast<bool>(d["log_x"]);
  plot.log_y = nb::cast<bool>(d["log_y"]);
  for (nb::handle item : nb::cast<nb::list>(d["series"])) {
    nb::dict sd = nb::cast<nb::dict>(item);
    PlotSeries s;
    s.name = nb::cast<std::string>(sd["name"]);
    for (nb::handle p : nb::cast<nb::list>(sd["points"])) {
      auto t = nb::cast<std::tuple<double, double, std::string>>(p);
      s.points.push_back({std::get<0>(t), std::get<1>(t), std::get<2>(t)});
    }
    s.line = nb::cast<bool>(sd["line"]);
    s.markers = nb::cast<bool>(sd["markers"]);
    s.dashed = nb::cast<bool>(sd["dashed"]);
    s.color = nb::cast<std::string>(sd["color"]);
    s.end_label = nb::cast<std::string>(sd["end_label"]);
    s.in_legend = nb::cast<bool>(sd["in_legend"]);
    plot.series.push_back(std::move(s));
  }
  if (d.contains("warnings"))
    for (nb::handle w : nb::cast<nb::list>(d["warnings"])) plot.warnings.push_back(nb::cast<std::string>(w));
  return plot;
}

void bind_ceilings(nb::module_& m) {
  nb::class_<DeviceCeilings>(m, "DeviceCeilings",
                             "A device's ceilings, from its datasheet, measured, or given: bytes/s and FLOP/s.")
      .def(
          "__init__",
          [](DeviceCeilings* self, double memory_bytes_per_s, std::map<std::string, double> peak_flops_per_s,
             double l2_bytes_per_s, std::string source_text) {
            DeviceCeilings c;
            c.source = CeilingsSource::user;
            c.source_text = source_text;
            c.memory_bytes_per_s = memory_bytes_per_s;
            c.peak_flops_per_s = std::move(peak_flops_per_s);
            c.l2_bytes_per_s = l2_bytes_per_s;
            c.validate();  // before construction: UsageError naming the field
            new (self) DeviceCeilings(std::move(c));
          },
          "memory_bytes_per_s"_a, "peak_flops_per_s"_a, "l2_bytes_per_s"_a = 0.0, "source_text"_a = "given",
          "Ceilings of your own: memory bandwidth (bytes/s, finite and > 0) and dense peak FLOP/s per dtype name "
          "(fp64, fp64_vector, fp32, tf32, fp16, bf16, fp8_e4m3, fp4; each finite and > 0). UsageError names a bad field.")
      .def_prop_ro("source", [](const DeviceCeilings& c) { return to_string(c.source); }, "datasheet, measured or user")
      .def_ro("source_text", &DeviceCeilings::source_text)
      .def_ro("memory_bytes_per_s", &DeviceCeilings::memory_bytes_per_s, "device-memory bandwidth, reads + writes")
      .def_ro("l2_bytes_per_s", &DeviceCeilings::l2_bytes_per_s, "0 when unknown")
      .def_ro("peak_flops_per_s", &DeviceCeilings::peak_flops_per_s, "dense peak FLOP/s per dtype name")
      .def_ro("empty_launch_us", &DeviceCeilings::empty_launch_us, "0 when unknown")
      .def("peak_flops", &DeviceCeilings::roof_for, "dtype"_a,
           "Peak FLOP/s of a dtype (\"bf16\", \"bfloat16\", \"fp8\", \"fp4\", ...); UsageError when the name is unknown "
           "or these ceilings have no peak for it (the dtypes they have: peak_flops_per_s).")
      .def("roof_for", &DeviceCeilings::roof_for, "dtype"_a,
           "The roof an operation of this dtype runs under: its own peak; UsageError when these ceilings lack it.")
      .def("ridge_point", &DeviceCeilings::ridge_point_of, "dtype"_a,
           "Peak / memory bandwidth (FLOP/byte); UsageError, as peak_flops, when there is no such peak.")
      .def("__repr__", [](const DeviceCeilings& c) {
        return "DeviceCeilings(" + c.source_text + ", " + std::to_string(c.memory_bytes_per_s / 1e12) + " TB/s)";
      })
      // Pickle and copy through the ceilings' own JSON form (the one catalogs and caches use).
      .def("__getstate__", [](const DeviceCeilings& c) { return to_json(c).dump(); })
      .def("__setstate__", [](DeviceCeilings& c, const std::string& state) {
        new (&c) DeviceCeilings(device_ceilings_from_json(parse_json(state, "pickled DeviceCeilings")));
      });

  nb::class_<CatalogEntry>(m, "Device", "A device's datasheet entry in ridge's catalog.")
      .def_ro("key", &CatalogEntry::key)
      .def_ro("name", &CatalogEntry::name)
      .def_ro("sm_count", &CatalogEntry::sm_count)
      .def_ro("memory_bytes", &CatalogEntry::memory_bytes)
      .def_ro("l2_bytes", &CatalogEntry::l2_bytes)
      .def_ro("ceilings", &CatalogEntry::ceilings)
      .def_ro("sparse_peak_flops", &CatalogEntry::sparse_peak_flops)
      .def_ro("notes", &CatalogEntry::notes)
      .def_ro("source", &CatalogEntry::source, "the datasheet the figures come from")
      .def("__repr__", [](const CatalogEntry& e) { return "Device(" + e.key + ": " + e.name + ")"; })
      // Pickled whole (not by key): the catalog it came from need not be active where it is loaded.
      .def("__getstate__",
           [](const CatalogEntry& e) {
             return std::make_tuple(e.key, e.name, e.match_names, e.sm_count, e.memory_bytes, e.l2_bytes,
                                    to_json(e.ceilings).dump(), e.sparse_peak_flops, e.nvlink_bytes_per_s,
                                    e.pcie_bytes_per_s, e.interconnect_source, e.notes, e.source);
           })
      .def("__setstate__", [](CatalogEntry& e, const DeviceState& state) {
        new (&e) CatalogEntry{};
        std::string ceilings;
        std::tie(e.key, e.name, e.match_names, e.sm_count, e.memory_bytes, e.l2_bytes, ceilings, e.sparse_peak_flops,
                 e.nvlink_bytes_per_s, e.pcie_bytes_per_s, e.interconnect_source, e.notes, e.source) = state;
        e.ceilings = device_ceilings_from_json(parse_json(ceilings, "pickled Device"));
      });
  m.def("device", &catalog_entry, "key"_a, nb::rv_policy::copy,
        "The catalog entry of a device key (e.g. 'h100-sxm'); UsageError lists the known keys.");
  m.def(
      "devices",
      [] {
        std::vector<std::string> keys;
        for (const auto& e : catalog()) keys.push_back(e.key);
        return keys;
      },
      "The catalog's device keys.");
  m.def(
      "load_catalog", [](const std::filesystem::path& path) { load_catalog_file(path.string()); }, "path"_a,
      "Replaces the active catalog with a catalog JSON file.");

  nb::class_<MeasuredCeilings>(m, "MeasuredCeilings", "Ceilings measured on a GPU by ridge's probes.")
      .def_ro("ceilings", &MeasuredCeilings::ceilings)
      .def_ro("device_name", &MeasuredCeilings::device_name)
      .def_ro("device_uuid", &MeasuredCeilings::device_uuid)
      .def_ro("measured_at_utc", &MeasuredCeilings::measured_at_utc)
      .def_ro("hbm_kernel", &MeasuredCeilings::hbm_kernel)
      .def_prop_ro(
          "notes",
          [](const MeasuredCeilings& c) {
            nb::list notes;  // they may name the cache file, whose name need not be UTF-8
            for (const std::string& note : c.notes) notes.append(message_text(note));
            return notes;
          },
          "what the measurement or the cache had to say (e.g. why the cache file was measured over)")
      .def_ro("from_cache", &MeasuredCeilings::from_cache)
      .def_prop_ro(
          "cache_file", [](const MeasuredCeilings& c) { return std::filesystem::path(c.cache_file); },
          "the cache file (a pathlib.Path; any bytes the file system allows)")
      .def("__repr__", [](const MeasuredCeilings& c) {
        return message_text(fmt::format("MeasuredCeilings({}, measured {}{}: {} HBM, {} BF16)", c.device_name,
                                        c.measured_at_utc, c.from_cache ? ", from the cache" : "",
                                        format_bytes_per_s(c.ceilings.memory_bytes_per_s),
                                        c.ceilings.peak_flops("bf16") > 0 ? format_flops(c.ceilings.peak_flops("bf16"))
                                                                          : std::string("no")));
      });
  m.def("measured_ceilings", &measured_ceilings, "device"_a = 0, "refresh"_a = false,
        "Measured ceilings of a GPU: from ridge's cache (the CLI's) unless refresh or absent, else measured (seconds).");
  m.def("cache_folder", &cache_folder,
        "Where ridge caches measurements: $RIDGE_CACHE_DIR, else $XDG_CACHE_HOME/ridge, else ~/.cache/ridge.");
  m.def(
      "cached_ceilings",
      [](const std::string& uuid) {
        std::string problem;
        std::optional<MeasuredCeilings> cached = cached_ceilings(uuid, &problem);
        return nb::make_tuple(cached, message_text(problem));
      },
      "uuid"_a,
      "The cached measured ceilings of the device with `uuid`, measuring nothing: (MeasuredCeilings or None, "
      "why the cache could not be used or '').");
}

void bind_placement(nb::module_& m) {
  nb::class_<ShapePlacement>(m, "ShapePlacement", "A GEMM placed on a roofline by its shape alone.")
      .def_ro("label", &ShapePlacement::label)
      .def_ro("dtype", &ShapePlacement::dtype)
      .def_ro("m", &ShapePlacement::m)
      .def_ro("n", &ShapePlacement::n)
      .def_ro("k", &ShapePlacement::k)
      .def_ro("flops", &ShapePlacement::flops, "per call")
      .def_ro("bytes", &ShapePlacement::bytes, "per call, each operand read once and C written once")
      .def_ro("intensity_flop_per_byte", &ShapePlacement::intensity_flop_per_byte)
      .def_ro("roof_flops_per_s", &ShapePlacement::roof_flops_per_s)
      .def_ro("memory_bytes_per_s", &ShapePlacement::memory_bytes_per_s)
      .def_ro("attainable_flops_per_s", &ShapePlacement::attainable_flops_per_s)
      .def_ro("ridge_point", &ShapePlacement::ridge_point, "FLOP/byte")
      .def_prop_ro("bound", [](const ShapePlacement& p) { return to_string(p.bound); })
      .def_ro("floor_s", &ShapePlacement::floor_s, "fastest possible time per call, seconds")
      .def_ro("placed_on", &ShapePlacement::placed_on, "the ceilings it was placed on, e.g. 'datasheet of NVIDIA H100 SXM'")
      .def("__getstate__",
           [](const ShapePlacement& p) {
             return std::make_tuple(p.label, p.dtype, p.m, p.n, p.k, p.flops, p.bytes, p.intensity_flop_per_byte,
                                    p.roof_flops_per_s, p.memory_bytes_per_s, p.attainable_flops_per_s, p.ridge_point,
                                    p.bound == Bound::compute, p.floor_s, p.placed_on);
           })
      .def("__setstate__", [](ShapePlacement& p, const PlacementState& state) {
        new (&p) ShapePlacement{};
        bool compute = false;
        std::tie(p.label, p.dtype, p.m, p.n, p.k, p.flops, p.bytes, p.intensity_flop_per_byte, p.roof_flops_per_s,
                 p.memory_bytes_per_s, p.attainable_flops_per_s, p.ridge_point, compute, p.floor_s, p.placed_on) = state;
        p.bound = compute ? Bound::compute : Bound::memory;
      })
      .def("__str__", [](const ShapePlacement& p) { return describe(p); })
      .def("__repr__",
           [](const ShapePlacement& p) { return "ShapePlacement(" + describe(p) + "; on " + p.placed_on + ")"; });
  m.def(
      "place_matmul",
      [](const DeviceCeilings& c, double m_, double n, double k, const std::string& dtype) {
        return place_matmul(c, m_, n, k, dtype);
      },
      "ceilings"_a, "m"_a, "n"_a, "k"_a, "dtype"_a = "bf16",
      "Places [m,k] @ [k,n] on the ceilings' roofline: intensity, attainable FLOP/s, ridge point, bound.");
  m.def(
      "roofline_plot",
      [](const DeviceCeilings& c, const std::vector<std::tuple<std::string, std::string, double, double>>& operations,
         const std::string& title) {
        std::vector<RooflineOperation> ops;
        for (const auto& [label, dtype, intensity, flops] : operations)  // an unknown dtype name is a UsageError
          ops.push_back(RooflineOperation{label, dtype.empty() ? dtype : peak_dtype_name(dtype), intensity, flops, "", ""});
        RooflinePlotOptions options;
        options.title = title;
        const Plot plot = roofline_plot(c, ops, options);
        return nb::make_tuple(render_svg(plot), plot_data(plot));
      },
      "ceilings"_a, "operations"_a, "title"_a = "",
      "The roofline of `ceilings` with operations (label, dtype, FLOP/byte, FLOP/s): (SVG text, plot data).");
  m.def("render_plot", [](const nb::dict& data) { return render_svg(plot_from_data(data)); }, "data"_a,
        "Renders plot data (title, labels, axes, series of (x, y, label) points) with ridge's SVG writer.");
}

// What a size sweep's analysis needs: knees of a rate curve and the plausibility warnings, the
// same functions `ridge bandwidth` and `ridge matmul` use.
void bind_sweep_analysis(nb::module_& m) {
  m.def(
      "find_knees",
      [](const std::vector<std::pair<double, double>>& size_rate, double ceiling, const std::vector<double>& fractions) {
        std::vector<RatePoint> points;
        for (const auto& [size, rate] : size_rate) points.push_back({size, rate});
        std::vector<std::pair<double, std::optional<double>>> out;
        for (const Knee& k : find_knees(points, ceiling, fractions)) out.emplace_back(k.fraction, k.size);
        return out;
      },
      "size_rate"_a, "ceiling"_a, "fractions"_a = std::vector<double>{0.7, 0.9},
      "The sizes at which the rate first reaches each fraction of `ceiling` (None: never), interpolated in log size.");
  m.def(
      "plausibility_warnings",
      [](const std::string& record_json, std::optional<DeviceCeilings> ceilings, double l2_bytes, double cv_limit) {
        Record r = record_from_json(parse_json(record_json, "record"));
        add_plausibility_warnings(r, ceilings, l2_bytes, cv_limit);
        return r.warnings;
      },
      "record_json"_a, "ceilings"_a = nb::none(), "l2_bytes"_a = 0.0, "cv_limit"_a = 0.10,
      "ridge's warnings for a record: faster than the roofline floor (impossible), high spread, L2-resident.");
}

}  // namespace

void bind_roofline(nb::module_& m) {
  bind_sweep_analysis(m);
  bind_ceilings(m);
  bind_placement(m);
}

}  // namespace ridge::python
