#!/usr/bin/env python3
"""Keeps one GPU architecture's device code in a shared library's CUDA fat binaries.

Why: the device tool carries at most 64 MiB a call, and NCCL 2.30's libnccl.so.2 is 240 MiB,
most of it device code for six architectures. The H100 and H200 run sm_90 code only. Keeping
sm_90 brings the library to 36 MiB compressed: one carry instead of four.

How, without moving anything the loader relies on: each fat binary in `.nv_fatbin` and
`__nv_relfatbin` keeps its place and its reserved size. The entries for the kept architecture are
moved to its front, its header's size is cut to theirs, and the rest of its space is zeroed (xz
then makes next to nothing of it). Every section, symbol and relocation stays where it was. A fat
binary with no entry for the kept architecture is left whole: no device could use it either way.

The fat binary layout read here: a 16-byte header (magic 0xBA55ED50, version, header size, size
of the entries that follow), then entries of (kind, ..., header size, payload size, ..., arch at
byte 28), each followed by its payload. `scripts/device_nccl.sh pack` checks the result with
NVIDIA's cuobjdump: the kept architecture's cubins must be byte-identical to the original's.
"""
import argparse
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")


def elf_sections(data):
    """Maps an ELF64 little-endian file's section names to (file offset, size)."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)

    names_offset = header(shstrndx)[4]
    sections = {}
    for i in range(shnum):
        name_index, _, _, _, offset, size = header(i)[:6]
        start = names_offset + name_index
        sections[data[start:data.index(b"\0", start)].decode()] = (offset, size)
    return sections


def fatbins(data, offset, size):
    """Yields (start, header size, entries size) of each fat binary in a section.

    Fat binaries start 8-byte aligned (from the section's start), with padding between them."""
    pos = offset
    while pos + 16 <= offset + size:
        magic, _, header_size, entries_size = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:
            pos += 8
            continue
        if header_size < 16 or pos + header_size + entries_size > offset + size:
            raise ValueError(f"malformed fat binary header at byte {pos}")
        yield pos, header_size, entries_size
        end = pos + header_size + entries_size
        pos = end + (-(end - offset) % 8)


def entries(data, start, end):
    """Yields (arch, entry bytes including its header) of each entry between start and end."""
    pos = start
    while pos < end:
        _, _, header_size, payload_size = struct.unpack_from("<HHIQ", data, pos)
        (arch,) = struct.unpack_from("<I", data, pos + 28)
        if header_size == 0 or pos + header_size + payload_size > end:
            raise ValueError(f"malformed fat binary entry at byte {pos}")
        yield arch, bytes(data[pos:pos + header_size + payload_size])
        pos += header_size + payload_size


def keep_arch(data, arch):
    """Prunes data (a bytearray) in place; returns (bytes dropped, fat binaries without arch,
    entries kept)."""
    sections = elf_sections(data)
    missing = [name for name in FATBIN_SECTIONS if name not in sections]
    if len(missing) == len(FATBIN_SECTIONS):
        raise ValueError("no CUDA fat binary sections (.nv_fatbin, __nv_relfatbin)")
    dropped = left_whole = kept_entries = 0
    for name in FATBIN_SECTIONS:
        if name not in sections:
            continue
        for start, header_size, size in list(fatbins(data, *sections[name])):
            body_start, body_end = start + header_size, start + header_size + size
            ours = [e for a, e in entries(data, body_start, body_end) if a == arch]
            kept_entries += len(ours)
            kept = b"".join(ours)
            if not kept:
                left_whole += 1
                continue
            data[body_start:body_end] = kept + bytes(size - len(kept))
            struct.pack_into("<Q", data, start + 8, len(kept))
            dropped += size - len(kept)
    return dropped, left_whole, kept_entries


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", help="the shared library, e.g. libnccl.so.2")
    parser.add_argument("destination", help="where the pruned copy goes")
    parser.add_argument("--arch", type=int, default=90,
                        help="the SM architecture to keep, as a number: 90 for sm_90 (H100, H200)")
    args = parser.parse_args()
    try:
        data = bytearray(open(args.source, "rb").read())
    except OSError as error:
        sys.exit(f"error: cannot read '{args.source}': {error.strerror}")
    try:
        dropped, left_whole, kept_entries = keep_arch(data, args.arch)
    except ValueError as error:
        sys.exit(f"error: '{args.source}': {error}")
    except (struct.error, IndexError):
        sys.exit(f"error: '{args.source}' is cut short: its headers point past its end")
    if kept_entries == 0:
        sys.exit(f"error: '{args.source}' has no sm_{args.arch} device code to keep "
                 "(pick --arch from what `cuobjdump --list-elf` shows)")
    open(args.destination, "wb").write(data)
    print(f"kept sm_{args.arch} ({kept_entries} entries): dropped {dropped / 2**20:.1f} MiB of other "
          f"architectures' code; {left_whole} fat binaries had no sm_{args.arch} entry and stay whole")


if __name__ == "__main__":
    main()
