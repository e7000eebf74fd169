#!/usr/bin/env python3
"""How fast shardscope reads a PyTorch job's own traces, against Python's json.load of the same files.

Records (once; kept in WORKDIR/job) a real 3-rank FSDP2 job: a small GPT, every block and the root
under fully_shard, trained over gloo on CPU under torch.profiler with profile_memory=True and
record_shapes=True, each rank's trace exported with prof.export_chrome_trace as
rank-R.pt.trace.json (about 50 MB a rank at the default --active). Then, side by side in one go,
--repeats times each, alternating:

    python    json.load of every rank's file in turn, in a fresh interpreter
    shardscope  `shardscope view WORKDIR/job --summary S.json`

and prints, per reader, the median wall time and peak RSS (the process's ru_maxrss), the speed-up
over json.load and the peak RSS over the files' bytes. Rows go to --out as JSON.

    python3 bench/profiler_read.py --shardscope build/app/shardscope --workdir /tmp/pr
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

WORLD = 3


# ---- the job, one process per rank (torchrun runs this file with --train) ---------------------


def train(out_dir, active, layers):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.distributed.fsdp import fully_shard
    from torch.profiler import ProfilerActivity, profile, schedule

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    hidden, heads, vocab, seq, batch = 128, 4, 512, 64, 4

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(vocab, hidden)
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, batch_first=True, norm_first=True)
                for _ in range(layers))
            self.head = nn.Linear(hidden, vocab)

        def forward(self, tokens):
            mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
            x = self.embed(tokens)
            for block in self.blocks:
                x = block(x, src_mask=mask, is_causal=True)
            return self.head(x)

    model = Gpt()
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, vocab, (batch, seq + 1))
    steps = 2 + active
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=active)) as prof:
        for _ in range(steps):
            loss = nn.functional.cross_entropy(model(tokens[:, :-1]).flatten(0, 1), tokens[:, 1:].flatten())
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            prof.step()
    prof.export_chrome_trace(str(Path(out_dir) / f"rank-{rank}.pt.trace.json"))
    dist.destroy_process_group()


# ---- the benchmark -------------------------------------------------------------------------------


def record(job, active, layers):
    job.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={WORLD}",
           __file__, "--train", "--out", str(job), "--active", str(active), "--layers", str(layers)]
    subprocess.run(cmd, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})


def timed(cmd):
    """Wall seconds and the child's peak RSS in bytes (ru_maxrss of the one child it waits for)."""
    start = time.perf_counter()
    pid = subprocess.Popen(cmd, stdout=subprocess.DEVNULL).pid
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        sys.exit(f"failed ({status}): {' '.join(cmd)}")
    return wall, usage.ru_maxrss * 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shardscope", default="build/app/shardscope")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/profiler_read"))
    parser.add_argument("--active", type=int, default=3, help="profiled steps (the traces' size)")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, help="rows as JSON")
    parser.add_argument("--train", action="store_true", help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args()
    if args.train:
        return train(args.out, args.active, args.layers)
    job = args.workdir / "job"
    files = sorted(job.glob("rank-*.pt.trace.json"))
    if len(files) != WORLD:
        record(job, args.active, args.layers)
        files = sorted(job.glob("rank-*.pt.trace.json"))
    size = sum(f.stat().st_size for f in files)
    print(f"{len(files)} traces, {size / 1e6:.1f} MB in all")
    load = "import json, sys\nfor f in sys.argv[1:]:\n    json.load(open(f))\n"
    readers = {
        "python json.load": [sys.executable, "-c", load] + [str(f) for f in files],
        "shardscope view --summary": [args.shardscope, "view", str(job), "--summary", str(args.workdir / "s.json")],
    }
    runs = {name: [] for name in readers}
    for _ in range(args.repeats):
        for name, cmd in readers.items():
            runs[name].append(timed(cmd))
    rows = []
    base = statistics.median(w for w, _ in runs["python json.load"])
    for name, samples in runs.items():
        wall = statistics.median(w for w, _ in samples)
        rss = max(r for _, r in samples)
        rows.append({"reader": name, "wall_s": wall, "peak_rss_bytes": rss, "speedup_over_json_load": base / wall,
                     "rss_over_files": rss / size, "files_bytes": size, "repeats": args.repeats})
        print(f"{name:28s} {wall:7.3f} s  x{base / wall:5.2f} of json.load  peak RSS {rss / 1e6:7.1f} MB"
              f" ({rss / size:.2f}x the files)")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
