#!/usr/bin/env python3
"""Two "hosts" on one machine: a torchrun job across network namespaces, recorded per rank.

Builds two network namespaces joined by a veth pair (addresses only inside them), runs
`torchrun --nnodes 2 --nproc-per-node 2` in each with the rendezvous and Gloo on the veth addresses,
each rank recording into its own file (`shardscope worker --trace-dir`), and the second node's
clock moved by a known amount (SHARDSCOPE_TEST_CLOCK_SHIFT_NS, for tests only). Then checks:
every rank's events are there (4 ranks, every step), the losses equal a single-host run's, each
rank's measured clock offset recovers the shift within its stated bound, the loss all-reduce of
every step ends on all four ranks within that bound (plus scheduling slack) once shifted, `view`
merges and draws the job and says which ranks it shifted. With a rank of the second host killed
mid-run: both torchruns fail without hanging and every file keeps its steps. With the link between
the namespaces set down mid-run: the same, and view names every rank with its host (each node runs
under a hostname of its own). Streamed live to a
collector on the first host's veth address with a token: every rank's steps arrive, and a stranger
on the second host without the token is refused, and the app's Listen mode draws the job
(a screenshot, with xvfb-run). No process is left behind.
Exits 77 (skipped) where namespaces cannot be created (no privilege), saying why.

    tests/multinode_netns.py --shardscope build/app/shardscope --workdir DIR
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rank_stream  # noqa: E402  (a rank's event stream, read independently of shardscope)
from xvfb import xvfb_run  # noqa: E402  (a virtual display whose exit status is the program's)

SKIP = 77
SHIFT_NS = 3_000_000_000
STEPS = 3
SLACK_NS = 50_000_000  # a busy machine's scheduling delay between a collective's end and its record


def sh(*args, check=True, **kwargs):
    return subprocess.run(list(args), check=check, capture_output=True, text=True, **kwargs)


def events(path, kind):
    return rank_stream.events_of_kind(path, kind)


class Namespaces:
    """Two namespaces and a veth pair between them; removed on exit."""

    def __init__(self, tag):
        self.names = [f"ss{tag}a", f"ss{tag}b"]
        self.subnet = f"10.{77 + tag % 100}.{tag % 250}"
        self.addresses = [f"{self.subnet}.1", f"{self.subnet}.2"]

    def __enter__(self):
        a, b = self.names
        sh("ip", "netns", "add", a)
        sh("ip", "netns", "add", b)
        sh("ip", "link", "add", f"v{a}", "type", "veth", "peer", "name", f"v{b}")
        for ns, address in zip(self.names, self.addresses):
            sh("ip", "link", "set", f"v{ns}", "netns", ns)
            sh("ip", "-n", ns, "addr", "add", f"{address}/24", "dev", f"v{ns}")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "-n", ns, "link", "set", f"v{ns}", "up")
        return self

    def __exit__(self, *exc):
        for ns in self.names:
            sh("ip", "netns", "del", ns, check=False)


def gather(run_dir):
    """The nodes' files as a user gathers them from the hosts into one directory."""
    job = os.path.join(run_dir, "job")
    os.makedirs(job)
    for path in glob.glob(os.path.join(run_dir, "node*", "*")):
        shutil.copy(path, job)
    return job


def steps_kept(job, rank):
    """The steps rank's file in `job` holds (-1: no file)."""
    path = os.path.join(job, f"rank-{rank}.events")
    return len(events(path, "step_end")) if os.path.exists(path) else -1


def check_failed_job(check, codes, run_dir, steps_before, what):
    """A job that failed mid-run: both nodes' torchrun fail without hanging, and every rank's file
    keeps the steps it finished before. Returns the gathered job."""
    check(all(code not in (0, "timeout") for code in codes), f"{what}, both nodes' torchrun fail, none hangs ({codes})")
    job = gather(run_dir)
    for rank in range(4):
        kept = steps_kept(job, rank)
        check(kept >= steps_before, f"{what}, rank {rank}'s file keeps the steps before ({kept})")
    return job


def can_make_namespaces():
    if shutil.which("ip") is None:
        return "the 'ip' command (iproute2) is not installed"
    probe = f"ssprobe{os.getpid()}"
    r = sh("ip", "netns", "add", probe, check=False)
    if r.returncode != 0:
        return f"'ip netns add' failed ({r.stderr.strip()}): run as root, or where network namespaces are allowed"
    sh("ip", "netns", "del", probe, check=False)
    return None


def start_job(ns, shardscope, workdir, port, node1_env=None, steps=STEPS, recording=None, env_all=None):
    """Both nodes' torchrun, each in its namespace under a hostname of its own (node0, node1: a UTS
    namespace, so the ranks' files name their host as on two machines)."""
    procs = []
    for node in (0, 1):
        env = dict(os.environ)
        env.update(env_all or {})
        if node == 1:
            env["SHARDSCOPE_TEST_CLOCK_SHIFT_NS"] = str(SHIFT_NS)
            env.update(node1_env or {})
        cmd = ["ip", "netns", "exec", ns.names[node], "unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
               f"node{node}", sys.executable, "-m", "torch.distributed.run",
               "--nnodes", "2", "--nproc-per-node", "2", "--node-rank", str(node),
               "--master-addr", ns.addresses[0], "--master-port", str(port), "--no-python", shardscope,
               "worker", "--model", "gpt", "--strategy", "full_shard", "--steps", str(steps), "--batch", "8",
               *(recording or ["--trace-dir", os.path.join(workdir, f"node{node}")])]
        log = open(os.path.join(workdir, f"node{node}.log"), "w")
        procs.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env), log))
    return procs


def wait_job(procs, timeout=240):
    codes = []
    deadline = time.time() + timeout
    for proc, log in procs:
        try:
            codes.append(proc.wait(timeout=max(1, deadline - time.time())))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append("timeout")
        log.close()
    return codes


def run_job(ns, shardscope, workdir, port, node1_env=None, steps=STEPS, recording=None, env_all=None):
    return wait_job(start_job(ns, shardscope, workdir, port, node1_env, steps, recording, env_all))


def cut_link_mid_run(ns, shardscope, workdir, port):
    """The job with the link between the hosts set down (ip link set ... down) once every rank of
    the first host has recorded 3 steps; Gloo's timeout cut to 10 s (SHARDSCOPE_GLOO_TIMEOUT_MS) so
    the ranks notice within the test. Returns the torchruns' codes and how long they took after
    the cut."""
    procs = start_job(ns, shardscope, workdir, port, steps=100000, env_all={"SHARDSCOPE_GLOO_TIMEOUT_MS": "10000"})
    deadline = time.time() + 180
    while time.time() < deadline and any(p.poll() is None for p, _ in procs):
        paths = [os.path.join(workdir, "node0", f"rank-{r}.events") for r in (0, 1)]
        if all(os.path.exists(p) and len(events(p, "step_end")) >= 3 for p in paths):
            break
        time.sleep(0.2)
    sh("ip", "-n", ns.names[1], "link", "set", f"v{ns.names[1]}", "down")
    cut = time.time()
    codes = wait_job(procs, timeout=180)
    return codes, time.time() - cut


def collect_live(ns, shardscope, workdir):
    """The job streamed live to a collector on the first host's veth address, with a token; a
    stranger on the other host presents none. Returns the collector's (code, stdout, stderr), the
    job's codes and the stranger's address."""
    collected_dir = os.path.join(workdir, "collected")
    token_file = os.path.join(workdir, "token")
    with open(token_file, "w") as f:
        f.write(f"job-token-{os.getpid()}-{time.time_ns()}\n")
    token = open(token_file).read().strip()
    port = 30500 + os.getpid() % 400
    # Drawn live in the app's Listen mode where a display can be had (the PNG once every rank has gone).
    window = []
    if shutil.which("xvfb-run"):
        window = xvfb_run(workdir, "1920x1080")
    listen = subprocess.Popen(["ip", "netns", "exec", ns.names[0], *window, shardscope, "listen", "--bind", ns.addresses[0],
                               "--port", str(port), "--trace-dir", collected_dir, "--token-file", token_file,
                               *(["--window-size", "1920x1080", "--screenshot", os.path.join(workdir, "listen.png")]
                                 if window else [])],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    listen.stdout.readline()  # "listening on ...": it is up
    stranger = ("import socket, time, json; s = socket.create_connection(('%s', %d)); "
                "s.sendall((json.dumps({'hello': 'shardscope.collector/1', 'rank': 0, 'world': 4}) + '\\n').encode()); "
                "time.sleep(0.3)" % (ns.addresses[0], port))
    sh("ip", "netns", "exec", ns.names[1], sys.executable, "-c", stranger, check=False)
    logs = os.path.join(workdir, "collected-logs")
    os.makedirs(logs)
    codes = run_job(ns, shardscope, logs, 30100 + os.getpid() % 300,
                    recording=["--collector", f"{ns.addresses[0]}:{port}"],
                    env_all={"SHARDSCOPE_COLLECTOR_TOKEN": token})
    try:
        out, err = listen.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        listen.kill()
        out, err = listen.communicate()
    # The live job's processes name the collector's address, not the work directory.
    left = sh("pgrep", "-af", f"{ns.addresses[0]}:{port}", check=False).stdout.strip()
    return {"code": listen.returncode, "out": out, "err": err, "job": codes, "dir": collected_dir,
            "stranger": ns.addresses[1], "left": left}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", required=True)
    ap.add_argument("--workdir", required=True)
    args = ap.parse_args()
    why = can_make_namespaces()
    if why:
        print(f"SKIP: {why}")
        return SKIP
    shardscope = os.path.abspath(args.shardscope)
    workdir = os.path.abspath(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    with Namespaces(os.getpid() % 200) as ns:
        codes = run_job(ns, shardscope, workdir, 29400 + os.getpid() % 500)
        # The same job with rank 3, on the other host, killed in its third step.
        killed_dir = os.path.join(workdir, "killed")
        os.makedirs(killed_dir)
        killed_codes = run_job(ns, shardscope, killed_dir, 29900 + os.getpid() % 90,
                               {"SHARDSCOPE_FAULT": "rank=3,step=2,mode=kill"}, steps=6)
        collected = collect_live(ns, shardscope, workdir)
        cut_dir = os.path.join(workdir, "cut")
        os.makedirs(cut_dir)
        cut_codes, cut_seconds = cut_link_mid_run(ns, shardscope, cut_dir, 29300 + os.getpid() % 90)
    for node, code in enumerate(codes):
        check(code == 0, f"node {node}'s torchrun exits 0 (got {code}; log {workdir}/node{node}.log)")
    if failures:
        for node in (0, 1):
            print(open(os.path.join(workdir, f"node{node}.log")).read()[-3000:])
        return 1

    job = gather(workdir)
    files = sorted(glob.glob(os.path.join(job, "rank-*.events")))
    check(len(files) == 4, f"4 rank files gathered ({len(files)})")
    ranks = {int(os.path.basename(p)[5:-7]): p for p in files}

    single = os.path.join(workdir, "single.json")
    r = sh(shardscope, "run", "--model", "gpt", "--strategy", "full_shard", "--world", "4", "--steps", str(STEPS),
           "--batch", "8", "--summary", single, check=False)
    check(r.returncode == 0, "the same job on one host runs")
    single_losses = [s["loss"] for s in json.load(open(single))["steps"]] if r.returncode == 0 else []

    shifts, bounds = {}, {}
    for rank, path in sorted(ranks.items()):
        losses = [e["l"] for e in events(path, "step_end")]
        check(len(losses) == STEPS, f"rank {rank}: {STEPS} steps recorded ({len(losses)})")
        check(len(single_losses) == STEPS and all(abs(a - b) < 1e-6 for a, b in zip(losses, single_losses)),
              f"rank {rank}: losses equal the single-host run's ({losses} vs {single_losses})")
        clock = events(path, "clock_offset")
        check(len(clock) >= 2, f"rank {rank}: its clock measured when the ranks are up and at the end ({len(clock)})")
        for reading in clock:
            offset, bound = reading["e"] - reading["b"], reading["uncertainty_ns"]
            expected = -SHIFT_NS if rank >= 2 else 0
            check(0 <= bound < 100_000_000 and abs(offset - expected) <= bound,
                  f"rank {rank}: offset {offset / 1e9:+.6f} s, expected {expected / 1e9:+.0f} s within {bound / 1e3:.0f} us")
        if clock:
            offset, bound = clock[0]["e"] - clock[0]["b"], clock[0]["uncertainty_ns"]
            shifts[rank] = offset if abs(offset) > bound else 0
            bounds[rank] = max(r["uncertainty_ns"] for r in clock)

    # Each step's loss all-reduce ends on every rank at about one moment, on rank 0's clock.
    ends = {rank: [e["e"] + shifts.get(rank, 0) for e in events(path, "collective") if e.get("t") == "loss (logging)"]
            for rank, path in ranks.items()}
    worst_bound = max(bounds.values(), default=0)
    for step in range(STEPS):
        at = [ends[rank][step] for rank in sorted(ends) if step < len(ends[rank])]
        spread = max(at) - min(at) if len(at) == 4 else None
        check(spread is not None and spread < 2 * worst_bound + SLACK_NS,
              f"step {step}: the loss all-reduce ends on all 4 ranks within {spread and spread / 1e6:.2f} ms")

    if shutil.which("xvfb-run"):
        png = os.path.join(workdir, "view.png")
        v = sh(*xvfb_run(workdir), shardscope, "view", job, "--screenshot", png,
               check=False, timeout=120)
        check(v.returncode == 0 and os.path.getsize(png) > 0, f"view draws the merged job ({v.stderr.strip()[-300:]})")
        check("rank 2 (host node1) shifted" in v.stderr and "rank 3 (host node1) shifted" in v.stderr and
              "rank 1 (host node0) shifted" not in v.stderr,
              "view shifts the other host's ranks, and only them")
    else:
        print("note: xvfb-run is not installed; the view was not drawn")

    # A rank killed on one host: both nodes' torchrun fail, and every rank's file keeps what it
    # recorded before (its first two steps), which view merges and names the ranks that failed.
    killed_job = check_failed_job(check, killed_codes, killed_dir, 2, "with rank 3 killed")
    if shutil.which("xvfb-run"):
        png = os.path.join(killed_dir, "view.png")
        v = sh(*xvfb_run(workdir), shardscope, "view", killed_job, "--screenshot", png,
               check=False, timeout=120)
        check(v.returncode == 0, f"view draws the killed job ({v.stderr.strip()[-300:]})")
        check("rank 3 (host node1) stopped without finishing or an error after 2 steps" in v.stderr,
              "view names the killed rank and the steps it finished")

    # The link between the hosts cut mid-run: every rank's collectives time out (Gloo's 10 s here),
    # both torchruns end without hanging, every file keeps what its rank recorded, and view names
    # each rank with its host and how it ended.
    cut_job = check_failed_job(check, cut_codes, cut_dir, 3, f"with the link cut ({cut_seconds:.0f} s before the end)")
    v = sh(shardscope, "view", cut_job, "--summary", os.path.join(cut_dir, "summary.json"), check=False, timeout=120)
    check(v.returncode == 0, f"view summarizes the cut job ({v.stderr.strip()[-300:]})")
    for rank in range(4):
        host = "node0" if rank < 2 else "node1"
        check(f"rank {rank} (host {host}) failed:" in v.stderr or
              f"rank {rank} (host {host}) stopped without finishing" in v.stderr,
              f"view names rank {rank}, its host {host}, and how it ended")
    print(v.stderr.strip()[-1500:])

    # Live: the collector on the first host, the token, a stranger from the second host refused.
    check(collected["job"] == [0, 0], f"the job streaming to the collector exits 0 on both hosts ({collected['job']})")
    check(collected["code"] == 0, f"the collector ends 0 once every rank finished ({collected['err'][-300:]})")
    check(f"refused a connection from {collected['stranger']}: it presented no token" in collected["err"],
          "a stranger on the other host without the token is refused and logged")
    check(f"rank 3 of 4 connected from {collected['stranger']}" in collected["out"],
          "the other host's ranks connect from its address")
    check(not collected["left"], f"no process of the live job left behind ({collected['left']})")
    if shutil.which("xvfb-run"):
        png = os.path.join(workdir, "listen.png")
        check(os.path.exists(png) and os.path.getsize(png) > 0, f"the app's Listen mode drew the job live ({png})")
    for rank in range(4):
        path = os.path.join(collected["dir"], f"rank-{rank}.events")
        losses = [e["l"] for e in events(path, "step_end")] if os.path.exists(path) else []
        check(len(single_losses) == STEPS and len(losses) == STEPS and
              all(abs(a - b) < 1e-6 for a, b in zip(losses, single_losses)),
              f"the collector has rank {rank}'s every step, its losses the single-host run's")

    # Anything still running with the job's paths in its command line, once exits have settled
    # (xvfb-run's server takes a moment to go).
    for _ in range(20):
        found = sh("pgrep", "-af", workdir, check=False).stdout.splitlines()
        left = "; ".join(line for line in found if line.split()[0] != str(os.getpid()))
        if not left:
            break
        time.sleep(0.5)
    check(not left, f"no process left behind ({left})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
