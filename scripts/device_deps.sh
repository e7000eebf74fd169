#!/usr/bin/env bash
# Fills .deps/ (git-ignored) with what the GPU device machine lacks and cannot download: the
# header-only libraries (nlohmann/json, CLI11), simdjson (its header and Debian's shared library), the Gloo headers c10d's ProcessGroupGloo.hpp
# includes, and GoogleTest's sources (built there by CMake). Run here, after scripts/setup.sh;
# the device call then carries .deps (see scripts/device_gpu.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
need() { [ -e "$1" ] || { echo "error: $1 is missing; run scripts/setup.sh first (it installs $2)." >&2; exit 1; }; }
need /usr/include/nlohmann/json.hpp nlohmann-json3-dev
need /usr/include/CLI/CLI.hpp libcli11-dev
need /usr/include/simdjson.h libsimdjson-dev
need /usr/include/gloo/algorithm.h libgloo-dev
need /usr/src/googletest/CMakeLists.txt googletest
rm -rf .deps
# Gloo apart from the others: the engine puts the Gloo folder on its include path, and a second
# copy of nlohmann/json there could shadow the one the rest of the build uses (two ABIs).
mkdir -p .deps/include .deps/gloo .deps/lib
cp -r /usr/include/nlohmann /usr/include/CLI /usr/include/simdjson.h .deps/include/
cp -P /usr/lib/x86_64-linux-gnu/libsimdjson.so* .deps/lib/
cp -r /usr/include/gloo .deps/gloo/
cp -r /usr/src/googletest .deps/googletest
du -sh .deps
