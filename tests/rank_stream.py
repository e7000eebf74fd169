"""A rank's event stream (DIR/rank-R.events, trace/wire.h) read in Python, independently of the C++
reader: binary frames (0xFE, a varint length, then the kind, a mask of fields present, and the
fields as zigzag varints; the loss as its double's bits, a string as its length and bytes), text
lines between them, and the JSON lines of older streams. Each event comes back as a dict with
the JSON lines' short keys ("k" its kind's name, "r", "s", "b", "e", "l", ...)."""
import json
import struct

FRAME_MARK = 0xFE
KINDS = ["step_end", "run_info", "rank_error", "run_done", "memory", "collective", "compute", "dropped", "group",
         "clock_offset", "collective_issued", "collective_failed"]
# The payload's fields by their bit in its mask, with the short key each has in a JSON line ("c": the
# one count of streams written before each kind's figure had a field of its own). The fields after
# the loss have no JSON key (JSON lines were written before them): named here after Event's.
FIELDS = ["r", "s", "b", "e", "by", "ro", "u", "op", "ph", "t", "i", "bo", "w", "c", "mb", "fr", "sp", "pg", "pz",
          "l", "own_part_bytes", "sequence", "parameter_count", "device_memory_bytes", "peak_flops_per_second",
          "dropped_events", "uncertainty_ns", "peer"]
# A field a frame leaves out has its default Event's value (trace/events.h).
DEFAULTS = {"s": -1, "u": -2**31, "fr": 255, "t": "", "l": 0.0}


def _varint(data, at):
    value, shift = 0, 0
    while True:
        if at >= len(data):
            raise ValueError("torn varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def _unzigzag(v):
    return (v >> 1) ^ -(v & 1)


def decode_payload(payload):
    """The event a frame's payload holds, as a dict; ValueError when it is not one."""
    if not payload or payload[0] >= len(KINDS):
        raise ValueError("no such kind")
    event = {"k": KINDS[payload[0]]}
    mask, at = _varint(payload, 1)
    for bit, key in enumerate(FIELDS):
        if not mask & (1 << bit):
            continue
        raw, at = _varint(payload, at)
        if key == "l":
            event[key] = struct.unpack("<d", struct.pack("<Q", raw))[0]
        elif key == "t":
            event[key] = payload[at:at + raw].decode("utf-8", "replace")
            at += raw
        else:
            event[key] = _unzigzag(raw)
    if at != len(payload):
        raise ValueError("bytes past the fields")
    # Times relative to the begin time on the wire, absolute in a JSON line.
    if "e" in event:
        event["e"] += event.get("b", 0)
    if "i" in event:
        event["i"] = event.get("b", 0) - event["i"]
    for key in FIELDS:
        event.setdefault(key, DEFAULTS.get(key, 0))
    return event


def read_events(path):
    """Every whole event of a rank's stream; a torn last item is skipped (a rank killed mid-write)."""
    data = open(path, "rb").read()
    events, at = [], 0
    while at < len(data):
        if data[at] == FRAME_MARK:
            try:
                length, start = _varint(data, at + 1)
            except ValueError:
                break
            if start + length > len(data):
                break  # torn
            try:
                events.append(decode_payload(data[start:start + length]))
            except ValueError:
                pass
            at = start + length
            continue
        end = data.find(b"\n", at)
        if end < 0:
            break  # torn
        line = data[at:end].strip()
        at = end + 1
        if line.startswith(b"{"):
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if "k" in e:
                events.append(e)
    return events


def events_of_kind(path, kind):
    return [e for e in read_events(path) if e.get("k") == kind]
