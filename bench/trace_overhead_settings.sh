# Tracer settings swept by bench/trace_overhead_cpp.sh (sourced).
# label -> RIDGE_TRACE_* settings ("-" = untraced). Kernel records are always on when traced.
declare -A SETTINGS=(
  [untraced]="-"
  [kernel]="RIDGE_TRACE_API=none RIDGE_TRACE_SYNC=0 RIDGE_TRACE_NVTX=0 RIDGE_TRACE_MEMCPY=0"
  [kernel_nosub]="RIDGE_TRACE_API=none RIDGE_TRACE_SYNC=0 RIDGE_TRACE_NVTX=0 RIDGE_TRACE_MEMCPY=0 RIDGE_TRACE_DETECT_SUBSCRIBER=0"
  [kernel_memcpy]="RIDGE_TRACE_API=none RIDGE_TRACE_SYNC=0 RIDGE_TRACE_NVTX=0"
  [kernel_sync]="RIDGE_TRACE_API=none RIDGE_TRACE_SYNC=1 RIDGE_TRACE_NVTX=0 RIDGE_TRACE_MEMCPY=0"
  [kernel_nvtx]="RIDGE_TRACE_API=none RIDGE_TRACE_SYNC=0 RIDGE_TRACE_MEMCPY=0"
  [api_none]="RIDGE_TRACE_API=none RIDGE_TRACE_SYNC=1"
  # the default of rounds 1-2 (the injection's default before synchronization records became opt-in)
  [default]="RIDGE_TRACE_API=selected RIDGE_TRACE_SYNC=1"
  [default_nosub]="RIDGE_TRACE_API=selected RIDGE_TRACE_SYNC=1 RIDGE_TRACE_DETECT_SUBSCRIBER=0"
  [default_shared_buf]="RIDGE_TRACE_API=selected RIDGE_TRACE_SYNC=1 RIDGE_TRACE_PER_THREAD_BUFFERS=0"
  [default_4mb]="RIDGE_TRACE_API=selected RIDGE_TRACE_SYNC=1 RIDGE_TRACE_BUFFER_MB=4"
  [most]="RIDGE_TRACE_API=most RIDGE_TRACE_SYNC=1"
  # round 2: without the whole-domain hooks that round 1 found costly
  [nosync]="RIDGE_TRACE_API=selected RIDGE_TRACE_SYNC=0"
  [nosync_nonvtx]="RIDGE_TRACE_API=selected RIDGE_TRACE_SYNC=0 RIDGE_TRACE_NVTX=0"
  [driver_nosync]="RIDGE_TRACE_API=selected RIDGE_TRACE_API_DOMAINS=driver RIDGE_TRACE_SYNC=0"
  [driver_nosync_nonvtx]="RIDGE_TRACE_API=selected RIDGE_TRACE_API_DOMAINS=driver RIDGE_TRACE_SYNC=0 RIDGE_TRACE_NVTX=0"
  [kernel_memcpy_nvtx]="RIDGE_TRACE_API=none RIDGE_TRACE_SYNC=0"
)
ORDER="untraced kernel kernel_nosub kernel_memcpy kernel_sync kernel_nvtx api_none default default_nosub default_shared_buf default_4mb most"

# Runs "$@" traced with one setting: traced_run LABEL LIB SUMMARY_JSON CMD ARGS...
traced_run() {
  local label=$1 lib=$2 summary=$3
  shift 3
  local settings=${SETTINGS[$label]}
  if [[ $settings == "-" ]]; then
    "$@"
    return
  fi
  local nvtx_lib=$lib
  [[ $settings == *RIDGE_TRACE_NVTX=0* ]] && nvtx_lib=""
  env CUDA_INJECTION64_PATH="$lib" NVTX_INJECTION64_PATH="$nvtx_lib" RIDGE_TRACE_OUTPUT= \
      RIDGE_TRACE_SUMMARY="$summary" $settings "$@"
}
