"""Flight Recorder dumps of real gloo jobs, each hung in another way, read by `shardscope view DIR
--summary` and checked for the first mismatch PyTorch's analyzer would name.

Each job is 3 ranks over gloo with Flight Recorder on (TORCH_FR_BUFFER_SIZE). They all enter
three all-reduces, an all-gather and a barrier alike; then at the sixth collective one rank goes
wrong:
  skip       rank 1 never issues the all-reduce the others enter (and waits)   -> missing_rank [1]
  reorder    rank 1 skips it and issues the next collective, an all-gather     -> op_type [1]
  size       rank 2 all-reduces 3 numbers where the others reduce 4            -> size [2]
  dtype      rank 0 all-reduces int32 where the others reduce float32          -> dtype [0]
             (as many bytes: float64 there made gloo abort rank 2's process, with no dump)
  sleep      rank 2 sleeps before it (a slow or stuck rank)                    -> missing_rank [2]
  agree      every rank all-reduces alike (no hang: the control)               -> no mismatch
The sixth collective is issued asynchronously, each rank waits a second for it and writes what
gloo did (completed, raised, or still waiting), then dumps at a fixed time, as a watchdog would
while the job hangs, and exits. `skip` and `size` are dumped as JSON (_dump_fr_trace_json), the
rest as pickles (_dump_fr_trace), both to DIR/fr-RANK as TORCH_FR_DUMP_TEMP_FILE names them.

Usage: pytorch_flight_recorder.py --shardscope BIN --workdir DIR
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import threading
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "scripts"))
from pytorch_parity import rendezvous  # noqa: E402  (a FileStore the ranks meet through)

WORLD = 3
CASES = {
    "skip": ("missing_rank", [1]),
    "reorder": ("op_type", [1]),
    "size": ("size", [2]),
    "dtype": ("dtype", [0]),
    "sleep": ("missing_rank", [2]),
    "agree": (None, None),
}
JSON_CASES = ("skip", "size")


def dump_then_exit(rank, case, out_dir, delay):
    time.sleep(delay)
    c10d = torch._C._distributed_c10d
    data = c10d._dump_fr_trace_json() if case in JSON_CASES else c10d._dump_fr_trace()
    with open(os.path.join(out_dir, f"fr-{rank}"), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    os._exit(0)


def sixth_collective(rank, case):
    """The collective where `case` goes wrong: the work to wait on, or None where none is issued."""
    if case in ("skip", "sleep") and rank == (1 if case == "skip" else 2):
        if case == "sleep":
            time.sleep(30)
        return None
    if case == "reorder" and rank == 1:
        return dist.all_gather_into_tensor(torch.empty(4 * WORLD), torch.ones(4), async_op=True)
    numel = 3 if case == "size" and rank == 2 else 4
    dtype = torch.int32 if case == "dtype" and rank == 0 else torch.float32
    return dist.all_reduce(torch.ones(numel, dtype=dtype), async_op=True)


def rank_main(rank, case, out_dir, init_method, outcome_path):
    os.environ.update(TORCH_FR_BUFFER_SIZE="2000")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=60))
    t = torch.ones(4)
    for _ in range(3):
        dist.all_reduce(t)
    dist.all_gather_into_tensor(torch.empty(4 * WORLD), t)
    dist.barrier()  # all ranks here together: the dumps below come at one time on every rank
    threading.Thread(target=dump_then_exit, args=(rank, case, out_dir, 2.5), daemon=True).start()
    work = sixth_collective(rank, case)
    outcome = "issued nothing"
    if work is not None:
        try:
            outcome = "completed" if work.wait(datetime.timedelta(seconds=1)) else "still waiting after 1 s"
        except Exception as e:  # the wait's timeout, or gloo's own check of what was paired
            text = str(e).splitlines()[0][:160]
            outcome = "still waiting after 1 s" if "timed out" in text else "raised: " + text
    with open(outcome_path % rank, "w") as f:
        f.write(outcome)
    time.sleep(30)  # the dump thread ends the process


def record(case, out_dir, outcome_path):
    os.makedirs(out_dir, exist_ok=True)
    ctx = mp.start_processes(rank_main, args=(case, out_dir, rendezvous(os.path.dirname(os.path.abspath(out_dir))), outcome_path), nprocs=WORLD, join=False,
                             start_method="fork")
    deadline = time.time() + 60
    try:
        while not ctx.join(timeout=1):
            if time.time() > deadline:
                raise TimeoutError("the ranks did not dump within 60 s")
    except Exception as e:  # a rank gloo aborted, or one that hung past the dump
        for p in ctx.processes:
            p.kill()
        return f"{type(e).__name__}: {str(e).splitlines()[0]}"
    return ""


def outcomes(outcome_path):
    texts = []
    for r in range(WORLD):
        path = outcome_path % r
        texts.append(f"rank {r}: " + (open(path).read() if os.path.exists(path) else "(dumped before it knew)"))
    return "; ".join(texts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    failures = 0
    for case, (kind, ranks) in CASES.items():
        dumps = os.path.join(args.workdir, case)
        outcome_path = os.path.join(args.workdir, case + "-outcome-%d.txt")
        died = record(case, dumps, outcome_path)
        gloo = outcomes(outcome_path) + (f"; the job: {died}" if died else "")
        summary = os.path.join(args.workdir, f"{case}.summary.json")
        run = subprocess.run([args.shardscope, "view", dumps, "--summary", summary], capture_output=True, text=True)
        if run.returncode != 0:
            print(f"FAIL {case}: view exited {run.returncode}\n{run.stdout}{run.stderr}")
            failures += 1
            continue
        first = json.load(open(summary))["flight_recorder"]["first_mismatch"]
        got = (first or {}).get("kind"), (first or {}).get("ranks"), (first or {}).get("seq")
        ok = got == ((kind, ranks, 6) if kind else (None, None, None))
        failures += not ok
        want = f"{kind} {ranks} at #6" if kind else "no mismatch"
        print(f"{'ok  ' if ok else 'FAIL'} {case:8s} expected {want}, got {got[0]} {got[1]} at #{got[2]}")
        print(f"     gloo: {gloo}")
        print(f"     shardscope: {first['explanation'] if first else run.stdout.strip()}")
    print(f"{len(CASES) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
