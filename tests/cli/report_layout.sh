#!/usr/bin/env bash
# report_layout.sh RIDGE OUTDIR: runs the model-only report (every GPU hidden) and checks the folder:
# report.md, report.html, results.json and SVG plots; the HTML is self-contained (plots inline, no
# network references, no scripts, no Markdown syntax left outside code); predictions are stored;
# `ridge compare` reads the folder (and exits 6: a model-only report has no timed record to compare).
set -u
ridge=$1; out=$2
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out"
printed=$(CUDA_VISIBLE_DEVICES= "$ridge" report -o "$out" --predict hbm_tb_per_s=4.1 --predict my_guess=7 2>"$out.stderr")
rc=$?
[ "$rc" = 0 ] || { cat "$out.stderr"; fail "ridge report exited $rc without a GPU (expected 0)"; }
[ "$printed" = "$out" ] || fail "stdout should be the folder '$out', got '$printed'"
grep -q "model-only" "$out.stderr" || fail "stderr does not say the report is model-only"
for f in report.md report.html results.json; do [ -s "$out/$f" ] || fail "missing $f"; done
svgs=$(ls "$out"/*.svg 2>/dev/null | wc -l)
[ "$svgs" -ge 3 ] || fail "expected at least 3 SVG plots, found $svgs"
for f in "$out"/*.svg; do grep -q "<svg" "$f" || fail "$f is not an SVG"; done
html=$out/report.html
inline=$(grep -o "<svg" "$html" | wc -l)
[ "$inline" -ge "$svgs" ] || fail "report.html inlines $inline plots, the folder has $svgs"
if grep -Eiq "https?://" "$html"; then grep -Eion ".{30}https?://.{30}" "$html" | head; fail "report.html references the network"; fi
grep -Eiq "<script|<link|<img|@import" "$html" && fail "report.html loads something (script/link/img/@import)"
# The HTML shows what the Markdown says: no Markdown syntax left in the text a reader sees.
visible=$(perl -0777 -pe 's{<(pre|code|style|svg)\b.*?</\1>}{}gs' "$html")
if printf '%s' "$visible" | grep -q '\*\*'; then printf '%s' "$visible" | grep -n '\*\*' | head -3; fail "report.html shows literal **"; fi
if printf '%s' "$visible" | grep -q '`'; then printf '%s' "$visible" | grep -n '`' | head -3; fail "report.html shows literal backticks"; fi
grep -q "<strong>Model-only report.</strong>" "$html" || fail "report.html does not render the bold label"
grep -q "Model-only report" "$out/report.md" || fail "report.md is not labelled model-only"
grep -q "Model-only report" "$html" || fail "report.html is not labelled model-only"
for want in "Decode ceilings" "GPT-2 small" "Llama-3.1 70B" "Amdahl" "1.11x" "1.25x" "Predictions" "hbm_tb_per_s" \
            "unknown key" "Roofline"; do
  grep -q -- "$want" "$out/report.md" || fail "report.md lacks '$want'"
done
# The answer first: the summary is the first section, at most 25 lines, in the HTML too and in results.json.
[ "$(grep -m1 '^## ' "$out/report.md")" = "## Summary" ] || fail "report.md does not open with its summary"
summary_lines=$(awk '/^## Summary/{on=1; next} /^## /{on=0} on' "$out/report.md" | wc -l)
[ "$summary_lines" -le 25 ] || fail "the summary takes $summary_lines lines (at most 25)"
[ "$(grep -o '<h2 id="[^"]*"' "$html" | head -1)" = '<h2 id="summary"' ] || fail "report.html does not open with its summary"
grep -q '"summary": {' "$out/results.json" || fail "results.json has no report.summary"
grep -q '"schema": "ridge.results"' "$out/results.json" || fail "results.json is not a ridge result file"
grep -q '"hbm_tb_per_s": 4.1' "$out/results.json" || fail "results.json does not store the prediction"
grep -q '"mode": "model_only"' "$out/results.json" || fail "results.json does not record the mode"
# A model-only report holds no timed records: compare reads the folder and says nothing was compared (6).
"$ridge" compare "$out" "$out" >/dev/null 2>&1; rc=$?
[ "$rc" = 6 ] || fail "ridge compare on the model-only report folder exited $rc (expected 6: read, nothing to compare)"
echo "ok: model-only report in $out ($svgs plots)"
