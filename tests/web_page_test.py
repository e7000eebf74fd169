#!/usr/bin/env python3
"""shardscope's page in a real browser (headless Chromium through Selenium and chromium-driver):
the site scripts/web.sh builds, served on 127.0.0.1 as a user serves it.

It loads the page and waits for the app to say it is ready (shardscope.status(), which the page
exposes to users too); opens a trace through the page's file input, as a user picks one, and
checks what the page shows of it against `shardscope view --summary` of the same file; drops it
on the page, as a file dragged from the desktop; follows a
link to a moment (#open=FILE&tab=NAME&scale=S&contrast=high), and a pipeline's trace at its
Schedule tab; opens the accordion lesson by its
link (#lesson=accordion&caption=3), played from the recordings the site ships, and moves it on
with N; and takes a screenshot of each.

Usage: web_page_test.py SITE_DIR SHARDSCOPE OUT_DIR
Exit 0 when every check holds, 1 when one does not, 77 (skipped) when the site or the browser is
not there (scripts/test.sh builds the site and installs the browser; a bare ctest may not have).
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import time

site, shardscope, out = sys.argv[1], sys.argv[2], sys.argv[3]
if not os.path.exists(os.path.join(site, "index.html")):
    print(f"skipped: no site in {site} (scripts/web.sh builds it)")
    sys.exit(77)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "web"))
try:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    from page_driver import browser, serve, status
except ImportError:
    print("skipped: no Selenium (apt-get install python3-selenium)")
    sys.exit(77)
if not (shutil.which("chromium") and shutil.which("chromedriver")):
    print("skipped: no chromium and chromium-driver (apt-get install chromium chromium-driver)")
    sys.exit(77)

failures = []


def check(ok, what):
    print(("ok    " if ok else "FAIL  ") + what)
    if not ok:
        failures.append(what)


def wait_for(driver, what, predicate, seconds=60):
    try:
        WebDriverWait(driver, seconds, poll_frequency=0.1).until(lambda d: predicate(status(d)))
        return True
    except Exception:
        check(False, f"{what} within {seconds} s (status: {status(driver)})")
        return False


def press(driver, key, code, key_code):
    """A key pressed and released, as the keyboard sends it to the page (Chrome's DevTools protocol)."""
    for kind in ("keyDown", "keyUp"):
        driver.execute_cdp_cmd("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": code, "text": key if kind == "keyDown" else "",
                                                          "windowsVirtualKeyCode": key_code, "nativeVirtualKeyCode": key_code})
        time.sleep(0.1)  # a frame in between, as a key is held for one


def errors_of(driver):
    logged = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    return logged + driver.execute_script("return window.shardscope.errors")


os.makedirs(out, exist_ok=True)
# A run's trace, recorded here, and what `view --summary` reads of it.
trace = os.path.join(out, "run.pftrace")
summary = os.path.join(out, "summary.json")
made = subprocess.run([shardscope, "run", "--strategy", "full_shard", "--world", "2", "--steps", "3",
                       "--trace", trace], capture_output=True, text=True)
check(made.returncode == 0, f"a run records a trace to open ({made.stderr[-300:]})")
viewed = subprocess.run([shardscope, "view", trace, "--summary", summary], capture_output=True, text=True)
check(viewed.returncode == 0, f"view --summary reads it ({viewed.stderr[-300:]})")
expected = json.load(open(summary)) if viewed.returncode == 0 else {"ranks": []}
shutil.copy(trace, os.path.join(site, "test-run.pftrace"))  # served beside the page, for #open=
# A pipeline's trace, for the Schedule tab in the page.
pipeline = os.path.join(out, "pipeline.pftrace")
made = subprocess.run([shardscope, "run", "--world", "2", "--pp", "2", "--schedule", "1f1b", "--model", "gpt",
                       "--layers", "2", "--steps", "3", "--trace", pipeline], capture_output=True, text=True)
check(made.returncode == 0, f"a pipeline run records a trace to open ({made.stderr[-300:]})")
shutil.copy(pipeline, os.path.join(site, "test-pipeline.pftrace"))
# A torch.profiler trace (a hand-written layout of a GPU job), read by the page's own streaming
# reader (the browser's build has no SSE2: its scan takes eight bytes as one word).
profiler_trace = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "profiler_layouts",
                              "launches_before_window.json")
profiler_summary = os.path.join(out, "profiler_summary.json")
viewed = subprocess.run([shardscope, "view", profiler_trace, "--summary", profiler_summary], capture_output=True,
                        text=True)
check(viewed.returncode == 0, f"view --summary reads a torch.profiler trace ({viewed.stderr[-300:]})")
profiler_expected = json.load(open(profiler_summary)) if viewed.returncode == 0 else {"ranks": []}
shutil.copy(profiler_trace, os.path.join(site, "test-profiler.json"))

server = serve(site)
base = f"http://127.0.0.1:{server.server_address[1]}/"
driver = browser()
try:
    start = time.time()
    driver.get(base)
    if wait_for(driver, "the page draws and says it is ready", lambda s: s and s["ready"]):
        print(f"first frames after {time.time() - start:.2f} s")
        check(status(driver)["sessions"] == [], "the start page shows no session")
        driver.save_screenshot(os.path.join(out, "web_start.png"))

    driver.find_element(By.ID, "files").send_keys(trace)
    if wait_for(driver, "the picked trace opens", lambda s: s and s["opens"] >= 1 and s["sessions"]):
        s = status(driver)
        check(s["open_error"] == "", f"it opens without an error ({s['open_error']})")
        session = s["sessions"][0]
        check(session["ranks"] == len(expected["ranks"]), f"its ranks: {session['ranks']} as view's summary")
        for r, rank in enumerate(expected["ranks"]):
            page = session["peak_bytes"][r] if r < len(session["peak_bytes"]) else None
            check(page == rank["peak_bytes"]["total"], f"rank {r}'s peak: {page} bytes as view's summary")
            page_steps = session["steps"][r] if r < len(session["steps"]) else None
            check(page_steps == rank["recorded_steps"], f"rank {r}'s steps: {page_steps} as view's summary")
        check(session["events"] > 0, f"its events in detail: {session['events']}")
        driver.save_screenshot(os.path.join(out, "web_user_trace.png"))

    # The same trace dropped on the page, as a file dragged from the desktop: emscripten's GLFW hands
    # it to the window's drop callback, which opens it as the desktop app does.
    opened = status(driver)["opens"]
    driver.execute_script("""
        const bytes = Uint8Array.from(atob(arguments[0]), c => c.charCodeAt(0));
        const dropped = new DataTransfer();
        dropped.items.add(new File([bytes], 'dropped.pftrace'));
        Module.canvas.dispatchEvent(new DragEvent('drop', {dataTransfer: dropped, bubbles: true, cancelable: true}));
    """, base64.b64encode(open(trace, "rb").read()).decode())
    if wait_for(driver, "a trace dropped on the page opens", lambda s: s and s["opens"] > opened):
        s = status(driver)
        check(s["open_error"] == "" and len(s["sessions"]) == 1 and s["sessions"][0]["ranks"] == 2,
              f"the dropped trace is shown ({s['open_error']}, {len(s['sessions'])} sessions)")

    # A lesson by its link, played from the recordings the site ships, at its third caption; N moves on.
    driver.get(base + "#lesson=accordion&caption=3")
    driver.refresh()  # a new hash alone does not reload the page
    if wait_for(driver, "a link opens the accordion lesson, its claims checked on its recordings",
                lambda s: s and s["lesson"] == "accordion" and s["claims_checked"]):
        s = status(driver)
        check(s["caption"] == 3, f"at the link's caption ({s['caption']})")
        check(len(s["sessions"]) == 1 and s["sessions"][0]["events"] > 0,
              f"its one run replayed ({[x['title'] for x in s['sessions']]})")
        check(s["claims_hold"] >= 1, f"its claims hold on the recording ({s['claims_hold']})")
        driver.save_screenshot(os.path.join(out, "web_lesson.png"))
        press(driver, "n", "KeyN", 78)
        moved = wait_for(driver, "N moves to the next caption", lambda s: s and s["caption"] == 4, seconds=10)
        check(moved, "N moves the lesson to caption 4")

    # The pipeline lesson, its five runs replayed, at its caption on GPipe's schedule.
    driver.get(base + "#lesson=pipeline&caption=2")
    driver.refresh()
    if wait_for(driver, "a link opens the pipeline lesson, its claims checked on its recordings",
                lambda s: s and s["lesson"] == "pipeline" and s["claims_checked"]):
        s = status(driver)
        check(len(s["sessions"]) == 5, f"its five runs replayed ({[x['title'] for x in s['sessions']]})")
        check(s["claims_hold"] == 7, f"its seven claims hold on the recordings ({s['claims_hold']})")
        check(s["tab"] == "schedule", f"the caption's Schedule tab is shown ({s['tab']})")
        driver.save_screenshot(os.path.join(out, "web_pipeline_lesson.png"))

    driver.get(base + "#open=test-run.pftrace&tab=holdings&scale=1.5&contrast=high")
    driver.refresh()  # a new hash alone does not reload the page
    if wait_for(driver, "a link opens a served trace at a tab",
                lambda s: s and s["opens"] >= 1 and s["sessions"] and s["frames"] > 5):
        s = status(driver)
        check(s["tab"] == "holdings", f"the link's tab is shown ({s['tab']})")
        check(s["scale"] == 1.5 and s["high_contrast"], f"the link's projector look ({s['scale']}, {s['high_contrast']})")
        check(s["link_error"] == "", f"the link is followed whole ({s['link_error']})")
        driver.save_screenshot(os.path.join(out, "web_link.png"))
    driver.get(base + "#open=test-pipeline.pftrace&tab=schedule")
    driver.refresh()
    if wait_for(driver, "a link opens a pipeline's trace at its Schedule tab",
                lambda s: s and s["opens"] >= 1 and s["sessions"] and s["frames"] > 5):
        s = status(driver)
        check(s["tab"] == "schedule", f"the Schedule tab is shown ({s['tab']})")
        check(s["open_error"] == "" and s["sessions"][0]["ranks"] == 2, f"the pipeline's 2 ranks ({s['open_error']})")
        driver.save_screenshot(os.path.join(out, "web_schedule.png"))
    driver.get(base + "#open=test-profiler.json")
    driver.refresh()
    if wait_for(driver, "a link opens a torch.profiler trace",
                lambda s: s and s["opens"] >= 1 and s["sessions"] and s["frames"] > 5):
        s = status(driver)
        session = s["sessions"][0]
        check(s["open_error"] == "" and session["ranks"] == len(profiler_expected["ranks"]),
              f"the profiler trace's ranks as view's summary ({s['open_error']}, {session['ranks']})")
        steps = [r["recorded_steps"] for r in profiler_expected["ranks"]]
        check(session["steps"] == steps, f"its steps per rank as view's summary ({session['steps']}, {steps})")
        check(session["events"] > 0, f"its events in detail: {session['events']}")
    problems = errors_of(driver)
    check(not problems, f"no error in the page's console ({problems[:3]})")
finally:
    driver.quit()
    server.shutdown()
    os.remove(os.path.join(site, "test-run.pftrace"))
    os.remove(os.path.join(site, "test-pipeline.pftrace"))
    os.remove(os.path.join(site, "test-profiler.json"))
print("FAIL:" if failures else "every check holds", *failures, sep="\n  ")
sys.exit(1 if failures else 0)
