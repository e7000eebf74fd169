#!/usr/bin/env bash
# A newer NCCL for the GPU device machine, to run the NCCL_MULTI_RANK_GPU_ENABLE path (NCCL 2.30+:
# several ranks of one communicator on one GPU, without a host identity per rank). torch 2.11
# ships NCCL 2.28.9, and the device machine fetches nothing, so the library is carried.
# Its libnccl.so.2 is 240 MiB, with device code for six GPU architectures, and one call carries at
# most 64 MiB. The H100 and H200 run sm_90 code only: pack keeps that (scripts/fatbin_keep_arch.py),
# checks with NVIDIA's cuobjdump that the sm_90 code is byte-identical to the wheel's, and
# compresses the result to 36 MiB, one part. So a single call carries it with .deps:
#   here:   bash scripts/device_deps.sh              # .deps, for the GPU build (once)
#           bash scripts/device_nccl.sh pack        # .nccl/part-0 and .nccl/manifest (git-ignored)
#   there:  run(command="bash scripts/device_nccl.sh assemble && export LD_PRELOAD=$PWD/.nccl/libnccl.so.2 && ...",
#               carry=[".deps", ".nccl/part-0", ".nccl/manifest"])
# (name the two files, not .nccl: an assembled libnccl.so.2 left there would not fit the carry)
# NCCL_KEEP_ARCH=all packs the whole library instead: parts of at most 56 MiB (about four), one carry
# each, every call within the machine's 30 s idle release of the one before (or the parts already
# sent are lost with the machine), assemble with the last.
# With LD_PRELOAD every process of the call (shardscope's ranks and PyTorch's) loads this NCCL, and
# shardscope, reading its version, shares the GPU through NCCL_MULTI_RANK_GPU_ENABLE by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${NCCL_WHEEL_VERSION:-2.30.7}  # the first nvidia-nccl-cu13 wheel with multi-rank GPUs; the smallest
KEEP_ARCH=${NCCL_KEEP_ARCH:-90}        # sm_90: the H100 and H200; "all" keeps every architecture
PART_MIB=${NCCL_PART_MIB:-56}          # leaves room for the working tree in a 64 MiB carry
DIR=.nccl
PY=${SHARDSCOPE_PYTHON:-python3}

# The cubins of one architecture in a library, as sorted checksums in `out`: to compare the pruned
# library with the wheel's. Fails (in this shell, not a subshell) when there are none to compare.
cubin_checksums() { # cuobjdump library arch out
  local dir cubins
  dir=$(mktemp -d)
  if ! (cd "$dir" && "$1" -xelf all "$2" > /dev/null); then
    rm -rf "$dir"
    echo "error: cuobjdump could not read $2" >&2
    exit 1
  fi
  cubins=("$dir"/*".sm_$3.cubin")
  if [ ! -e "${cubins[0]}" ]; then
    rm -rf "$dir"
    echo "error: cuobjdump found no sm_$3 cubin in $2" >&2
    exit 1
  fi
  sha256sum "${cubins[@]}" | cut -d' ' -f1 | sort > "$4"
  rm -rf "$dir"
}

prune_and_check() { # scratch: has libnccl.so.2; leaves the pruned one in its place
  local scratch=$1 cuobjdump
  "$PY" scripts/fatbin_keep_arch.py "$scratch/libnccl.so.2" "$scratch/pruned.so" --arch "$KEEP_ARCH"
  echo "checking the kept sm_$KEEP_ARCH code against the wheel's with NVIDIA's cuobjdump"
  "$PY" -m pip download --quiet --no-deps nvidia-cuda-cuobjdump -d "$scratch"
  (cd "$scratch" && unzip -q -o nvidia_cuda_cuobjdump-*.whl 'nvidia/*/bin/cuobjdump' -d cuobjdump)
  cuobjdump=$(ls "$scratch"/cuobjdump/nvidia/*/bin/cuobjdump)
  chmod +x "$cuobjdump"
  cubin_checksums "$cuobjdump" "$scratch/libnccl.so.2" "$KEEP_ARCH" "$scratch/wheel.sums"
  cubin_checksums "$cuobjdump" "$scratch/pruned.so" "$KEEP_ARCH" "$scratch/pruned.sums"
  if ! cmp -s "$scratch/wheel.sums" "$scratch/pruned.sums"; then
    echo "error: the pruned library's sm_$KEEP_ARCH cubins differ from the wheel's: pack with NCCL_KEEP_ARCH=all" >&2
    exit 1
  fi
  echo "the $(wc -l < "$scratch/wheel.sums") sm_$KEEP_ARCH cubins are byte-identical to the wheel's"
  echo "the pruned library lists: $("$cuobjdump" --list-elf "$scratch/pruned.so" | grep -o 'sm_[0-9a-z]*' | sort | uniq -c | xargs)"
  mv "$scratch/pruned.so" "$scratch/libnccl.so.2"
}

pack() {
  mkdir -p "$DIR"
  scratch=$(mktemp -d)  # global: the trap removes it on any exit
  trap 'rm -rf "${scratch:-}"' EXIT
  echo "downloading nvidia-nccl-cu13==$VERSION from PyPI (about 200 MB)"
  "$PY" -m pip download --quiet --no-deps "nvidia-nccl-cu13==$VERSION" -d "$scratch"
  (cd "$scratch" && unzip -q -j -o nvidia_nccl_cu13-*.whl nvidia/nccl/lib/libnccl.so.2)
  [ "$KEEP_ARCH" = all ] || prune_and_check "$scratch"
  printf 'version=%s\narch=%s\nsha256=%s\n' "$VERSION" "$KEEP_ARCH" \
    "$(sha256sum "$scratch/libnccl.so.2" | cut -d' ' -f1)" > "$DIR/manifest"
  echo "compressing (xz -9, a minute or more on two cores)"
  rm -f "$DIR"/part-* "$DIR"/libnccl.so.2*
  xz -T0 -9 -c "$scratch/libnccl.so.2" | split -b "${PART_MIB}M" -d -a 1 - "$DIR/part-"
  rm -rf "$scratch"
  ls -l "$DIR"
  local parts=("$DIR"/part-*)
  if [ "${#parts[@]}" -eq 1 ]; then
    echo "one part: carry .deps, .nccl/part-0 and .nccl/manifest in one call (header of this script)"
  else
    echo "${#parts[@]} parts: carry .nccl/manifest with the first, then one part per call (header of this script)"
  fi
}

manifest_value() { sed -n "s/^$1=//p" "$DIR/manifest"; }

# The pruned library has sm_90 code only: on another GPU, NCCL would fail to launch its kernels.
check_gpu_arch() {
  local arch gpu
  arch=$(manifest_value arch)
  [ "$arch" = all ] && return
  command -v nvidia-smi > /dev/null || { echo "error: no nvidia-smi here: assemble runs on the GPU machine" >&2; exit 1; }
  gpu=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
  if [ "$gpu" != "$arch" ]; then
    echo "error: this GPU is sm_$gpu but .nccl was packed with sm_$arch code only: pack again here with NCCL_KEEP_ARCH=$gpu (or all)" >&2
    exit 1
  fi
}

assemble() {
  local parts=("$DIR"/part-*)
  [ -e "${parts[0]}" ] || { echo "error: no $DIR/part-* here: carry .nccl (bash scripts/device_nccl.sh pack first)" >&2; exit 1; }
  [ -f "$DIR/manifest" ] || { echo "error: $DIR/manifest is missing: carry it with a part" >&2; exit 1; }
  check_gpu_arch
  # python's lzma: the device image may have no xz.
  cat "${parts[@]}" | "$PY" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer)' \
    > "$DIR/libnccl.so.2" || { echo "error: the parts do not decompress: is one missing? have ${parts[*]}" >&2; exit 1; }
  if [ "$(sha256sum "$DIR/libnccl.so.2" | cut -d' ' -f1)" != "$(manifest_value sha256)" ]; then
    echo "error: $DIR/libnccl.so.2 does not match its manifest: a part is missing or stale (have ${parts[*]})" >&2
    exit 1
  fi
  echo "ready: LD_PRELOAD=$(pwd)/$DIR/libnccl.so.2 (NCCL $(manifest_value version), sm_$(manifest_value arch))"
}

case "${1:-}" in
  pack) pack ;;
  assemble) assemble ;;
  *) echo "usage: $0 pack | assemble (see the header of this script)" >&2; exit 2 ;;
esac
