#pragma once
// The keys of Record::params and Record::extra, spelled once: code that writes a key and code that
// reads it name the same constant, so a renamed key cannot leave a reader behind. Users see these
// names in result files (docs/results-schema.md), so renaming one changes the file format.
// Each extra key is an ExtraField: its name, the type of its value and what a record without it
// reads as, written once, so a reader neither picks a type nor a default by hand.
// (Implementation of the key builders and of the fields' JSON access: src/results/record_keys.cpp.)
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace ridge {

struct Record;

namespace detail {
/// The value `record` keeps under `key` in its extra; nullptr when absent or null (a NaN is written
/// as null, and a null reads as "not known", as an absent key does).
const nlohmann::json* find_extra(const Record& record, const char* key);
/// The slot `key` of the record's extra, created when absent.
nlohmann::json& extra_slot(Record& record, const char* key);
/// Throws UsageError: "record 'NAME': extra 'KEY' should be EXPECTED, not TYPE".
[[noreturn]] void throw_wrong_extra_type(const Record& record, const char* key, const char* expected,
                                         const nlohmann::json& got);
/// No fallback value: a record without the key reads as T{} (an empty list, a null JSON value).
struct EmptyFallback {};
template <class T>
using extra_fallback_t = std::conditional_t<std::is_arithmetic_v<T>, T,
                                            std::conditional_t<std::is_same_v<T, std::string>, std::string_view, EmptyFallback>>;
}  // namespace detail

/// A key of Record::extra with the type of its value (bool, an integer, double, std::string,
/// std::vector<double>, or nlohmann::json for a nested object) and the value a record without it
/// reads as, as kineto's MetadataField<T> does. A present value of another JSON type is a damaged
/// file: reading it throws UsageError naming the record and the key.
///
///   extra_key::gb_per_s.set(record, 812.5);
///   double rate = extra_key::gb_per_s.get(record);          // 0 when the record has none
///   std::optional<double> maybe = extra_key::gb_per_s.find(record);  // nullopt when none
///
/// A field also works as a plain key of a nlohmann::json object (`j[extra_key::bound]`), for code
/// that reads or writes the JSON itself.
template <class T>
struct ExtraField {
  const char* name;                            ///< the key as result files spell it
  detail::extra_fallback_t<T> fallback = {};  ///< what get() returns for a record without the key

  /// Whether the record has a non-null value under this key.
  bool has(const Record& record) const { return detail::find_extra(record, name) != nullptr; }

  /// The record's value; nullopt when absent or null. Throws UsageError when of another type.
  std::optional<T> find(const Record& record) const {
    const nlohmann::json* v = detail::find_extra(record, name);
    if (!v) return std::nullopt;
    if constexpr (std::is_same_v<T, nlohmann::json>) {
      return *v;
    } else if constexpr (std::is_same_v<T, bool>) {
      if (v->is_boolean()) return v->get<bool>();
      detail::throw_wrong_extra_type(record, name, "true or false", *v);
    } else if constexpr (std::is_integral_v<T>) {
      if (v->is_number_unsigned() && v->get<std::uint64_t>() <= std::uint64_t(std::numeric_limits<T>::max()))
        return T(v->get<std::uint64_t>());
      if (v->is_number_integer() && !v->is_number_unsigned() && v->get<std::int64_t>() >= std::numeric_limits<T>::min() &&
          v->get<std::int64_t>() <= std::numeric_limits<T>::max())
        return T(v->get<std::int64_t>());
      detail::throw_wrong_extra_type(record, name, "an integer in range", *v);
    } else if constexpr (std::is_floating_point_v<T>) {
      if (v->is_number()) return v->get<T>();
      detail::throw_wrong_extra_type(record, name, "a number", *v);
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (v->is_string()) return v->get<std::string>();
      detail::throw_wrong_extra_type(record, name, "a string", *v);
    } else {
      static_assert(std::is_same_v<T, std::vector<double>>, "an extra value is bool, integer, double, string, list or JSON");
      if (v->is_array()) {
        T values;
        for (const auto& x : *v) {
          if (x.is_null())  // how the JSON writer spells NaN
            values.push_back(std::numeric_limits<double>::quiet_NaN());
          else if (x.is_number())
            values.push_back(x.get<double>());
          else
            detail::throw_wrong_extra_type(record, name, "a list of numbers", *v);
        }
        return values;
      }
      detail::throw_wrong_extra_type(record, name, "a list of numbers", *v);
    }
  }

  /// The record's value, or `fallback` when absent or null. Throws UsageError when of another type.
  T get(const Record& record) const {
    if (std::optional<T> v = find(record)) return std::move(*v);
    if constexpr (std::is_same_v<detail::extra_fallback_t<T>, detail::EmptyFallback>)
      return T{};
    else
      return T(fallback);
  }

  /// Stores `value` under this key, replacing any value there.
  void set(Record& record, const T& value) const { detail::extra_slot(record, name) = value; }
  /// A JSON value for a field of another type would convert silently and throw at run time: refused.
  template <class J>
    requires(std::is_same_v<J, nlohmann::json> && !std::is_same_v<T, nlohmann::json>)
  void set(Record& record, const J& value) const = delete;
  /// Stores `value`, or null when it is nullopt (a key that is present and says "none", e.g. a knee
  /// never reached).
  void set_or_null(Record& record, const std::optional<T>& value) const {
    detail::extra_slot(record, name) = value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  }

  // As a plain key of a nlohmann::json object: nlohmann::json takes any key that converts to a
  // string view and compares with std::string (its objects use a transparent comparator).
  constexpr operator std::string_view() const { return name; }
  friend bool operator<(std::string_view a, const ExtraField& b) { return a < std::string_view(b.name); }
  friend bool operator<(const ExtraField& a, std::string_view b) { return std::string_view(a.name) < b; }
  friend void to_json(nlohmann::json& j, const ExtraField& f) { j = f.name; }
};

/// Keys of Record::params: what was measured, its shape and settings. Records match in `ridge
/// compare` by these, so a value here is part of a record's identity.
namespace param_key {
// Sizes and shapes.
inline constexpr const char* n = "n";                ///< elements per array, or the GEMM's n
inline constexpr const char* m = "m";                ///< GEMM rows of A and C
inline constexpr const char* k = "k";                ///< GEMM inner dimension
inline constexpr const char* elements = "elements";  ///< elements per array (= n)
inline constexpr const char* bytes = "bytes";        ///< bytes one transfer or collective moves
inline constexpr const char* array_bytes = "array_bytes";              ///< bytes of one array of a probe
inline constexpr const char* working_set_bytes = "working_set_bytes";  ///< bytes the operation touches
inline constexpr const char* l2_bytes = "l2_bytes";  ///< the device's L2 size the working set was sized from
// Kernels and how they ran.
inline constexpr const char* op = "op";            ///< streaming op ("add") or collective ("all_reduce")
inline constexpr const char* variant = "variant";  ///< kernel variant: a name ("vec4") or its launch shape
inline constexpr const char* kernel = "kernel";    ///< which kernel implementation ran
inline constexpr const char* cold = "cold";        ///< L2 flushed before each sample
inline constexpr const char* timing_case = "case";  ///< timing exercise: "large" or "small"
inline constexpr const char* passes = "passes";    ///< L2 probe: times the working set is read
inline constexpr const char* bytes_counted = "bytes_counted";  ///< L2 probe: passes x working set
inline constexpr const char* chains_per_thread = "chains_per_thread";  ///< FMA probe: independent chains
inline constexpr const char* threads_per_block = "threads_per_block";  ///< FMA probe's launch shape
inline constexpr const char* blocks = "blocks";                        ///< FMA probe's launch shape
inline constexpr const char* iterations = "iterations";                ///< FMA probe: FMAs per chain
inline constexpr const char* observed_sm_mhz = "observed_sm_mhz";      ///< SM clock the kernel itself counted
// Transfers and collectives.
inline constexpr const char* src = "src";              ///< p2p: source GPU (-1: the host)
inline constexpr const char* dst = "dst";              ///< p2p: destination GPU (-1: the host)
inline constexpr const char* direction = "direction";  ///< p2p: "one_way" or "both_ways"
inline constexpr const char* memory = "memory";        ///< p2p: "device", or host "pinned" or "pageable"
inline constexpr const char* metric = "metric";        ///< p2p: "bandwidth" or "latency"
inline constexpr const char* send_count = "send_count";  ///< collective: elements each rank sends
inline constexpr const char* recv_count = "recv_count";  ///< collective: elements each rank receives
inline constexpr const char* placement = "placement";    ///< collective: "in_place" or "out_of_place"
inline constexpr const char* ranks = "ranks";            ///< collective: ranks taking part
// GPT-2 decode.
inline constexpr const char* model = "model";      ///< model name, e.g. "gpt2"
inline constexpr const char* batch = "batch";      ///< sequences decoded together
inline constexpr const char* context = "context";  ///< tokens in the context
inline constexpr const char* cached_tokens = "cached_tokens";  ///< tokens already in the KV cache
inline constexpr const char* layers = "layers";
inline constexpr const char* heads = "heads";
inline constexpr const char* width = "width";
inline constexpr const char* vocab = "vocab";
inline constexpr const char* gemm = "gemm";  ///< the GEMM backend the step used
inline constexpr const char* pdl = "pdl";    ///< programmatic dependent launch on
inline constexpr const char* mode = "mode";  ///< "eager" or "graph"
inline constexpr const char* reference_file = "reference_file";  ///< check: the file of reference logits
inline constexpr const char* reference = "reference";            ///< check: what made the reference
// The measured roofline of a trace.
inline constexpr const char* grouping = "grouping";  ///< what a row gathers: "kernel", "nvtx_range", "step"
inline constexpr const char* group = "group";        ///< the kernel name, NVTX range or step of the row
}  // namespace param_key

/// Every param key, for checks that iterate over them.
inline constexpr const char* all_param_keys[] = {
    param_key::n, param_key::m, param_key::k, param_key::elements, param_key::bytes, param_key::array_bytes,
    param_key::working_set_bytes, param_key::l2_bytes, param_key::op, param_key::variant, param_key::kernel,
    param_key::cold, param_key::timing_case, param_key::passes, param_key::bytes_counted,
    param_key::chains_per_thread, param_key::threads_per_block, param_key::blocks, param_key::iterations,
    param_key::observed_sm_mhz, param_key::src, param_key::dst, param_key::direction, param_key::memory,
    param_key::metric, param_key::send_count, param_key::recv_count, param_key::placement, param_key::ranks,
    param_key::model, param_key::batch, param_key::context, param_key::cached_tokens, param_key::layers,
    param_key::heads, param_key::width, param_key::vocab, param_key::gemm, param_key::pdl, param_key::mode,
    param_key::reference_file, param_key::reference,
    param_key::grouping, param_key::group,
};

/// Keys of Record::extra: values derived from the measurement and notes on how it was made, each with
/// its value's type. A key that is also a param key has the same spelling (the constant is shared).
namespace extra_key {
// How the samples were taken.
inline constexpr ExtraField<std::vector<double>> sample_sm_mhz{"sample_sm_mhz"};    ///< the SM clock of each sample, MHz
inline constexpr ExtraField<double> settle_ms{"settle_ms"};            ///< time spent settling the clock first
inline constexpr ExtraField<double> settled_sm_mhz{"settled_sm_mhz"};  ///< the SM clock sampling started at
inline constexpr ExtraField<std::string> stop_reason{"stop_reason"};        ///< why adaptive sampling stopped
/// samples taken below the throttle threshold and dropped
inline constexpr ExtraField<int> throttled_samples_dropped{"throttled_samples_dropped"};
/// seconds the GPU was left idle before each held batch
inline constexpr ExtraField<double> rest_before_sample_s{"rest_before_sample_s"};
inline constexpr ExtraField<nlohmann::json> clocks_during{"clocks_during"};    ///< clock readings taken while measuring
inline constexpr ExtraField<double> sm_mhz_median{"sm_mhz_median"};    ///< median of sample_sm_mhz
inline constexpr ExtraField<int> reduced_clock_samples{"reduced_clock_samples"};  ///< samples at a lowered clock
inline constexpr ExtraField<double> median_ms_at_full_clocks{"median_ms_at_full_clocks"};  ///< median scaled to full clock
inline constexpr ExtraField<bool> interleaved{"interleaved"};  ///< methods' samples taken in turn
inline constexpr ExtraField<std::string> meaning{"meaning"};          ///< what the timing method's number means
inline constexpr ExtraField<std::string> method_choice{"method_choice"};  ///< "user" or "auto"
inline constexpr ExtraField<bool> method_auto{"method_auto"};      ///< the method was chosen automatically
inline constexpr ExtraField<std::string> check{"check"};                  ///< the result check's summary
inline constexpr ExtraField<std::string> algorithm{"algorithm"};          ///< the GEMM algorithm cuBLAS(Lt) chose
inline constexpr ExtraField<std::string> tuning{"tuning"};                ///< the GEMM's tuning, when tuned
inline constexpr ExtraField<nlohmann::json> variant{param_key::variant};     ///< the kernel variant, in words
inline constexpr ExtraField<int> grid_blocks{"grid_blocks"};      ///< blocks of a grid-stride launch
inline constexpr ExtraField<double> wall_sync_vs_events_relative_difference{"wall_sync_vs_events_relative_difference"};
inline constexpr ExtraField<double> wall_sync_over_naive{"wall_sync_over_naive"};  ///< wall_sync time / wall_naive time
/// what one call did, from hardware counters (CountedWork: DRAM and L2 bytes, FLOPs, kernels)
inline constexpr ExtraField<nlohmann::json> counters{"counters"};
// Rates and where they stand. A fraction of a roof the run did not know reads as not_known.
/// The fallback of a value no record may read as 0: NaN, which format_percent prints as "-".
inline constexpr double not_known = std::numeric_limits<double>::quiet_NaN();
inline constexpr ExtraField<double> gb_per_s{"gb_per_s"};
inline constexpr ExtraField<double> tflop_per_s{"tflop_per_s"};
inline constexpr ExtraField<double> empty_launch_ms{"empty_launch_ms"};  ///< an empty kernel's launch, same method
inline constexpr ExtraField<bool> launch_bound{"launch_bound"};        ///< time within the launch-bound factor of it
inline constexpr ExtraField<std::int64_t> launch_bound_up_to_elements{"launch_bound_up_to_elements"};
inline constexpr ExtraField<bool> cache_resident{"cache_resident"};  ///< the working set fits in the L2
inline constexpr ExtraField<double> l2_bytes{param_key::l2_bytes};     ///< the device's L2 size
inline constexpr ExtraField<double> fraction_of_measured_hbm{"fraction_of_measured_hbm", not_known};
inline constexpr ExtraField<double> fraction_of_datasheet{"fraction_of_datasheet", not_known};  ///< of the datasheet bandwidth
inline constexpr ExtraField<std::string> knee_ceiling{"knee_ceiling"};  ///< the ceiling the knee_* keys refer to
inline constexpr ExtraField<double> datasheet_attainable_flops_per_s{"datasheet_attainable_flops_per_s"};
inline constexpr ExtraField<double> fraction_of_datasheet_attainable{"fraction_of_datasheet_attainable", not_known};
inline constexpr ExtraField<double> fraction_of_datasheet_peak{"fraction_of_datasheet_peak", not_known};
inline constexpr ExtraField<double> measured_attainable_flops_per_s{"measured_attainable_flops_per_s"};
inline constexpr ExtraField<double> fraction_of_measured_attainable{"fraction_of_measured_attainable", not_known};
inline constexpr ExtraField<double> fraction_of_measured_peak{"fraction_of_measured_peak", not_known};
inline constexpr ExtraField<std::string> bound{"bound"};  ///< "memory" or "compute", by the roofline
// Ceilings.
inline constexpr ExtraField<double> per_launch_us{"per_launch_us"};
/// carried over from a cache, not measured in this run: {"source", "measured_at_utc"} (carried_over.hpp)
inline constexpr ExtraField<nlohmann::json> carried_over{"carried_over"};
inline constexpr ExtraField<std::string> counting{"counting"};              ///< how bytes or FLOPs were counted
inline constexpr ExtraField<nlohmann::json> variants_tried{"variants_tried"};  ///< each launch shape tried, with its rate
inline constexpr ExtraField<double> observed_sm_mhz{param_key::observed_sm_mhz};
inline constexpr ExtraField<double> max_sm_clock_mhz{"max_sm_clock_mhz"};
inline constexpr ExtraField<double> datasheet_bytes_per_s{"datasheet_bytes_per_s"};
inline constexpr ExtraField<double> datasheet_flops_per_s{"datasheet_flops_per_s"};
// Collectives.
inline constexpr ExtraField<nlohmann::json> ranks{param_key::ranks};  ///< each rank's GPU and clocks
inline constexpr ExtraField<std::vector<double>> rank_median_ms{"rank_median_ms"};    ///< each rank's median
inline constexpr ExtraField<std::string> time_over_ranks{"time_over_ranks"};  ///< how the ranks' times were combined
inline constexpr ExtraField<double> algbw_bytes_per_s{"algbw_bytes_per_s"};
inline constexpr ExtraField<double> busbw_bytes_per_s{"busbw_bytes_per_s"};
inline constexpr ExtraField<double> bus_factor{"bus_factor"};
inline constexpr ExtraField<std::string> bus_factor_formula{"bus_factor_formula"};
// GPT-2 decode, its profile and its checks.
inline constexpr ExtraField<double> tokens_per_s{"tokens_per_s"};
inline constexpr ExtraField<double> ms_per_step{"ms_per_step"};
inline constexpr ExtraField<double> decode_ceiling_tokens_per_s{"decode_ceiling_tokens_per_s"};
inline constexpr ExtraField<double> fraction_of_ceiling{"fraction_of_ceiling"};  ///< tokens_per_s / the ceiling
inline constexpr ExtraField<double> weight_bytes{"weight_bytes"};
inline constexpr ExtraField<double> kv_bytes_per_sequence{"kv_bytes_per_sequence"};
inline constexpr ExtraField<double> intensity_flop_per_byte{"intensity_flop_per_byte"};
inline constexpr ExtraField<double> bandwidth_bytes_per_s{"bandwidth_bytes_per_s"};  ///< the ceiling's bandwidth
inline constexpr ExtraField<std::string> bandwidth_source{"bandwidth_source"};            ///< where it came from
inline constexpr ExtraField<int> kernels_per_step{"kernels_per_step"};
inline constexpr ExtraField<nlohmann::json> analysis{"analysis"};      ///< the profiled step's trace analysis
inline constexpr ExtraField<std::string> trace_path{"trace_path"};  ///< the trace file written
inline constexpr ExtraField<double> relative_l2_error{"relative_l2_error"};
inline constexpr ExtraField<double> relative_l2_error_vs_reference_bf16{"relative_l2_error_vs_reference_bf16"};
inline constexpr ExtraField<double> tolerance{"tolerance"};
inline constexpr ExtraField<double> max_abs_error{"max_abs_error"};
inline constexpr ExtraField<int> argmax_agree{"argmax_agree"};
// The measured roofline of a trace.
inline constexpr ExtraField<nlohmann::json> counter_roofline_row{"counter_roofline_row"};  ///< the row: counters, bound, win

/// "knee_90_elements": the smallest streaming size that reaches `fraction` of the knee_ceiling.
std::string knee_elements(double fraction);
/// "knee_90_of_measured_peak_n": the smallest square GEMM's n that reaches `fraction` of the peak
/// of `ceiling_label` ("datasheet" or "measured").
std::string knee_of_peak_n(double fraction, const std::string& ceiling_label);
}  // namespace extra_key

/// Every extra key's name with a fixed spelling (the knee_* keys are built), for checks that iterate.
inline constexpr const char* all_extra_keys[] = {
    extra_key::sample_sm_mhz.name, extra_key::settle_ms.name, extra_key::settled_sm_mhz.name, extra_key::stop_reason.name,
    extra_key::throttled_samples_dropped.name, extra_key::rest_before_sample_s.name,
    extra_key::clocks_during.name, extra_key::sm_mhz_median.name, extra_key::reduced_clock_samples.name,
    extra_key::median_ms_at_full_clocks.name, extra_key::interleaved.name, extra_key::meaning.name, extra_key::method_choice.name,
    extra_key::method_auto.name, extra_key::check.name, extra_key::algorithm.name, extra_key::tuning.name, extra_key::variant.name,
    extra_key::grid_blocks.name, extra_key::wall_sync_vs_events_relative_difference.name, extra_key::counters.name, extra_key::wall_sync_over_naive.name,
    extra_key::gb_per_s.name, extra_key::tflop_per_s.name, extra_key::empty_launch_ms.name, extra_key::launch_bound.name,
    extra_key::launch_bound_up_to_elements.name, extra_key::cache_resident.name, extra_key::l2_bytes.name,
    extra_key::fraction_of_measured_hbm.name, extra_key::fraction_of_datasheet.name, extra_key::knee_ceiling.name,
    extra_key::datasheet_attainable_flops_per_s.name, extra_key::fraction_of_datasheet_attainable.name,
    extra_key::fraction_of_datasheet_peak.name, extra_key::measured_attainable_flops_per_s.name,
    extra_key::fraction_of_measured_attainable.name, extra_key::fraction_of_measured_peak.name, extra_key::bound.name,
    extra_key::per_launch_us.name, extra_key::carried_over.name, extra_key::counting.name, extra_key::variants_tried.name, extra_key::observed_sm_mhz.name,
    extra_key::max_sm_clock_mhz.name, extra_key::datasheet_bytes_per_s.name, extra_key::datasheet_flops_per_s.name,
    extra_key::ranks.name, extra_key::rank_median_ms.name, extra_key::time_over_ranks.name, extra_key::algbw_bytes_per_s.name,
    extra_key::busbw_bytes_per_s.name, extra_key::bus_factor.name, extra_key::bus_factor_formula.name, extra_key::tokens_per_s.name,
    extra_key::ms_per_step.name, extra_key::decode_ceiling_tokens_per_s.name, extra_key::fraction_of_ceiling.name,
    extra_key::weight_bytes.name, extra_key::kv_bytes_per_sequence.name, extra_key::intensity_flop_per_byte.name,
    extra_key::bandwidth_bytes_per_s.name, extra_key::bandwidth_source.name, extra_key::kernels_per_step.name,
    extra_key::analysis.name, extra_key::trace_path.name, extra_key::relative_l2_error.name,
    extra_key::relative_l2_error_vs_reference_bf16.name, extra_key::tolerance.name, extra_key::max_abs_error.name,
    extra_key::argmax_agree.name, extra_key::counter_roofline_row.name,
};

}  // namespace ridge
