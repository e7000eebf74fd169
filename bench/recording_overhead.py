#!/usr/bin/env python3
"""Recording overhead: step time with recording on vs off, in the same run.

Runs `shardscope run --recording alternate`, which records even steps and not odd ones, so both
halves share one set of processes, one warm-up and the same machine state. Reports, per strategy,
the median step time (slowest rank per step, warm-up step 0 excluded) of recorded and unrecorded
steps and their ratio. Target: recorded / unrecorded <= 1.02.

    bench/recording_overhead.py --shardscope build/app/shardscope [--steps 41] [--world 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", default="build/app/shardscope")
    ap.add_argument("--steps", type=int, default=41)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--model-args", default="--model gpt --layers 4 --hidden 128 --heads 4 --seq 64 --vocab 512 --batch 8")
    ap.add_argument("--repeats", type=int, default=1, help="runs per strategy; the mean ratio is reported")
    args = ap.parse_args()
    print(f"model: {args.model_args}, world {args.world}, {args.steps} steps (even recorded, odd not), "
          f"{args.repeats} run(s) per strategy")
    print(f"{'strategy':14s} {'recorded ms':>12s} {'unrecorded ms':>14s} {'ratio':>7s}")
    ratios = []
    for strategy in ["ddp", "full_shard", "shard_grad_op"] * args.repeats:
        with tempfile.TemporaryDirectory() as tmp:
            summary = os.path.join(tmp, "s.json")
            cmd = [args.shardscope, "run", *args.model_args.split(), "--strategy", strategy,
                   "--world", str(args.world), "--steps", str(args.steps), "--recording", "alternate",
                   "--summary", summary]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            s = json.load(open(summary))
        per_step = [max(r["step_time_s"][i] for r in s["ranks"]) for i in range(args.steps)]
        on = [t for i, t in enumerate(per_step) if i > 0 and i % 2 == 0]
        off = [t for i, t in enumerate(per_step) if i % 2 == 1]
        ratio = statistics.median(on) / statistics.median(off)
        ratios.append(ratio)
        print(f"{strategy:14s} {1e3 * statistics.median(on):12.2f} {1e3 * statistics.median(off):14.2f} {ratio:7.3f}")
    mean = statistics.mean(ratios)
    spread = statistics.stdev(ratios) if len(ratios) > 1 else 0.0
    half = 1.96 * spread / len(ratios) ** 0.5
    print(f"mean ratio {mean:.3f} +- {half:.3f} (95% interval of the mean over {len(ratios)} runs; "
          f"single runs {min(ratios):.3f}..{max(ratios):.3f}); target <= 1.02")
    return 0


if __name__ == "__main__":
    sys.exit(main())
