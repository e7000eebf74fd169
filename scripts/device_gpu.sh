#!/usr/bin/env bash
# Builds shardscope on a GPU machine against that machine's own torch and runs the GPU checks, in
# one call. Meant for the device machine (no package registry there): first, here, run
# scripts/device_deps.sh, then carry .deps with the call, e.g. with the device tool:
#   run(command="bash scripts/device_gpu.sh build tests parity bench demo", carry=[".deps"])
# Stages, in the order given:
#   build   configure (GUI off) and build into build-gpu/ (kept on a warm machine); BUILD_TARGETS
#           limits it to the targets named
#   tests   ctest: the GPU suite (gpu_tests) and the engine/CLI suites on this machine
#   parity  scripts/pytorch_parity.py --device cuda at world sizes 1, 2 and 4, fp32 then bf16
#           (PARITY_PRECISIONS picks which, PARITY_ARGS adds options, e.g. "--models gpt")
#   bench   bench/gpu_strategies.py: step time, peak allocated, MFU vs PyTorch DDP/FSDP2
#           (more options through BENCH_ARGS, e.g. BENCH_ARGS="--repeats 3"; BENCH_VARIANTS, one
#           argument with spaces inside, becomes --variants, e.g.
#           BENCH_VARIANTS="default=;unrecorded=--recording off"; BENCH_NAME names its .json and
#           .log, default gpu_strategies)
#   profile bench/gpu_comm_profile.py: GPU time per step by collective on both sides of a pair
#           (default: world 4 full_shard; more options through PROFILE_ARGS), with both traces
#   records tests/pytorch_profiler_traces.py --device cuda: real PyTorch DDP and FSDP2 jobs on NCCL
#           recorded by python/shardscope_record (traces and CUDA memory snapshots), opened by
#           `shardscope view` and checked; each job's files come back in $OUT/records/MODE_wWORLD
#           (end with pack)
#   nccl    NCCL 2.30+ for the stages after it (issue 25 part 2): assembles the library carried
#           in .nccl (scripts/device_nccl.sh pack, here; carry .nccl/part-0 and .nccl/manifest),
#           preloads it, and checks torch loads it; ranks that share the GPU then go through
#           NCCL_MULTI_RANK_GPU_ENABLE, on both sides of parity and bench. Give it after build.
#   demo    a GPU compare run with --trace/--summary, to open here with `shardscope view`
#   tp_parity  scripts/pytorch_parity.py --tp --device cuda: shardscope --tp on NCCL against DTensor TP
#           + FSDP2 (TP_MESHES, default 2:2,4:2)
#   nccl_traces  tests/pytorch_nccl_traces.py: real FSDP2 and TP + FSDP2 jobs on NCCL recorded with
#           torch.profiler alone (no memory events), one rank slowed; each opened with `view --summary`
#   slow_rank  shardscope's own GPU ranks with --slow-rank 1:3, a launch-bound and a device-bound
#           model: who the stragglers view names when rank 1's host is slowed
#   trace_1b  bench/trace_pipeline.py on the 1.34B GPT at world 2: .pftrace bytes per step, events
#           dropped, reopening time and RSS (TRACE_1B_STEPS, default 20)
#   offload_fp32  world-2 fp32 full_shard --offload cpu at --prefetch 1 and 2: summaries for the
#           estimator's fp32 offload_device_copies (docs/estimate.md)
#   first_step  the 1.34B GPT offloaded, 2 steps: traced, --recording off, traced with
#           CUDA_MODULE_LOADING=EAGER (what makes the first step slow, docs/gpu.md)
#   pp_parity  scripts/pytorch_parity.py --pp --device cuda: --pp against torch.distributed.pipelining
#           on NCCL (every schedule at P = 2; 1f1b, zbv and dualpipev under full_shard at world 4)
#   pp_bench  bench/pipeline_schedules.py --device cuda: step time against torch.distributed.pipelining,
#           2 ranks sharing the GPU, the small GPT, gpipe and 1f1b (PP_BENCH_ARGS adds or overrides)
#   pp_1b   the same on the 1.34B GPT at --microbatches 8 (1f1b): its measured bubble beside the
#           closed form (2 ranks time-slicing one GPU: not one device a stage, as the form assumes),
#           its trace kept in $OUT/pipeline_1b (PP_1B_ARGS adds options, e.g. --schedules 1f1b,gpipe)
#   pp_records  tests/pytorch_pipeline_trace.py --device cuda: PyTorch's own pipelining jobs (five
#           schedules; Schedule1F1B records no action spans) on NCCL, traced with torch.profiler's CUDA activity, opened by `view`; the
#           traces kept in $OUT/pp_records (a GPU job's actions: the host's spans and the device's copies)
#   pack    everything in $OUT into one $OUT/results.tar.gz, in 15 MiB pieces if larger (the device
#           tool brings back at most 8 files a call, 16 MiB each; give it last)
# Results go to $OUT (the device tool's folder) or ./device-out.
# A rehearsal on a machine without a GPU: SHARDSCOPE_BIN=build/app/shardscope PP_DEVICE=cpu runs the
# pipeline stages (pp_*) on CPU ranks (with PP_1B_ARGS="--model small" in place of the 1.34B GPT:
# a later option wins).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${OUT:-$ROOT/device-out}
mkdir -p "$OUT"
PY=${SHARDSCOPE_PYTHON:-python3}
export PYTHONUNBUFFERED=1
BIN=${SHARDSCOPE_BIN:-$ROOT/build-gpu/app/shardscope}
PP_DEVICE=${PP_DEVICE:-cuda}

stage_build() {
  [ -d .deps/include ] || { echo "error: .deps/ is missing: run scripts/device_deps.sh here first and carry .deps" >&2; exit 1; }
  local torch_prefix
  torch_prefix=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DSHARDSCOPE_BUILD_GUI=OFF \
    -DCMAKE_PREFIX_PATH="$torch_prefix" -DCMAKE_INCLUDE_PATH="$ROOT/.deps/include" -DCMAKE_LIBRARY_PATH="$ROOT/.deps/lib" \
    -DGLOO_INCLUDE_DIR="$ROOT/.deps/gloo" -DSHARDSCOPE_GTEST_SOURCE="$ROOT/.deps/googletest" \
    -DSHARDSCOPE_PYTHON="$(command -v "$PY")" > /tmp/configure.log 2>&1 \
    || { tail -40 /tmp/configure.log; exit 1; }
  # BUILD_TARGETS (e.g. "shardscope gpu_tests") builds only those: a fresh machine's build is device time.
  # shellcheck disable=SC2086  # a list of targets
  cmake --build build-gpu -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} 2>&1 | tail -5 || exit 1
}

stage_tests() {
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | cat
  (cd build-gpu && ctest -j4 --output-on-failure -E 'pytorch_parity|torchrun_launch' 2>&1 | tee "$OUT/ctest.log" | grep -E "GpuRun|tests passed|tests failed|Failed|SKIPPED" )
}

stage_parity() {
  local precision status=0
  # fp32 over all models takes about 8.5 minutes on the H100: PARITY_PRECISIONS and PARITY_ARGS
  # (e.g. PARITY_ARGS="--models gpt_lora --worlds 2,4", which override the defaults) split it.
  for precision in ${PARITY_PRECISIONS:-fp32 bf16}; do
    # shellcheck disable=SC2086  # PARITY_ARGS is a list of options
    "$PY" scripts/pytorch_parity.py --device cuda --worlds 1,2,4 --precision "$precision" \
      --shardscope "$BIN" --workdir /tmp/gpu_parity ${PARITY_ARGS:-} 2>&1 \
      | tee "$OUT/parity_$precision.log" | grep -vE "^\s*$" || status=1
  done
  return $status
}

stage_bench() {
  # shellcheck disable=SC2086  # BENCH_ARGS is a list of options
  # BENCH_NAME names its files, so two bench calls in one command keep both.
  local name=${BENCH_NAME:-gpu_strategies}
  "$PY" bench/gpu_strategies.py --shardscope "$BIN" --out "$OUT/$name.json" ${BENCH_ARGS:-} \
    ${BENCH_VARIANTS:+--variants "$BENCH_VARIANTS"} 2>&1 | tee "$OUT/$name.log"
}

stage_profile() {
  local status=0
  # shellcheck disable=SC2086  # PROFILE_ARGS is a list of options
  "$PY" bench/gpu_comm_profile.py --shardscope "$BIN" --out-dir "$OUT/profile" ${PROFILE_ARGS:-} \
    2>&1 | tee "$OUT/profile.log" || status=1
  # A file over 16 MiB does not come back from the device; JSON traces shrink about tenfold
  # (Perfetto opens .json.gz as it is; gunzip for `shardscope view`).
  gzip -f "$OUT"/profile/*.json 2>/dev/null || true
  ls -l "$OUT/profile" 2>/dev/null || true
  return $status
}

stage_records() {
  local status=0
  "$PY" tests/pytorch_profiler_traces.py --shardscope "$BIN" --workdir /tmp/gpu_records --device cuda 2>&1 \
    | tee "$OUT/records.log" | grep -vE "^\s*$" || status=1
  grep -q "^FAIL" "$OUT/records.log" && status=1
  # Every job's files, to check here again (tests/pytorch_profiler_traces.py --recorded) and open.
  local job
  for job in /tmp/gpu_records/*/job; do
    mkdir -p "$OUT/records/$(basename "$(dirname "$job")")" && cp "$job"/rank-* "$OUT/records/$(basename "$(dirname "$job")")/"
  done
  return $status
}

stage_nccl() {
  bash scripts/device_nccl.sh assemble || return 1
  export LD_PRELOAD="$ROOT/.nccl/libnccl.so.2"
  local version
  # What the process runs (ncclGetVersion), after torch loaded its own: torch.cuda.nccl.version()
  # is the version torch was built with, whatever is preloaded.
  version=$("$PY" -c 'import ctypes, torch
code = ctypes.c_int()
ctypes.CDLL("libnccl.so.2").ncclGetVersion(ctypes.byref(code))
print(f"{code.value // 10000}.{code.value // 100 % 100}.{code.value % 100}")') || return 1
  echo "NCCL that torch runs now: $version"
  if [ "$("$PY" -c "print(tuple(map(int, '$version'.split('.'))) >= (2, 30, 0))")" != True ]; then
    echo "nccl: the preloaded library did not take (torch reports $version): the later stages would use sockets" >&2
    unset LD_PRELOAD
    return 1
  fi
}

stage_demo() {
  "$BIN" compare --device cuda --model gpt --layers 4 --hidden 512 --heads 8 --seq 128 --vocab 4096 \
    --batch 8 --world 2 --steps 4 --summary "$OUT/gpu_compare_summary.json" 2>&1 | tail -12 || return 1
  "$BIN" run --device cuda --model gpt --layers 4 --hidden 512 --heads 8 --seq 128 --vocab 4096 \
    --batch 8 --world 2 --steps 4 --strategy full_shard --trace "$OUT/gpu_full_shard_trace.json" \
    --summary "$OUT/gpu_full_shard_summary.json" 2>&1 | tail -8
}

stage_tp_parity() {
  local status=0
  "$PY" scripts/pytorch_parity.py --device cuda --tp --tp-meshes "${TP_MESHES:-2:2,4:2}" --shardscope "$BIN" \
    --workdir /tmp/gpu_parity_tp 2>&1 | tee "$OUT/parity_tp.log" | grep -vE "^\s*$" || status=1
  grep -q "^FAIL" "$OUT/parity_tp.log" && status=1
  return $status
}

stage_nccl_traces() {
  "$PY" tests/pytorch_nccl_traces.py --out "$OUT/nccl_traces" 2>&1 | tee "$OUT/nccl_traces.log" | grep -v Warning || return 1
  local job
  for job in "$OUT"/nccl_traces/*/; do
    "$BIN" view "$job" --summary "$job/summary.json" 2>&1 | tail -4 || return 1
    "$PY" -c 'import json, sys
for r in json.load(open(sys.argv[1]))["ranks"]:
    print("  rank %d: last arrivals %d, wait caused %.4f s, overlap %.1f %%" % (r["rank"], r["last_arrivals"],
          r["wait_caused_s"], r["overlap_pct"]))' "$job/summary.json"
  done
}

# Rank 1's compute spans slowed threefold by a host sleep; the summary's arrivals come from the
# collectives' device start times.
stage_slow_rank() {
  local name args
  for name in launch_bound device_bound; do
    args="--layers 3 --hidden 64 --heads 4 --seq 16 --vocab 97 --batch 8"
    [ "$name" = device_bound ] && args="--layers 8 --hidden 1024 --heads 16 --seq 512 --vocab 8192 --batch 16"
    # shellcheck disable=SC2086  # a list of options
    "$BIN" run --device cuda --model gpt $args --world 2 --strategy ddp --steps 8 --slow-rank 1:3 \
      --summary "$OUT/slow_rank_$name.json" 2>&1 | tail -3 || return 1
    "$PY" -c 'import json, sys
s = json.load(open(sys.argv[1]))
print(sys.argv[2], [(r["rank"], r["last_arrivals"], round(r["wait_caused_s"], 4), round(r["steady_step_time_s"], 4)) for r in s["ranks"]])' \
      "$OUT/slow_rank_$name.json" "$name (rank, last arrivals, wait caused s, step s):"
  done
}

GPT_1B="--model gpt --layers 24 --hidden 2048 --heads 16 --seq 1024 --vocab 32000"

stage_trace_1b() {
  "$PY" bench/trace_pipeline.py --shardscope "$BIN" --steps "${TRACE_1B_STEPS:-20}" --formats pftrace \
    --model "$GPT_1B --batch 16 --world 2 --strategy full_shard --device cuda" --json "$OUT/trace_1b.json" 2>&1 \
    | tee "$OUT/trace_1b.log"
}

stage_offload_fp32() {
  local prefetch
  for prefetch in 1 2; do
    "$BIN" run --device cuda --model gpt --layers 8 --hidden 1024 --heads 16 --seq 512 --vocab 8192 --batch 16 \
      --world 2 --steps 3 --strategy full_shard --offload cpu --prefetch "$prefetch" \
      --summary "$OUT/offload_fp32_prefetch$prefetch.json" 2>&1 | tail -2 || return 1
  done
}

stage_first_step() {
  local run="$BIN run --device cuda $GPT_1B --batch 8 --world 1 --steps 2 --strategy full_shard --offload cpu --precision bf16"
  $run --trace "$OUT/first_step.pftrace" --summary "$OUT/first_step.json" 2>&1 | tail -2 || return 1
  $run --recording off --summary "$OUT/first_step_unrecorded.json" 2>&1 | tail -2 || return 1
  CUDA_MODULE_LOADING=EAGER $run --trace "$OUT/first_step_eager.pftrace" --summary "$OUT/first_step_eager.json" \
    2>&1 | tail -2 || return 1
}

stage_pp_parity() {
  local status=0
  "$PY" scripts/pytorch_parity.py --pp --device "$PP_DEVICE" --shardscope "$BIN" --workdir /tmp/gpu_parity_pp 2>&1 \
    | tee "$OUT/parity_pp.log" | grep -vE "^\s*$" || status=1
  grep -q "^FAIL" "$OUT/parity_pp.log" && status=1
  return $status
}

# The small GPT's step time, gpipe and 1f1b by default (PP_BENCH_ARGS="--schedules ..." for others).
stage_pp_bench() {
  # shellcheck disable=SC2086  # a list of options
  "$PY" bench/pipeline_schedules.py --shardscope "$BIN" --device "$PP_DEVICE" --schedules gpipe,1f1b --repeats 1 \
    --steps 8 --warmup 2 --out "$OUT/pipeline_schedules_multi_rank.json" ${PP_BENCH_ARGS:-} 2>&1 \
    | tee "$OUT/pipeline_schedules.log"
}

# The 1.34B GPT at 8 micro-batches, where a stage's compute is long enough for the bubble to be the
# schedule's and not the launches'. Two ranks share the GPU: a rank's idle time holds the other's
# kernels too, so the measured bubble is a shared GPU's, beside a closed form for a GPU a stage.
stage_pp_1b() {
  # shellcheck disable=SC2086  # a list of options
  "$PY" bench/pipeline_schedules.py --shardscope "$BIN" --device "$PP_DEVICE" --model gpt_1b --schedules 1f1b \
    --microbatches 8 --batch 8 --repeats 1 --steps 5 --warmup 2 --trace-dir "$OUT/pipeline_1b" \
    --out "$OUT/pipeline_1b_multi_rank.json" ${PP_1B_ARGS:-} 2>&1 | tee "$OUT/pipeline_1b.log"
}

stage_pp_records() {
  local status=0
  "$PY" tests/pytorch_pipeline_trace.py --shardscope "$BIN" --workdir /tmp/gpu_pp_records --device "$PP_DEVICE" \
    --keep "$OUT/pp_records" 2>&1 | tee "$OUT/pp_records.log" | grep -vE "^\s*$|Warning|_warn_once" || status=1
  grep -q "^FAIL" "$OUT/pp_records.log" && status=1
  return $status
}

stage_pack() {
  local archive=/tmp/results.tar.gz
  # It empties $OUT: only ever the device tool's folder or ./device-out.
  case "$(cd "$OUT" && pwd)" in
    / | "$ROOT") echo "pack: OUT=$OUT is not a results folder; not packing" >&2; return 1 ;;
  esac
  tar -czf "$archive" -C "$OUT" . || return 1
  # A file over 16 MiB does not come back: then the archive goes in 15 MiB pieces (cat
  # results.tar.gz.part-* | tar -xz), and if even those would be over 8 files, $OUT stays as it is.
  local size
  size=$(stat -c %s "$archive")
  if [ "$size" -gt $((8 * 15 * 1024 * 1024)) ]; then
    echo "pack: the archive is $((size >> 20)) MiB, over what one call brings back; $OUT left as it is" >&2
    rm -f "$archive"
    return 1
  fi
  find "$OUT" -mindepth 1 -delete
  if [ "$size" -gt $((15 * 1024 * 1024)) ]; then
    split -b 15M -d -a 1 "$archive" "$OUT/results.tar.gz.part-" && rm -f "$archive"
  else
    mv "$archive" "$OUT/"
  fi
  ls -l "$OUT"
}

# A failing stage does not stop the later ones (device time is scarce); the exit status says
# which failed.
failed=()
for stage in "$@"; do
  echo "== $stage"
  "stage_$stage" || failed+=("$stage")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "failed stages: ${failed[*]}" >&2
  exit 1
fi
