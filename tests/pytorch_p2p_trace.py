#!/usr/bin/env python3
"""A real PyTorch job of all-to-alls, sends and recvs, recorded without prof.step(), opened by shardscope.

Two CPU ranks on gloo, each spawned by torch.multiprocessing, run STEPS steps under one
torch.profiler.profile (record_shapes, profile_memory) that never calls prof.step(), so the traces
have no ProfilerStep#N. Each step:
  - an all_to_all_single with uneven splits (as an MoE's tokens per expert): rank r sends
    SPLITS[r][p] rows of WIDTH floats to rank p
  - rank 0 sends SEND_FLOATS floats to rank 1 (send / recv)
  - rank 1 sends ISEND_FLOATS floats to rank 0 (isend / irecv)
  - an SGD step (torch.optim annotates it Optimizer.step#SGD.step)

Then `shardscope view DIR --summary FILE`, and checks what it read against what the job ran:
  - the steps are the optimizer's: STEPS of them, and the note says so
  - per rank, the all-to-alls' count, size (the input), sent bytes (the rows other ranks get, from
    the split sizes the profiler records) and received bytes (the rows other ranks sent); a send's
    bytes sent only, a recv's received only
  - the title says the job is not data-parallel, and names what it ran
and, where xvfb-run is there, that `view DIR --screenshot` draws it.

Then a pipeline of 3 stages (rank r sends its activations to r + 1 each step, nothing else): as
recorded, on one host, no rank is moved; its ranks 1 and 2 moved 3 s ahead as another host's clock would have them: with no collective every
rank runs, `view` places them back on rank 0's clock by their messages, each recv ending after its
send began: never before the truth, later by the quickest of 20 messages' latency per hop, from its
send's start to its recv's end (20 to 100 microseconds for gloo under the profiler on a 2-core
machine, 3.7 ms beside a busy CI run: allowed up to the 20 ms that shardscope takes for one host's
latency).

    tests/pytorch_p2p_trace.py --shardscope build/app/shardscope --workdir DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from xvfb import xvfb_run  # this directory's: a virtual display whose exit status is the program's
from pytorch_profiler_traces import shifted_copy  # this directory's: the other hosts' clock check

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
from pytorch_parity import rendezvous  # noqa: E402  (a FileStore the ranks meet through)

STEPS = 3
PIPELINE_STEPS = 20  # the quickest of more messages bounds a stage's clock closer
WIDTH = 16
SPLITS = [[3, 5], [6, 2]]  # SPLITS[r][p]: rows rank r sends to rank p
SEND_FLOATS, ISEND_FLOATS = 32, 24
FLOAT = 4


def rank_main(rank, out_dir, init_method):
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile

    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=2)
    weight = torch.nn.Parameter(torch.zeros(8))
    optimizer = torch.optim.SGD([weight], lr=0.1)
    sends = SPLITS[rank]
    receives = [SPLITS[p][rank] for p in range(2)]
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
        for _ in range(STEPS):
            tokens = torch.randn(sum(sends), WIDTH)
            routed = torch.empty(sum(receives), WIDTH)
            dist.all_to_all_single(routed, tokens, output_split_sizes=receives, input_split_sizes=sends)
            if rank == 0:
                dist.send(torch.randn(SEND_FLOATS), 1)
                incoming = torch.empty(ISEND_FLOATS)
                dist.irecv(incoming, 1).wait()
            else:
                incoming = torch.empty(SEND_FLOATS)
                dist.recv(incoming, 0)
                dist.isend(torch.randn(ISEND_FLOATS), 0).wait()
            weight.grad = routed.mean() * torch.ones(8)
            optimizer.step()
    prof.export_chrome_trace(str(Path(out_dir) / f"rank-{rank}.pt.trace.json"))
    dist.barrier()
    dist.destroy_process_group()


def pipeline_main(rank, out_dir, init_method):
    """Stage `rank` of 3: receives from the one before, sends to the one after, PIPELINE_STEPS times."""
    import torch
    import torch.distributed as dist
    from torch.profiler import ProfilerActivity, profile

    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=3)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(PIPELINE_STEPS):
            activations = torch.randn(SEND_FLOATS)
            if rank > 0:
                dist.recv(activations, rank - 1)
            if rank < 2:
                dist.send(activations * 2, rank + 1)
            prof.step()
    prof.export_chrome_trace(str(Path(out_dir) / f"rank-{rank}.pt.trace.json"))
    dist.barrier()
    dist.destroy_process_group()


def check_pipeline(shardscope, work, check):
    import torch.multiprocessing as mp
    job = work / "pipeline"
    job.mkdir()
    mp.spawn(pipeline_main, args=(str(job), rendezvous(work)), nprocs=3)
    same = subprocess.run([shardscope, "view", str(job), "--summary", str(work / "pipeline_one_host.json")],
                          capture_output=True, text=True, timeout=120)
    check(same.returncode == 0 and "shifted by" not in same.stderr,
          f"pipeline: ranks of one host keep their clock ({same.stderr.strip()[-300:]})")
    for rank in (1, 2):
        trace = job / f"rank-{rank}.pt.trace.json"
        shifted_copy(trace, trace, 3e6)  # as a host whose clock reads 3 s later would have written it
    summary_path = work / "pipeline.json"
    view = subprocess.run([shardscope, "view", str(job), "--summary", str(summary_path)],
                          capture_output=True, text=True, timeout=120)
    check(view.returncode == 0, f"pipeline: view reads the traces ({view.stderr.strip()[-300:]})")
    if view.returncode != 0:
        return
    check("rank 2 shifted by" in view.stderr and "its messages with rank 1" in view.stderr,
          f"pipeline: rank 2 is placed by its messages with rank 1 ({view.stderr.strip()[-400:]})")
    clocks = {c["rank"]: c for c in json.loads(summary_path.read_text()).get("clocks", [])}
    for rank in (1, 2):
        offset = clocks.get(rank, {}).get("offset_s")
        # As if every hop's quickest message took no time: rank 1 is off by hop 0-1's latency, rank 2 by both.
        check(offset is not None and -3.0 - 0.020 * rank < offset <= -3.0 + 1e-6,
              f"pipeline: rank {rank} moved back 3 s onto rank 0's clock, later by its hops' latency ({offset})")


def expected(rank):
    """Per op: (count, size, sent, received) over the steps, as the summary counts them."""
    rows_in, rows_out = sum(SPLITS[rank]), sum(SPLITS[p][rank] for p in range(2))
    row = WIDTH * FLOAT
    kept = SPLITS[rank][rank]  # rows it sends itself: they never leave the rank
    a2a = (STEPS, STEPS * rows_in * row, STEPS * (rows_in - kept) * row, STEPS * (rows_out - kept) * row)
    sent = SEND_FLOATS if rank == 0 else ISEND_FLOATS
    received = ISEND_FLOATS if rank == 0 else SEND_FLOATS
    return {"all_to_all": a2a,
            "send": (STEPS, STEPS * sent * FLOAT, STEPS * sent * FLOAT, 0),
            "recv": (STEPS, STEPS * received * FLOAT, 0, STEPS * received * FLOAT)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shardscope", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    job = work / "job"
    job.mkdir(parents=True)

    import torch.multiprocessing as mp
    mp.spawn(rank_main, args=(str(job), rendezvous(work)), nprocs=2)

    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    summary_path = work / "summary.json"
    view = subprocess.run([args.shardscope, "view", str(job), "--summary", str(summary_path)],
                          capture_output=True, text=True, timeout=120)
    check(view.returncode == 0, f"shardscope view reads the traces ({view.stderr.strip()[-400:]})")
    if view.returncode != 0:
        sys.exit(1)
    check(f"its {STEPS} steps are taken from its optimizer's" in view.stderr,
          "without ProfilerStep#N the note says the steps are the optimizer's")
    check("are not drawn" not in view.stderr, "no c10d op is left undrawn")
    summary = json.loads(summary_path.read_text())
    check("not data-parallel: all_to_all, send, recv" in summary.get("title", ""),
          f"the title says what the job ran ({summary.get('title')!r})")
    for rank in summary["ranks"]:
        r = rank["rank"]
        check(rank["recorded_steps"] == STEPS, f"rank {r}: {rank['recorded_steps']} steps, the job's {STEPS}")
        for op, want in expected(r).items():
            c = rank["collectives"][op]
            got = (c["count"], c["size_bytes"], c["sent_bytes"], c["received_bytes"])
            check(got == want, f"rank {r}: {op} count, size, sent, received {got} (the job: {want})")
    if shutil.which("xvfb-run"):
        shot = subprocess.run([*xvfb_run(work), args.shardscope, "view", str(job),
                               "--screenshot", str(work / "p2p.png")], capture_output=True, text=True, timeout=120)
        check(shot.returncode == 0 and (work / "p2p.png").stat().st_size > 0,
              f"view draws the job ({shot.stderr.strip()[-300:]})")
    check_pipeline(args.shardscope, work, check)
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
