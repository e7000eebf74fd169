#!/usr/bin/env bash
# The test command: set up, build, and run every test (GoogleTest suites and the PyTorch parity
# check) with ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh"
build=${SHARDSCOPE_BUILD_DIR:-$root/build}
cd "$build"
ctest --output-on-failure --timeout 900 "$@"
