#!/usr/bin/env bash
# Builds ridge's libFuzzer targets (clang, AddressSanitizer + UBSan, in build-fuzz/) and runs each
# for SECONDS (default 10) on its corpus, fuzz/corpus/<target>/. Exits 1 on any finding: a crash,
# an exception other than ridge::UsageError, a hang over 10 s, more than 2 GB of memory.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     TARGET: result_file chrome_trace safetensors catalog sizes
#
# RIDGE_FUZZ_SEED=N fixes libFuzzer's random seed (CI sets it), so a run of the same tree explores the
# same inputs in the same order (as far as its time allows): its verdict does not flip between runs.
# New inputs libFuzzer finds go to build-fuzz/corpus/<target>/ (the repository's corpus is only read);
# a finding is written to build-fuzz/findings/<target>/ and its log to build-fuzz/logs/<target>.log.
# Needs clang++ (apt-get install clang), CMake, Ninja, and what the main build needs (docs/hardening.md).
set -euo pipefail
cd "$(dirname "$0")/.."

say_prefix=fuzz
source scripts/lib/apt.sh  # say, want, install_missing
seconds=${1:-10}
shift || true
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  say "SECONDS must be a whole number >= 1, not '$seconds'"; exit 2
fi
all_targets=(result_file chrome_trace safetensors catalog sizes)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { say "unknown target '$t' (known: ${all_targets[*]})"; exit 2; }
done

# The longest input each target is given, bytes: a few times its largest corpus file.
max_len() {
  case $1 in
    result_file|chrome_trace) echo 16384 ;;
    safetensors) echo 4096 ;;
    catalog) echo 32768 ;;
    sizes) echo 256 ;;
  esac
}

# clang++ that links libFuzzer with the sanitizers; installed through apt-get when missing.
cxx=${RIDGE_FUZZ_CXX:-clang++}
fuzzer_ok() {
  local probe; probe=$(mktemp -d)
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' >"$probe/probe.cpp"
  "$cxx" -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" >/dev/null 2>&1
  local rc=$?; rm -rf "$probe"; return $rc
}
if ! fuzzer_ok; then
  want clang "clang++ ($cxx)"; want libclang-rt-dev "libFuzzer and the sanitizer runtimes for clang"
  install_missing
  fuzzer_ok || { say "$cxx cannot build a libFuzzer target (-fsanitize=fuzzer,address,undefined); set RIDGE_FUZZ_CXX to a clang++ that can"; exit 1; }
fi
command -v nvcc >/dev/null 2>&1 || export PATH=/usr/local/cuda/bin:$PATH
build=${RIDGE_FUZZ_BUILD:-build-fuzz}
read -r -a cmake_args <<<"${RIDGE_CMAKE_ARGS:-}"
# -O1 and line tables only: what a sanitized fuzz target needs, in less build time than -O2 -g.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" -DRIDGE_FUZZ=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DRIDGE_BUILD_TESTS=OFF "${cmake_args[@]}" >/dev/null
cmake --build "$build" --target ridge_fuzz -j "$(nproc)"

mkdir -p "$build/logs"
seed_arg=()
if [ -n "${RIDGE_FUZZ_SEED:-}" ]; then
  [[ "$RIDGE_FUZZ_SEED" =~ ^[0-9]+$ ]] || { say "RIDGE_FUZZ_SEED must be a whole number, not '$RIDGE_FUZZ_SEED'"; exit 2; }
  seed_arg=(-seed="$RIDGE_FUZZ_SEED")
fi
failed=()
for t in "${targets[@]}"; do
  work="$build/corpus/$t" findings="$build/findings/$t" log="$build/logs/$t.log"
  mkdir -p "$work" "$findings"
  say "$t: ${seconds} s, inputs up to $(max_len "$t") bytes"
  if "$build/fuzz/fuzz_$t" ${seed_arg[@]+"${seed_arg[@]}"} -max_total_time="$seconds" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
       -malloc_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$findings/" "$work" "fuzz/corpus/$t" >"$log" 2>&1; then
    grep -E '^(#[0-9]+[[:space:]]+DONE|Done [0-9]+ runs|stat::)' "$log" | sed "s/^/  /" >&2 || true
  else
    failed+=("$t")
    say "$t FOUND A PROBLEM; the end of $log:"
    tail -n 40 "$log" >&2
    say "the input: $(ls -t "$findings" | head -n1 | sed "s|^|$findings/|"); reproduce with $build/fuzz/fuzz_$t FILE"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  say "findings in: ${failed[*]}. Fix each, and add its input to tests/unit/data and fuzz/corpus/<target>/"
  exit 1
fi
say "no finding in ${targets[*]} (${seconds} s each)"
