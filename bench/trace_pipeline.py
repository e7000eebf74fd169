#!/usr/bin/env python3
"""The event pipeline at a long run's scale: one run per trace format of the same model, side by
side, each optionally beside a busy loop on another core, then the trace reopened.

Per format it reports: the run's status and the events its ranks dropped (the summary's
dropped_events), the trace's bytes per step, the run's wall time and CPU time (the controller and
its ranks, from wait4; and the controller's process alone while the ranks ran, the summary's
controller_cpu_s), and the time and peak RSS of reopening the trace (`shardscope view TRACE
--summary`, which reads it as the window does and writes its summary).
And how long the controller's loop ran at normal priority to keep up with the ranks (the summary's
controller_catch_up_s, engine/recording/catch_up_turns.h).

    bench/trace_pipeline.py --shardscope build/app/shardscope --steps 20000 --busy [--formats pftrace,json]

--model replaces the model and strategy (the GPU machine's 1.34B run, scripts/device_gpu.sh trace_1b).

The model is the one the issue "One compact event pipeline" was measured on: a 2-layer GPT of
hidden 64 at 2 ranks under ddp. Targets: 0 events dropped, at most 1 GB of .pftrace for 20,000
steps, reopened within 2 GB RSS.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

MODEL = "--model gpt --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 97 --batch 8 --world 2 --strategy ddp"


def timed(cmd):
    """Wall seconds, CPU seconds and peak RSS (KiB) of a command and the children it waited for."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode(errors="replace")
    return time.monotonic() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, proc.returncode, stderr


def busy_loop():
    """A process that spins on one core for as long as it lives (what else runs on a user's machine)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", default="build/app/shardscope")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--formats", default="pftrace,json")
    ap.add_argument("--model", default=MODEL, help=f"the run's model, world and strategy options [{MODEL}]")
    ap.add_argument("--busy", type=int, nargs="?", const=1, default=0, metavar="N",
                    help="run N busy loops (1 without N) beside each run")
    ap.add_argument("--json", help="write the rows to this file too")
    args = ap.parse_args()
    rows = []
    print(f"{args.model}, {args.steps} steps" + (f", beside {args.busy} busy loop(s)" if args.busy else ""))
    print(f"{'format':8s} {'status':>10s} {'dropped':>9s} {'bytes/step':>11s} {'run s':>7s} {'cpu ms/step':>12s} "
          f"{'controller':>11s} {'reopen s':>9s} {'reopen RSS MB':>14s} {'catch-up s':>11s}")
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            trace, summary, reopened = (os.path.join(tmp, n) for n in (f"t.{fmt}", "s.json", "r.json"))
            spinners = [busy_loop() for _ in range(args.busy)]
            try:
                wall, cpu, _, code, err = timed([args.shardscope, "run", *args.model.split(), "--steps", str(args.steps),
                                                 "--trace", trace, "--summary", summary])
            finally:
                for spinner in spinners:
                    spinner.kill()
                    spinner.wait()
            if not os.path.exists(summary):
                sys.exit(f"the {fmt} run wrote no summary (exit {code}):\n{err.strip()[-2000:]}")
            s = json.load(open(summary))
            dropped = sum(r.get("dropped_events", 0) for r in s["ranks"])
            size = os.path.getsize(trace)
            reopen_wall, _, reopen_rss, reopen_code, reopen_err = timed(
                [args.shardscope, "view", trace, "--summary", reopened])
            row = {"format": fmt, "steps": args.steps, "busy": args.busy, "exit": code, "status": s["status"],
                   "dropped_events": dropped, "trace_bytes": size, "trace_bytes_per_step": size / args.steps,
                   "run_s": wall, "cpu_ms_per_step": cpu * 1e3 / args.steps, "reopen_exit": reopen_code,
                   "reopen_s": reopen_wall, "reopen_rss_mb": reopen_rss / 1024,
                   "controller_catch_up_s": s.get("controller_catch_up_s", 0),
                   "controller_cpu_ms_per_step": (s.get("controller_cpu_s") or 0) * 1e3 / args.steps}
            rows.append(row)
            print(f"{fmt:8s} {s['status']:>10s} {dropped:>9d} {size / args.steps:>11.0f} {wall:>7.1f} "
                  f"{row['cpu_ms_per_step']:>12.2f} {row['controller_cpu_ms_per_step']:>11.2f} {reopen_wall:>9.1f} {reopen_rss / 1024:>14.0f} "
                  f"{row['controller_catch_up_s']:>11.1f}"
                  + ("" if reopen_code == 0 else f"  (reopen failed: {reopen_err.strip()[:200]})"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
