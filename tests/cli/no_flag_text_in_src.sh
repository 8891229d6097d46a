#!/usr/bin/env bash
# no_flag_text_in_src.sh SOURCE_DIR: fails when a string literal under src/ holds command-line flag
# text ("--samples"). The library's errors and findings reach Python users too, so they name the
# field or argument ("samples must be >= 1"); the CLI adds the option that sets it (cli::naming_option).
set -u
cd "$1" || exit 2

# What remains, per file: at most this many lines with flag text, to be converted (the report's
# advice and the trace launcher).
# A file's count may only go down.
declare -A allowed=(
  [src/report/markdown_html.cpp]=1             # report: CSS custom properties (var(--ink)), not flags
  [src/report/report.cpp]=1                    # report: its own advice to the reader, which names commands
  [src/report/sections/gpu.cpp]=2
  [src/trace/cupti/collector.cpp]=1            # trace: the tracer's launcher and analysis
  [src/trace/cupti/inject_env.hpp]=1
  [src/trace/launch.cpp]=9
  [src/trace/model/ranks.cpp]=1
  [src/trace/model/analysis.cpp]=2
)

status=0
while read -r count file; do
  limit=${allowed[$file]:-0}
  if (( count > limit )); then
    echo "$file: $count line(s) with --flag text in a string (allowed: $limit). Name the field or argument instead:"
    grep -nE -- '"[^"]*--[a-z][a-z-]+' "$file" | sed 's/^/  /'
    status=1
  fi
done < <(grep -rcE -- '"[^"]*--[a-z][a-z-]+' src | awk -F: '$2 > 0 {print $2, $1}')
[ "$status" = 0 ] && echo "ok: no new --flag text in src/"
exit $status
