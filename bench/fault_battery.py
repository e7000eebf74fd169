#!/usr/bin/env python3
"""Faults a demanding user would try, each many times, and what shardscope did: the table of
trials, clean ends, hangs, crashes and data lost per kind of fault.

  rank-kill   a random rank SIGKILLed at a random moment of a run
  controller  SIGINT, SIGTERM or SIGHUP to the controller at a random moment
  stall       a random rank stopped (SIGSTOP) for good, --stall-timeout 3
  full-disk   the trace written to a full disk (a 64 KiB tmpfs when root, else /dev/full),
              the summary and memory CSV to a healthy one

A clean end: the expected exit status (1 for a rank's fault or a failed output, 128 + the
signal for the controller's), within 60 s, the message naming what happened, no rank process
left, no temporary file left. Data lost: a summary or trace missing or not valid JSON, or a
summary counting fewer finished steps than the trace shows every rank finished. A crash: the
controller itself killed by a signal. Run from the repository root after scripts/build.sh:

  python3 bench/fault_battery.py [--trials 20] [--only stall] [--binary build/app/shardscope]
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time


def worker_pids(controller_pid):
    try:
        out = subprocess.run(["pgrep", "-P", str(controller_pid)], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return []
    return [int(p) for p in out.split()]


def step_spans(trace_path):
    """Per rank, the "step N" spans the trace holds."""
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    spans = {}
    for e in events:
        if e.get("ph") == "X" and str(e.get("name", "")).startswith("step "):
            spans[e["pid"]] = spans.get(e["pid"], 0) + 1
    return spans


def lost(summary_path, trace_path, ranks_finish_together=True):
    """Whether what was recorded is missing, broken, or under-counted."""
    try:
        with open(summary_path) as f:
            summary = json.load(f)
        spans = step_spans(trace_path) if trace_path else {}
    except (OSError, ValueError, KeyError):
        return True
    if not spans:
        return False
    # A rank's step span closes before the loss all-reduce that proves every rank finished the
    # step, so a survivor may show one step more than every rank finished: never more than one.
    return len(summary["steps"]) < max(spans.values()) - 1


def run_trial(binary, kind, rng, root):
    work = tempfile.mkdtemp(dir=root)
    tmpdir = os.path.join(work, "tmp")
    os.mkdir(tmpdir)
    env = dict(os.environ, TMPDIR=tmpdir)
    summary, trace, csv = (os.path.join(work, n) for n in ("s.json", "t.json", "m.csv"))
    strategy = rng.choice(["ddp", "full_shard", "shard_grad_op", "zero1"])
    args = [binary, "run", "--model", "gpt", "--layers", "2", "--hidden", "32", "--world", "3", "--batch", "6",
            "--strategy", strategy, "--steps", "100000", "--summary", summary, "--trace", trace]
    expected, phrase = 1, ""
    mount = None
    if kind == "stall":
        args += ["--stall-timeout", "3"]
        phrase = "sent nothing for"
    elif kind == "rank-kill":
        phrase = "died: killed by signal 9"
    elif kind == "full-disk":
        args[args.index("100000")] = "3"
        full = os.path.join(work, "full")
        os.mkdir(full)
        if os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", full]).returncode == 0:
            mount = full
            trace = os.path.join(full, "t.json")
        else:
            trace = "/dev/full"
        args[args.index("--trace") + 1] = trace
        args += ["--memory-csv", csv]
        phrase = "cannot write '" + trace
    start = time.monotonic()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    time.sleep(rng.uniform(1.5, 4.0) if kind != "full-disk" else 0)
    victim = None
    if kind in ("rank-kill", "stall"):
        pids = worker_pids(proc.pid)
        if pids:
            victim = rng.choice(pids)
            os.kill(victim, signal.SIGKILL if kind == "rank-kill" else signal.SIGSTOP)
    elif kind == "controller":
        sig = rng.choice([signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
        expected, phrase = 128 + sig, "interrupted by"
        proc.send_signal(sig)
    try:
        output, _ = proc.communicate(timeout=60)
        hang = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        hang = True
    seconds = time.monotonic() - start
    text = output.decode(errors="replace")
    crash = proc.returncode < 0
    time.sleep(0.2)
    orphans = subprocess.run(["pgrep", "-f", "--", "--config " + tmpdir], capture_output=True).stdout.strip()
    if victim is not None and kind == "stall":
        try:
            os.kill(victim, signal.SIGKILL)  # never left stopped, whatever happened
        except ProcessLookupError:
            pass
    leftovers = os.listdir(tmpdir)
    data_lost = lost(summary, None if kind == "full-disk" else trace)
    if kind == "full-disk" and not os.path.exists(csv):
        data_lost = True
    clean = (not hang and not crash and proc.returncode == expected and phrase in text and not orphans
             and not leftovers)
    if mount:
        subprocess.run(["umount", mount])
    if clean and not data_lost:
        shutil.rmtree(work, ignore_errors=True)
    return {"clean": clean, "hang": hang, "crash": crash, "lost": data_lost, "seconds": seconds,
            "detail": "" if clean and not data_lost else f"{work}: exit {proc.returncode}, {text.strip()[-300:]}"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=20, help="rank kills and controller signals each (default 20); stalls and full disks: a quarter")
    parser.add_argument("--binary", default="build/app/shardscope")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--only", choices=["rank-kill", "controller", "stall", "full-disk"],
                        help="run one kind of fault only")
    a = parser.parse_args()
    rng = random.Random(a.seed)
    root = tempfile.mkdtemp(prefix="fault-battery-")
    plan = [("rank-kill", a.trials), ("controller", a.trials), ("stall", max(1, a.trials // 4)),
            ("full-disk", max(1, a.trials // 4))]
    plan = [(kind, trials) for kind, trials in plan if a.only in (None, kind)]
    print(f"{'fault':<11} {'trials':>6} {'clean':>6} {'hangs':>6} {'crashes':>8} {'lost':>5} {'median s':>9}")
    for kind, trials in plan:
        results = [run_trial(os.path.abspath(a.binary), kind, rng, root) for _ in range(trials)]
        seconds = sorted(r["seconds"] for r in results)
        print(f"{kind:<11} {trials:>6} {sum(r['clean'] for r in results):>6} {sum(r['hang'] for r in results):>6} "
              f"{sum(r['crash'] for r in results):>8} {sum(r['lost'] for r in results):>5} "
              f"{seconds[len(seconds) // 2]:>9.1f}", flush=True)
        for r in results:
            if r["detail"]:
                print("   ", r["detail"])


if __name__ == "__main__":
    main()
