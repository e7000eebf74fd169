#!/usr/bin/env python3
"""shardscope's page in a browser: what it costs to fetch, to start, to draw a big run and to read a
PyTorch job, in headless Chromium (Selenium and chromium-driver, as tests/web_page_test.py drives it)
on this machine, each beside the desktop's figure for the same thing where there is one.

    site        every file of the site scripts/web.sh builds, raw and gzip -9, and the total
    first frame shardscope.status().first_frame_ms (performance.now() at the first drawn frame, so
                from the navigation's start) in --loads fresh browsers (a new profile each time:
                nothing cached), and the median
    big run     a run recorded with --steps STEPS (about a million events at the default), opened in
                the page by its link (#open=), then the app's own frame timer (frame_build_ms: the
                time drawAppFrame takes; the desktop bench also times ImGui's NewFrame and Render)
                read once per animation frame, one sample per distinct app frame, --samples of them:
                median and p90; beside `timeline_frame_bench --open` of the same file ("whole run in
                view")
    job         each --job's rank files picked through the page's file input: seconds from the
                send_keys to status.opens >= 1 (ranks and events read, open_error); beside
                `shardscope view JOB --summary` wall time (median of --repeats)

The site is served on 127.0.0.1 as `python3 -m http.server` serves it (no compression on the wire).
Rows are printed and written to --out as JSON. Run it with Debian's Python (it has Selenium):

    /usr/bin/python3 bench/web_page_bench.py --site build-web/site --shardscope build/app/shardscope
        --workdir /tmp/webbench --job /tmp/profiler_read/job --out docs/results/web_page.json

(one command line; bench/profiler_read.py records the job, --active 15 for the 149 MB one)
"""
import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "web"))
from page_driver import browser, serve, status  # noqa: E402  (the page's driver, shared with the test)

def wait_for(driver, predicate, seconds):
    """True once predicate(status) holds, False after `seconds`."""
    try:
        WebDriverWait(driver, seconds, poll_frequency=0.05).until(lambda d: predicate(status(d)))
        return True
    except Exception:
        return False


def console_errors(driver):
    try:
        logged = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        return logged + (driver.execute_script("return window.shardscope ? shardscope.errors : []") or [])
    except Exception as e:  # the page's renderer is gone (out of memory, crashed)
        return [f"could not read the console: {str(e).splitlines()[0]}"]


# One sample per animation frame; kept only when the app drew a frame since the last one.
SAMPLE_FRAMES = """
const [wanted, done] = [arguments[0], arguments[arguments.length - 1]];
const samples = [];
let last = -1, frames = 0;
function tick(t) {
  const s = shardscope.status();
  if (s.frames !== last) { samples.push([s.frames, s.frame_build_ms, t]); last = s.frames; }
  if (samples.length > wanted || ++frames > 20 * wanted) done(samples); else requestAnimationFrame(tick);
}
requestAnimationFrame(tick);
"""


def quantile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def events_of(s):
    return sum(x["events"] for x in s["sessions"])


# ---- 1. the site's size ------------------------------------------------------------------------


def site_size(site):
    rows = []
    for f in sorted(Path(site).glob("index.*")):  # what scripts/web.sh builds, not files served beside it
        data = f.read_bytes()
        rows.append({"bench": "site", "file": f.name, "bytes": len(data), "gzip9_bytes": len(gzip.compress(data, 9))})
    rows.append({"bench": "site", "file": "total", "bytes": sum(r["bytes"] for r in rows),
                 "gzip9_bytes": sum(r["gzip9_bytes"] for r in rows)})
    # What index.data packs (emscripten's file list in index.js): the lessons and their recordings.
    packed = re.findall(r'"filename":"(/lessons/recordings/[^"]+)"', (Path(site) / "index.js").read_text())
    rows[-1].update({"lesson_recordings": len(packed), "lessons_recorded": len({p.split("/")[3] for p in packed})})
    for r in rows:
        print(f"site  {r['file']:12s} {r['bytes'] / 1e6:8.2f} MB raw  {r['gzip9_bytes'] / 1e6:8.2f} MB gzip -9")
    print(f"site  index.data packs {rows[-1]['lesson_recordings']} recordings of {rows[-1]['lessons_recorded']} lessons")
    return rows


# ---- 2. the first drawn frame ------------------------------------------------------------------


def first_frames(base, loads):
    samples = []
    for i in range(loads):
        driver = browser()
        try:
            start = time.perf_counter()
            driver.get(base)
            ok = wait_for(driver, lambda s: s and s["frames"] >= 1, 120)
            wall = time.perf_counter() - start
            s = status(driver)
            if not ok:
                sys.exit(f"first frame: no frame within 120 s (status {s}; {console_errors(driver)[:3]})")
            samples.append({"first_frame_ms": s["first_frame_ms"], "get_to_frame_s": wall})
            if i == loads - 1:  # the start page's own frames, to set the big run's beside
                wait_for(driver, lambda s: s["frames"] >= 30, 120)
                start_page = driver.execute_async_script(SAMPLE_FRAMES, 30)[1:]
            print(f"first frame, load {i + 1}: {s['first_frame_ms']:.0f} ms after the navigation"
                  f" ({wall:.2f} s from driver.get to a frame seen)")
        finally:
            driver.quit()
    ms = [x["first_frame_ms"] for x in samples]
    row = {"bench": "first_frame", "loads": loads, "fresh": "a new browser and profile each load",
           "median_ms": statistics.median(ms), "min_ms": min(ms), "max_ms": max(ms), "samples": samples,
           "start_page_frame_build_median_ms": statistics.median(x[1] for x in start_page),
           "start_page_frame_interval_median_ms": statistics.median(b[2] - a[2] for a, b in zip(start_page, start_page[1:]))}
    print(f"first frame   median {row['median_ms']:.0f} ms  ({min(ms):.0f}-{max(ms):.0f}) over {loads} fresh browsers")
    print(f"start page    frame build median {row['start_page_frame_build_median_ms']:.2f} ms, app frames every"
          f" {row['start_page_frame_interval_median_ms']:.1f} ms (median of 30)")
    return row


# ---- 3. a frame at about a million events ------------------------------------------------------



def record_big(shardscope, workdir, steps):
    trace = workdir / f"big-{steps}.pftrace"
    if not trace.exists():
        cmd = [shardscope, "run", "--model", "gpt", "--layers", "4", "--hidden", "64", "--world", "2",
               "--steps", str(steps), "--trace", str(trace)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return trace


def desktop_frame(bench, trace):
    out = subprocess.run([bench, "--open", str(trace)], check=True, capture_output=True, text=True).stdout
    opened = re.search(r"opened in ([\d.]+) s, peak RSS (\d+) MB: (\d+) events over (\d+) ranks", out)
    whole = re.search(r"whole run in view\s+median ([\d.]+) ms\s+p90 ([\d.]+) ms", out)
    return {"open_s": float(opened[1]), "peak_rss_mb": int(opened[2]), "events": int(opened[3]),
            "ranks": int(opened[4]), "whole_run_median_ms": float(whole[1]), "whole_run_p90_ms": float(whole[2]),
            "output": out}


def big_frame(base, site, trace, samples, bench):
    served = Path(site) / "webbench-big.pftrace"
    shutil.copy(trace, served)
    driver = browser()
    try:
        start = time.perf_counter()
        driver.get(base + "#open=" + served.name)
        ok = wait_for(driver, lambda s: s and s["opens"] >= 1 and s["sessions"], 300)
        opened_s = time.perf_counter() - start
        s = status(driver)
        if not ok or s["open_error"]:
            sys.exit(f"big run: not opened ({s and s['open_error']}; {console_errors(driver)[:3]})")
        frames_at_open = s["frames"]
        wait_for(driver, lambda s: s["frames"] >= frames_at_open + 60, 300)  # ~60 frames drawn first
        taken = driver.execute_async_script(SAMPLE_FRAMES, samples)[1:]  # the first: a frame before
        s = status(driver)
        errors = console_errors(driver)
    finally:
        driver.quit()
        served.unlink()
    ms = [x[1] for x in taken]
    gaps = [b[2] - a[2] for a, b in zip(taken, taken[1:])]
    desktop = desktop_frame(bench, trace)
    row = {"bench": "big_frame", "trace": str(trace), "trace_bytes": trace.stat().st_size,
           "page_events": events_of(s), "page_ranks": s["sessions"][0]["ranks"],
           "page_get_to_open_s": opened_s, "samples": len(ms), "frame_build_median_ms": statistics.median(ms),
           "frame_build_p90_ms": quantile(ms, 0.9), "frame_build_max_ms": max(ms),
           "frame_interval_median_ms": statistics.median(gaps) if gaps else None,
           "desktop": {k: v for k, v in desktop.items() if k != "output"}, "console_errors": errors,
           "frame_build_ms_samples": ms}
    print(f"big run       {row['page_events']} events over {row['page_ranks']} ranks in the page, opened"
          f" {opened_s:.1f} s after driver.get")
    print(f"page frame    median {row['frame_build_median_ms']:.2f} ms  p90 {row['frame_build_p90_ms']:.2f} ms"
          f"  max {row['frame_build_max_ms']:.2f} ms over {len(ms)} frames (app frames every"
          f" {row['frame_interval_median_ms']:.1f} ms, median)")
    print(f"desktop frame median {desktop['whole_run_median_ms']:.2f} ms  p90 {desktop['whole_run_p90_ms']:.2f} ms"
          f"  ({desktop['events']} events, timeline_frame_bench --open, whole run in view)")
    return row


# ---- 4. a PyTorch job through the file input ---------------------------------------------------


def desktop_view(shardscope, job, workdir, repeats):
    walls, rss = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        pid = subprocess.Popen([shardscope, "view", str(job), "--summary", str(workdir / "s.json")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid
        _, code, usage = os.wait4(pid, 0)
        walls.append(time.perf_counter() - start)
        rss.append(usage.ru_maxrss * 1024)
        if code != 0:
            sys.exit(f"shardscope view {job} failed ({code})")
    return {"wall_s": statistics.median(walls), "walls_s": walls, "peak_rss_bytes": max(rss)}


def job_read(base, job, shardscope, workdir, repeats, limit_s):
    files = sorted(Path(job).glob("rank-*.pt.trace.json"))
    if not files:
        sys.exit(f"no rank-*.pt.trace.json in {job} (bench/profiler_read.py records it)")
    size = sum(f.stat().st_size for f in files)
    driver = browser()
    result = {"bench": "job_read", "job": str(job), "files": len(files), "files_bytes": size, "limit_s": limit_s}
    try:
        driver.get(base)
        if not wait_for(driver, lambda s: s and s["ready"], 120):
            sys.exit("job: the page did not start")
        start = time.perf_counter()
        driver.find_element(By.ID, "files").send_keys("\n".join(str(f) for f in files))
        done = wait_for(driver, lambda s: s["opens"] >= 1 or s["open_error"], limit_s)
        seconds = time.perf_counter() - start
        try:
            s = status(driver)
        except Exception as e:  # the renderer is gone: out of memory or crashed
            s, result["page_gone"] = None, str(e).splitlines()[0]
        result.update({"opened": bool(done and s and not s["open_error"] and s["sessions"]), "page_s": seconds,
                       "open_error": s and s["open_error"], "console_errors": console_errors(driver)})
        if s and s["sessions"]:
            result.update({"page_ranks": s["sessions"][0]["ranks"], "page_events": events_of(s),
                           "page_steps": s["sessions"][0]["steps"]})
    finally:
        driver.quit()
    result["desktop"] = desktop_view(shardscope, job, workdir, repeats)
    if result["opened"]:
        print(f"job           {len(files)} files, {size / 1e6:.1f} MB: read in the page in {result['page_s']:.2f} s"
              f" ({result['page_ranks']} ranks, {result['page_events']} events)")
    else:
        print(f"job           {len(files)} files, {size / 1e6:.1f} MB: NOT read in the page after"
              f" {result['page_s']:.1f} s ({result.get('open_error')}; {result.get('page_gone')};"
              f" {result['console_errors'][:3]})")
    d = result["desktop"]
    print(f"desktop view  {d['wall_s']:.3f} s median of {repeats}, peak RSS {d['peak_rss_bytes'] / 1e6:.0f} MB")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", default="build-web/site")
    parser.add_argument("--shardscope", default="build/app/shardscope")
    parser.add_argument("--frame-bench", default="build/bench/timeline_frame_bench")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/webbench"))
    parser.add_argument("--job", type=Path, action="append",
                        help="a PyTorch job's folder of rank-R.pt.trace.json (bench/profiler_read.py's"
                             " WORKDIR/job); repeat for several")
    parser.add_argument("--loads", type=int, default=5, help="fresh page loads for the first frame")
    parser.add_argument("--steps", type=int, default=197,
                        help="the big run's steps (197: about 1M events as the page's status counts them)")
    parser.add_argument("--samples", type=int, default=60, help="frames sampled in the big run")
    parser.add_argument("--repeats", type=int, default=3, help="desktop view --summary runs per job")
    parser.add_argument("--limit", type=float, default=300, help="seconds the page may take to read a job")
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: site,first,big,job")
    parser.add_argument("--out", type=Path, help="rows as JSON")
    args = parser.parse_args()
    if not (Path(args.site) / "index.html").exists():
        sys.exit(f"no site in {args.site} (scripts/web.sh builds it)")
    args.workdir.mkdir(parents=True, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))
    print("chromium:", subprocess.run(["chromium", "--version"], capture_output=True, text=True).stdout.strip())
    rows = [] if "site" in skip else site_size(args.site)
    server = serve(args.site)
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        if "first" not in skip:
            rows.append(first_frames(base, args.loads))
            rows[-1]["loadavg_1min_after"] = os.getloadavg()[0]
        if "big" not in skip:
            trace = record_big(args.shardscope, args.workdir, args.steps)
            rows.append(big_frame(base, args.site, trace, args.samples, args.frame_bench))
            rows[-1]["loadavg_1min_after"] = os.getloadavg()[0]
        for job in ([] if "job" in skip else args.job or []):
            rows.append(job_read(base, job, args.shardscope, args.workdir, args.repeats, args.limit))
            rows[-1]["loadavg_1min_after"] = os.getloadavg()[0]  # other work on the machine meanwhile
    finally:
        server.shutdown()
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
