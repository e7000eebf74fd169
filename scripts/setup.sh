#!/usr/bin/env bash
# Installs what shardscope needs to build and test, and is quick to re-run (everything present: seconds).
#   - Debian packages: compilers, CMake, Ninja, GoogleTest, JSON, simdjson, CLI11, Gloo headers, ImGui/GLFW, Xvfb, the
#     DejaVu font (the window rasterises it at the UI scale)
#   - LibTorch: the PyPI torch wheel pinned to 2.11.0, in a virtualenv in a cache outside the tree, with
#     the perfetto package (Perfetto's trace schema, for the tests)
# Use an existing LibTorch instead by setting one of:
#   Torch_DIR=/path/to/share/cmake/Torch      (a LibTorch or torch install's CMake config)
#   SHARDSCOPE_PYTHON=/path/to/python          (a Python whose torch should be used)
# Writes $SHARDSCOPE_CACHE/env.sh (sourced by build.sh/test.sh/run.sh) with the choice made.
set -euo pipefail

TORCH_VERSION=2.11.0
PERFETTO_VERSION=0.59.1  # its perfetto_trace_pb2 decodes --trace FILE.pftrace in the tests
CACHE=${SHARDSCOPE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/shardscope}
mkdir -p "$CACHE"
say() { printf 'setup: %s\n' "$*" >&2; }

# --- Debian packages ----------------------------------------------------------------------------
PACKAGES=(build-essential cmake ninja-build python3 python3-venv libgtest-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
          libsimdjson-dev
          libgloo-dev libimgui-dev libglfw3-dev libgl-dev libstb-dev libgl1-mesa-dri xvfb xauth
          fonts-dejavu-core)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    say "missing Debian packages: ${missing[*]}"
    say "install them as root:  apt-get update && apt-get install -y ${missing[*]}"
    exit 1
  fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  if ! $SUDO apt-get install -y -qq "${missing[@]}" >"$CACHE/apt.log" 2>&1; then
    say "apt-get install failed (log: $CACHE/apt.log); last lines:"; tail -n 5 "$CACHE/apt.log" >&2
    exit 1
  fi
fi

# --- LibTorch -------------------------------------------------------------------------------------
torch_prefix=""
python_bin=""
if [ -n "${Torch_DIR:-}" ]; then
  [ -f "$Torch_DIR/TorchConfig.cmake" ] || { say "Torch_DIR=$Torch_DIR has no TorchConfig.cmake"; exit 1; }
  torch_prefix=$(cd "$Torch_DIR/../.." && pwd)
  say "using LibTorch from Torch_DIR=$Torch_DIR"
elif [ -n "${SHARDSCOPE_PYTHON:-}" ]; then
  python_bin=$SHARDSCOPE_PYTHON
  torch_prefix=$("$python_bin" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)') ||
    { say "SHARDSCOPE_PYTHON=$python_bin cannot import torch"; exit 1; }
  say "using torch of $python_bin"
else
  venv="$CACHE/venv"
  python_bin="$venv/bin/python"
  have=$("$python_bin" -c 'import torch, perfetto; print(torch.__version__.split("+")[0])' 2>/dev/null || true)
  if [ "$have" != "$TORCH_VERSION" ]; then
    say "installing torch==$TORCH_VERSION and perfetto from PyPI into $venv (several GB, a few minutes the first time)"
    [ -x "$python_bin" ] || python3 -m venv "$venv" ||
      { say "cannot create a virtualenv: install python3-venv"; exit 1; }
    if ! "$venv/bin/pip" install --disable-pip-version-check --progress-bar off -q \
         "torch==$TORCH_VERSION" numpy "perfetto==$PERFETTO_VERSION" >"$CACHE/pip.log" 2>&1; then
      say "pip could not install torch==$TORCH_VERSION (log: $CACHE/pip.log); last lines:"
      tail -n 5 "$CACHE/pip.log" >&2
      exit 1
    fi
  fi
  torch_prefix=$("$python_bin" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
fi

cat >"$CACHE/env.sh" <<ENV
# Written by scripts/setup.sh
export SHARDSCOPE_TORCH_PREFIX="$torch_prefix"
export SHARDSCOPE_PYTHON="$python_bin"
ENV
say "ready: LibTorch at $torch_prefix${python_bin:+, python $python_bin}"
echo "$CACHE/env.sh"
