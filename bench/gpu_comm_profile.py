#!/usr/bin/env python3
"""Where the step goes, on each side of a benchmark pair: GPU time per step by collective.

bench/gpu_strategies.py says which side is faster; this says where the difference lies, for rows it
cannot explain (docs/gpu.md: world 4 full_shard, 1.22, when both sides send the same bytes). For
each pair, at one world size, on this GPU:
  shardscope  one run with --trace: its collective spans, timed with CUDA events on its
              communication stream (from when the stream reached the collective until it passed it)
  PyTorch     one run under torch.profiler: the durations of its NCCL kernels (which likewise run
              from when the stream reached them until the collective ended)
Over NCCL's socket transport both include the wait for peers. Printed per collective kind, in
milliseconds per step over the steps after --warmup, mean over ranks, beside the step time (PyTorch's
under the profiler, so somewhat inflated). If the collectives take the same time on both sides, the
difference is outside them (compute, host, waits); if not, it is in how the transport ran them.
Traces: shardscope's (all ranks) and PyTorch rank 0's (Chrome format, Perfetto opens both) go to
--out-dir. Needs a CUDA GPU; on the device machine: `bash scripts/device_gpu.sh build profile`.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
from collections import defaultdict

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_strategies import (PAIRS, add_model_arguments, build_pytorch, join_nccl_group,  # noqa: E402
                            model_config, pytorch_steps, run_shardscope)
from pytorch_parity import free_port  # noqa: E402  (gpu_strategies put scripts/ on the path)

KINDS = ("all_gather", "reduce_scatter", "all_reduce", "other")


def nccl_kind(kernel_name):
    """The collective an NCCL kernel runs, from its name (ncclDevKernel_AllGather_RING_LL, ...)."""
    name = kernel_name.replace("_", "").lower()
    for kind in KINDS[:-1]:
        if kind.replace("_", "") in name:
            return kind
    return "other"


def pytorch_comm_ms(chrome_trace, steps):
    """Milliseconds per step of NCCL kernels by collective, from a torch.profiler Chrome trace."""
    total = defaultdict(float)
    for e in chrome_trace.get("traceEvents", []):
        if e.get("cat") == "kernel" and "nccl" in e.get("name", "").lower():
            total[nccl_kind(e["name"])] += e.get("dur", 0.0) / 1e3
    return {k: total[k] / steps for k in KINDS}


def shardscope_comm_ms(chrome_trace, warmup):
    """Per rank: milliseconds per step of collectives by kind, over the steps from `warmup` on,
    from shardscope's trace (its comm spans carry the op and the step)."""
    per_rank = defaultdict(lambda: defaultdict(float))
    steps = defaultdict(set)
    for e in chrome_trace.get("traceEvents", []):
        if e.get("cat") != "comm":
            continue
        step = e["args"].get("step", -1)
        if step < warmup:
            continue
        op = e["args"]["op"]
        per_rank[e["pid"]][op if op in KINDS else "other"] += e["dur"] / 1e3
        steps[e["pid"]].add(step)
    return {rank: {k: ms[k] / max(len(steps[rank]), 1) for k in KINDS} for rank, ms in per_rank.items()}


def mean_over_ranks(per_rank):
    return {k: statistics.mean(r[k] for r in per_rank) for k in KINDS}


def profile_rank(rank, world, port, c, mode, steps, warmup, trace_dir, fp32_loss):
    device = join_nccl_group(rank, world, port)
    model, opt, autocast = build_pytorch(c, mode, device, fp32_loss)
    from torch.profiler import ProfilerActivity, profile, schedule

    trace_path = os.path.join(trace_dir, f"pytorch_{mode}_w{world}_rank{rank}.json")
    prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                   # The profiler's own start-up falls in the last warm-up step, not a measured one.
                   schedule=schedule(wait=warmup - 1, warmup=1, active=steps - warmup, repeat=1),
                   on_trace_ready=lambda p: p.export_chrome_trace(trace_path))
    prof.start()
    times = pytorch_steps(model, opt, autocast, c, world, rank, device, steps, after_step=prof.step)
    prof.stop()
    trace = json.load(open(trace_path))
    result = {"step_time_s": times, "comm_ms": pytorch_comm_ms(trace, steps - warmup)}
    json.dump(result, open(os.path.join(trace_dir, f"result.{rank}"), "w"))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", required=True)
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--pairs", default="full_shard",
                    help="shardscope strategies to profile, comma-separated, each with its PyTorch pair "
                         "(ddp, full_shard, shard_grad_op)")
    add_model_arguments(ap)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--out-dir", default="gpu_comm_profile")
    args = ap.parse_args()
    pairs = dict(PAIRS)
    chosen = args.pairs.split(",")
    unknown = [p for p in chosen if p not in pairs]
    if unknown:
        sys.exit(f"--pairs: {', '.join(unknown)} not known; choose from {', '.join(pairs)}")
    if args.warmup < 1:
        sys.exit(f"--warmup {args.warmup}: at least 1 step must warm the profiler up; use --warmup 1 or more")
    if args.steps <= args.warmup:
        sys.exit(f"--steps {args.steps} leaves no step after --warmup {args.warmup}; use more steps")
    if not torch.cuda.is_available():
        sys.exit("bench/gpu_comm_profile.py needs a CUDA GPU and none is visible here; run it on a GPU "
                 "machine, e.g. `bash scripts/device_gpu.sh build profile` (docs/gpu.md).")
    os.makedirs(args.out_dir, exist_ok=True)
    c = model_config(args, args.world)
    report = []
    for strategy in chosen:
        mode = pairs[strategy]
        # Not shardscope_{strategy}_w{world}.json: run_shardscope writes its summary there, over the
        # trace (the first device run of this script failed so).
        trace = os.path.join(args.out_dir, f"shardscope_{strategy}_w{args.world}_trace.json")
        ours, _, _ = run_shardscope(args.shardscope, args.world, c, strategy, args.steps, args.out_dir,
                                    extra=("--trace", trace))
        ours_comm = mean_over_ranks(list(shardscope_comm_ms(json.load(open(trace)), args.warmup).values()))
        scratch = tempfile.mkdtemp(prefix="gpu_profile_")
        mp.spawn(profile_rank, args=(args.world, free_port(), c, mode, args.steps, args.warmup, scratch, True),
                 nprocs=args.world)
        ranks = [json.load(open(os.path.join(scratch, f"result.{r}"))) for r in range(args.world)]
        theirs = [max(r["step_time_s"][s] for r in ranks) for s in range(args.steps)]
        theirs_comm = mean_over_ranks([r["comm_ms"] for r in ranks])
        os.replace(os.path.join(scratch, f"pytorch_{mode}_w{args.world}_rank0.json"),
                   os.path.join(args.out_dir, f"pytorch_{mode}_w{args.world}_rank0.json"))
        for side, name, steps, comm in (("shardscope", strategy, ours, ours_comm),
                                        ("PyTorch", mode, theirs, theirs_comm)):
            row = {"world": args.world, "side": side, "name": name,
                   "step_ms": statistics.median(steps[args.warmup:]) * 1e3, "comm_ms_per_step": comm}
            report.append(row)
            print(f"world {args.world} {side:10s} {name:20s} step {row['step_ms']:8.1f} ms   " +
                  "  ".join(f"{k} {comm[k]:7.1f}" for k in KINDS) +
                  f"   collectives {sum(comm.values()):8.1f} ms/step", flush=True)
    json.dump({"device": torch.cuda.get_device_name(0), "config": vars(args), "rows": report},
              open(os.path.join(args.out_dir, "comm_profile.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
