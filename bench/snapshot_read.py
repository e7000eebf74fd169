#!/usr/bin/env python3
"""How fast shardscope reads a large CUDA memory snapshot, against Python's pickle.load of it.

Writes (once; kept in WORKDIR) a snapshot in the layout torch.cuda.memory._dump_snapshot writes
(a pickled dict: segments, device_traces with alloc / free_requested / free_completed entries,
each with a Python and C++ stack of 12 frames, as FSDP2 training leaves them), with --entries
entries in device 0's history: blocks allocated and freed in the pattern of a training step
(parameters gathered and freed per unit, activations held to backward, gradients, optimizer
temporaries). Then, --repeats times each, alternating: pickle.load in a fresh interpreter, and
`shardscope view SNAPSHOT --summary S.json`; prints the median wall time and peak RSS of each.

    python3 bench/snapshot_read.py --shardscope build/app/shardscope --entries 200000
"""
import argparse
import os
import pickle
import statistics
import subprocess
import sys
import time
from pathlib import Path

FSDP = "/usr/lib/python3/dist-packages/torch/distributed/fsdp/_fully_shard/"
OPTIM = "/usr/lib/python3/dist-packages/torch/optim/"


def frame(name, filename, line=1):
    return {"name": name, "filename": filename, "line": line}


def stack(top):
    base = [frame("forward", "/home/me/model.py", 40), frame("_call_impl", "/usr/lib/python3/torch/nn/modules/module.py", 1750),
            frame("train_step", "/home/me/train.py", 88), frame("main", "/home/me/train.py", 120)]
    native = [frame(f"c10::cuda::CUDACachingAllocator::malloc#{i}", "??", 0) for i in range(6)]
    return native + top + base


STACKS = {
    "gather": stack([frame("foreach_all_gather", FSDP + "_fsdp_collectives.py", 200),
                     frame("unshard", FSDP + "_fsdp_param_group.py", 300)]),
    "activation": stack([frame("forward", "/home/me/model.py", 41)]),
    "grad": stack([frame("torch::autograd::Engine::evaluate_function(...)", "??", 0),
                   frame("backward", "/usr/lib/python3/torch/_tensor.py", 600)]),
    "adam": stack([frame("_multi_tensor_adam", OPTIM + "adam.py", 500), frame("step", OPTIM + "optimizer.py", 480)]),
}


def history(entries):
    """A training loop's allocations and frees, `entries` of them, in time order (us)."""
    trace, t, addr, live = [], 1_700_000_000_000_000, 0x7f0000000000, []
    kinds = list(STACKS)
    while len(trace) < entries:
        kind = kinds[len(trace) % len(kinds)]
        size = 1 << (12 + len(trace) % 10)
        # Each entry its own frames, as torch writes them (shared ones would pickle as references).
        trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t,
                      "frames": [dict(f) for f in STACKS[kind]]})
        live.append((addr, size, kind))
        addr += size
        t += 7
        if len(live) > 64:
            a, s, k = live.pop(0)
            for action in ("free_requested", "free_completed"):
                trace.append({"action": action, "addr": a, "size": s, "stream": 0, "time_us": t,
                              "frames": [dict(f) for f in STACKS[k]]})
                t += 3
    return trace[:entries]


def write(path, entries):
    trace = history(entries)
    held = {}
    for e in trace:
        if e["action"] == "alloc":
            held[e["addr"]] = e["size"]
        elif e["action"] == "free_completed":
            held.pop(e["addr"], None)
    blocks = [{"size": s, "requested_size": s, "address": a, "state": "active_allocated", "frames": []}
              for a, s in held.items()]
    snapshot = {"segments": [{"device": 0, "address": 0x7f0000000000, "total_size": 1 << 34,
                              "allocated_size": sum(held.values()), "active_size": sum(held.values()),
                              "stream": 0, "segment_type": "large", "blocks": blocks}],
                "device_traces": [trace],
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "expandable_segments": False}}
    with open(path, "wb") as f:
        pickle.dump(snapshot, f)


def timed(cmd):
    start = time.perf_counter()
    pid = subprocess.Popen(cmd, stdout=subprocess.DEVNULL).pid
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        sys.exit(f"failed ({status}): {' '.join(cmd)}")
    return time.perf_counter() - start, usage.ru_maxrss * 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shardscope", default="build/app/shardscope")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/snapshot_read"))
    parser.add_argument("--entries", type=int, default=200000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    path = args.workdir / f"rank-0.memory.{args.entries}.pickle"
    if not path.exists():
        write(path, args.entries)
    print(f"{args.entries} entries, {path.stat().st_size / 1e6:.1f} MB")
    readers = {
        "python pickle.load": [sys.executable, "-c", "import pickle, sys; pickle.load(open(sys.argv[1], 'rb'))",
                               str(path)],
        "shardscope view --summary": [args.shardscope, "view", str(path), "--summary", str(args.workdir / "s.json")],
    }
    runs = {name: [] for name in readers}
    for _ in range(args.repeats):
        for name, cmd in readers.items():
            runs[name].append(timed(cmd))
    for name, samples in runs.items():
        wall = statistics.median(w for w, _ in samples)
        rss = max(r for _, r in samples)
        print(f"{name:28s} {wall:7.3f} s  peak RSS {rss / 1e6:7.1f} MB")


if __name__ == "__main__":
    main()
