#pragma once
// The keys of Record::params and Record::extra, spelled once: code that writes a key and code that
// reads it name the same constant, so a renamed key cannot leave a reader behind. Users see these
// names in result files (docs/results-schema.md), so renaming one changes the file format.
// (Implementation of the key builders: src/results/record_keys.cpp.)
#include <string>

namespace ridge {

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

/// Keys of Record::extra: values derived from the measurement and notes on how it was made. A key
/// that is also a param key has the same spelling (the constant is shared).
namespace extra_key {
// How the samples were taken.
inline constexpr const char* sample_sm_mhz = "sample_sm_mhz";    ///< the SM clock of each sample, MHz
inline constexpr const char* settle_ms = "settle_ms";            ///< time spent settling the clock first
inline constexpr const char* settled_sm_mhz = "settled_sm_mhz";  ///< the SM clock sampling started at
inline constexpr const char* stop_reason = "stop_reason";        ///< why adaptive sampling stopped
/// samples taken below the throttle threshold and dropped
inline constexpr const char* throttled_samples_dropped = "throttled_samples_dropped";
/// seconds the GPU was left idle before each held batch
inline constexpr const char* rest_before_sample_s = "rest_before_sample_s";
inline constexpr const char* clocks_during = "clocks_during";    ///< clock readings taken while measuring
inline constexpr const char* sm_mhz_median = "sm_mhz_median";    ///< median of sample_sm_mhz
inline constexpr const char* reduced_clock_samples = "reduced_clock_samples";  ///< samples at a lowered clock
inline constexpr const char* median_ms_at_full_clocks = "median_ms_at_full_clocks";  ///< median scaled to full clock
inline constexpr const char* interleaved = "interleaved";  ///< methods' samples taken in turn
inline constexpr const char* meaning = "meaning";          ///< what the timing method's number means
inline constexpr const char* method_choice = "method_choice";  ///< "user" or "auto"
inline constexpr const char* method_auto = "method_auto";      ///< the method was chosen automatically
inline constexpr const char* check = "check";                  ///< the result check's summary
inline constexpr const char* algorithm = "algorithm";          ///< the GEMM algorithm cuBLAS(Lt) chose
inline constexpr const char* tuning = "tuning";                ///< the GEMM's tuning, when tuned
inline constexpr const char* variant = param_key::variant;     ///< the kernel variant, in words
inline constexpr const char* grid_blocks = "grid_blocks";      ///< blocks of a grid-stride launch
inline constexpr const char* wall_sync_vs_events_relative_difference = "wall_sync_vs_events_relative_difference";
inline constexpr const char* wall_sync_over_naive = "wall_sync_over_naive";  ///< wall_sync time / wall_naive time
/// what one call did, from hardware counters (CountedWork: DRAM and L2 bytes, FLOPs, kernels)
inline constexpr const char* counters = "counters";
// Rates and where they stand.
inline constexpr const char* gb_per_s = "gb_per_s";
inline constexpr const char* tflop_per_s = "tflop_per_s";
inline constexpr const char* empty_launch_ms = "empty_launch_ms";  ///< an empty kernel's launch, same method
inline constexpr const char* launch_bound = "launch_bound";        ///< time within the launch-bound factor of it
inline constexpr const char* launch_bound_up_to_elements = "launch_bound_up_to_elements";
inline constexpr const char* cache_resident = "cache_resident";  ///< the working set fits in the L2
inline constexpr const char* l2_bytes = param_key::l2_bytes;     ///< the device's L2 size
inline constexpr const char* fraction_of_measured_hbm = "fraction_of_measured_hbm";
inline constexpr const char* fraction_of_datasheet = "fraction_of_datasheet";  ///< of the datasheet bandwidth
inline constexpr const char* knee_ceiling = "knee_ceiling";  ///< the ceiling the knee_* keys refer to
inline constexpr const char* datasheet_attainable_flops_per_s = "datasheet_attainable_flops_per_s";
inline constexpr const char* fraction_of_datasheet_attainable = "fraction_of_datasheet_attainable";
inline constexpr const char* fraction_of_datasheet_peak = "fraction_of_datasheet_peak";
inline constexpr const char* measured_attainable_flops_per_s = "measured_attainable_flops_per_s";
inline constexpr const char* fraction_of_measured_attainable = "fraction_of_measured_attainable";
inline constexpr const char* fraction_of_measured_peak = "fraction_of_measured_peak";
inline constexpr const char* bound = "bound";  ///< "memory" or "compute", by the roofline
// Ceilings.
inline constexpr const char* per_launch_us = "per_launch_us";
/// carried over from a cache, not measured in this run: {"source", "measured_at_utc"} (carried_over.hpp)
inline constexpr const char* carried_over = "carried_over";
inline constexpr const char* counting = "counting";              ///< how bytes or FLOPs were counted
inline constexpr const char* variants_tried = "variants_tried";  ///< each launch shape tried, with its rate
inline constexpr const char* observed_sm_mhz = param_key::observed_sm_mhz;
inline constexpr const char* max_sm_clock_mhz = "max_sm_clock_mhz";
inline constexpr const char* datasheet_bytes_per_s = "datasheet_bytes_per_s";
inline constexpr const char* datasheet_flops_per_s = "datasheet_flops_per_s";
// Collectives.
inline constexpr const char* ranks = param_key::ranks;
inline constexpr const char* rank_median_ms = "rank_median_ms";    ///< each rank's median
inline constexpr const char* time_over_ranks = "time_over_ranks";  ///< how the ranks' times were combined
inline constexpr const char* algbw_bytes_per_s = "algbw_bytes_per_s";
inline constexpr const char* busbw_bytes_per_s = "busbw_bytes_per_s";
inline constexpr const char* bus_factor = "bus_factor";
inline constexpr const char* bus_factor_formula = "bus_factor_formula";
// GPT-2 decode, its profile and its checks.
inline constexpr const char* tokens_per_s = "tokens_per_s";
inline constexpr const char* ms_per_step = "ms_per_step";
inline constexpr const char* decode_ceiling_tokens_per_s = "decode_ceiling_tokens_per_s";
inline constexpr const char* fraction_of_ceiling = "fraction_of_ceiling";  ///< tokens_per_s / the ceiling
inline constexpr const char* weight_bytes = "weight_bytes";
inline constexpr const char* kv_bytes_per_sequence = "kv_bytes_per_sequence";
inline constexpr const char* intensity_flop_per_byte = "intensity_flop_per_byte";
inline constexpr const char* bandwidth_bytes_per_s = "bandwidth_bytes_per_s";  ///< the ceiling's bandwidth
inline constexpr const char* bandwidth_source = "bandwidth_source";            ///< where it came from
inline constexpr const char* kernels_per_step = "kernels_per_step";
inline constexpr const char* analysis = "analysis";      ///< the profiled step's trace analysis
inline constexpr const char* trace_path = "trace_path";  ///< the trace file written
inline constexpr const char* relative_l2_error = "relative_l2_error";
inline constexpr const char* relative_l2_error_vs_reference_bf16 = "relative_l2_error_vs_reference_bf16";
inline constexpr const char* tolerance = "tolerance";
inline constexpr const char* max_abs_error = "max_abs_error";
inline constexpr const char* argmax_agree = "argmax_agree";
// The measured roofline of a trace.
inline constexpr const char* counter_roofline_row = "counter_roofline_row";  ///< the row: counters, bound, win

/// "knee_90_elements": the smallest streaming size that reaches `fraction` of the knee_ceiling.
std::string knee_elements(double fraction);
/// "knee_90_of_measured_peak_n": the smallest square GEMM's n that reaches `fraction` of the peak
/// of `ceiling_label` ("datasheet" or "measured").
std::string knee_of_peak_n(double fraction, const std::string& ceiling_label);
}  // namespace extra_key

/// Every extra key with a fixed spelling (the knee_* keys are built), for checks that iterate.
inline constexpr const char* all_extra_keys[] = {
    extra_key::sample_sm_mhz, extra_key::settle_ms, extra_key::settled_sm_mhz, extra_key::stop_reason,
    extra_key::throttled_samples_dropped, extra_key::rest_before_sample_s,
    extra_key::clocks_during, extra_key::sm_mhz_median, extra_key::reduced_clock_samples,
    extra_key::median_ms_at_full_clocks, extra_key::interleaved, extra_key::meaning, extra_key::method_choice,
    extra_key::method_auto, extra_key::check, extra_key::algorithm, extra_key::tuning, extra_key::variant,
    extra_key::grid_blocks, extra_key::wall_sync_vs_events_relative_difference, extra_key::counters, extra_key::wall_sync_over_naive,
    extra_key::gb_per_s, extra_key::tflop_per_s, extra_key::empty_launch_ms, extra_key::launch_bound,
    extra_key::launch_bound_up_to_elements, extra_key::cache_resident, extra_key::l2_bytes,
    extra_key::fraction_of_measured_hbm, extra_key::fraction_of_datasheet, extra_key::knee_ceiling,
    extra_key::datasheet_attainable_flops_per_s, extra_key::fraction_of_datasheet_attainable,
    extra_key::fraction_of_datasheet_peak, extra_key::measured_attainable_flops_per_s,
    extra_key::fraction_of_measured_attainable, extra_key::fraction_of_measured_peak, extra_key::bound,
    extra_key::per_launch_us, extra_key::carried_over, extra_key::counting, extra_key::variants_tried, extra_key::observed_sm_mhz,
    extra_key::max_sm_clock_mhz, extra_key::datasheet_bytes_per_s, extra_key::datasheet_flops_per_s,
    extra_key::ranks, extra_key::rank_median_ms, extra_key::time_over_ranks, extra_key::algbw_bytes_per_s,
    extra_key::busbw_bytes_per_s, extra_key::bus_factor, extra_key::bus_factor_formula, extra_key::tokens_per_s,
    extra_key::ms_per_step, extra_key::decode_ceiling_tokens_per_s, extra_key::fraction_of_ceiling,
    extra_key::weight_bytes, extra_key::kv_bytes_per_sequence, extra_key::intensity_flop_per_byte,
    extra_key::bandwidth_bytes_per_s, extra_key::bandwidth_source, extra_key::kernels_per_step,
    extra_key::analysis, extra_key::trace_path, extra_key::relative_l2_error,
    extra_key::relative_l2_error_vs_reference_bf16, extra_key::tolerance, extra_key::max_abs_error,
    extra_key::argmax_agree, extra_key::counter_roofline_row,
};

}  // namespace ridge
