#!/usr/bin/env python3
"""Step time of shardscope's pipelines against torch.distributed.pipelining on CPU ranks over Gloo,
side by side in one run.

Same model (the GPT of engine/models/gpt_model.cpp, defined once in scripts/pytorch_parity.py),
split the same way (scripts/pytorch_parity.py's GptStage and stage_blocks), same optimizer (Adam),
fp32, one process per rank on both sides, P = 2 ranks:
    shardscope --pp 2 --schedule gpipe              vs  ScheduleGPipe
    shardscope --pp 2 --schedule 1f1b               vs  Schedule1F1B
    shardscope --pp 2 --schedule interleaved_1f1b   vs  ScheduleInterleaved1F1B (2 stages per rank)
    shardscope --pp 2 --schedule zero_bubble        vs  ScheduleInterleavedZeroBubble (2 stages per rank)
Each side's ranks get an equal share of the cores for their intra-op threads.

Step time: per step, the slowest rank's wall time; a run's figure is the median over the steps after
--warmup. Each pair runs --repeats times, the order alternating, and the table gives the medians
and the paired ratio ours / theirs (the median of the repeats' own ratios) with its range. Below
1.0: shardscope is faster. shardscope runs as a user runs it, recording on. Writes every number to
--out (JSON) and prints the table docs/benchmarks.md keeps.
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
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from pytorch_parity import Gpt, GptStage, make_optimizer, rendezvous, stage_blocks  # noqa: E402  defined once

SCHEDULES = {"gpipe": ("ScheduleGPipe", 1), "1f1b": ("Schedule1F1B", 1),
             "interleaved_1f1b": ("ScheduleInterleaved1F1B", 2), "zero_bubble": ("ScheduleInterleavedZeroBubble", 2)}
MODEL = {"model": "gpt", "layers": 4, "hidden": 256, "heads": 4, "seq": 64, "vocab": 1024, "optimizer": "adam",
         "lr": 1e-3}


def pytorch_rank(rank, pp, init_method, c, schedule, out_path, threads):
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining import schedules as pipeline_schedules

    torch.set_num_threads(threads)
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=pp)
    try:
        torch.manual_seed(0)
        whole = Gpt(c)
        cls_name, v = SCHEDULES[schedule]
        n_stages = pp * v
        split = stage_blocks(c["layers"], n_stages)
        held = [rank + k * pp for k in range(v)]
        stages, params = [], []
        for k in held:
            module = GptStage(whole, *split[k], k == 0, k == n_stages - 1)
            params += list(module.parameters())
            stages.append(PipelineStage(module, k, n_stages, torch.device("cpu")))
        runner = getattr(pipeline_schedules, cls_name)(stages if v > 1 else stages[0], c["microbatches"],
                                                       loss_fn=lambda out, y: F.cross_entropy(out.float(), y.reshape(-1)))
        opt = make_optimizer(c, params)
        holds_loss = n_stages - 1 in held
        generator = torch.Generator().manual_seed(1)
        times = []
        for _ in range(c["steps"]):
            begin = time.perf_counter()
            x = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), generator=generator)
            y = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), generator=generator)
            losses = []
            kwargs = {"target": y, "losses": losses} if holds_loss else {}
            runner.step(x, **kwargs) if rank == 0 else runner.step(**kwargs)
            opt.step()
            opt.zero_grad(set_to_none=True)
            logged = torch.stack(losses).mean().reshape(1) if holds_loss else torch.zeros(1)
            dist.all_reduce(logged)  # as shardscope does for its progress line
            logged.item()
            times.append(time.perf_counter() - begin)
        every = [None] * pp
        dist.all_gather_object(every, times)
        if rank == 0:
            json.dump({"step_s": [max(ranks) for ranks in zip(*every)]}, open(out_path, "w"))
    finally:
        dist.destroy_process_group()


def run_pytorch(c, pp, schedule, threads):
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    meeting = tempfile.mkdtemp(prefix="pipeline-bench-")
    try:
        try:
            mp.spawn(pytorch_rank, args=(pp, rendezvous(meeting), c, schedule, out, threads), nprocs=pp)
        except mp.ProcessExitedException:
            if not os.path.getsize(out):
                raise
        return json.load(open(out))["step_s"]
    finally:
        os.unlink(out)


def run_shardscope(binary, c, pp, schedule):
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        cmd = [binary, "run", "--world", str(pp), "--pp", str(pp), "--schedule", schedule, "--summary", summary]
        for key in ("model", "layers", "hidden", "heads", "seq", "vocab", "batch", "steps", "optimizer", "lr",
                    "microbatches"):
            cmd += ["--" + key, str(c[key])]
        if SCHEDULES[schedule][1] > 1:
            cmd += ["--stages-per-rank", str(SCHEDULES[schedule][1])]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"shardscope failed ({' '.join(cmd)}):\n{run.stdout}{run.stderr}")
        ranks = json.load(open(summary))["ranks"]
        return [max(per_rank) for per_rank in zip(*(r["step_time_s"] for r in ranks))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", required=True)
    ap.add_argument("--schedules", default=",".join(SCHEDULES))
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8, help="the global batch (one data rank)")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    pp = 2
    threads = max(1, (os.cpu_count() or 2) // pp)
    c = dict(MODEL, batch=args.batch, steps=args.steps, microbatches=args.microbatches)
    rows = []
    for schedule in args.schedules.split(","):
        ours, theirs, ratios = [], [], []
        for r in range(args.repeats):
            order = ("ours", "theirs") if r % 2 == 0 else ("theirs", "ours")
            got = {}
            for side in order:
                times = run_shardscope(args.shardscope, c, pp, schedule) if side == "ours" else \
                    run_pytorch(c, pp, schedule, threads)
                got[side] = statistics.median(times[args.warmup:])
            ours.append(got["ours"])
            theirs.append(got["theirs"])
            ratios.append(got["ours"] / got["theirs"])
        row = {"schedule": schedule, "pp": pp, "microbatches": args.microbatches, "ours_s": ours, "theirs_s": theirs,
               "ratios": ratios, "ratio": statistics.median(ratios)}
        rows.append(row)
        print(f"{schedule:17s} ours {1e3 * statistics.median(ours):7.1f} ms  PyTorch {1e3 * statistics.median(theirs):7.1f} ms"
              f"  ratio {row['ratio']:.2f} ({min(ratios):.2f}-{max(ratios):.2f})", flush=True)
    json.dump({"torch": torch.__version__, "cores": os.cpu_count(), "model": MODEL, "batch": args.batch,
               "steps": args.steps, "warmup": args.warmup, "rows": rows}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    sys.exit(main())
