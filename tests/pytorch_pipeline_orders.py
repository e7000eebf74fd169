#!/usr/bin/env python3
"""shardscope's pipeline schedules against torch.distributed.pipelining's own: for each schedule and
shape, the compute actions each rank runs (F, B, I, W with stage and micro-batch), in order, as
`shardscope run --print-schedule` prints them and as PyTorch's schedule class orders them
(PyTorch's None slots and REDUCE_GRAD left out, as they run nothing).
- The looped schedules (interleaved_1f1b, zero_bubble, zbv, dualpipev): their classes'
  _calculate_single_rank_operations, called on an object with only the attributes it reads; and
  every action with its sends and receives, as their runtime lowers that list (_add_send_recv):
  where a receive sits decides whether NCCL, running two ranks' transfers one after another, can
  run the lists to their ends.
- gpipe and 1f1b: run for real (one process per stage over Gloo, each stage one Linear) and the
  order of their forwards and backwards recorded by the stage module's hooks. Their classes'
  _get_pipeline_order, a drawing aid, is not the order they run: in PyTorch 2.11 Schedule1F1B's
  gives the last rank micro-batches 1..M (it runs 0..M-1).

Usage: pytorch_pipeline_orders.py SHARDSCOPE. Exit 0 when every order agrees, 1 otherwise.
"""
import os
import re
import subprocess
import sys
import tempfile
import types

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining import schedules as torch_schedules

COMPUTE = {"F", "B", "I", "W"}

# (schedule, P, V, M): odd and even sizes, fewer micro-batches than ranks, more rounds than one.
SHAPES = [
    ("gpipe", 2, 1, 4), ("gpipe", 3, 1, 5),
    ("1f1b", 2, 1, 4), ("1f1b", 3, 1, 5), ("1f1b", 4, 1, 6),
    ("interleaved_1f1b", 2, 2, 4), ("interleaved_1f1b", 3, 2, 6), ("interleaved_1f1b", 2, 3, 4),
    ("interleaved_1f1b", 4, 2, 3), ("interleaved_1f1b", 2, 2, 6),
    ("zero_bubble", 2, 2, 4), ("zero_bubble", 3, 2, 6), ("zero_bubble", 4, 2, 8),
    ("zbv", 2, 2, 4), ("zbv", 3, 2, 5), ("zbv", 4, 2, 8), ("zbv", 2, 2, 2),
    ("dualpipev", 2, 2, 4), ("dualpipev", 2, 2, 7), ("dualpipev", 3, 2, 6), ("dualpipev", 3, 2, 9),
    ("dualpipev", 4, 2, 8), ("dualpipev", 4, 2, 12),
]


def run_stage(rank, p, m, schedule, store_file, log_dir):
    """One rank of a real PyTorch pipeline of p one-Linear stages; writes the letters F and B in the
    order its stage module ran them."""
    dist.init_process_group("gloo", init_method=f"file://{store_file}", rank=rank, world_size=p)
    letters = []
    module = torch.nn.Linear(4, 4)
    # The stage's shape inference runs the module once first, without a graph: not an action.
    module.register_forward_hook(lambda *_: letters.append("F") if torch.is_grad_enabled() else None)
    module.register_full_backward_pre_hook(lambda *_: letters.append("B"))  # gradients of its output arrived
    stage = PipelineStage(module, rank, p, torch.device("cpu"))
    cls = torch_schedules.ScheduleGPipe if schedule == "gpipe" else torch_schedules.Schedule1F1B
    runner = cls(stage, m, loss_fn=lambda out, target: ((out - target) ** 2).mean())
    x, target = torch.randn(2 * m, 4), torch.randn(2 * m, 4)
    if rank == 0:
        runner.step(x)
    elif rank == p - 1:
        runner.step(target=target)
    else:
        runner.step()
    with open(os.path.join(log_dir, str(rank)), "w") as out:
        out.write("".join(letters))
    dist.destroy_process_group()


def torch_run_order(schedule, p, m):
    """Per rank, the compute actions PyTorch's gpipe or 1f1b ran, each kind's micro-batches in order."""
    with tempfile.TemporaryDirectory() as log_dir:
        mp.spawn(run_stage, args=(p, m, schedule, os.path.join(log_dir, "store"), log_dir), nprocs=p)
        out = {}
        for r in range(p):
            count = {"F": 0, "B": 0}
            out[r] = []
            for letter in open(os.path.join(log_dir, str(r))).read():
                out[r].append(f"{r}{letter}{count[letter]}")
                count[letter] += 1
        return out


def torch_order(schedule, p, v, m):
    """Per rank, PyTorch's compute actions as text ("1F3"); for the looped schedules also every
    action with its transfers ("0SEND_F2"), as its runtime lowers them (else None)."""
    if schedule in ("gpipe", "1f1b"):
        return torch_run_order(schedule, p, m), None
    fake = types.SimpleNamespace(_num_stages=p * v, _n_microbatches=m, pp_group_size=p, n_local_stages=v,
                                 num_stages=p * v)
    rounds = max(1, m // p)
    fake.number_of_rounds, fake.microbatches_per_round = rounds, m // rounds
    cls = {"interleaved_1f1b": torch_schedules.ScheduleInterleaved1F1B,
           "zero_bubble": torch_schedules.ScheduleInterleavedZeroBubble,
           "zbv": torch_schedules.ScheduleZBVZeroBubble,
           "dualpipev": torch_schedules.ScheduleDualPipeV}[schedule]
    order = {r: cls._calculate_single_rank_operations(fake, r) for r in range(p)}
    return {r: [str(a) for a in flat(actions) if a.computation_type.value in COMPUTE]
            for r, actions in order.items()}, lowered(order, m, p * v)


def flat(actions):
    """The actions with each OVERLAP_F_B (DualPipeV's forward and backward as one) as its two, in
    the order PyTorch's runtime runs them; None slots left out."""
    out = []
    for a in actions:
        if a is not None:
            out += list(a.sub_actions) if a.sub_actions else [a]
    return out


def lowered(order, m, stages):
    """Per rank, the actions with their transfers, as PyTorch's _PipelineScheduleRuntime lowers a
    compute-only schedule (_prepare_schedule_with_comms), less the actions that run nothing here
    (UNSHARD, RESHARD, REDUCE_GRAD: each stage's strategy gathers and reduces its own)."""
    stage_to_rank = {a.stage_index: r for r, actions in order.items() for a in flat(actions)}
    with_comms = {r: torch_schedules._add_reduce_grad(torch_schedules._add_unshard_reshard(actions), m)
                  for r, actions in order.items()}
    with_comms = torch_schedules._add_send_recv(with_comms, stage_to_rank=lambda s: stage_to_rank[s],
                                                num_stages=stages)
    kept = COMPUTE | {"SEND_F", "RECV_F", "SEND_B", "RECV_B"}
    return {r: [str(a) for a in flat(actions) if a.computation_type.value in kept] for r, actions in with_comms.items()}


def shardscope_order(binary, schedule, p, v, m, with_transfers=False):
    """Per rank, the compute actions of `shardscope run --print-schedule` (or all its actions)."""
    args = [binary, "run", "--model", "gpt", "--layers", str(p * v), "--world", str(p), "--pp", str(p),
            "--schedule", schedule, "--microbatches", str(m), "--batch", str(2 * m), "--print-schedule"]
    if v > 1:
        args += ["--stages-per-rank", str(v)]
    text = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    out = {}
    for line in text.splitlines():
        match = re.match(r"rank (\d+):(.*)$", line)
        if match:
            actions = match.group(2).split()
            out[int(match.group(1))] = actions if with_transfers else [
                a for a in actions if re.fullmatch(r"\d+[FBIW]\d+", a)]
    return out


def main():
    binary = sys.argv[1]
    failures = 0
    for shape in SHAPES:
        theirs, their_transfers = torch_order(*shape)
        pairs = [("compute", shardscope_order(binary, *shape), theirs)]
        if their_transfers is not None:
            pairs.append(("with transfers", shardscope_order(binary, *shape, with_transfers=True), their_transfers))
        wrong = [(what, ours, them) for what, ours, them in pairs if ours != them]
        print(f"{'FAIL' if wrong else 'ok  '} {shape}: {', '.join(what for what, _, _ in pairs)}")
        failures += 1 if wrong else 0
        for what, ours, them in wrong:
            for r in sorted(them):
                if ours.get(r) != them[r]:
                    print(f"  {what}, rank {r}: shardscope {' '.join(ours.get(r, []))}\n"
                          f"  {what}, rank {r}: pytorch    {' '.join(them[r])}")
    print(f"{len(SHAPES) - failures} of {len(SHAPES)} schedules run in PyTorch's order")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
