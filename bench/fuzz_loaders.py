#!/usr/bin/env python3
"""The loaders' fuzz test (tests/stats/loader_fuzz_test.cpp) run for minutes instead of CI's 350
mutants: seed after seed, each round 350 mutants (150 traces, 100 summaries, 100 configs of a real
run; half byte-level, half tree-level), until the time is up. Prints mutants read, loaded,
refused, and crashes (a test binary that died or failed). Run from the repository root after
scripts/build.sh:

  python3 bench/fuzz_loaders.py [--minutes 5] [--rounds-per-seed 20]
"""
import argparse
import re
import subprocess
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--rounds-per-seed", type=int, default=20)
    parser.add_argument("--binary", default="build/tests/stats_tests")
    a = parser.parse_args()
    deadline = time.monotonic() + 60 * a.minutes
    seed, read, loaded, crashes = 1, 0, 0, []
    while time.monotonic() < deadline:
        env = {"SHARDSCOPE_FUZZ_SEED": str(seed), "SHARDSCOPE_FUZZ_ITERATIONS": str(a.rounds_per_seed)}
        p = subprocess.run([a.binary, "--gtest_filter=LoaderFuzz.*"], capture_output=True, text=True,
                           env={**__import__("os").environ, **env})
        m = re.search(r"fuzzed (\d+) traces, (\d+) summaries, (\d+) configs .*: (\d+) still loaded", p.stdout)
        if p.returncode != 0 or not m:
            crashes.append(f"seed {seed}: exit {p.returncode}: {(p.stdout + p.stderr)[-400:]}")
        else:
            read += sum(int(m.group(i)) for i in (1, 2, 3))
            loaded += int(m.group(4))
        seed += 1
    print(f"seeds 1..{seed - 1}: {read} mutants read, {loaded} loaded, {read - loaded} refused, "
          f"{len(crashes)} seeds crashed or failed")
    for c in crashes:
        print("  ", c)


if __name__ == "__main__":
    main()
