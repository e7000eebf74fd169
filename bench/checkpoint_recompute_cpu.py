#!/usr/bin/env python3
"""What activation checkpointing costs in time, shardscope against PyTorch, side by side on CPU.

One rank, the same GPT (fp32, Adam), trained as it is and with every block checkpointed:
shardscope `run --world 1 --strategy ddp` with and without --activation-checkpointing blocks,
PyTorch the same model (scripts/pytorch_parity.Gpt) with and without checkpoint_wrapper on every
block (non-reentrant, PyTorch's default, which ends each block's recomputation once backward has
every tensor it saved: the block's last Linear and residual add are not run again). Each side's
cost of checkpointing is its step time with it over its step time without (median steps after
the first, over --repeats runs, alternating sides); the lower the cheaper the recomputation.
Both sides run on the same cores with the same number of threads (--threads).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from pytorch_parity import Gpt  # noqa: E402  (the engine's GPT, in PyTorch)


def shardscope_step_s(binary, c, checkpoint, steps, threads):
    summary = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    cmd = [binary, "run", "--model", "gpt", "--layers", str(c["layers"]), "--hidden", str(c["hidden"]),
           "--heads", str(c["heads"]), "--seq", str(c["seq"]), "--vocab", str(c["vocab"]),
           "--batch", str(c["batch"]), "--world", "1", "--steps", str(steps), "--strategy", "ddp",
           "--activation-checkpointing", "blocks" if checkpoint else "off", "--summary", summary]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    rank = json.load(open(summary))["ranks"][0]
    os.unlink(summary)
    return rank["steady_step_time_s"]


def pytorch_step_s(c, checkpoint, steps, threads):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = Gpt(c)
    if checkpoint:
        for i, block in enumerate(model.blocks):
            model.blocks[i] = checkpoint_wrapper(block)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(1)
    times = []
    for _ in range(steps):
        tokens = torch.randint(c["vocab"], (c["batch"], c["seq"] + 1), generator=data)
        begin = time.perf_counter()
        model(tokens[:, :-1], tokens[:, 1:]).backward()
        optimizer.step()
        optimizer.zero_grad()
        times.append(time.perf_counter() - begin)
    return statistics.median(times[1:])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out", default="checkpoint_recompute_cpu.json")
    args = ap.parse_args()
    if args.steps < 2 or args.repeats < 1:
        ap.error("--steps must be 2 or more (the first is left out) and --repeats 1 or more")
    c = {"layers": args.layers, "hidden": args.hidden, "heads": args.heads, "seq": args.seq, "vocab": args.vocab,
         "batch": args.batch, "optimizer": "adam", "lr": 1e-3, "lora_rank": 0}
    runs = {(side, ckpt): [] for side in ("shardscope", "pytorch") for ckpt in (False, True)}
    for repeat in range(args.repeats):
        sides = ["shardscope", "pytorch"] if repeat % 2 == 0 else ["pytorch", "shardscope"]
        for side in sides:
            for ckpt in (False, True):
                t = (shardscope_step_s(args.shardscope, c, ckpt, args.steps, args.threads) if side == "shardscope"
                     else pytorch_step_s(c, ckpt, args.steps, args.threads))
                runs[(side, ckpt)].append(t)
                print(f"repeat {repeat + 1}: {side:10s} checkpointing {'on ' if ckpt else 'off'} {t * 1e3:8.1f} ms",
                      flush=True)
    result = {"config": c, "threads": args.threads, "torch": torch.__version__, "step_s": {}}
    print("\n| side | step ms, off | step ms, blocks checkpointed | cost of checkpointing |\n|---|---|---|---|")
    for side in ("shardscope", "pytorch"):
        off, on = statistics.median(runs[(side, False)]), statistics.median(runs[(side, True)])
        result["step_s"][side] = {"off": runs[(side, False)], "blocks": runs[(side, True)], "cost": on / off}
        print(f"| {side} | {off * 1e3:.1f} | {on * 1e3:.1f} | x{on / off:.3f} |")
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
