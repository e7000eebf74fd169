#!/usr/bin/env python3
"""A real torch.distributed.pipelining job, traced with torch.profiler, opened by shardscope.

Two CPU ranks on gloo, spawned by torch.multiprocessing, each one PipelineStage per stage it holds
(a Linear and a ReLU), run 3 steps of MICROBATCHES micro-batches under one torch.profiler.profile:
  - gpipe: ScheduleGPipe, one stage a rank (its spans "Forward i" and "Backward i")
  - 1f1b: Schedule1F1B, one stage a rank (it names no action: read from the order of its operators)
  - interleaved_1f1b: ScheduleInterleaved1F1B, stages r and r + 2 on rank r (the runtime's "PP:1F3")
  - zero_bubble: ScheduleInterleavedZeroBubble, likewise (its I and W apart)
  - zbv: ScheduleZBVZeroBubble, stages r and 3 - r on rank r (a V)
  - dualpipev: ScheduleDualPipeV, the same V, one chunk's forward and the other's backward in one
    span ("PP:(1F1;0B0)OVERLAP_F_B")
  - 1f1b_fsdp, interleaved_1f1b_fsdp (CPU only): those schedules on four ranks, torchtitan's (pp, dp)
    mesh of 2 x 2, each stage's modules sharded by FSDP2 over its dp group
  - 1f1b_p4 (CPU only): Schedule1F1B on four pipeline ranks
  - 1f1b_eval (CPU only): Schedule1F1B with schedule.eval() (forwards only) before each training
    step but the first, no prof.step() between them
  - 1f1b_sched (CPU only): Schedule1F1B under a profiler schedule (wait 1, warm-up 1, active 2) with
    prof.step() after each step, written by tensorboard_trace_handler (files named host_pid...)
Then `shardscope view DIR --summary FILE` and checks what it read against what the job ran:
  - the title names a pipeline of its stages on its ranks (and how many a stage), with its
    micro-batches, in its schedule's order
  - the summary's pipeline: that schedule, P = 2, V, M, the data-parallel ranks a stage
  - per rank: the stages it held; the most micro-batches whose activations it held (GPipe: all of
    them; 1F1B: P - r on pipe rank r; the others at most M); a bubble between 0 and the whole step;
    about the same bytes of activations left held by every micro-batch's forwards
With --keep DIR, the gpipe, 1f1b, interleaved, dualpipev and 1f1b_eval jobs' traces (2 steps, no
memory events) are written to DIR/<job>/ for tests/data.

With --device cuda the same jobs run on NCCL ranks on the GPU, traced with CUDA activity too (the
device's copies of the action spans, the kernels): scripts/device_gpu.sh pp_records.

    tests/pytorch_pipeline_trace.py --shardscope build/app/shardscope --workdir DIR [--keep DIR] [--device cuda]
"""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
# rendezvous: a FileStore the ranks meet through; without_sends_to_itself: a V schedule's warm-up on Gloo.
from pytorch_parity import join_process_group, rendezvous, without_sends_to_itself  # noqa: E402

WIDTH = 16
MICROBATCHES = 4
SCHEDULES = {"gpipe": 1, "1f1b": 1, "interleaved_1f1b": 2, "zero_bubble": 2, "zbv": 2, "dualpipev": 2}  # stages per rank
V_SHAPED = ("zbv", "dualpipev")  # rank r holds stages r and 2P - 1 - r
# Two pipeline ranks x two FSDP2 ranks a stage, on torchtitan's (pp, dp) mesh: one schedule that
# names no stage (its groups, in the trace's pg_config, give each rank's) and one that does; and
# Schedule1F1B on four pipeline ranks (its order read with middle stages, which send and receive).
# And Schedule1F1B evaluating before each training step but the first (schedule.eval(), forwards
# only, with their sends and receives), with no prof.step(): the evaluation's forwards fall in the
# training step's optimizer window. And Schedule1F1B traced as most jobs trace: a profiler schedule
# (wait 1, warm-up 1, 2 active), prof.step() after each step, tensorboard_trace_handler's files.
MORE_JOBS = ("1f1b_fsdp", "interleaved_1f1b_fsdp", "1f1b_p4", "1f1b_eval", "1f1b_sched")
SCHEDULED_STEPS = 4  # the profiler's wait, warm-up and 2 active


def schedule_of(job):
    return job.removesuffix("_fsdp").removesuffix("_p4").removesuffix("_eval").removesuffix("_sched")


def data_ranks(job):
    return 2 if job.endswith("_fsdp") else 1


def pipeline_ranks(job):
    return 4 if job.endswith("_p4") else 2


def stages_of(rank, schedule, pp=2):
    if schedule in V_SHAPED:
        return [rank, 2 * pp - 1 - rank]
    return [rank + pp * v for v in range(SCHEDULES[schedule])]


def microbatches_in_flight(pipe_rank, schedule, pp):
    """The most micro-batches whose activations a stage holds at once: GPipe all of them; 1F1B's
    pipe rank r the P - r forwards it runs before its first backward."""
    return {"gpipe": MICROBATCHES, "1f1b": min(MICROBATCHES, pp - pipe_rank)}.get(schedule)


def pipeline_mesh(device, dp):
    """The rank's pipeline index and group on a (pp, dp) mesh, and its FSDP2 mesh (None: dp 1)."""
    import torch.distributed as dist
    if dp == 1:
        return dist.get_rank(), None, None
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh(device.type, (2, dp), mesh_dim_names=("pp", "dp"))
    return mesh["pp"].get_local_rank(), mesh["pp"].get_group(), mesh["dp"]


def rank_main(rank, out_dir, init_method, job, steps, memory, device_kind):
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining import schedules
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(1)
    schedule = schedule_of(job)
    pp = pipeline_ranks(job)
    device = join_process_group(rank, pp * data_ranks(job), init_method, device_kind)
    pipe_rank, pipe_group, data_mesh = pipeline_mesh(device, data_ranks(job))
    torch.manual_seed(0)
    per_rank = SCHEDULES[schedule]
    n_stages = pp * per_rank
    held = stages_of(pipe_rank, schedule, pp)
    modules = [torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()).to(device) for _ in held]
    if data_mesh is not None:
        from torch.distributed.fsdp import fully_shard
        for m in modules:  # reshard_after_forward=False: torchtitan's under PP
            fully_shard(m, mesh=data_mesh, reshard_after_forward=False)
    stages = [PipelineStage(m, k, n_stages, device, group=pipe_group) for m, k in zip(modules, held)]
    for stage in stages if device.type == "cpu" else []:
        without_sends_to_itself(stage)
    loss = lambda y, t: ((y - t) ** 2).mean()  # noqa: E731
    cls = {"gpipe": schedules.ScheduleGPipe, "1f1b": schedules.Schedule1F1B,
           "interleaved_1f1b": schedules.ScheduleInterleaved1F1B,
           "zero_bubble": schedules.ScheduleInterleavedZeroBubble, "zbv": schedules.ScheduleZBVZeroBubble,
           "dualpipev": schedules.ScheduleDualPipeV}[schedule]
    runner = cls(stages if per_rank > 1 else stages[0], MICROBATCHES, loss_fn=loss)
    optimizer = torch.optim.SGD([p for m in modules for p in m.parameters()], lr=0.01)
    x, target = torch.randn(8, WIDTH).to(device), torch.randn(8, WIDTH).to(device)
    holds_loss = n_stages - 1 in held
    # No prof.step(): without a profiler schedule it keeps only the last step's events. The steps
    # are then the optimizer's, as shardscope takes them from a trace without ProfilerStep#N.
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    def run(pass_of_schedule):
        if pipe_rank == 0 and holds_loss:
            pass_of_schedule(x, target=target)
        elif pipe_rank == 0:
            pass_of_schedule(x)
        elif holds_loss:
            pass_of_schedule(target=target)
        else:
            pass_of_schedule()

    scheduled = job.endswith("_sched")
    tracing = {}
    if scheduled:  # the files named as the handler names them: host_pid.timestamp.pt.trace.json
        tracing = {"schedule": torch.profiler.schedule(wait=1, warmup=1, active=2),
                   "on_trace_ready": torch.profiler.tensorboard_trace_handler(out_dir)}
    with profile(activities=activities, profile_memory=memory, **tracing) as prof:
        for step in range(SCHEDULED_STEPS if scheduled else steps):
            if job.endswith("_eval") and step > 0:
                with torch.no_grad():
                    run(runner.eval)
            optimizer.zero_grad()
            run(runner.step)
            optimizer.step()
            if scheduled:
                prof.step()
    if not scheduled:
        prof.export_chrome_trace(str(Path(out_dir) / f"rank-{rank}.pt.trace.json"))
    dist.barrier()
    dist.destroy_process_group()


def record(work, name, device_kind, steps=3, memory=True):
    import torch.multiprocessing as mp
    job = work / name
    job.mkdir(parents=True)
    mp.spawn(rank_main, args=(str(job), rendezvous(work / (name + ".store")), name, steps, memory, device_kind),
             nprocs=pipeline_ranks(name) * data_ranks(name))
    return job


def check_job(shardscope, work, name, device_kind, check):
    """Records the job, opens it and checks it; the job's directory (None: it did not run)."""
    try:
        job = record(work, name, device_kind)
    except Exception as failure:  # noqa: BLE001  (a rank raised: this job fails, the others still run)
        check(False, f"{name}: PyTorch's job ran ({failure})")
        return None
    summary_path = work / f"{name}.json"
    view = subprocess.run([shardscope, "view", str(job), "--summary", str(summary_path)],
                          capture_output=True, text=True, timeout=120)
    check(view.returncode == 0, f"{name}: view reads the traces ({view.stderr.strip()[-300:]})")
    if view.returncode != 0:
        return job
    check_summary(json.loads(summary_path.read_text()), name, check)
    return job


def check_summary(summary, name, check):
    schedule, dp, pp = schedule_of(name), data_ranks(name), pipeline_ranks(name)
    per_rank = SCHEDULES[schedule]
    title = summary.get("title", "")
    on = f"on {pp * dp} ranks" + (f", {dp} a stage" if dp > 1 else "")
    check(f"a pipeline of {pp * per_rank} stages {on}" in title and f"{MICROBATCHES} micro-batches" in title
          and f"{schedule}'s order" in title, f"{name}: the title names the pipeline ({title})")
    pipeline = summary.get("pipeline") or {}
    check(pipeline.get("schedule") == schedule and pipeline.get("ranks") == pp and
          pipeline.get("stages_per_rank") == per_rank and pipeline.get("microbatches") == MICROBATCHES and
          pipeline.get("data_parallel") == dp, f"{name}: the summary's pipeline ({pipeline})")
    for rank in summary["ranks"]:
        r = rank["rank"]
        own = rank.get("pipeline") or {}
        check(own.get("stages") == sorted(stages_of(r // dp, schedule, pp)), f"{name}: rank {r}'s stages ({own})")
        held = own.get("microbatches_in_flight_peak") or 0
        expected = microbatches_in_flight(r // dp, schedule, pp)
        check(held == expected if expected else 1 <= held <= MICROBATCHES,
              f"{name}: rank {r} held the activations of {held} micro-batches ({expected or 'at most M'})")
        share = own.get("bubble_share")
        check(share is not None and 0 < share < 1, f"{name}: rank {r}'s bubble, {share} of its step")
        # Every micro-batch's forwards leave the same tensors held (its stages' outputs): as many
        # bytes, give or take a scalar (DualPipeV's last stage keeps a loss beside one of them).
        left = own.get("activation_bytes_by_microbatch") or []
        check(len(left) == MICROBATCHES and min(left) > 0 and max(left) - min(left) <= 0.05 * max(left),
              f"{name}: rank {r}'s activations left held by each micro-batch's forwards ({left})")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shardscope", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--keep", help="write the gpipe, 1f1b, interleaved, dualpipev and 1f1b_eval jobs' small "
                                       "traces here (tests/data); with --device cuda, every job's")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="cpu: Gloo ranks; cuda: NCCL ranks on the visible GPUs, traced with CUDA activity [cpu]")
    args = parser.parse_args()
    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    # The four-rank jobs are the CPU's: four ranks on one GPU would be a test of sharing it.
    names = list(SCHEDULES) + (list(MORE_JOBS) if args.device == "cpu" else [])
    jobs = {name: check_job(args.shardscope, work, name, args.device, check) for name in names}
    if args.keep and args.device == "cuda":
        # A GPU's time is short: the jobs just checked are kept as they are (3 steps, with memory).
        for schedule, job in jobs.items():
            if job:
                shutil.copytree(job, Path(args.keep) / schedule, dirs_exist_ok=True)
    elif args.keep:
        for schedule in ("gpipe", "1f1b", "interleaved_1f1b", "dualpipev", "1f1b_eval"):
            try:
                job = record(work / "kept", schedule, args.device, steps=2, memory=False)
            except Exception as failure:  # noqa: BLE001
                check(False, f"{schedule}: the kept job ran ({failure})")
                continue
            shutil.copytree(job, Path(args.keep) / schedule, dirs_exist_ok=True)
    print(f"{len(failures)} failed" if failures else "every check holds")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
