#!/usr/bin/env python3
"""scripts/fatbin_keep_arch.py on a small ELF file built here with the fat binary layout NCCL's
library has: what it keeps, what it leaves whole, and that nothing moves. (The real library is
checked against NVIDIA's cuobjdump by scripts/device_nccl.sh pack; that needs a 200 MB download.)"""
import os
import struct
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "scripts", "fatbin_keep_arch.py")
MAGIC = 0xBA55ED50
ENTRY_HEADER = 64


def entry(kind, arch, payload):
    header = struct.pack("<HHIQII", kind, 0x101, ENTRY_HEADER, len(payload), 0, 0)
    header += struct.pack("<HHI", 0, 0, arch)  # arch at byte 28
    return header + bytes(ENTRY_HEADER - len(header)) + payload


def fatbin(*entries):
    body = b"".join(entries)
    return struct.pack("<IHHQ", MAGIC, 1, 16, len(body)) + body


def elf(sections):
    """A minimal ELF64 little-endian file: the named sections, then a name table and headers."""
    names = b"\0" + b"".join(name.encode() + b"\0" for name, _ in sections) + b".shstrtab\0"
    data = bytearray(64)
    placed = []
    for name, content in sections + [(".shstrtab", names)]:
        data += bytes(-len(data) % 8)
        placed.append((names.index(name.encode() + b"\0"), len(data), len(content)))
        data += content
    data += bytes(-len(data) % 8)
    shoff = len(data)
    data += bytes(64)  # the null section
    for name_index, offset, size in placed:
        data += struct.pack("<IIQQQQIIQQ", name_index, 1, 2, 0, offset, size, 0, 0, 8, 0)
    data[:16] = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    struct.pack_into("<Q", data, 0x28, shoff)
    struct.pack_into("<HHH", data, 0x3A, 64, len(placed) + 1, len(placed))
    return bytes(data)


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


class KeepArch(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.src = os.path.join(self.dir.name, "lib.so")
        self.dst = os.path.join(self.dir.name, "pruned.so")
        self.sm80 = entry(2, 80, b"eighty" * 40)
        self.sm90 = entry(2, 90, b"ninety" * 50)
        self.ptx120 = entry(1, 120, b"ptx" * 30)
        self.mixed = fatbin(self.sm80, self.sm90, self.ptx120)
        self.only100 = fatbin(entry(2, 100, b"hundred" * 20))
        self.padding = bytes(-len(self.mixed) % 8)  # the next fat binary starts 8-byte aligned
        assert self.padding, "the test wants a fat binary whose size is not a multiple of 8"
        text = b"host code " * 20
        self.original = elf([(".text", text), (".nv_fatbin", self.mixed + self.padding + self.only100)])
        with open(self.src, "wb") as f:
            f.write(self.original)
        self.fatbin_at = self.original.index(self.mixed)

    def tearDown(self):
        self.dir.cleanup()

    def pruned(self):
        result = run(self.src, self.dst, "--arch", "90")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(self.dst, "rb") as f:
            return f.read(), result.stdout

    def test_keeps_the_arch_entries_at_the_front_and_zeroes_the_rest_in_place(self):
        data, _ = self.pruned()
        self.assertEqual(len(data), len(self.original))
        at = self.fatbin_at
        self.assertEqual(struct.unpack_from("<I", data, at)[0], MAGIC)
        self.assertEqual(struct.unpack_from("<Q", data, at + 8)[0], len(self.sm90))
        self.assertEqual(data[at + 16:at + 16 + len(self.sm90)], self.sm90)
        self.assertEqual(data[at + 16 + len(self.sm90):at + len(self.mixed)],
                         bytes(len(self.mixed) - 16 - len(self.sm90)))

    def test_leaves_everything_else_where_it_was(self):
        data, stdout = self.pruned()
        self.assertEqual(data[:self.fatbin_at], self.original[:self.fatbin_at])
        rest = self.fatbin_at + len(self.mixed)
        self.assertEqual(data[rest:], self.original[rest:])  # the padding, sm_100's fat binary, headers
        self.assertIn("1 fat binaries had no sm_90 entry", stdout)

    def test_a_library_pruned_already_keeps_its_code(self):
        first, _ = self.pruned()
        with open(self.src, "wb") as f:
            f.write(first)
        again, stdout = self.pruned()
        self.assertEqual(again, first)
        self.assertIn("dropped 0.0 MiB", stdout)

    def test_refuses_a_fat_binary_header_that_does_not_add_up(self):
        broken = bytearray(self.original)
        struct.pack_into("<H", broken, self.fatbin_at + 6, 0)  # header size 0
        with open(self.src, "wb") as f:
            f.write(broken)
        result = run(self.src, self.dst)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("malformed fat binary header", result.stderr)

    def test_refuses_an_arch_the_library_has_no_code_for(self):
        result = run(self.src, self.dst, "--arch", "86")
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("no sm_86 device code", result.stderr)
        self.assertFalse(os.path.exists(self.dst))

    def test_refuses_a_file_that_is_not_elf_or_has_no_fat_binaries(self):
        with open(self.src, "wb") as f:
            f.write(b"#!/bin/sh\n")
        self.assertIn("not a 64-bit little-endian ELF", run(self.src, self.dst).stderr)
        with open(self.src, "wb") as f:
            f.write(elf([(".text", b"code")]))
        self.assertIn("no CUDA fat binary sections", run(self.src, self.dst).stderr)

    def test_refuses_an_entry_that_runs_past_its_fat_binary(self):
        broken = bytearray(self.original)
        struct.pack_into("<Q", broken, self.fatbin_at + 16 + 8, 1 << 20)  # sm_80's payload size
        with open(self.src, "wb") as f:
            f.write(broken)
        result = run(self.src, self.dst)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("malformed fat binary entry", result.stderr)


if __name__ == "__main__":
    unittest.main()
