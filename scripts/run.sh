#!/usr/bin/env bash
# The run command: set up, build, and start shardscope with the given arguments
# (none: the default demo run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/build.sh" >&2
exec "${SHARDSCOPE_BUILD_DIR:-$root/build}/app/shardscope" "$@"
