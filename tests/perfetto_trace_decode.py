"""A run's --trace FILE.pftrace decoded with Perfetto's own schema (the `perfetto` package's
perfetto_trace_pb2), not with shardscope's reader: every packet parses, every interned name is
defined before it is used, slices open and close properly nested on their tracks, and what comes
back agrees with the run's own summary: its steps, its collectives by op, and each rank's peak of
tensor memory from the counters."""
import argparse
import collections
import json
import os
import subprocess
import sys

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

SLICE_BEGIN, SLICE_END, INSTANT, COUNTER = 1, 2, 3, 4
TENSOR_ROLES = ["param_shard", "param_gathered", "grad_shard", "grad_full", "optimizer_state", "activation",
                "comm_buffer", "other"]


BOOTTIME = 6  # the builtin clock of a packet that names none


def decode(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    tracks, names, annotation_names, strings = {}, {}, {}, {}
    open_slices = collections.defaultdict(list)
    slices, instants, counters = [], [], collections.defaultdict(list)
    last_time = collections.defaultdict(int)
    # Per packet sequence, as Perfetto reads them: the clock its packets use unless they name one
    # (TracePacketDefaults), and an incremental clock's reading (a ClockSnapshot sets it; each
    # packet on that clock adds its timestamp to it), with its offset from the trace's boot time.
    default_clock, incremental = {}, {}
    for packet in trace.packet:
        seq = packet.trusted_packet_sequence_id
        if packet.HasField("trace_packet_defaults"):
            default_clock[seq] = packet.trace_packet_defaults.timestamp_clock_id
        if packet.HasField("clock_snapshot"):
            readings = {c.clock_id: c for c in packet.clock_snapshot.clocks}
            for c in readings.values():
                if c.is_incremental:
                    assert 64 <= c.clock_id <= 127, "an incremental clock is sequence-scoped"
                    assert BOOTTIME in readings, "the snapshot relates it to the trace's clock"
                    incremental[seq] = {"id": c.clock_id, "last": c.timestamp,
                                        "offset": readings[BOOTTIME].timestamp - c.timestamp}
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            name = d.process.process_name if d.HasField("process") else d.name
            tracks[d.uuid] = {"name": name, "parent": d.parent_uuid, "counter": d.HasField("counter")}
            if d.HasField("counter"):
                assert d.counter.unit == pb.CounterDescriptor.UNIT_SIZE_BYTES, d
        if packet.HasField("interned_data"):
            i = packet.interned_data
            names.update({n.iid: n.name for n in i.event_names})
            annotation_names.update({n.iid: n.name for n in i.debug_annotation_names})
            strings.update({s.iid: s.str.decode() for s in i.debug_annotation_string_values})
        if not packet.HasField("track_event"):
            continue
        e = packet.track_event
        assert e.track_uuid in tracks, f"event on an undeclared track {e.track_uuid}"
        clock = packet.timestamp_clock_id if packet.HasField("timestamp_clock_id") else default_clock.get(seq, BOOTTIME)
        if seq in incremental and clock == incremental[seq]["id"]:
            incremental[seq]["last"] += packet.timestamp
            t = incremental[seq]["last"] + incremental[seq]["offset"]
        else:
            assert clock == BOOTTIME, f"a packet on clock {clock}, which no snapshot described"
            t = packet.timestamp
        assert t >= last_time[e.track_uuid] or e.type == COUNTER, f"time goes back on {tracks[e.track_uuid]}"
        last_time[e.track_uuid] = max(last_time[e.track_uuid], t)
        args = {}
        for a in e.debug_annotations:
            assert a.name_iid in annotation_names, f"annotation name {a.name_iid} used before it was interned"
            key = annotation_names[a.name_iid]
            if a.HasField("string_value_iid"):
                assert a.string_value_iid in strings, f"string {a.string_value_iid} used before it was interned"
                args[key] = strings[a.string_value_iid]
            else:
                args[key] = a.int_value
        if e.type in (SLICE_BEGIN, INSTANT):
            assert e.name_iid in names, f"name {e.name_iid} used before it was interned"
        if e.type == SLICE_BEGIN:
            open_slices[e.track_uuid].append({"name": names[e.name_iid], "begin": t, "args": args,
                                              "track": e.track_uuid})
        elif e.type == SLICE_END:
            assert open_slices[e.track_uuid], f"an END with nothing open on {tracks[e.track_uuid]}"
            s = open_slices[e.track_uuid].pop()
            s["end"] = t
            assert s["end"] >= s["begin"]
            parent = open_slices[e.track_uuid][-1] if open_slices[e.track_uuid] else None
            assert parent is None or parent["begin"] <= s["begin"], "slices nest"
            slices.append(s)
        elif e.type == INSTANT:
            instants.append({"name": names[e.name_iid], "args": args, "track": e.track_uuid})
        elif e.type == COUNTER:
            counters[e.track_uuid].append((t, e.counter_value))
            # A memory sample's other lanes' values at the same time ride in the same event.
            assert len(e.extra_counter_track_uuids) == len(e.extra_counter_values), e
            for uuid, value in zip(e.extra_counter_track_uuids, e.extra_counter_values):
                assert uuid in tracks and tracks[uuid]["counter"], f"an extra value on an undescribed track {uuid}"
                counters[uuid].append((t, value))
    assert not any(open_slices.values()), "every slice is closed"
    return tracks, slices, instants, counters


def rank_of(tracks, uuid):
    parent = tracks[uuid]["parent"]
    return int(tracks[parent]["name"].split()[-1]) if parent else None


def peak_tensor_bytes(tracks, counters, rank):
    events = []
    for uuid, samples in counters.items():
        name = tracks[uuid]["name"]
        if rank_of(tracks, uuid) == rank and name.startswith("memory ") and name[7:] in TENSOR_ROLES:
            events += [(t, name[7:], v) for t, v in samples]
    events.sort(key=lambda e: e[0])
    now, peak, i = dict.fromkeys(TENSOR_ROLES, 0), 0, 0
    while i < len(events):  # every role's value at one time, then the total
        t = events[i][0]
        while i < len(events) and events[i][0] == t:
            now[events[i][1]] = events[i][2]
            i += 1
        peak = max(peak, sum(now.values()))
    return peak


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shardscope", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    trace, summary = os.path.join(args.workdir, "t.pftrace"), os.path.join(args.workdir, "s.json")
    for strategy in ("full_shard", "ddp"):
        subprocess.run([args.shardscope, "run", "--model", "gpt", "--layers", "2", "--hidden", "32", "--heads", "4",
                        "--seq", "8", "--vocab", "37", "--batch", "4", "--world", "2", "--steps", "30",
                        "--strategy", strategy, "--trace", trace, "--summary", summary],
                       check=True, stdout=subprocess.DEVNULL)
        tracks, slices, instants, counters = decode(trace)
        run = json.load(open(summary))
        config = [i for i in instants if i["name"] == "shardscope run"]
        assert len(config) == 1 and json.loads(config[0]["args"]["config"])["strategy"] == strategy, config
        facts = [i for i in instants if i["name"] == "shardscope facts"]
        assert len(facts) == 1 and json.loads(facts[0]["args"]["facts"])["parameter_count"] == run["parameter_count"]
        for rank in range(2):
            mine = [s for s in slices if rank_of(tracks, s["track"]) == rank]
            steps = [s for s in mine if s["args"].get("kind") == "step"]
            assert len(steps) == len(run["steps"]) == 30, (len(steps), len(run["steps"]))
            ops = collections.Counter(s["args"]["op"] for s in mine if "op" in s["args"])
            expected = {op: c["count"] for op, c in run["ranks"][rank]["collectives"].items() if c["count"]}
            assert dict(ops) == expected, (dict(ops), expected)
            peak = peak_tensor_bytes(tracks, counters, rank)
            assert peak == run["ranks"][rank]["peak_bytes"]["total"], (peak, run["ranks"][rank]["peak_bytes"])
        json_bytes = None
        print(f"{strategy}: {len(slices)} slices, {sum(map(len, counters.values()))} counter values, "
              f"{len(tracks)} tracks, {os.path.getsize(trace)} bytes: decoded and agreeing with the summary")
    print("1 passed, 0 failed")


if __name__ == "__main__":
    sys.exit(main())
