#!/usr/bin/env bash
# make sanitize: every step's small self-test (--self-test --quick) under compute-sanitizer's
# memcheck (out-of-bounds and misaligned accesses, leaks), racecheck (shared-memory races) and
# synccheck (illegal barriers). Small shapes only: the tools slow kernels by orders of magnitude,
# and races and bounds errors show at small sizes as well as large ones. Logs: <build>/sanitize/.
set -uo pipefail
build=${1:?usage: sanitize.sh BUILD_DIR [PART]}
only=${2:-all}   # gemm, conv, gcn: that part's steps only
steps=${STEPS:-}  # STEPS="11_tensor_core_mma 23_implicit_gemm_tf32": only these steps
manifest=$build/chapters.tsv
[ -f "$manifest" ] || { echo "sanitize: $manifest not found: build first"; exit 2; }
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$cs" ] || { echo "sanitize: compute-sanitizer not found (it ships with the CUDA toolkit)"; exit 2; }
mkdir -p "$build/sanitize"

failures=0
while IFS=$'\t' read -r kind part name title binary _source _math _op _tags _layout; do
  [ "$kind" = "chapter" ] || continue   # baselines are the vendor's code
  [ "$only" = all ] || [ "$only" = "$part" ] || continue
  [ -z "$steps" ] || [[ " $steps " == *" $name "* ]] || continue
  for tool in memcheck racecheck synccheck; do
    extra=()
    [ "$tool" = memcheck ] && extra=(--leak-check full)
    log="$build/sanitize/$name.$tool.log"
    start=$(date +%s)
    if "$cs" --tool "$tool" "${extra[@]}" --error-exitcode 99 --print-limit 20 "$binary" --self-test --quick >"$log" 2>&1; then
      printf 'PASS  %-30s %-10s %s (%ds)\n' "$name" "$tool" "$(grep -m1 'ERROR SUMMARY' "$log" | sed 's/^=* *//')" "$(( $(date +%s) - start ))"
    else
      printf 'FAIL  %-30s %-10s see %s\n' "$name" "$tool" "$log"
      tail -n 25 "$log"
      failures=$((failures + 1))
    fi
  done
done <"$manifest"
if [ "$failures" -gt 0 ]; then echo "sanitize: $failures run(s) FAILED"; exit 1; fi
echo "sanitize: all clean"
