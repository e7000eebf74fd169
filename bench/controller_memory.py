#!/usr/bin/env python3
"""Controller memory over a long headless run: does it stay flat?

Runs `shardscope run` for many steps and samples the controller's resident memory (VmRSS of the
`shardscope run` process, not its ranks) every half second. A headless run streams its trace and
CSV to disk and keeps only its last steps in detail (engine/recording/streamed_outputs.h), so the controller
should hold the same memory at step 100,000 as at step 1,000; what still grows with the steps is
the summary's per-step lists (a loss, step time and exposed time per step: tens of bytes a step).

Reports RSS at 10%, 50% and 100% of the run, the peak, the growth from the 10% point to the end
per 10,000 steps, and the events the ranks dropped. Target: under 1 MB per 10,000 steps, none
dropped.

With --window-events N the run goes through the app instead (`run --screenshot`, a hidden window
drawing it live; needs a display: xvfb-run -a bench/controller_memory.py ...): its session holds
at most N events in detail and folds its older steps, so its memory rises to N events' worth and
then stays flat. Without folding it would grow by about 120 MB a million events.

    bench/controller_memory.py --shardscope build/app/shardscope [--steps 100000]
        [--run-args "--strategy ddp --world 2"] [--trace] [--window-events N] [--out FILE.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", default="build/app/shardscope")
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--run-args", default="--strategy ddp --world 2",
                    help="options for `shardscope run` besides --steps (default: the README's mlp, ddp, 2 ranks)")
    ap.add_argument("--trace", action="store_true", help="also write --trace and --memory-csv (large: ~160 kB a step)")
    ap.add_argument("--window-events", help="run in the app's hidden window with this budget of events (e.g. 1M)")
    ap.add_argument("--out", help="write the samples and figures as JSON here")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        cmd = [args.shardscope, "run", *args.run_args.split(), "--steps", str(args.steps),
               "--summary", os.path.join(tmp, "summary.json")]
        if args.trace:
            cmd += ["--trace", os.path.join(tmp, "trace.json"), "--memory-csv", os.path.join(tmp, "memory.csv")]
        if args.window_events:
            if not os.environ.get("DISPLAY"):
                print("--window-events draws the run in a hidden window: run under xvfb-run -a", file=sys.stderr)
                return 2
            cmd += ["--screenshot", os.path.join(tmp, "window.png"), "--window-size", "1920x1080",
                    "--window-events", args.window_events]
        print("running:", " ".join(cmd), flush=True)
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        samples = []  # (seconds, KiB)
        while proc.poll() is None:
            kib = rss_kib(proc.pid)
            if kib is not None:
                samples.append((time.monotonic() - start, kib))
            time.sleep(0.5)
        err = proc.stderr.read().decode()
        if proc.returncode != 0:
            print(err, file=sys.stderr)
            return proc.returncode
        with open(os.path.join(tmp, "summary.json")) as f:
            summary = json.load(f)
        steps_done = len(summary["steps"])
        dropped = sum(r.get("dropped_events", 0) for r in summary["ranks"])
    elapsed = time.monotonic() - start
    if len(samples) < 4:
        print("the run ended before enough samples were taken; give it more --steps", file=sys.stderr)
        return 1

    def at(fraction):
        # Time stands in for steps: after the first seconds of start-up, steps run at a steady rate.
        t = samples[-1][0] * fraction
        return min(samples, key=lambda s: abs(s[0] - t))[1] / 1024

    early, middle, late, end = at(0.10), at(0.50), at(0.95), at(1.0)
    peak = max(kib for _, kib in samples) / 1024
    # A window's session first fills its budget of events: its flat part is the second half (before
    # the end, where the screenshot is taken and the outputs written).
    start, to, share, label = (middle, late, 0.45, "50% to 95%") if args.window_events else (early, end, 0.9, "10% to the end")
    growth = (to - start) / (share * steps_done) * 10000
    print(f"{steps_done} steps in {elapsed:.0f} s; controller RSS: at 10% {early:.1f} MB, 50% {middle:.1f} MB, "
          f"95% {late:.1f} MB, end {end:.1f} MB, peak {peak:.1f} MB")
    print(f"growth from {label}: {growth:.2f} MB per 10,000 steps (target < 1); events the ranks dropped: {dropped}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"command": cmd, "steps": steps_done, "seconds": elapsed,
                       "rss_mb": {"at_10pct": early, "at_50pct": middle, "at_95pct": late, "end": end, "peak": peak},
                       "growth_mb_per_10k_steps": growth, "dropped_events": dropped,
                       "samples_s_kib": samples}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
