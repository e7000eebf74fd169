"""The page in headless Chromium, as tests/web_page_test.py and bench/web_page_bench.py drive it:
the site served on loopback, a fresh browser (Selenium and chromium-driver from Debian; run with
/usr/bin/python3), and what the page says it shows (shardscope.status(), null until it is up)."""
import http.server
import shutil
import threading

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

# Software GL (SwiftShader): the same pictures on any machine, GPU or not.
FLAGS = ("--headless=new", "--no-sandbox", "--use-gl=swiftshader", "--enable-unsafe-swiftshader",
         "--disable-dev-shm-usage")


def serve(directory):
    """The site on a free loopback port, as `python3 -m http.server --bind 127.0.0.1` serves it."""
    handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=directory)  # noqa: E731
    http.server.SimpleHTTPRequestHandler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def browser(width=1600, height=1000):
    """A fresh headless Chromium (a new, empty profile: nothing cached), its viewport exactly
    width x height CSS pixels (--window-size leaves a smaller one under --headless=new)."""
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
    driver.set_script_timeout(300)
    return driver


def status(driver):
    """What the page shows now (app/web_main.cpp's shardscope_status), or None before it is up."""
    return driver.execute_script("return window.shardscope ? shardscope.status() : null")
