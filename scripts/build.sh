#!/usr/bin/env bash
# Set up (if needed) and build shardscope into ${SHARDSCOPE_BUILD_DIR:-build}.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
env_file=$("$root/scripts/setup.sh")
# shellcheck disable=SC1090
source "$env_file"
build=${SHARDSCOPE_BUILD_DIR:-$root/build}
# Ninja where it is installed (setup.sh installs it): it starts a target's files while the targets it
# links are still linking, which keeps both cores busy. A build directory made with Make stays Make.
generator=()
if command -v ninja >/dev/null && ! grep -qs '^CMAKE_GENERATOR:INTERNAL=Unix Makefiles' "$build/CMakeCache.txt"; then
  generator=(-G Ninja)
fi
# Release by default: LibTorch-heavy files compile noticeably faster without debug info on 2 cores.
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$SHARDSCOPE_TORCH_PREFIX" \
  -DCMAKE_BUILD_TYPE="${SHARDSCOPE_BUILD_TYPE:-Release}" \
  -DSHARDSCOPE_PYTHON="$SHARDSCOPE_PYTHON" >"$root/build.configure.log" 2>&1 ||
  { tail -n 30 "$root/build.configure.log" >&2; exit 1; }
cmake --build "$build" -j "$(nproc)"
