#!/usr/bin/env bash
# Builds a variant of one chapter's kernel with some tunables changed, self-tests it and times it
# against cuBLAS at the headline size and a few others (the way plots/data/<gpu>-tuning.csv was
# measured). The chapter's files are not touched: the copy lives in <build>/variants/<name>/.
#
#   scripts/variant.sh [-b BUILD_DIR] CHAPTER NAME=VALUE [NAME=VALUE ...]
#   scripts/variant.sh 09_double_buffering BLOCK_K=8
#   scripts/variant.sh 08_warp_tiling BLOCK_K=32
#   scripts/variant.sh 20_implicit_gemm_double_buffer BLOCK_K=8     (conv chapters: every layer)
#   scripts/variant.sh 30_spmm_warp_per_row IN_FLIGHT=16             (gcn chapters: the default graph)
#
#   KERNEL=FILE KERNEL_NAME=first scripts/variant.sh 23_implicit_gemm_tf32   (another kernel.cuh:
#                                                  an earlier version of the chapter, say)
#   BUILD_ONLY=1 scripts/variant.sh ...            (build the copy, run nothing)
#
# NAME is a `constexpr int NAME = ...;` of the chapter's kernel.cuh. KERNEL=FILE puts FILE in the
# copy instead of the chapter's kernel.cuh (its namespace must be the chapter's), the variant named
# CHAPTER_KERNEL_NAME; NAME=VALUE pairs are then optional. The copy is compiled and linked
# with the chapter's own commands, read from the build (compile_commands.json, Ninja), so its flags
# are CMake's. Results are appended to <build>/variants/variants.csv (the harness's CSV schema,
# chapter = the variant's name).
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release
if [ "${1:-}" = "-b" ]; then build=$2; shift 2; fi
chapter=${1:?usage: scripts/variant.sh [-b BUILD_DIR] CHAPTER NAME=VALUE [NAME=VALUE ...]}
shift
kernel=${KERNEL:-}
[ -z "$kernel" ] || [ -f "$kernel" ] || { echo "variant: KERNEL=$kernel: no such file"; exit 2; }
[ $# -gt 0 ] || [ -n "$kernel" ] || { echo "variant: give at least one NAME=VALUE (or KERNEL=FILE)"; exit 2; }
src=chapters/$chapter
[ -f "$src/kernel.cuh" ] || { echo "variant: no chapter $chapter (valid: $(ls chapters | tr '\n' ' '))"; exit 2; }
[ -f "$build/compile_commands.json" ] || { echo "variant: $build/compile_commands.json not found: build first (make build)"; exit 2; }
command -v ninja >/dev/null 2>&1 || { echo "variant: ninja not found (the presets build with Ninja)"; exit 2; }
ninja -C "$build" "bin/$chapter" >/dev/null || { echo "variant: building $chapter failed"; exit 1; }

name=$chapter
[ -z "$kernel" ] || name="${name}_${KERNEL_NAME:-kernel}"
for kv in "$@"; do name="${name}_${kv//=/}"; done
dir=$build/variants/$name
mkdir -p "$dir"
cp "$src/kernel.cuh" "$src/main.cu" "$dir/"
[ -z "$kernel" ] || cp "$kernel" "$dir/kernel.cuh"
for kv in "$@"; do
  key=${kv%%=*} value=${kv#*=}
  [[ $key =~ ^[A-Z_][A-Z0-9_]*$ && $value =~ ^[0-9]+$ ]] || { echo "variant: '$kv' is not NAME=integer"; exit 2; }
  grep -q "^constexpr int $key = " "$dir/kernel.cuh" || { echo "variant: $chapter has no 'constexpr int $key'"; exit 2; }
  sed -i "s/^constexpr int $key = [0-9]*;/constexpr int $key = $value;/" "$dir/kernel.cuh"
done

# The chapter's own compile and link commands, as CMake wrote them (compile_commands.json and the
# Ninja build file), pointed at the copy: the variant gets exactly the chapter's flags (architecture,
# -lineinfo, spills as errors, TUT_STEP_NAME/TITLE) and libraries, plus -Xptxas -v.
commands=$(python3 - "$build" "$chapter" "$(pwd)/$src" "$(cd "$dir" && pwd)" "$name" <<'PY'
import json, shlex, subprocess, sys
build, chapter, src, dst, name = sys.argv[1:]
entry = next((e for e in json.load(open(f"{build}/compile_commands.json")) if e["file"] == f"{src}/main.cu"), None)
if entry is None:
    sys.exit(f"variant: {src}/main.cu is not in {build}/compile_commands.json")
compile_cmd = shlex.split(entry["command"])
obj = compile_cmd[compile_cmd.index("-o") + 1]
compile_cmd = [a.replace(f"-I{src}", f"-I{dst}").replace(f"{src}/main.cu", f"{dst}/main.cu")
               .replace(f'"{chapter}"', f'"{name}"') for a in compile_cmd]
compile_cmd[compile_cmd.index("-o") + 1] = f"{dst}/main.cu.o"
compile_cmd.insert(1, "-Xptxas=-v")
compile_cmd.insert(2, f"-I{src}")  # a kernel.cuh that includes another chapter's (../NN_name/kernel.cuh)
link = subprocess.run(["ninja", "-C", build, "-t", "commands", f"bin/{chapter}"], capture_output=True, text=True,
                      check=True).stdout.strip().splitlines()[-1]
link = link.replace(obj, f"{dst}/main.cu.o").replace(f"-o bin/{chapter}", f"-o {dst}/{name}")
print(f"cd {shlex.quote(entry['directory'])} && {shlex.join(compile_cmd)}")
print(f"cd {shlex.quote(entry['directory'])} && {link}")
PY
) || exit 2
echo "variant: building $name with $chapter's flags (spills are errors, as for the chapters)"
rm -f "$dir/$name" "$dir/main.cu.o"  # (a failed compile must not leave the last variant's object to link)
sed -n 1p <<<"$commands" | bash 2>&1 | grep -E "error|registers|spill" || true
sed -n 2p <<<"$commands" | bash || true
[ -x "$dir/$name" ] || { echo "variant: build failed"; exit 1; }
# BUILD_ONLY=1: stop here (several variants can then be built side by side and run one at a time).
[ -z "${BUILD_ONLY:-}" ] || { echo "variant: built $dir/$name"; exit 0; }

"$dir/$name" --self-test >"$dir/self-test.log" 2>&1 && st=0 || st=$?
echo "variant: self-test exit $st: $(tail -n 1 "$dir/self-test.log")"
[ "$st" = 77 ] && exit 77
[ "$st" = 0 ] || exit 1
csv=$build/variants/variants.csv
part=$(awk -F'\t' -v c="$chapter" 'NR > 1 && $3 == c {print $2}' "$build/chapters.tsv")
if [ "$part" = conv ]; then  # every layer of the table
  for layer in $("$dir/$name" --layer list | awk 'NR > 1 {print $1}'); do
    "$dir/$name" --layer "$layer" --csv "$csv" | grep -E "^$name|^cuDNN"
  done
elif [ "$part" = gcn ]; then  # the default graph
  "$dir/$name" --csv "$csv" | grep -E "^$name|^cu|^lib|^log|^memory"
else
  for mnk in "4096 4096 4096" "2048 2048 2048" "8192 8192 8192" "4095 4095 4095" "4097 4093 4099"; do
    read -r m n k <<<"$mnk"
    "$dir/$name" --m "$m" --n "$n" --k "$k" --csv "$csv" | grep -E "^$name|^cuBLAS"
  done
fi
echo "variant: rows appended to $csv"
