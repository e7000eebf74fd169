"""The command prefix that runs a program on a virtual display, for the tests that take screenshots.

xvfb-run is handed an X authority file in the test's own folder: left to make one, it makes a
temporary folder, removes it after the program and, when that removal fails (about once in a full
ctest), exits 5 in place of the program's status, which fails a test the program passed.
"""

import os


def xvfb_run(folder, size="1600x1000"):
    """The argv prefix for a `size` (WIDTHxHEIGHT) screen; the authority file is made in `folder`."""
    os.makedirs(folder, exist_ok=True)
    authority = os.path.join(folder, f"Xauthority-{os.getpid()}-{size}")
    open(authority, "a").close()
    return ["xvfb-run", "-a", "-f", authority, "-s", f"-screen 0 {size}x24"]
