#!/usr/bin/env bash
# Set up (if needed) and build shardscope into ${SHARDSCOPE_BUILD_DIR:-build}.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
env_file=$("$root/scripts/setup.sh")
# shellcheck disable=SC1090
source "$env_file"
build=${SHARDSCOPE_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_PREFIX_PATH="$SHARDSCOPE_TORCH_PREFIX" \
  -DSHARDSCOPE_PYTHON="$SHARDSCOPE_PYTHON" >"$root/build.configure.log" 2>&1 ||
  { tail -n 30 "$root/build.configure.log" >&2; exit 1; }
cmake --build "$build" -j "$(nproc)"
