#!/usr/bin/env bash
# Builds a variant of one chapter's kernel with some tunables changed, self-tests it and times it
# against cuBLAS at the headline size and a few others (the way plots/data/<gpu>-tuning.csv was
# measured). The chapter's files are not touched: the copy lives in <build>/variants/<name>/.
#
#   scripts/variant.sh [-b BUILD_DIR] CHAPTER NAME=VALUE [NAME=VALUE ...]
#   scripts/variant.sh 09_double_buffering BLOCK_K=8
#   scripts/variant.sh 08_warp_tiling BLOCK_K=32
#
# NAME is a `constexpr int NAME = ...;` of the chapter's kernel.cuh. Results are appended to
# <build>/variants/variants.csv (the harness's CSV schema, chapter = the variant's name).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release
if [ "${1:-}" = "-b" ]; then build=$2; shift 2; fi
chapter=${1:?usage: scripts/variant.sh [-b BUILD_DIR] CHAPTER NAME=VALUE [NAME=VALUE ...]}
shift
[ $# -gt 0 ] || { echo "variant: give at least one NAME=VALUE"; exit 2; }
src=chapters/$chapter
[ -f "$src/kernel.cuh" ] || { echo "variant: no chapter $chapter (valid: $(ls chapters | tr '\n' ' '))"; exit 2; }
lib=$build/common
[ -f "$lib/libtut_common.a" ] || { echo "variant: $lib/libtut_common.a not found: build first (make build)"; exit 2; }

name=$chapter
for kv in "$@"; do name="${name}_${kv//=/}"; done
dir=$build/variants/$name
mkdir -p "$dir"
cp "$src/kernel.cuh" "$src/main.cu" "$dir/"
for kv in "$@"; do
  key=${kv%%=*} value=${kv#*=}
  [[ $key =~ ^[A-Z_][A-Z0-9_]*$ && $value =~ ^[0-9]+$ ]] || { echo "variant: '$kv' is not NAME=integer"; exit 2; }
  grep -q "^constexpr int $key = " "$dir/kernel.cuh" || { echo "variant: $chapter has no 'constexpr int $key'"; exit 2; }
  sed -i "s/^constexpr int $key = [0-9]*;/constexpr int $key = $value;/" "$dir/kernel.cuh"
done

arch=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt")
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
echo "variant: building $name (sm_${arch:-90}; spills are errors, as for the chapters)"
rm -f "$dir/$name"
"$nvcc" -std=c++17 -O3 -lineinfo -arch="sm_${arch:-90}" -Icommon/include -Xptxas -v,-warn-spills,-Werror \
  -DTUT_STEP_NAME="\"$name\"" -DTUT_STEP_TITLE="\"$*\"" "$dir/main.cu" -o "$dir/$name" \
  "$lib/libtut_common.a" "$lib/libtut_host.a" -lcublas 2>&1 | grep -E "error|registers|spill" || true
[ -x "$dir/$name" ] || { echo "variant: build failed"; exit 1; }

"$dir/$name" --self-test >"$dir/self-test.log" 2>&1 && st=0 || st=$?
echo "variant: self-test exit $st: $(tail -n 1 "$dir/self-test.log")"
[ "$st" = 77 ] && exit 77
[ "$st" = 0 ] || exit 1
csv=$build/variants/variants.csv
for mnk in "4096 4096 4096" "2048 2048 2048" "8192 8192 8192" "4095 4095 4095" "4097 4093 4099"; do
  read -r m n k <<<"$mnk"
  "$dir/$name" --m "$m" --n "$n" --k "$k" --csv "$csv" | grep -E "^$name|^cuBLAS"
done
echo "variant: rows appended to $csv"
