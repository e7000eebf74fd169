#!/usr/bin/env python3
"""Step time of shardscope's strategies against PyTorch's own on CPU ranks over Gloo, in one run.

Same model (the GPT of engine/models/gpt_model.cpp, defined once in scripts/pytorch_parity.py),
same sizes, same optimizer (Adam), fp32, one process per rank on both sides:
    shardscope ddp            vs  PyTorch DistributedDataParallel
    shardscope zero1          vs  PyTorch DDP + ZeroRedundancyOptimizer
    shardscope full_shard     vs  PyTorch FSDP2 fully_shard, reshard_after_forward=True
    shardscope shard_grad_op  vs  PyTorch FSDP2 fully_shard, reshard_after_forward=False
    shardscope hybrid_shard   vs  PyTorch FSDP2 on a 2-D mesh (replicate, shard), at --hsdp-worlds
                                  (shard groups of world / 2)
With --tp N, tensor parallelism inside the sharded strategies instead, at --worlds (multiples of N):
    shardscope full_shard --tp N     vs  DTensor TP (parallelize_module on mesh["tp"]) + FSDP2
    shardscope shard_grad_op --tp N      fully_shard on mesh["dp"], reshard_after_forward True, False
    (the batch is batch_per_rank x world / N: a tensor group shares its slice)
and with --sequence-parallel too, against torchtitan's SequenceParallel plan
(scripts/pytorch_parity.py's sequence_parallel_plan) on the same mesh.
Each side's rank processes get an equal share of the cores for their intra-op threads
(shardscope sets it itself; the PyTorch ranks get torch.set_num_threads(cores // world)).

Step time: per step, the slowest rank's wall time (both sides end a step by all-reducing the loss
and reading it on the host); a run's figure is the median over the steps after --warmup. Each pair
runs --repeats times, the order alternating (ours, theirs, theirs, ours, ...), and the table gives
the medians, the paired ratio (the median of the repeats' own ratios ours / theirs: two runs back
to back see the same machine) and its range. Below 1.0: shardscope is faster.

shardscope runs as a user runs it, recording on (--shardscope-args adds options, e.g.
"--recording off" to time training alone). Writes every number to --out (JSON) and prints a table
in the form docs/benchmarks.md keeps.
"""
import argparse
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from pytorch_parity import (Gpt, parallelize, parallelize_tensor_parallel,  # noqa: E402  defined once
                            tensor_parallel_model)

PAIRS = {"ddp": "ddp", "zero1": "ddp_zero_redundancy", "full_shard": "fsdp2_reshard_true",
         "shard_grad_op": "fsdp2_reshard_false", "hybrid_shard": "hsdp_reshard_true"}
TP_PAIRS = {"full_shard": "tp_fsdp2_reshard_true", "shard_grad_op": "tp_fsdp2_reshard_false"}
MODELS = {  # the small GPT and a larger one
    "small": {"layers": 4, "hidden": 256, "heads": 4, "seq": 64, "vocab": 1024, "batch_per_rank": 4},
    "large": {"layers": 6, "hidden": 512, "heads": 8, "seq": 128, "vocab": 4096, "batch_per_rank": 4},
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config_of(model, world, steps, tp=1, sequence_parallel=False):
    m = MODELS[model]
    return {"model": "gpt", "layers": m["layers"], "hidden": m["hidden"], "heads": m["heads"], "seq": m["seq"],
            "vocab": m["vocab"], "batch": m["batch_per_rank"] * world // tp, "steps": steps, "optimizer": "adam",
            "lr": 1e-3, "bucket-cap-mb": 25.0, "precision": "fp32", "tp": tp, "sequence-parallel": sequence_parallel}


def end_of_step(logged, begin):
    """The step's wall time, once its loss is all-reduced and read, as shardscope does for its
    progress line (on a GPU: once the device has run the step)."""
    dist.all_reduce(logged)
    logged.item()
    return time.perf_counter() - begin


def write_slowest_steps(rank, world, times, out_path):
    """Rank 0 writes each step's slowest rank's time to out_path."""
    every = [None] * world
    dist.all_gather_object(every, times)
    if rank == 0:
        json.dump({"step_s": [max(ranks) for ranks in zip(*every)]}, open(out_path, "w"))


def pytorch_rank(rank, world, port, c, mode, out_path, threads):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(threads)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.manual_seed(0)
        tp = c["tp"]
        if tp > 1:
            model, opt = parallelize_tensor_parallel(tensor_parallel_model(c), c, mode, world, tp)
        else:
            model, opt = parallelize(Gpt(c), c, mode, torch.device("cpu"), world, world // 2)
        per = c["batch"] // (world // tp)
        generator = torch.Generator().manual_seed(1 + rank // tp)  # a tensor group shares its data
        times = []
        for _ in range(c["steps"]):
            begin = time.perf_counter()
            x = torch.randint(0, c["vocab"], (per, c["seq"]), generator=generator)
            y = torch.randint(0, c["vocab"], (per, c["seq"]), generator=generator)
            loss = model(x, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            times.append(end_of_step(loss.detach().clone(), begin))
        write_slowest_steps(rank, world, times, out_path)
    finally:
        dist.destroy_process_group()


def spawn_for_step_times(rank_fn, args_of, world):
    """Spawns `world` ranks of rank_fn(rank, *args_of(out_path)); the step times rank 0 wrote."""
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    try:
        try:
            mp.spawn(rank_fn, args=args_of(out), nprocs=world)
        except mp.ProcessExitedException:
            # A PyTorch rank sometimes aborts in its teardown after the times are written
            # ("terminate called without an active exception", as in scripts/pytorch_parity.py).
            if not os.path.getsize(out):
                raise
        return json.load(open(out))["step_s"]
    finally:
        os.unlink(out)


def run_pytorch(c, world, mode, threads):
    return spawn_for_step_times(pytorch_rank, lambda out: (world, free_port(), c, mode, out, threads), world)


def run_shardscope(binary, c, world, strategy, extra):
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        cmd = [binary, "run", "--model", "gpt", "--strategy", strategy, "--world", str(world), "--summary", summary]
        for key in ("layers", "hidden", "heads", "seq", "vocab", "batch", "steps", "optimizer", "lr", "tp"):
            cmd += ["--" + key, str(c[key])]
        if c["sequence-parallel"]:
            cmd.append("--sequence-parallel")
        run = subprocess.run(cmd + extra, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"shardscope failed ({' '.join(cmd + extra)}):\n{run.stdout}{run.stderr}")
        ranks = json.load(open(summary))["ranks"]
        return [max(per_rank) for per_rank in zip(*(r["step_time_s"] for r in ranks))]


def steady(step_seconds, warmup):
    return statistics.median(step_seconds[warmup:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", required=True, help="path of the shardscope binary")
    ap.add_argument("--worlds", default="2,3", help="world sizes for every pair but hybrid_shard [2,3]")
    ap.add_argument("--hsdp-worlds", default="4", help="world sizes for hybrid_shard, even [4]")
    ap.add_argument("--pairs", default=",".join(PAIRS), help="of %s [all]" % ", ".join(PAIRS))
    ap.add_argument("--models", default="small", help="of %s [small]" % ", ".join(MODELS))
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2, help="steps left out of each run's median [2]")
    ap.add_argument("--repeats", type=int, default=5, help="runs of each side per row, alternating [5]")
    ap.add_argument("--tp", type=int, default=1,
                    help="tensor-parallel degree: time full_shard and shard_grad_op with --tp N against DTensor TP "
                         "+ FSDP2, at --worlds (multiples of N) [1: the strategies alone]")
    ap.add_argument("--sequence-parallel", action="store_true",
                    help="with --tp: sequence parallelism too, on both sides")
    ap.add_argument("--shardscope-args", default="", help="more options for shardscope, e.g. '--recording off'")
    ap.add_argument("--out", default="cpu_strategies.json")
    args = ap.parse_args()
    pairs = args.pairs.split(",") if args.tp == 1 else [p for p in args.pairs.split(",") if p in TP_PAIRS]
    if args.tp > 1 and any(int(w) % args.tp for w in args.worlds.split(",")):
        sys.exit(f"--worlds '{args.worlds}': with --tp {args.tp} each world is tensor groups of {args.tp}; "
                 f"give multiples of it, e.g. {args.tp},{2 * args.tp}")
    unknown = [p for p in pairs if p not in PAIRS] + [m for m in args.models.split(",") if m not in MODELS]
    if unknown:
        sys.exit(f"not known: {', '.join(unknown)}; pairs are {', '.join(PAIRS)}, models {', '.join(MODELS)}")
    if args.sequence_parallel and args.tp == 1:
        sys.exit("--sequence-parallel splits what tensor parallelism leaves whole; give --tp 2 or more")
    if args.warmup >= args.steps:
        sys.exit(f"--warmup {args.warmup} leaves no step of --steps {args.steps} to time; pass fewer")
    if any(int(w) < 2 or int(w) % 2 for w in args.hsdp_worlds.split(",")):
        sys.exit(f"--hsdp-worlds '{args.hsdp_worlds}': hybrid_shard runs in shard groups of world / 2, "
                 "so give even world sizes, e.g. 4")
    cores = len(os.sched_getaffinity(0))
    extra = shlex.split(args.shardscope_args)
    print(f"torch {torch.__version__}, {cores} cores, {args.repeats} repeats of {args.steps} steps "
          f"(median of steps {args.warmup + 1}..{args.steps}); ratio < 1: shardscope faster", flush=True)
    rows = []
    for model in args.models.split(","):
        for strategy in pairs:
            worlds = args.hsdp_worlds if strategy == "hybrid_shard" else args.worlds
            for world in (int(w) for w in worlds.split(",")):
                c = config_of(model, world, args.steps, args.tp, args.sequence_parallel)
                theirs_mode = TP_PAIRS[strategy] if args.tp > 1 else PAIRS[strategy]
                threads = max(1, cores // world)
                ours, theirs = [], []
                for r in range(args.repeats):
                    sides = [("ours", lambda: run_shardscope(args.shardscope, c, world, strategy, extra)),
                             ("theirs", lambda: run_pytorch(c, world, theirs_mode, threads))]
                    for side, run in sides if r % 2 == 0 else reversed(sides):
                        (ours if side == "ours" else theirs).append(steady(run(), args.warmup))
                ratios = [a / b for a, b in zip(ours, theirs)]
                row = {"model": model, "world": world, "tp": args.tp, "sequence_parallel": args.sequence_parallel,
                       "strategy": strategy, "pytorch": theirs_mode,
                       "ours_s": ours, "theirs_s": theirs, "paired_ratio": statistics.median(ratios),
                       "ratio_range": [min(ratios), max(ratios)]}
                rows.append(row)
                print(f"{model:5s} world {world} tp {args.tp} {strategy:13s} ours {1e3 * statistics.median(ours):7.1f} ms  "
                      f"PyTorch {theirs_mode:22s} {1e3 * statistics.median(theirs):7.1f} ms  "
                      f"paired ratio {row['paired_ratio']:.2f} ({min(ratios):.2f}-{max(ratios):.2f})", flush=True)
    json.dump({"torch": torch.__version__, "cores": cores, "steps": args.steps, "warmup": args.warmup,
               "repeats": args.repeats, "shardscope_args": args.shardscope_args, "rows": rows},
              open(args.out, "w"), indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
