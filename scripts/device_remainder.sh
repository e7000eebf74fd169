#!/usr/bin/env bash
# The GPU work that is left (issue 72, docs/gpu.md's list for the next device session), built from
# scripts/device_gpu.sh's stages, in two device calls on one machine: a session has 15 minutes of
# device time in all, the machine's start included, so part a takes one call of about 9.5 minutes
# and part b what is left (DEADLINE_S from the device tool's status). Here first:
# scripts/device_deps.sh and scripts/device_nccl.sh pack; then, with the device tool:
#   run(command="bash scripts/device_remainder.sh a", carry=[".deps", ".nccl/part-0", ".nccl/manifest"], timeout_s=590)
#   status(); then with L = its budget_left_s less about 40 s (at least 150):
#   run(command="DEADLINE_S=L bash scripts/device_remainder.sh b", carry=[...the same], timeout_s=L + 30)
# Both parts: build (a no-op on a warm machine); NCCL 2.30 assembled and preloaded; a world-2 smoke
# run of full_shard and of --pp 2 (NCCL's point-to-point; part b skips them where part a ran them on
# the same machine). If NCCL 2.30 fails either, the rest runs on torch's own NCCL (a host identity
# per rank), and results/nccl.txt says so. Then
#   a: correctness, lanes at once (small ranks; 16 cores, 80 GiB or more): the --tp and --pp GPU
#      tests; the --tp parity against DTensor and the --pp parity against torch.distributed.pipelining
#      on NCCL; PyTorch's own pipelining jobs on NCCL traced and opened (pp_records). Each lane has a
#      time limit, so a hang costs only its lane, and writes its output unfiltered (a filter's buffer
#      is lost when the limit kills it). Then the 1.34B GPT's bubble (pp_1b) and, if time is left,
#      the pipelines' step times (pp_bench), before DEADLINE_S.
#   b: timings, one at a time, each within what is left before DEADLINE_S: pp_bench if part a had
#      no time for it, the offloaded first step, then the multi-rank benchmark rows (what does not
#      fit is skipped, and says so).
# Each part ends packing everything in one results.tar.gz (or its 15 MiB parts).
# The 2026-11-29 session ran this script's earlier plan (git show 20f9858:scripts/device_remainder.sh).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
PART=${1:-}
case "$PART" in
  a | b) ;;
  *) echo "usage: bash scripts/device_remainder.sh a|b (a: TP and PP parity, pipeline timings; b: first step, benchmark rows)" >&2; exit 2 ;;
esac
export OUT=${OUT:-$PWD/device-out} PYTHONUNBUFFERED=1
mkdir -p "$OUT"
START=$(date +%s)
DEADLINE_S=${DEADLINE_S:-555}  # pack's 15 s before the call's 590
DEADLINE_S=${DEADLINE_S%%.*}    # whole seconds (status gives budget_left_s with a fraction)
STATE=build-gpu/device_state    # kept on a warm machine between the two calls (ignored by git)
G="bash scripts/device_gpu.sh"
BIN=build-gpu/app/shardscope
mkdir -p "$STATE"

elapsed() { echo $(($(date +%s) - START)); }
left() { echo $((DEADLINE_S - $(elapsed))); }

# lane NAME SECONDS COMMAND: the command in bash under a time limit, its output in $OUT/lane_NAME.log.
lane() {
  timeout -k 5 "$2" bash -c "$3" > "$OUT/lane_$1.log" 2>&1
  echo "lane $1: exit $? at $(elapsed) s"
}

# timed NAME MAX COMMAND: as lane, but never past the deadline (skipped if under 30 s are left).
# Lanes run beside each other as `timed ... &`.
timed() {
  local limit
  limit=$(left)
  [ "$limit" -gt "$2" ] && limit=$2
  if [ "$limit" -lt 30 ]; then echo "skipped $1: $(left) s left" | tee "$OUT/lane_$1.log"; return; fi
  lane "$1" "$limit" "$3"
}

nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader | tee "$OUT/gpu.txt"
BUILD_TARGETS='shardscope gpu_tests' timeout 200 $G build 2>&1 | tail -3
[ -x "$BIN" ] || { echo "the build failed"; $G pack; exit 1; }
echo "built at $(elapsed) s"

use_nccl_2_30() {
  bash scripts/device_nccl.sh assemble || return 1
  export LD_PRELOAD=$PWD/.nccl/libnccl.so.2
  python3 -c 'import ctypes, torch
code = ctypes.c_int(); ctypes.CDLL("libnccl.so.2").ncclGetVersion(ctypes.byref(code))
assert code.value >= 23000, code.value; print("NCCL that torch runs now:", code.value)' || return 1
  [ -e "$STATE/nccl_2_30_ok" ] && { echo "its smoke runs passed in this machine's first call"; return 0; }
  timeout 90 "$BIN" run --device cuda --model gpt --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 97 \
    --batch 8 --world 2 --steps 2 --strategy full_shard --summary "$OUT/smoke.json" 2>&1
  python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print("smoke:", s["status"], s["device"]); assert s["status"] == "ok"' \
    "$OUT/smoke.json" || return 1
  # NCCL's point-to-point between ranks sharing the GPU (a pipeline's sends and receives), never run
  # under NCCL_MULTI_RANK_GPU_ENABLE before.
  timeout 90 "$BIN" run --device cuda --model gpt --layers 3 --hidden 64 --heads 4 --seq 16 --vocab 97 \
    --batch 8 --world 2 --pp 2 --schedule 1f1b --microbatches 4 --steps 2 --summary "$OUT/smoke_pp.json" 2>&1
  python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print("smoke --pp 2:", s["status"]); assert s["status"] == "ok"' \
    "$OUT/smoke_pp.json" || return 1
  touch "$STATE/nccl_2_30_ok"
}
# The smoke runs' whole output goes to nccl.txt (a failure's NCCL error with it); part b skips what
# part a found on the same machine.
if [ -e "$STATE/nccl_2_30_failed" ]; then
  echo "NCCL 2.30 failed in this machine's first call: torch's NCCL, a host identity per rank" | tee "$OUT/nccl.txt"
elif use_nccl_2_30 > "$OUT/nccl.txt" 2>&1; then
  echo "NCCL 2.30 in use (multi-rank GPU)" | tee -a "$OUT/nccl.txt"
else
  unset LD_PRELOAD
  touch "$STATE/nccl_2_30_failed"
  echo "NCCL 2.30 FAILED (see nccl.txt): the rest runs on torch's NCCL, a host identity per rank" | tee -a "$OUT/nccl.txt"
fi
tail -3 "$OUT/nccl.txt"

part_a() {
  timed gpu_tests_tp 200 "build-gpu/tests/gpu_tests --gtest_filter='GpuRun.TensorParallel*'" &
  timed gpu_tests_pp 200 "build-gpu/tests/gpu_tests --gtest_filter='GpuRun.Pipeline*'" &
  timed tp_parity 200 "$G tp_parity" &
  timed pp_parity 200 "$G pp_parity" &
  timed pp_records 200 "$G pp_records" &
  wait
  grep -hE "tests? .*(PASSED|FAILED)|^\[  FAILED|^(ok|FAIL) |passed, .* failed|failed stages" "$OUT"/lane_*.log | head -60
  timed pp_1b 200 "$G pp_1b"
  timed pp_bench 100 "$G pp_bench" && grep -q "ratio" "$OUT/lane_pp_bench.log" && touch "$STATE/pp_bench_done"
  tail -n 4 "$OUT"/lane_pp_1b.log "$OUT"/lane_pp_bench.log
}

part_b() {
  [ -e "$STATE/pp_bench_done" ] || timed pp_bench 100 "$G pp_bench"
  timed first_step 200 "$G first_step"
  timed bench_multirank 240 "BENCH_NAME=bench_multirank BENCH_ARGS='--worlds 2,4 --repeats 1 --warmup-runs 0 --steps 6' $G bench"
  tail -n 6 "$OUT"/lane_pp_bench.log "$OUT"/lane_first_step.log "$OUT"/lane_bench_multirank.log 2>/dev/null
}

"part_$PART"
echo "part $PART done at $(elapsed) s"
$G pack
