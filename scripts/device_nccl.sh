#!/usr/bin/env bash
# A newer NCCL for the GPU device machine, to run the NCCL_MULTI_RANK_GPU_ENABLE path (NCCL 2.30+:
# several ranks of one communicator on one GPU, without a host identity per rank). torch 2.11
# ships NCCL 2.28.9, and the device machine fetches nothing, so the library is carried. Its
# libnccl.so.2 is 240 MiB and one call carries at most 64 MiB, so it goes in compressed parts, one
# per call, on a machine kept warm between the calls (parts already there stay):
#   here:   bash scripts/device_nccl.sh pack     # .nccl/part-0 .. part-3 and the checksum (git-ignored)
#   there:  run(command="true", carry=[".nccl/part-0", ".nccl/libnccl.so.2.sha256"]), then
#           run(command="true", carry=[".nccl/part-1"]), the same for part-2, and with the last:
#           run(command="bash scripts/device_nccl.sh assemble && LD_PRELOAD=$PWD/.nccl/libnccl.so.2 ...",
#               carry=[".nccl/part-3"])
#   Each part call must come within the machine's 30 s idle release of the one before, or the
#   parts already sent are lost with the machine. The GPU build (device_gpu.sh build) can share
#   the first call: carry .deps there too only if the two fit in 64 MiB (they do: 56 + 5 MiB).
# With LD_PRELOAD every process of the call (shardscope's ranks and PyTorch's) loads this NCCL, and
# shardscope, reading its version, shares the GPU through NCCL_MULTI_RANK_GPU_ENABLE by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${NCCL_WHEEL_VERSION:-2.30.7}  # the first nvidia-nccl-cu13 wheel with multi-rank GPUs; the smallest
PART_MIB=${NCCL_PART_MIB:-56}          # leaves room for the working tree in a 64 MiB carry
DIR=.nccl
PY=${SHARDSCOPE_PYTHON:-python3}

pack() {
  mkdir -p "$DIR"
  local scratch
  scratch=$(mktemp -d)
  echo "downloading nvidia-nccl-cu13==$VERSION from PyPI (about 200 MB)"
  "$PY" -m pip download --quiet --no-deps "nvidia-nccl-cu13==$VERSION" -d "$scratch"
  "$PY" - "$scratch" <<'EOF'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/nvidia_nccl_cu13-*.whl")[0]
with zipfile.ZipFile(wheel) as z, open(sys.argv[1] + "/libnccl.so.2", "wb") as out:
    out.write(z.read("nvidia/nccl/lib/libnccl.so.2"))
EOF
  sha256sum "$scratch/libnccl.so.2" | cut -d' ' -f1 > "$DIR/libnccl.so.2.sha256"
  echo "compressing (xz -9e, some minutes on two cores)"
  rm -f "$DIR"/part-*
  xz -T0 -9e -c "$scratch/libnccl.so.2" | split -b "${PART_MIB}M" -d -a 1 - "$DIR/part-"
  rm -rf "$scratch"
  ls -l "$DIR"
  echo "carry .nccl/libnccl.so.2.sha256 with the first part, then one part per call (header of this script)"
}

assemble() {
  local parts=("$DIR"/part-*)
  [ -e "${parts[0]}" ] || { echo "error: no $DIR/part-* here: carry them (bash scripts/device_nccl.sh pack, then one per call)" >&2; exit 1; }
  [ -f "$DIR/libnccl.so.2.sha256" ] || { echo "error: $DIR/libnccl.so.2.sha256 is missing: carry it with a part" >&2; exit 1; }
  # python's lzma: the device image may have no xz.
  cat "${parts[@]}" | "$PY" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer)' \
    > "$DIR/libnccl.so.2" || { echo "error: the parts do not decompress: is one missing? have ${parts[*]}" >&2; exit 1; }
  if [ "$(sha256sum "$DIR/libnccl.so.2" | cut -d' ' -f1)" != "$(cat "$DIR/libnccl.so.2.sha256")" ]; then
    echo "error: $DIR/libnccl.so.2 does not match its checksum: a part is missing or stale (have ${parts[*]})" >&2
    exit 1
  fi
  echo "ready: LD_PRELOAD=$(pwd)/$DIR/libnccl.so.2 (NCCL $VERSION)"
}

case "${1:-}" in
  pack) pack ;;
  assemble) assemble ;;
  *) echo "usage: $0 pack | assemble (see the header of this script)" >&2; exit 2 ;;
esac
