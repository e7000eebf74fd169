#!/usr/bin/env bash
# shardscope in the browser: installs what the build needs from Debian (emscripten, node-acorn;
# Dear ImGui, zlib and simdjson from their source packages), builds the viewer for WebAssembly
# into a static site, and with --serve serves it on 127.0.0.1.
#   scripts/web.sh                 build the site into build-web/site (SHARDSCOPE_WEB_BUILD_DIR)
#   scripts/web.sh --serve [PORT]  build it, then serve it (default port 8080) until Ctrl-C
#   scripts/web.sh --no-lessons    ship no lesson recordings (they are made with the desktop build,
#                                  which this builds first where there is none: scripts/build.sh)
#   scripts/web.sh --with-browser  also install the browser its test drives (chromium,
#                                  chromium-driver, python3-selenium; scripts/test.sh asks for it)
# The site needs no server of ours: any static file server (or a GitHub Pages folder) will do.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${SHARDSCOPE_CACHE:-$HOME/.cache/shardscope}/web
build=${SHARDSCOPE_WEB_BUILD_DIR:-$root/build-web}
serve=""
port=8080
lessons=1
browser=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --serve) serve=1; if [[ "${2:-}" =~ ^[0-9]+$ ]]; then port=$2; shift; fi ;;
    --no-lessons) lessons="" ;;
    --with-browser) browser=1 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "web.sh: unknown argument '$1'; see scripts/web.sh --help" >&2; exit 2 ;;
  esac
  shift
done
# emscripten's JS optimizer needs Debian's acorn; emcc runs Debian's Python, not another on PATH.
export NODE_PATH=/usr/share/nodejs EMSDK_PYTHON=/usr/bin/python3
as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

packages() {
  local missing=()
  command -v emcc >/dev/null || missing+=(emscripten)
  [[ -d /usr/share/nodejs/acorn ]] || missing+=(node-acorn)
  command -v dpkg-source >/dev/null || missing+=(dpkg-dev)  # apt-get source unpacks with it
  [[ -f /usr/include/nlohmann/json.hpp ]] || missing+=(nlohmann-json3-dev)
  [[ -f /usr/include/stb/stb_image_write.h ]] || missing+=(libstb-dev)
  [[ -f /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf ]] || missing+=(fonts-dejavu-core)
  if [[ -n "$browser" ]]; then  # tests/web_page_test.py runs with Debian's Python, which has Selenium
    command -v chromium >/dev/null || missing+=(chromium)
    command -v chromedriver >/dev/null || missing+=(chromium-driver)
    /usr/bin/python3 -c 'import selenium' 2>/dev/null || missing+=(python3-selenium)
  fi
  [[ ${#missing[@]} -eq 0 ]] && return
  echo "web.sh: installing ${missing[*]} from Debian"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Dear ImGui (the window's toolkit, the desktop's own version), zlib and simdjson from Debian's
# source packages: emscripten's ports would download them from outside.
sources() {
  mkdir -p "$cache/src"
  local need=()
  for package in imgui zlib simdjson; do
    compgen -G "$cache/src/$package-*/" >/dev/null || need+=("$package")
  done
  [[ ${#need[@]} -eq 0 ]] && return
  if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "web.sh: adding Debian's source packages to apt (/etc/apt/sources.list.d/shardscope-src.sources)"
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' |
      as_root tee /etc/apt/sources.list.d/shardscope-src.sources >/dev/null
    as_root apt-get update -qq
  fi
  (cd "$cache/src" && apt-get source -qq "${need[@]}" >/dev/null 2>&1)
}

# zlib and simdjson as WebAssembly libraries, with the headers the build may see (never the host's
# /usr/include whole: its headers are the host's C library's).
libraries() {
  local z simd
  z=$(ls -d "$cache"/src/zlib-*/ | head -1)
  simd=$(ls -d "$cache"/src/simdjson-*/ | head -1)
  mkdir -p "$cache/lib" "$cache/include" "$cache/obj"
  if [[ ! -f "$cache/lib/libz.a" ]]; then
    for f in adler32 compress crc32 deflate gzclose gzlib gzread gzwrite infback inffast inflate inftrees trees uncompr zutil; do
      emcc -O2 -DHAVE_UNISTD_H -I"$z" -c "$z/$f.c" -o "$cache/obj/z_$f.o"
    done
    emar rcs "$cache/lib/libz.a" "$cache"/obj/z_*.o
    cp "$z/zlib.h" "$z/zconf.h" "$cache/include/"
  fi
  if [[ ! -f "$cache/lib/libsimdjson.a" ]]; then
    em++ -std=c++17 -O2 -fexceptions -c "$simd/singleheader/simdjson.cpp" -o "$cache/obj/simdjson.o"
    emar rcs "$cache/lib/libsimdjson.a" "$cache/obj/simdjson.o"
    cp "$simd/singleheader/simdjson.h" "$cache/include/"
  fi
  ln -sfn /usr/include/nlohmann "$cache/include/nlohmann"
  ln -sfn /usr/include/stb/stb_image_write.h "$cache/include/stb_image_write.h"
}

# Every lesson's runs, recorded once by the desktop build (small models, on CPU) for the page to
# replay: a lesson is recorded again when its file is newer than its recordings.
record_lessons() {
  local app=${SHARDSCOPE_BUILD_DIR:-$root/build}/app/shardscope
  if [[ ! -x "$app" ]]; then
    echo "web.sh: the lessons are recorded with the desktop build, which is not there yet: building it (scripts/build.sh;"
    echo "web.sh: --no-lessons builds the site without them)"
    "$root/scripts/build.sh"
  fi
  local lesson name log
  mkdir -p "$build/lesson-logs"
  for lesson in "$root"/assets/lessons/*.json; do
    name=$(basename "$lesson" .json)
    [[ -d "$recordings/$name" && "$recordings/$name" -nt "$lesson" ]] && continue
    echo "web.sh: recording lesson $name"
    rm -rf "$recordings/$name"
    log=$build/lesson-logs/$name.log
    # A claim that does not hold on this machine's run is said, and the page shows it so; a run
    # that recorded nothing stops the build.
    if ! "$app" lesson "$name" --record "$recordings/$name" >"$log" 2>&1; then
      compgen -G "$recordings/$name/*.pftrace" >/dev/null ||
        { echo "web.sh: lesson $name recorded nothing (see $log)" >&2; rm -rf "$recordings/$name"; exit 1; }
      echo "web.sh: lesson $name: a claim did not hold on this run (see $log)" >&2
    fi
  done
}

packages
sources
libraries
recordings=$build/lesson-recordings
mkdir -p "$recordings"
if [[ -n "$lessons" ]]; then
  record_lessons
else
  rm -rf "$recordings"  # the site ships none, and says so when a lesson is opened
fi
imgui=$(ls -d "$cache"/src/imgui-*/ | head -1)
emcmake cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSHARDSCOPE_IMGUI_SOURCE_DIR="${imgui%/}" -DSHARDSCOPE_WEB_INCLUDE_DIR="$cache/include" \
  -Dnlohmann_json_HEADER_DIR="$cache/include" \
  -DZLIB_INCLUDE_DIR="$cache/include" -DZLIB_LIBRARY="$cache/lib/libz.a" \
  -DSIMDJSON_INCLUDE_DIR="$cache/include" -DSIMDJSON_LIBRARY="$cache/lib/libsimdjson.a" \
  -DSHARDSCOPE_LESSON_RECORDINGS="$recordings" >/dev/null
cmake --build "$build" -j "$(nproc)"
echo "web.sh: the site is $build/site ($(du -sh "$build/site" | cut -f1))"
if [[ -n "$serve" ]]; then
  echo "web.sh: open http://127.0.0.1:$port/ in a browser (Ctrl-C stops serving)"
  exec python3 -m http.server "$port" --bind 127.0.0.1 --directory "$build/site"
fi
