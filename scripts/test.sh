#!/usr/bin/env bash
# The test command: set up, build, and run every test (GoogleTest suites and the PyTorch parity
# check) with ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
# The browser's build, and the browser its test drives (tests/web_page_test.py): from Debian, for
# the test only (the desktop app needs neither). SHARDSCOPE_SKIP_WEB=1 leaves them out (the test
# then says it is skipped).
if [[ "${SHARDSCOPE_SKIP_WEB:-0}" != 1 ]]; then
  "$root/scripts/web.sh" --with-browser
fi
build=${SHARDSCOPE_BUILD_DIR:-$root/build}
cd "$build"
# As many tests at once as there are cores (the suites are written to share a machine: each run
# picks its own ports and directories); SHARDSCOPE_TEST_JOBS=1 runs them one by one.
ctest --output-on-failure --timeout 900 -j "${SHARDSCOPE_TEST_JOBS:-$(nproc)}" "$@"
