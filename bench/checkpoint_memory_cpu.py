#!/usr/bin/env python3
"""What activation checkpointing saves, shardscope against PyTorch FSDP2, side by side on CPU.

Both sides train the same GPT (fp32, Adam) on CPU ranks over Gloo with FULL_SHARD, once as it is
and once with every block checkpointed: shardscope with --activation-checkpointing blocks, PyTorch
with checkpoint_wrapper on every block before fully_shard (the FSDP2 recipe). Each run reports its
ranks' largest peak of allocated tensor bytes:
  shardscope  the summary's peak total (the CPU allocator hook, every thread)
  PyTorch     the profiler's memory events (profile_memory=True, as bench/loss_memory_cpu.py)
The profiler sees only the training thread's allocations (not Gloo's worker threads), so the two
peaks are not the same measurement to the byte; what checkpointing saves (each side's peak without
it minus with it) is activations, allocated on the training thread on both sides, and is the
figure to compare. Ratios are shardscope / PyTorch.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loss_memory_cpu import profiled_peak  # noqa: E402
from pytorch_parity import Gpt  # noqa: E402  (the engine's GPT, in PyTorch)

TENSOR_ROLES = ["param_shard", "param_gathered", "grad_shard", "grad_full", "optimizer_state",
                "activation", "comm_buffer", "other"]


def fsdp2_fp32(c, checkpoint):
    """FSDP2, fp32, every block (checkpoint_wrapper'ed first when `checkpoint`) a unit."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    from torch.distributed.fsdp import fully_shard

    model = Gpt(c)
    for i, block in enumerate(model.blocks):
        if checkpoint:
            model.blocks[i] = block = checkpoint_wrapper(block)
        fully_shard(block)
    fully_shard(model)
    return model


def pytorch_peak(world, c, checkpoint, steps):
    return profiled_peak(world, c, steps, fsdp2_fp32, checkpoint)["peak"]


def shardscope_peak(binary, world, c, checkpoint, steps):
    summary = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    cmd = [binary, "run", "--model", "gpt", "--layers", str(c["layers"]), "--hidden", str(c["hidden"]),
           "--heads", str(c["heads"]), "--seq", str(c["seq"]), "--vocab", str(c["vocab"]),
           "--batch", str(c["batch_per_rank"] * world), "--world", str(world), "--steps", str(steps),
           "--strategy", "full_shard", "--activation-checkpointing", "blocks" if checkpoint else "off",
           "--summary", summary]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    ranks = json.load(open(summary))["ranks"]
    os.unlink(summary)
    return max(sum(r["at_peak_bytes"][role] for role in TENSOR_ROLES) for r in ranks)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", required=True, help="the shardscope binary")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--batch-per-rank", type=int, default=4)
    ap.add_argument("--steps", type=int, default=2, help="the first step has no Adam state yet")
    ap.add_argument("--repeats", type=int, default=5, help="runs of each side and mode; medians are reported")
    ap.add_argument("--out", help="also write the figures to this JSON file")
    args = ap.parse_args()
    c = {"layers": args.layers, "hidden": args.hidden, "heads": args.heads, "seq": args.seq,
         "vocab": args.vocab, "batch_per_rank": args.batch_per_rank}
    print(f"torch {torch.__version__}, CPU, world {args.world}, FULL_SHARD fp32 Adam; GPT {args.layers} layers, "
          f"hidden {args.hidden}, {args.batch_per_rank}x{args.seq} tokens per rank, vocab {args.vocab}", flush=True)
    # Runs alternate sides and modes; each figure is the median over --repeats (a rank's peak moves
    # by a few MiB from run to run with where Gloo's threads are when it is reached).
    runs = {mode: {"shardscope": [], "pytorch": []} for mode in ("off", "blocks")}
    for r in range(args.repeats):
        for checkpoint in (False, True):
            mode = "blocks" if checkpoint else "off"
            runs[mode]["shardscope"].append(shardscope_peak(args.shardscope, args.world, c, checkpoint, args.steps))
            runs[mode]["pytorch"].append(pytorch_peak(args.world, c, checkpoint, args.steps))
        print(f"repeat {r + 1}/{args.repeats} done", flush=True)
    mib = lambda values: f"{statistics.median(values) / 2**20:6.1f} MiB ({min(values) / 2**20:.1f}..{max(values) / 2**20:.1f})"
    saved = {side: [off - on for off, on in zip(runs["off"][side], runs["blocks"][side])]
             for side in ("shardscope", "pytorch")}
    rows = [(f"checkpointing {mode}", runs[mode]) for mode in ("off", "blocks")] + [("saved by it", saved)]
    print(f"{'median (min..max) over ' + str(args.repeats) + ' runs':32s} {'shardscope':>24s} {'PyTorch FSDP2':>24s}  ratio")
    for name, sides in rows:
        ratio = statistics.median(sides["shardscope"]) / statistics.median(sides["pytorch"])
        print(f"{name:32s} {mib(sides['shardscope']):>24s} {mib(sides['pytorch']):>24s}  {ratio:.3f}")
    if args.out:
        json.dump({"config": c, "world": args.world, "repeats": args.repeats, "peaks": runs, "saved": saved},
                  open(args.out, "w"), indent=2)

if __name__ == "__main__":
    main()
