#!/usr/bin/env bash
# make profile CHAPTER=NN [PROFILE_ARGS="--m .. --n .. --k ..", "--layer NAME" or "--graph FILE"]: Nsight Compute on one chapter's
# kernel at its headline size (or the given one). The clocks are left as the GPU sets them
# (--clock-control none), so the profiled kernel runs as it does when timed.
#   - the full report:   <build>/profile/<chapter>.ncu-rep   (open it with ncu-ui, or ncu --import)
#   - the key metrics:   appended to plots/data/<gpu-slug>-metrics.csv and printed
# The harness launches the step's kernels first when run with --no-verify (no cuBLAS reference or
# cuDNN search before them), so --launch-count 1 profiles exactly the step. KERNELS=n profiles n
# launches (chapter 14 launches three kernels per run).
set -euo pipefail
build=${1:?usage: profile.sh BUILD_DIR CHAPTER [binary flags]}
chapter=${2:?usage: profile.sh BUILD_DIR CHAPTER [binary flags]}
shift 2
manifest=$build/chapters.tsv
[ -f "$manifest" ] || { echo "profile: $manifest not found: build first"; exit 2; }
row=$(awk -F'\t' -v c="$chapter" 'NR > 1 && ($3 == c || index($3, c "_") == 1)' "$manifest" | head -n 1)
if [ -z "$row" ]; then
  echo "profile: CHAPTER=$chapter matches no step (valid: $(awk -F'\t' 'NR > 1 {printf "%s ", $3}' "$manifest"))"
  exit 2
fi
name=$(cut -f3 <<<"$row")
part=$(cut -f2 <<<"$row")
binary=$(cut -f5 <<<"$row")
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
[ -x "$ncu" ] || { echo "profile: ncu (Nsight Compute) not found"; exit 2; }
python=$(cat build/python)

# What the chapters talk about: time, throughput, traffic, coalescing, bank conflicts,
# shared-memory wavefronts, instruction mix, occupancy, the main stall reasons and (chapters 11,
# 12, 23) how busy the tensor pipe is and how many bytes cross L2.
metrics=(
  gpu__time_duration.sum
  sm__throughput.avg.pct_of_peak_sustained_elapsed
  gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
  l1tex__throughput.avg.pct_of_peak_sustained_active
  lts__throughput.avg.pct_of_peak_sustained_elapsed
  dram__throughput.avg.pct_of_peak_sustained_elapsed
  sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active
  sm__warps_active.avg.pct_of_peak_sustained_active
  launch__registers_per_thread
  dram__bytes_read.sum
  dram__bytes_write.sum
  lts__t_sector_hit_rate.pct
  l1tex__t_sector_hit_rate.pct
  l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum
  l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
  l1tex__t_requests_pipe_lsu_mem_global_op_st.sum
  l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
  l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
  l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum
  l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
  smsp__sass_inst_executed_op_global_ld.sum
  smsp__sass_inst_executed_op_shared_ld.sum
  smsp__sass_inst_executed_op_shared_st.sum
  smsp__sass_thread_inst_executed_op_ffma_pred_on.sum
  smsp__sass_thread_inst_executed_op_dfma_pred_on.sum
  sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_active
  smsp__inst_executed.sum
  smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio
  smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
  smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio
  smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio
  smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio
  smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio
  smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio
  smsp__average_warps_issue_stalled_wait_per_issue_active.ratio
  smsp__issue_active.avg.pct_of_peak_sustained_active
  sm__inst_issued.avg.pct_of_peak_sustained_active
  sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
  sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
  sm__inst_executed_pipe_tensor_op_hmma.sum
  lts__t_bytes.sum
  sm__cycles_active.avg
  sm__cycles_elapsed.avg
)
# Keep the metrics this ncu knows (names change between versions); say which are dropped.
known=$("$ncu" --query-metrics 2>/dev/null | awk '{print $1}' | sort -u)
kept=()
for m in "${metrics[@]}"; do
  if [ -z "$known" ] || grep -qx "${m%%.*}" <<<"$known"; then kept+=("$m"); else echo "profile: this ncu has no metric ${m%%.*}; skipped"; fi
done
list=$(IFS=,; echo "${kept[*]}")
mkdir -p "$build/profile"
report="$build/profile/$name"
"$ncu" --clock-control none --launch-count "${KERNELS:-1}" \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
  --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats \
  --metrics "$list" -f -o "$report" "$binary" --no-verify --warmup 0 --iters 1 "$@"
"$ncu" --import "$report.ncu-rep" --csv --page raw --metrics "$list" >"$report.csv"
slug=$("$binary" --device-info | sed -n 's/^slug: //p')
"$python" plots/metrics.py --ncu-csv "$report.csv" --chapter "$name" --part "$part" --out "plots/data/$slug-metrics.csv" -- "$@"
echo "profile: full report $report.ncu-rep"
