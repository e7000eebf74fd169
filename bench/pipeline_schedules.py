#!/usr/bin/env python3
"""Step time of shardscope's pipelines against torch.distributed.pipelining, side by side in one run:
CPU ranks over Gloo, or (--device cuda) ranks sharing the GPU over NCCL, a shared-GPU row.

Same model (the GPT of engine/models/gpt_model.cpp, defined once in scripts/pytorch_parity.py),
split the same way (scripts/pytorch_parity.py's GptStage and stage_blocks), same optimizer (Adam),
fp32, one process per rank on both sides, P = 2 ranks:
    shardscope --pp 2 --schedule gpipe              vs  ScheduleGPipe
    shardscope --pp 2 --schedule 1f1b               vs  Schedule1F1B
    shardscope --pp 2 --schedule interleaved_1f1b   vs  ScheduleInterleaved1F1B (2 stages per rank)
    shardscope --pp 2 --schedule zero_bubble        vs  ScheduleInterleavedZeroBubble (2 stages per rank)
Each side's ranks get an equal share of the cores for their intra-op threads. --model gpt_1b is the
1.34B GPT of the GPU benchmarks (bench/gpu_strategies.py); its shardscope run also gives the measured
bubble beside the closed form (a prediction) and, with --trace-dir, keeps its trace to look at.

Step time: per step, the slowest rank's wall time; a run's figure is the median over the steps after
--warmup. Each pair runs --repeats times, the order alternating, and the table gives the medians
and the paired ratio ours / theirs (the median of the repeats' own ratios) with its range. Below
1.0: shardscope is faster. shardscope runs as a user runs it, recording on. Writes every number to
--out (JSON) and prints the table docs/benchmarks.md keeps.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from pytorch_parity import Gpt, GptStage, join_process_group, make_optimizer, rendezvous, stage_blocks  # noqa: E402
from cpu_strategies import end_of_step, spawn_for_step_times, write_slowest_steps  # noqa: E402  (bench/, beside this file)

SCHEDULES = {"gpipe": ("ScheduleGPipe", 1), "1f1b": ("Schedule1F1B", 1),
             "interleaved_1f1b": ("ScheduleInterleaved1F1B", 2), "zero_bubble": ("ScheduleInterleavedZeroBubble", 2)}
MODELS = {"small": {"model": "gpt", "layers": 4, "hidden": 256, "heads": 4, "seq": 64, "vocab": 1024},
          "gpt_1b": {"model": "gpt", "layers": 24, "hidden": 2048, "heads": 16, "seq": 1024, "vocab": 32000}}
OPTIMIZER = {"optimizer": "adam", "lr": 1e-3}


def pytorch_rank(rank, pp, init_method, c, schedule, out_path, threads, device_kind):
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining import schedules as pipeline_schedules

    torch.set_num_threads(threads)
    device = join_process_group(rank, pp, init_method, device_kind)
    try:
        torch.manual_seed(0)
        whole = Gpt(c)
        cls_name, v = SCHEDULES[schedule]
        n_stages = pp * v
        split = stage_blocks(c["layers"], n_stages)
        held = [rank + k * pp for k in range(v)]
        stages, params = [], []
        for k in held:
            module = GptStage(whole, *split[k], k == 0, k == n_stages - 1).to(device)
            params += list(module.parameters())
            stages.append(PipelineStage(module, k, n_stages, device))
        runner = getattr(pipeline_schedules, cls_name)(stages if v > 1 else stages[0], c["microbatches"],
                                                       loss_fn=lambda out, y: F.cross_entropy(out.float(), y.reshape(-1)))
        opt = make_optimizer(c, params)
        holds_loss = n_stages - 1 in held
        generator = torch.Generator().manual_seed(1)
        times = []
        for _ in range(c["steps"]):
            begin = time.perf_counter()
            x = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), generator=generator).to(device)
            y = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), generator=generator).to(device)
            losses = []
            kwargs = {"target": y, "losses": losses} if holds_loss else {}
            runner.step(x, **kwargs) if rank == 0 else runner.step(**kwargs)
            opt.step()
            opt.zero_grad(set_to_none=True)
            logged = torch.stack(losses).mean().reshape(1) if holds_loss else torch.zeros(1, device=device)
            times.append(end_of_step(logged, begin))
        write_slowest_steps(rank, pp, times, out_path)
    finally:
        dist.destroy_process_group()


def run_pytorch(c, pp, schedule, threads, device_kind):
    meeting = tempfile.mkdtemp(prefix="pipeline-bench-")
    try:
        return spawn_for_step_times(
            pytorch_rank, lambda out: (pp, rendezvous(meeting), c, schedule, out, threads, device_kind), pp)
    finally:
        shutil.rmtree(meeting, ignore_errors=True)


def run_shardscope(binary, c, pp, schedule, device_kind, trace_dir=None):
    """The slowest rank's time per step, and what the summary says of the bubble."""
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        cmd = [binary, "run", "--world", str(pp), "--pp", str(pp), "--schedule", schedule, "--summary", summary,
               "--device", device_kind]
        for key in ("model", "layers", "hidden", "heads", "seq", "vocab", "batch", "steps", "optimizer", "lr",
                    "microbatches"):
            cmd += ["--" + key, str(c[key])]
        if SCHEDULES[schedule][1] > 1:
            cmd += ["--stages-per-rank", str(SCHEDULES[schedule][1])]
        if trace_dir:
            os.makedirs(trace_dir, exist_ok=True)
            cmd += ["--trace", os.path.join(trace_dir, f"{schedule}.pftrace")]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"shardscope failed ({' '.join(cmd)}):\n{run.stdout[-3000:]}{run.stderr[-3000:]}")
        s = json.load(open(summary))
        if trace_dir:
            shutil.copy(summary, os.path.join(trace_dir, f"{schedule}_summary.json"))
        bubble = {"measured_share_by_rank": [r["pipeline"]["bubble_share"] for r in s["ranks"]],
                  "planned_share_by_rank": [r["pipeline"]["planned_bubble_share"] for r in s["ranks"]],
                  "predicted_over_ideal": s["pipeline"]["predicted_bubble_over_ideal"],
                  "predicted_form": s["pipeline"]["predicted_bubble_form"]}
        return [max(per_rank) for per_rank in zip(*(r["step_time_s"] for r in s["ranks"]))], bubble, s["device"]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", required=True)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="cpu: Gloo ranks; cuda: NCCL ranks sharing the visible GPU [cpu]")
    ap.add_argument("--model", default="small", choices=list(MODELS),
                    help="small: 4 blocks of 256; gpt_1b: the 1.34B GPT (a GPU's) [small]")
    ap.add_argument("--schedules", default=",".join(SCHEDULES), help="of %s [all]" % ", ".join(SCHEDULES))
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8, help="the global batch (one data rank)")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--trace-dir", help="keep each schedule's last shardscope trace and summary here")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    unknown = [s for s in args.schedules.split(",") if s not in SCHEDULES]
    if unknown:
        ap.error(f"--schedules: {', '.join(unknown)} not benchmarked; choose from {', '.join(SCHEDULES)}")
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA GPU is visible here; leave it out for CPU ranks")
    if args.steps <= args.warmup:
        ap.error(f"--steps {args.steps} leaves no step after --warmup {args.warmup}; pass more steps")
    return args


def bench_schedule(args, c, pp, threads, schedule):
    """One schedule's repeats, the two sides alternating first: the row of the table (with the error
    instead where a side failed, so that the rows before it and after it are kept)."""
    ours, theirs, ratios, bubble, device = [], [], [], None, None
    for r in range(args.repeats):
        order = ("ours", "theirs") if r % 2 == 0 else ("theirs", "ours")
        got = {}
        for side in order:
            try:
                if side == "ours":
                    times, bubble, device = run_shardscope(args.shardscope, c, pp, schedule, args.device,
                                                           args.trace_dir)
                else:
                    times = run_pytorch(c, pp, schedule, threads, args.device)
            except Exception as failure:  # noqa: BLE001  (a rank's failure, reported in the row)
                print(f"{schedule:17s} FAILED ({side}): {failure}", flush=True)
                return {"schedule": schedule, "pp": pp, "error": f"{side}: {failure}"}
            got[side] = statistics.median(times[args.warmup:])
        ours.append(got["ours"])
        theirs.append(got["theirs"])
        ratios.append(got["ours"] / got["theirs"])
    row = {"schedule": schedule, "pp": pp, "microbatches": args.microbatches, "ours_s": ours, "theirs_s": theirs,
           "ratios": ratios, "ratio": statistics.median(ratios), "bubble_of_last_run": bubble, "device": device}
    print(f"{schedule:17s} ours {1e3 * statistics.median(ours):7.1f} ms  PyTorch {1e3 * statistics.median(theirs):7.1f} ms"
          f"  ratio {row['ratio']:.2f} ({min(ratios):.2f}-{max(ratios):.2f})  bubble measured "
          f"{' / '.join(f'{100 * b:.1f} %' for b in bubble['measured_share_by_rank'])}, closed form "
          f"{bubble['predicted_form']} = {100 * bubble['predicted_over_ideal']:.1f} % (a prediction)", flush=True)
    return row


def main():
    args = parse_args()
    pp = 2
    threads = max(1, (os.cpu_count() or 2) // pp)
    model = MODELS[args.model]
    c = dict(model, **OPTIMIZER, batch=args.batch, steps=args.steps, microbatches=args.microbatches)
    # Ranks sharing a GPU time-slice it: a rank's idle time holds the other's kernels too.
    where = torch.cuda.get_device_name(0) + f", {pp} ranks sharing it" if args.device == "cuda" else "cpu"
    print(f"torch {torch.__version__} on {where}; {args.model} {model}, batch {args.batch}, "
          f"{args.microbatches} micro-batches", flush=True)
    rows = []
    for schedule in args.schedules.split(","):
        rows.append(bench_schedule(args, c, pp, threads, schedule))
        # Written after each row: a run cut short (a time limit, a failure) keeps the rows it has.
        json.dump({"torch": torch.__version__, "cores": os.cpu_count(), "where": where, "model": model,
                   "batch": args.batch, "steps": args.steps, "warmup": args.warmup, "rows": rows},
                  open(args.out, "w"), indent=1)
    return 1 if any("error" in row for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
