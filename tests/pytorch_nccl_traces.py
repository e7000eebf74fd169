#!/usr/bin/env python3
"""Real PyTorch jobs on NCCL, recorded with torch.profiler alone, as an engineer records one: no
memory events, no shardscope recorder, one Chrome trace per rank. Run on a GPU machine
(scripts/device_gpu.sh nccl_traces), every rank on the one GPU as scripts/pytorch_parity.py places
them:

    fsdp_slow_w2  FSDP2 (reshard_after_forward=True) at world 2; rank 1 sleeps SLOW_S (or half its last step) on the host
                  before each forward: its kernels start late, so it is the straggler a reader must
                  name from the NCCL kernels' starts (its c10d launches are not what kept rank 0 waiting)
    tp_fsdp_w4    DTensor tensor parallelism (ColwiseParallel/RowwiseParallel over mesh["tp"]) inside
                  FSDP2 over mesh["dp"], a (2, 2) DeviceMesh at world 4; rank 3 slow the same way. Its
                  collectives run in sub-groups: {0, 1} and {2, 3} (tensor), {0, 2} and {1, 3} (data)

Writes OUT/JOB/rank-R.pt.trace.json.gz and OUT/JOB/job.json (what was run).

--check DIR --shardscope BIN opens each kept job (tests/data/pytorch_nccl_h200, CI's
pytorch_nccl_traces_recorded) with `shardscope view JOB --summary` and checks what it read:
  - no rank's clock moved: the ranks shared one host's clock, though their NCCL kernels, time-sliced on
    the one GPU, ended milliseconds apart (the reader once took that for another host, moving rank 1
    of tp_fsdp_w4 by 7 ms after pairing its data group's collectives with rank 0's)
  - every rank read its collectives, the same number of each op as the other members of its groups;
    under TP, its traffic split between its tensor and data groups, none in the world's
  - fsdp_slow_w2: the slowed rank is the one the NCCL kernels' starts name last in most collectives
--live DIR (CI's pytorch_gloo_traces) records the same jobs on Gloo into DIR first, where the
checks differ: Gloo's records name no group, so a job with sub-groups (tp_fsdp_w4) must say so and
match none of its collectives rank to rank (no straggler named, costed as the world's) rather than
pair a tensor group's with another's."""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from pytorch_parity import (Gpt, join_process_group, loaded_nccl_version, parallelize,  # noqa: E402
                            parallelize_tensor_parallel, rendezvous, tensor_parallel_model)

CONFIG = {"model": "gpt", "layers": 4, "hidden": 256, "heads": 8, "seq": 128, "vocab": 1024,
          "batch": 8, "optimizer": "adam", "lr": 1e-3, "bucket-cap-mb": 25, "precision": "fp32"}
# The slowed rank's sleep before each forward, at least (half its last step where that is more).
# The stragglers' noise floor is 5 % of the step: on a GPU 30 ms clears it by far; a Gloo step on a
# busy 2-core machine took long enough that 30 ms sat at the floor (the slowed rank named in 0 of 1
# collectives, once in a full ctest), so CPU ranks sleep longer.
SLOW_S = {"cuda": 0.03, "cpu": 0.2}
WAIT, WARMUP, ACTIVE = 1, 1, 3
JOBS = {"fsdp_slow_w2": {"world": 2, "tp": 0, "slow_rank": 1},
        "tp_fsdp_w4": {"world": 4, "tp": 2, "slow_rank": 3}}


def build(job, rank, world, device):
    torch.manual_seed(0)
    if job["tp"]:
        model = tensor_parallel_model(CONFIG).to(device)
        return parallelize_tensor_parallel(model, CONFIG, "tp_fsdp2_reshard_true", world, job["tp"],
                                           device_type=device.type)
    return parallelize(Gpt(CONFIG).to(device), CONFIG, "fsdp2_reshard_true", device, world)


def rank_main(rank, world, init_method, name, out_dir, device_kind):
    job = JOBS[name]
    device = join_process_group(rank, world, init_method, device_kind)  # cpu: a dry run on gloo
    model, opt = build(job, rank, world, device)
    data_ranks = world // job["tp"] if job["tp"] else world
    data_rank = rank // job["tp"] if job["tp"] else rank
    torch.manual_seed(1 + data_rank)  # a tensor group's ranks see the same tokens
    rows = CONFIG["batch"] // data_ranks
    x = torch.randint(0, CONFIG["vocab"], (rows, CONFIG["seq"]), device=device)
    y = torch.randint(0, CONFIG["vocab"], (rows, CONFIG["seq"]), device=device)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device_kind == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    schedule = torch.profiler.schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE)
    trace = os.path.join(out_dir, f"rank-{rank}.pt.trace.json")
    with torch.profiler.profile(activities=activities, schedule=schedule, record_shapes=True,
                                on_trace_ready=lambda p: p.export_chrome_trace(trace)) as prof:
        last_step = 0.0
        for _ in range(WAIT + WARMUP + ACTIVE):
            if rank == job["slow_rank"]:
                # At least half its last step: the floor is a share of the step, and a busy machine
                # can stretch a step until a fixed sleep sits at it again.
                time.sleep(max(SLOW_S[device_kind], 0.5 * last_step))
            began = time.perf_counter()
            loss = model(x, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            prof.step()
            last_step = time.perf_counter() - began
    dist.barrier()
    dist.destroy_process_group()
    with open(trace, "rb") as src, gzip.open(trace + ".gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.unlink(trace)


def record(name, out, device_kind):
    job = JOBS[name]
    job_dir = os.path.join(out, name)
    os.makedirs(job_dir, exist_ok=True)
    meeting = tempfile.mkdtemp(prefix="nccl-traces-")
    started = time.time()
    mp.start_processes(rank_main, args=(job["world"], rendezvous(meeting), name, job_dir, device_kind), nprocs=job["world"],
                       start_method="spawn")
    shutil.rmtree(meeting, ignore_errors=True)
    described = dict(job, name=name, model=CONFIG, slow_s=SLOW_S[device_kind], steps={"wait": WAIT, "warmup": WARMUP,
                     "active": ACTIVE}, torch=torch.__version__, device=device_kind)
    if device_kind == "cuda":
        described.update(gpu=torch.cuda.get_device_name(0), nccl=".".join(map(str, loaded_nccl_version())))
    json.dump(described, open(os.path.join(job_dir, "job.json"), "w"), indent=1)
    print(f"recorded {name} in {time.time() - started:.1f} s: {sorted(os.listdir(job_dir))}")


def check_job(shardscope, job_dir):
    """What `view JOB --summary` read of one kept job, against what was run (job.json); failures."""
    job = json.load(open(os.path.join(job_dir, "job.json")))
    with tempfile.TemporaryDirectory() as tmp:
        summary_path = os.path.join(tmp, "summary.json")
        view = subprocess.run([shardscope, "view", job_dir, "--summary", summary_path], capture_output=True, text=True)
        if view.returncode != 0:
            return [f"view failed: {view.stderr.strip()}"]
        summary = json.load(open(summary_path))
    failures = []
    if "shifted by" in view.stderr or summary.get("clocks"):
        failures.append(f"a rank's clock was moved, though all ran on one host: {view.stderr.strip()}")
    ranks = summary["ranks"]
    gloo_groups = job.get("device") == "cpu" and job["tp"]  # sub-groups no record names
    if gloo_groups and ("name no process group" not in view.stderr or any(r["last_arrivals"] for r in ranks)):
        failures.append("Gloo's unnamed sub-groups: not said, or their collectives matched rank to rank: "
                        f"{[(r['rank'], r['last_arrivals']) for r in ranks]}\n{view.stderr.strip()}")
    if len(ranks) != job["world"]:
        failures.append(f"{len(ranks)} ranks read, {job['world']} ran")
    counts = [{op: c["count"] for op, c in r["collectives"].items()} for r in ranks]
    if any(c != counts[0] for c in counts) or not sum(counts[0].values()):
        failures.append(f"the ranks' collectives differ or are none: {counts}")
    for r in ranks:
        by_group = r["traffic_per_step"]["sent_bytes_by_group"]
        groups = {g for g, sent in by_group.items() if sent > 0}
        expected = {"tensor", "data"} if job["tp"] and not gloo_groups else {"world"}
        if groups != expected:
            failures.append(f"rank {r['rank']} sent in {sorted(groups)}, not in {sorted(expected)}: {by_group}")
    if not job["tp"]:
        slow = ranks[job["slow_rank"]]
        if slow["last_arrival_share"] < 0.5 or slow["last_arrivals"] != max(r["last_arrivals"] for r in ranks):
            failures.append(f"the slowed rank {job['slow_rank']} is not named the straggler: "
                            f"{[(r['rank'], r['last_arrivals'], r['last_arrival_share']) for r in ranks]}")
    return failures


def check(shardscope, directory):
    failed = 0
    for name in sorted(os.listdir(directory)):
        if not os.path.isfile(os.path.join(directory, name, "job.json")):
            continue
        failures = check_job(shardscope, os.path.join(directory, name))
        failed += bool(failures)
        print(f"{'FAIL' if failures else 'ok  '} {name}" + "".join(f"\n    {f}" for f in failures))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="folder for the jobs' traces (recording)")
    ap.add_argument("--check", metavar="DIR", help="check the jobs kept in DIR instead of recording")
    ap.add_argument("--shardscope", help="with --check or --live: the shardscope binary")
    ap.add_argument("--live", metavar="DIR", help="record the jobs on Gloo into DIR, then check them there")
    ap.add_argument("--jobs", default=",".join(JOBS), help="comma-separated, of %s [all]" % ", ".join(JOBS))
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cpu: the same jobs on gloo, to try this script where no GPU is [cuda]")
    args = ap.parse_args()
    unknown = [name for name in args.jobs.split(",") if name not in JOBS]
    if unknown:
        sys.exit(f"--jobs: {', '.join(unknown)} not known; choose from {', '.join(JOBS)}")
    if args.live:
        for name in args.jobs.split(","):
            record(name, args.live, "cpu")
        args.check = args.live
    if args.check:
        if not args.shardscope:
            sys.exit("--check needs --shardscope BIN (e.g. build/app/shardscope)")
        return check(args.shardscope, args.check)
    if not args.out:
        sys.exit("give --out DIR to record the jobs there, or --check DIR to check jobs kept there")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("these jobs run on NCCL and need a CUDA GPU: run them on the GPU machine "
                 "(scripts/device_gpu.sh nccl_traces), or add --device cpu to record them on Gloo here")
    for name in args.jobs.split(","):
        record(name, args.out, args.device)


if __name__ == "__main__":
    sys.exit(main())
