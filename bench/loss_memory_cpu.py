#!/usr/bin/env python3
"""What computing the loss on fp32 logits costs PyTorch FSDP2 in peak memory, measured on CPU.

shardscope computes cross-entropy on fp32 logits whatever the compute dtype (as torchtitan does,
and as autocast does for DDP). FSDP2 with MixedPrecisionPolicy(param_dtype=bf16) and a model that
does not cast computes it on bf16 logits instead. This script trains the benchmark's GPT with
PyTorch FSDP2 (bf16 parameters, fp32 reduction, Adam) on CPU ranks over Gloo, once with each loss,
and reports each rank's peak allocated bytes and the operator running at that peak.

Allocated bytes come from the profiler's memory events (profile_memory=True: every allocation and
free of LibTorch's CPU allocator on the training thread, with the running total), so these are
measured tensor bytes, the same quantity torch.cuda.max_memory_allocated reports on a GPU.
Allocations on Gloo's worker threads are not seen by the profiler (its state is per thread), nor
is a free there of a tensor the training thread allocated, which could only raise a figure; both
runs differ only in the loss, so the difference between them is what the loss costs.
The tensor sizes involved do not depend on the device: this explains the GPU table's memory gap
in docs/gpu.md without a GPU. The peak is at the start of backward whatever the depth, so
--layers 2 by default keeps the run short.
"""
import argparse
import json
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from pytorch_parity import Gpt, free_port  # noqa: E402  (the engine's GPT, in PyTorch)


def peak_of(trace_path):
    events = json.load(open(trace_path))["traceEvents"]
    memory = [e for e in events if e.get("name") == "[memory]"]
    peak = max(memory, key=lambda e: e["args"]["Total Allocated"])
    at = sorted((e for e in events if e.get("ph") == "X" and e["ts"] <= peak["ts"] <= e["ts"] + e.get("dur", 0)),
                key=lambda e: e["ts"])
    innermost = [e["name"] for e in at if not e["name"].startswith("PyTorch Profiler")]
    return peak["args"]["Total Allocated"], (innermost[-1] if innermost else "?")


def profiled_rank(rank, world, port, c, steps, out, build, build_args):
    """One Gloo rank: `build(c, *build_args)` makes the model (wrapped as it likes) and Adam trains it
    `steps` steps on random tokens under the profiler; writes {"peak", "op"} to `out`.rank."""
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    profile = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True)
    with profile:  # from before the model exists, so every tensor of the run is counted
        torch.manual_seed(0)
        model = build(c, *build_args)
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        gen = torch.Generator().manual_seed(rank)
        for _ in range(steps):
            x = torch.randint(0, c["vocab"], (c["batch_per_rank"], c["seq"]), generator=gen)
            y = torch.randint(0, c["vocab"], (c["batch_per_rank"], c["seq"]), generator=gen)
            model(x, y).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
    trace = f"{out}.{rank}.trace.json"
    profile.export_chrome_trace(trace)
    peak, op = peak_of(trace)
    os.unlink(trace)
    json.dump({"peak": peak, "op": op}, open(f"{out}.{rank}", "w"))
    dist.destroy_process_group()


def profiled_peak(world, c, steps, build, *build_args):
    """The largest rank's {"peak", "op"} of `world` profiled_rank processes."""
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    mp.spawn(profiled_rank, args=(world, free_port(), c, steps, out, build, build_args), nprocs=world)
    ranks = [json.load(open(f"{out}.{r}")) for r in range(world)]
    for path in [out] + [f"{out}.{r}" for r in range(world)]:
        os.unlink(path)
    return max(ranks, key=lambda r: r["peak"])


def fsdp2_bf16(c, fp32_loss):
    """FSDP2 with bf16 parameters and fp32 reduction, the loss on fp32 or bf16 logits."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    model = Gpt(c, fp32_loss=fp32_loss)
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model.blocks:
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    return model


def measure(world, c, fp32_loss, steps):
    return profiled_peak(world, c, steps, fsdp2_bf16, fp32_loss)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worlds", default="1,2")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--batch-per-rank", type=int, default=8)
    ap.add_argument("--steps", type=int, default=2, help="the first step has no Adam state yet")
    args = ap.parse_args()
    c = {"layers": args.layers, "hidden": args.hidden, "heads": args.heads, "seq": args.seq,
         "vocab": args.vocab, "batch_per_rank": args.batch_per_rank}
    logits = args.batch_per_rank * args.seq * args.vocab
    print(f"torch {torch.__version__}, CPU; GPT {args.layers} layers, hidden {args.hidden}, "
          f"{args.batch_per_rank}x{args.seq} tokens per rank, vocab {args.vocab}: logits "
          f"{logits * 2 / 2**20:.0f} MiB in bf16, {logits * 4 / 2**20:.0f} MiB in fp32")
    for world in [int(w) for w in args.worlds.split(",")]:
        bf16 = measure(world, c, False, args.steps)
        fp32 = measure(world, c, True, args.steps)
        print(f"world {world}: FSDP2 peak allocated, loss on bf16 logits {bf16['peak'] / 2**20:7.1f} MiB "
              f"(at {bf16['op']}), on fp32 logits {fp32['peak'] / 2**20:7.1f} MiB (at {fp32['op']}): "
              f"+{(fp32['peak'] - bf16['peak']) / 2**20:.1f} MiB", flush=True)


if __name__ == "__main__":
    main()
