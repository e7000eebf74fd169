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
  - the summary opens again in `view` (its unknown figures are null)
and, where xvfb-run is there, that `view DIR --screenshot` draws the job.

    tests/pytorch_profiler_traces.py --shardscope build/app/shardscope --workdir DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

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


def check_job(shardscope, workdir, mode, world, check):
    job_dir = Path(workdir) / f"{mode}_w{world}"
    driver = run([sys.executable, str(REPO / "tests" / "pytorch_profiler_jobs.py"), "--workdir", str(job_dir),
                  "--mode", mode, "--world", str(world)])
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
    check(summary["world_size"] == world and len(summary["ranks"]) == world, f"{mode}: {world} ranks")
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
    if shutil.which("xvfb-run"):
        again = run(["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24", shardscope, "view", str(summary_path),
                     "--screenshot", str(job_dir / "summary.png")])
        check(again.returncode == 0, f"{mode}: the summary opens again in view ({again.stderr.strip()[-300:]})")
        png = job_dir / "view.png"
        shot = run(["xvfb-run", "-a", "-s", "-screen 0 1920x1080x24", shardscope, "view", str(job_dir / "job"),
                    "--window-size", "1920x1080", "--screenshot", str(png)])
        check(shot.returncode == 0 and png.exists() and png.stat().st_size > 0,
              f"{mode}: view draws the job ({shot.stderr.strip()[-300:]})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            failures.append(what)

    for mode, world in JOBS:
        check_job(os.path.abspath(args.shardscope), args.workdir, mode, world, check)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
