#!/usr/bin/env bash
# The test command: set up, build, and run every test (GoogleTest suites and the PyTorch parity
# check) with ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
build=${SHARDSCOPE_BUILD_DIR:-$root/build}
cd "$build"
# As many tests at once as there are cores (the suites are written to share a machine: each run
# picks its own ports and directories); SHARDSCOPE_TEST_JOBS=1 runs them one by one.
ctest --output-on-failure --timeout 900 -j "${SHARDSCOPE_TEST_JOBS:-$(nproc)}" "$@"
