#!/usr/bin/env python3
"""PyTorch's own records of real jobs, opened by shardscope.

For DDP at world 2, FSDP2 (reshard_after_forward True) at world 2 and FSDP2 with
reshard_after_forward False at world 3, runs the job of tests/pytorch_profiler_jobs.py (CPU ranks,
gloo, recorded per rank by python/shardscope_record with torch.profiler), then
`shardscope view DIR --summary FILE`, and checks what shardscope read from the traces against what
the job ran (expected.json, derived from the model and checked against the traces by the driver):
  - every rank has the 3 recorded steps, and per step exactly the job's collectives: their count
    and their size (all-gather: its output; reduce-scatter and all-reduce: their input)
  - no rate is made up: the job's batch is not in its trace, so samples/s is null
  - FSDP2's gathered parameters rise and fall per unit: with resharding after forward the most
    held at once is less than every unit's together; without, it is all of them
  - the gradients, known by their lives, are the model's: DDP's full gradients and FSDP2's
    sharded ones peak at the job's parameter bytes (whole, or this rank's shards) within 10%
  - what the rank held before the profiler started, counted by the recorder (model=,
    optimizer=), is drawn: param_shard peaks at exactly the model's parameter bytes (whole, or
    this rank's padded shards), optimizer_state at Adam's state plus at most the step's
    temporaries (up to twice the parameters)
  - the summary opens again in `view` (its unknown figures are null)
  - (FSDP2 at world 2) the traces named as tensorboard_trace_handler names them and given as files
    read as the directory does; a rank whose host clock is 3 s ahead is moved back onto rank 0's
    clock by its collectives' ends, to within 5 ms, said on the terminal and in the summary's clocks
and, where xvfb-run is there, that `view DIR --screenshot` draws the job.

With --device cuda (a GPU machine: scripts/device_gpu.sh records) the same jobs run on CUDA with
NCCL and write the CUDA allocator's snapshots beside their traces, from which the view then draws
each rank's memory: the same checks hold of it, and the view says it read them.

    tests/pytorch_profiler_traces.py --shardscope build/app/shardscope --workdir DIR

Jobs recorded on a GPU machine (scripts/device_gpu.sh records brings each one's files back) are
checked again without a GPU by --recorded FOLDER --device cuda, FOLDER holding MODE_wWORLD/ per
job; tests/data/pytorch_cuda_h200/ holds the three jobs recorded on an H200 under PyTorch 2.11,
checked so in CI.
"""
import argparse
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from xvfb import xvfb_run  # this directory's: a virtual display whose exit status is the program's

REPO = Path(__file__).resolve().parents[1]
JOBS = [("ddp", 2), ("fsdp", 2), ("fsdp_no_reshard", 3)]
RECORDED_STEPS = 3
SIZE_OF = {"all_gather": "elements_out", "reduce_scatter": "elements_in", "all_reduce": "elements_in"}


def run(cmd, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kwargs)


def expected_totals(expected):
    """Per op: (count, size in bytes) over the recorded steps, as the summary counts them."""
    totals = {}
    for c in expected["collectives_per_step"]:
        count, size = totals.get(c["op"], (0, 0))
        totals[c["op"]] = (count + RECORDED_STEPS, size + RECORDED_STEPS * c[SIZE_OF[c["op"]]] * c["dtype_bytes"])
    return totals


def unit_bytes(expected, side):
    """One forward's all-gathers summed on one side: "elements_in", this rank's parameter shards
    (padded as FSDP2 pads); "elements_out", every unit's unsharded parameters together."""
    seen, total = set(), 0
    for c in expected["collectives_per_step"]:
        if c["op"] == "all_gather" and c[side] not in seen:
            seen.add(c[side])
            total += c[side] * c["dtype_bytes"]
    return total


def shifted_copy(source, target, shift_us):
    """The trace as a host whose clock reads `shift_us` later would have written it."""
    trace = json.loads(Path(source).read_text())
    for e in trace["traceEvents"]:
        if "ts" in e:
            e["ts"] += shift_us
    Path(target).write_text(json.dumps(trace))


def shifted_snapshot(source, target, shift_us):
    """The CUDA memory snapshot as that host would have written it: its times as much later."""
    import pickle
    with open(source, "rb") as f:
        snapshot = pickle.load(f)
    for trace in snapshot["device_traces"]:
        for entry in trace:
            if "time_us" in entry:
                entry["time_us"] += int(shift_us)
    with open(target, "wb") as f:
        pickle.dump(snapshot, f)


def check_files_and_other_hosts(shardscope, job_dir, mode, summary, check):
    """The job's traces named as tensorboard_trace_handler names them, opened as files: the same
    figures as the directory's. Then rank 1 as if on a host whose clock is 3 s ahead: shardscope
    moves it back onto rank 0's clock by its collectives' ends, says by how much (terminal and the
    summary's clocks), and reads the same collectives."""
    files_dir = job_dir / "as_files"
    files_dir.mkdir()
    names = []
    for r, rank in enumerate(summary["ranks"]):
        name = files_dir / f"node{r}_{4000 + r}.1700000000{r}.pt.trace.json"
        shutil.copy(job_dir / "job" / f"rank-{rank['rank']}.pt.trace.json", name)
        names.append(str(name))
        # The recorder's notes and the memory snapshots keep their names: each is found by the
        # rank its trace says.
        for kept in (f"rank-{rank['rank']}.shardscope.json", f"rank-{rank['rank']}.memory.pickle"):
            if (job_dir / "job" / kept).exists():
                shutil.copy(job_dir / "job" / kept, files_dir)
    out = files_dir / "summary.json"
    view = run([shardscope, "view", *reversed(names), "--summary", str(out)])
    check(view.returncode == 0 and json.loads(out.read_text())["ranks"] == summary["ranks"],
          f"{mode}: the per-rank files, named any way and in any order, read as the directory ({view.stderr.strip()[-300:]})")

    shifted_dir = job_dir / "other_host"
    shutil.copytree(job_dir / "job", shifted_dir)
    shift_s = 3.0
    shifted_copy(job_dir / "job" / "rank-1.pt.trace.json", shifted_dir / "rank-1.pt.trace.json", shift_s * 1e6)
    if (shifted_dir / "rank-1.memory.pickle").exists():
        shifted_snapshot(job_dir / "job" / "rank-1.memory.pickle", shifted_dir / "rank-1.memory.pickle", shift_s * 1e6)
    out = shifted_dir / "summary.json"
    view = run([shardscope, "view", str(shifted_dir), "--summary", str(out)])
    moved = re.search(r"rank 1 shifted by ([-+0-9.]+) s onto rank 0's clock", view.stderr)
    check(view.returncode == 0 and moved is not None and abs(float(moved.group(1)) + shift_s) < 0.005,
          f"{mode}: rank 1's clock 3 s ahead is moved back by its collectives' ends, to within 5 ms "
          f"({moved.group(0) if moved else view.stderr.strip()[-300:]})")
    if view.returncode == 0:
        clocks = json.loads(out.read_text()).get("clocks", [])
        rank1 = [c for c in clocks if c["rank"] == 1]
        check(len(rank1) == 1 and rank1[0]["shifted"] and abs(rank1[0]["offset_s"] + shift_s) < 0.005 and
              not any(c["measured"] for c in clocks if c["rank"] != 1),
              f"{mode}: the summary's clocks say rank 1 was moved, and by how much ({clocks})")
        again = json.loads(out.read_text())["ranks"]
        check([r["collectives"] for r in again] == [r["collectives"] for r in summary["ranks"]] and
              [r["recorded_steps"] for r in again] == [r["recorded_steps"] for r in summary["ranks"]],
              f"{mode}: the shifted rank's steps and collectives are read as before")


def kernel_overlap_pct(trace_path):
    """Holistic Trace Analysis's communication/computation overlap, from a GPU trace's kernels alone:
    the share of the NCCL kernels' time (their union) that other kernels also ran."""
    opener = gzip.open if str(trace_path).endswith(".gz") else open
    with opener(trace_path, "rt") as f:
        events = json.load(f)["traceEvents"]
    def union(spans):
        out = []
        for b, e in sorted(spans):
            if out and b <= out[-1][1]:
                out[-1][1] = max(out[-1][1], e)
            else:
                out.append([b, e])
        return out
    kernels = [(e["ts"], e["ts"] + e["dur"], e["name"].startswith("nccl")) for e in events
               if e.get("cat") == "kernel" and "dur" in e]
    comm = union([(b, e) for b, e, nccl in kernels if nccl])
    compute = union([(b, e) for b, e, nccl in kernels if not nccl])
    both = sum(max(0, min(ce, ke) - max(cb, kb)) for cb, ce in comm for kb, ke in compute)
    total = sum(e - b for b, e in comm)
    return 100.0 * both / total if total else 0.0


def check_job(shardscope, workdir, mode, world, device, check, recorded=False):
    job_dir = Path(workdir) / f"{mode}_w{world}"
    driver = run([sys.executable, str(REPO / "tests" / "pytorch_profiler_jobs.py"), "--workdir", str(job_dir),
                  "--mode", mode, "--world", str(world), "--device", device] + (["--recorded"] if recorded else []))
    check(driver.returncode == 0, f"{mode} at world {world}: the job runs and its traces hold what it ran "
                                  f"({(driver.stdout + driver.stderr).strip()[-400:]})")
    if driver.returncode != 0:
        return
    expected = json.loads((job_dir / "expected.json").read_text())
    summary_path = job_dir / "summary.json"
    view = run([shardscope, "view", str(job_dir / "job"), "--summary", str(summary_path)])
    check(view.returncode == 0, f"{mode}: shardscope view --summary reads the traces ({view.stderr.strip()[-400:]})")
    if view.returncode != 0:
        return
    summary = json.loads(summary_path.read_text())
    if device == "cuda":
        ranks = ", ".join(str(r) for r in range(world)) if world < 3 else f"0 to {world - 1}"  # as the note lists them
        check(f"GPU memory of rank {ranks} from the CUDA allocator's snapshot" in view.stdout + view.stderr,
              f"{mode}: every rank's memory drawn from its snapshot ({(view.stdout + view.stderr).strip()[-600:]})")
    check(summary["world_size"] == world and len(summary["ranks"]) == world, f"{mode}: {world} ranks")
    if device == "cuda":
        # The overlap is the device's: from the GPU's kernels, as HTA computes it, not the host's spans.
        for rank in summary["ranks"]:
            traces = sorted((job_dir / "job").glob(f"rank-{rank['rank']}.pt.trace.json*"))
            want = kernel_overlap_pct(traces[0]) if traces else -1
            check(abs(rank["overlap_pct"] - want) < 0.5,
                  f"{mode} rank {rank['rank']}: overlap {rank['overlap_pct']:.2f} % of communication, as its "
                  f"kernels give it ({want:.2f} %)")
    totals = expected_totals(expected)
    for rank in summary["ranks"]:
        r = rank["rank"]
        check(rank["recorded_steps"] == RECORDED_STEPS, f"{mode} rank {r}: {rank['recorded_steps']} recorded steps")
        for op in ("all_gather", "reduce_scatter", "all_reduce"):
            got = rank["collectives"][op]
            want = totals.get(op, (0, 0))
            check((got["count"], got["size_bytes"]) == want,
                  f"{mode} rank {r}: {op} count and size {got['count']}, {got['size_bytes']} B (the job: {want[0]}, {want[1]} B)")
        check(rank["throughput"]["samples_per_s"] is None, f"{mode} rank {r}: no samples/s made up without a batch")
        grads = rank["peak_bytes"]["grad_full" if mode == "ddp" else "grad_shard"]
        want = expected["parameters"] * 4 if mode == "ddp" else unit_bytes(expected, "elements_in")
        check(abs(grads - want) <= 0.1 * want, f"{mode} rank {r}: gradients peak at {grads} B, the job's {want} B")
        held = expected["held_when_recording_began"][r]
        check(rank["peak_bytes"]["param_shard"] == held["param_shard"],
              f"{mode} rank {r}: its parameters, allocated before the profiler started and counted by the "
              f"recorder, are shown: {rank['peak_bytes']['param_shard']} B (the model's shapes: {held['param_shard']} B)")
        optimizer = rank["peak_bytes"]["optimizer_state"]
        check(held["optimizer_state"] <= optimizer <= held["optimizer_state"] + 2 * held["param_shard"],
              f"{mode} rank {r}: Adam's state is shown from the start, and the step's temporaries over it: peak "
              f"{optimizer} B (the model's shapes: {held['optimizer_state']} B held)")
        if mode != "ddp":
            peak = rank["peak_bytes"]["param_gathered"]
            units = unit_bytes(expected, "elements_out")
            if mode == "fsdp":
                check(0 < peak < units, f"{mode} rank {r}: gathered parameters freed after each unit "
                                        f"(peak {peak} B, all units {units} B)")
            else:
                check(peak >= units, f"{mode} rank {r}: gathered parameters kept through forward "
                                     f"(peak {peak} B, all units {units} B)")
    check(summary.get("source") == "torch.profiler" and summary["config"] == {"world": world} and
          summary["parameter_count"] is None, f"{mode}: the summary claims no config the job did not have")
    closest = "ddp-like" if mode == "ddp" else "FULL_SHARD-like" if mode == "fsdp" else "SHARD_GRAD_OP-like"
    check(closest in summary.get("title", ""),
          f"{mode}: the summary names the session by what the job ran ({summary.get('title')!r}), which a "
          f"reopened summary shows instead of shardscope's default strategy")
    if mode == "fsdp":
        check_files_and_other_hosts(shardscope, job_dir, mode, summary, check)
    if shutil.which("xvfb-run"):
        again = run([*xvfb_run(job_dir), shardscope, "view", str(summary_path),
                     "--screenshot", str(job_dir / "summary.png")])
        check(again.returncode == 0, f"{mode}: the summary opens again in view ({again.stderr.strip()[-300:]})")
        png = job_dir / "view.png"
        shot = run([*xvfb_run(job_dir, "1920x1080"), shardscope, "view", str(job_dir / "job"),
                    "--window-size", "1920x1080", "--screenshot", str(png)])
        check(shot.returncode == 0 and png.exists() and png.stat().st_size > 0,
              f"{mode}: view draws the job ({shot.stderr.strip()[-300:]})")


def copy_recorded(source, job_dir):
    """A job's rank-R.* files from `source` into job_dir, each as its recorder wrote it (a .gz
    decompressed: the driver reads the files by their plain names)."""
    files = sorted(source.glob("rank-*")) if source.is_dir() else []
    if not files:
        sys.exit(f"pytorch_profiler_traces: --recorded: {source} holds no rank-R.* files")
    job_dir.mkdir(parents=True)
    for f in files:
        if f.suffix == ".gz":
            with gzip.open(f, "rb") as packed, open(job_dir / f.stem, "wb") as plain:
                shutil.copyfileobj(packed, plain)
        else:
            shutil.copy(f, job_dir / f.name)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--jobs", default=",".join(f"{m}:{w}" for m, w in JOBS),
                    help="MODE:WORLD entries to check, comma-separated (default: all three)")
    ap.add_argument("--recorded", type=Path, metavar="DIR",
                    help="check jobs already recorded, in DIR/MODE_wWORLD/ (their rank-R.* files, each plain or "
                         ".gz, as brought back from a GPU machine), instead of running them")
    args = ap.parse_args()
    jobs = []
    for entry in dict.fromkeys(args.jobs.split(",")):   # each job once, in the order given
        mode, _, world = entry.partition(":")
        if (mode, int(world) if world.isdigit() else None) not in JOBS:
            ap.error(f"--jobs: {entry!r} is not one of {', '.join(f'{m}:{w}' for m, w in JOBS)}")
        jobs.append((mode, int(world)))
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    if args.recorded:
        for mode, world in jobs:
            copy_recorded(args.recorded / f"{mode}_w{world}", Path(args.workdir) / f"{mode}_w{world}" / "job")
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            failures.append(what)

    for mode, world in jobs:
        check_job(os.path.abspath(args.shardscope), args.workdir, mode, world, args.device, check,
                  args.recorded is not None)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
