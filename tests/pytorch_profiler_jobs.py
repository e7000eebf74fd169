#!/usr/bin/env python3
"""A real PyTorch job recorded with python/shardscope_record, and what its traces must show.

Launches, with torch.distributed.run (--standalone, CPU ranks, gloo), a small MLP trained with
DistributedDataParallel (--mode ddp) or FSDP2's fully_shard (--mode fsdp: reshard_after_forward
True; fsdp_no_reshard: False), recorded by shardscope_record.Recorder(wait=1, warmup=1, active=3).
Each rank writes into WORKDIR/job:

    rank-R.pt.trace.json     torch.profiler's Chrome trace of training steps 2..4
    rank-R.shardscope.json   rank, world size, torch version, recorded steps, devices, and
                             what the rank held when step 2 began (its parameters and Adam's
                             state), which the script checks against the model's shapes

Then WORKDIR/expected.json says what every rank runs in every recorded step: the collectives
c10d issues, in order, as {"op", "elements_in", "elements_out", "dtype_bytes"}. The list is
derived from the model's parameter shapes (see expected_collectives) and checked against the
c10d ops the traces actually hold, for every rank and recorded step; the script exits non-zero
with a message when the job fails or the two disagree.

    python tests/pytorch_profiler_jobs.py --workdir /tmp/pj --mode fsdp --world 3

With --device cuda (a GPU machine) the ranks train on CUDA with NCCL, several sharing one GPU
where there are fewer GPUs than ranks (as scripts/pytorch_parity.py places them), and each rank
also writes rank-R.memory.pickle, the CUDA allocator's snapshot; the parameters the recorder
counts are then the "cuda" device's.

It runs under the Python that has torch (the shardscope venv); the package is imported from
python/ in this checkout (sys.path), not installed.
"""
import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODES = ("ddp", "fsdp", "fsdp_no_reshard")
LAYERS = [(64, 128), (128, 64), (64, 10)]   # the nn.Linear layers, at Sequential indices 0, 2, 4
BATCH = 16                                  # samples per rank per step
WAIT, WARMUP, ACTIVE = 1, 1, 3
FLOAT_BYTES = 4                             # parameters and gradients are float32


# ---- the training job, one process per rank (torchrun runs this file with --train) -----------


def build_model():
    import torch.nn as nn
    return nn.Sequential(nn.Linear(*LAYERS[0]), nn.ReLU(), nn.Linear(*LAYERS[1]), nn.ReLU(),
                         nn.Linear(*LAYERS[2]))


def wrap(model, mode):
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel
        return DistributedDataParallel(model)
    from torch.distributed.fsdp import fully_shard
    reshard = mode == "fsdp"
    for index in (0, 2, 4):     # one FSDP unit per Linear; the root then holds no parameters
        fully_shard(model[index], reshard_after_forward=reshard)
    return fully_shard(model, reshard_after_forward=reshard)


def train(args):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    sys.path.insert(0, str(REPO / "python"))
    import shardscope_record

    device = torch.device("cpu")
    if args.device == "cuda":
        sys.path.insert(0, str(REPO / "scripts"))
        from pytorch_parity import place_rank   # sets NCCL's environment for a shared GPU
        device = place_rank(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if args.device == "cuda" else "gloo")
    torch.manual_seed(0)    # the same initial model on every rank
    model = wrap(build_model().to(device), args.mode)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(dist.get_rank())   # each rank its own batches
    recorder = shardscope_record.start(args.out, wait=WAIT, warmup=WARMUP, active=ACTIVE, model=model,
                                       optimizer=optimizer)
    for _ in range(args.steps):
        x = torch.randn(BATCH, LAYERS[0][0], generator=data).to(device)
        y = torch.randint(0, LAYERS[-1][1], (BATCH,), generator=data).to(device)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
        recorder.step()
    recorder.stop()
    dist.destroy_process_group()


# ---- what the model implies ------------------------------------------------------------------


def param_shapes(layer):
    fan_in, fan_out = LAYERS[layer]
    return [(fan_out, fan_in), (fan_out,)]  # nn.Linear: weight [out, in], bias [out]


def fsdp_unit_numel(layer, world):
    """Elements of one FSDP unit's all-gather input per rank (= its reduce-scatter output).
    FSDP2 shards every parameter on dim 0, padding dim 0 up to a multiple of the world size
    (_get_dim0_padded_size), and all-gathers the unit's padded shards concatenated; there is no
    padding of the unit as a whole. At world 3 Linear(64,10)'s 10 rows become 12: 4*64+4 = 260
    per rank, 780 gathered, where the parameters have 650."""
    return sum(math.ceil(shape[0] / world) * math.prod(shape[1:]) for shape in param_shapes(layer))


def expected_collectives(mode, world):
    """The c10d collectives one rank issues in one steady-state training step, in order."""
    def op(name, elements_in, elements_out):
        return {"op": name, "elements_in": elements_in, "elements_out": elements_out,
                "dtype_bytes": FLOAT_BYTES}

    if mode == "ddp":
        # DDP all-reduces gradients per bucket; the first bucket is capped at 1 MiB and the rest
        # at 25 MiB, and all 17226 gradients (69 KB) fit the first, so one all-reduce of all of
        # them per step. The model has no buffers, so nothing is broadcast before forward.
        total = sum(math.prod(s) for layer in range(len(LAYERS)) for s in param_shapes(layer))
        return [op("all_reduce", total, total)]

    def gather(layer):     # all_gather_into_tensor: a shard in, the padded unit out
        n = fsdp_unit_numel(layer, world)
        return op("all_gather", n, n * world)

    def scatter(layer):    # reduce_scatter_tensor: the padded unit's gradients in, a shard out
        n = fsdp_unit_numel(layer, world)
        return op("reduce_scatter", n * world, n)

    forward = [gather(0), gather(1), gather(2)]    # each unit just before its forward
    if mode == "fsdp_no_reshard":
        # Units stay gathered from forward through backward; backward only reduce-scatters each
        # unit's gradients, last layer first. (Units reshard after backward, so the next step's
        # forward gathers them again.)
        return forward + [scatter(2), scatter(1), scatter(0)]
    # reshard_after_forward=True frees every unit after its forward, so backward gathers each
    # again: the last layer's on demand, and each earlier one prefetched (FSDP2's implicit
    # backward prefetch) before the later unit's gradients are reduce-scattered.
    return forward + [gather(2), gather(1), scatter(2), gather(0), scatter(1), scatter(0)]


# ---- what the traces show --------------------------------------------------------------------

# c10d's ops as the profiler names them (cpu_op events on the thread that issued them). Their
# "Input Dims" follow the op's schema: output tensor first for the *_base_ ops, and a list of
# tensors for allreduce_. A gloo backend runs each on its own thread as "gloo:*" spans; those are
# not counted here, because gloo implements reduce-scatter as "gloo:all_reduce" of the whole
# input, so the spans alone would misname it.
C10D_OPS = {"c10d::_allgather_base_": "all_gather",
            "c10d::_reduce_scatter_base_": "reduce_scatter",
            "c10d::allreduce_": "all_reduce"}
DTYPE_BYTES = {"float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2}


def numel(dims):
    """Elements of one tensor's dims, or of a TensorList's list of dims."""
    if dims and isinstance(dims[0], list):
        return sum(numel(d) for d in dims)
    return math.prod(dims)


def collective_from_event(event):
    args = event.get("args", {})
    dims, types = args.get("Input Dims", []), args.get("Input type", [])
    name = C10D_OPS.get(event["name"], event["name"])   # an unexpected c10d op keeps its name
    if name == "all_reduce":
        # allreduce_ takes a TensorList, whose "Input type" is just "TensorList": the trace does
        # not say the dtype here, so it is left out of the comparison (None).
        n = numel(dims[0]) if dims else 0
        return {"op": name, "elements_in": n, "elements_out": n, "dtype_bytes": None}
    out, inp = (numel(dims[0]), numel(dims[1])) if len(dims) >= 2 else (0, 0)
    return {"op": name, "elements_in": inp, "elements_out": out,
            "dtype_bytes": DTYPE_BYTES.get(types[1] if len(types) > 1 else "", None)}


def collectives_per_step(trace):
    """{k: [collectives]} for each "ProfilerStep#k", from the c10d ops that start inside it."""
    events = trace["traceEvents"]
    # The host's spans only: on CUDA each step also has a "gpu_user_annotation" span of the same
    # name on the GPU's timeline, later and shorter, which would replace the host's here.
    steps = {int(e["name"].split("#")[1]): (e["ts"], e["ts"] + e["dur"]) for e in events
             if e.get("ph") == "X" and e.get("cat") == "user_annotation"
             and e.get("name", "").startswith("ProfilerStep#")}
    c10d = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"
                   and e.get("name", "").startswith("c10d::")), key=lambda e: e["ts"])
    return {k: [collective_from_event(e) for e in c10d if begin <= e["ts"] <= end]
            for k, (begin, end) in sorted(steps.items())}


def same_collective(seen, expected):
    return all(seen[k] == expected[k] for k in ("op", "elements_in", "elements_out")) and \
        seen["dtype_bytes"] in (None, expected["dtype_bytes"])


# ---- launching and checking ------------------------------------------------------------------


def launch(args, job_dir, log_path):
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", str(args.world), str(Path(__file__).resolve()), "--train",
               "--mode", args.mode, "--steps", str(args.steps), "--out", str(job_dir),
               "--device", args.device]
    # CPU ranks even on a GPU machine unless asked for CUDA, so the recorder writes the same
    # files everywhere (no CUDA activity, no memory snapshot) and the job matches expected.json.
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if args.device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    with open(log_path, "w") as log:
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                timeout=600)
    if result.returncode != 0:
        tail = log_path.read_text()[-4000:]
        fail(f"the {args.mode} job at world {args.world} failed (exit {result.returncode}); "
             f"the end of {log_path}:\n{tail}")


def expected_held(mode, world, rank, device="cpu"):
    """What a rank holds as a recorded step begins, from the model's shapes: its parameters
    (DDP's whole replica; FSDP2's padded shards, as all-gathered) and Adam's state: exp_avg and
    exp_avg_sq the shape of each parameter as the rank sees it (under FSDP2 its unpadded shard,
    torch.chunk's rows for this rank: Linear(64,10)'s 10 rows are 4, 4 and 2 at world 3), and a
    4-byte float step counter per parameter tensor, on CPU (Adam keeps it there unless capturable
    or fused, also for CUDA parameters). Gradients are None then (zero_grad sets them so)."""
    shapes = [s for layer in range(len(LAYERS)) for s in param_shapes(layer)]
    if mode == "ddp":
        params = own = sum(math.prod(s) for s in shapes)
    else:
        params = sum(fsdp_unit_numel(layer, world) for layer in range(len(LAYERS)))
        chunk = [math.ceil(s[0] / world) for s in shapes]
        own = sum(max(0, min(c, s[0] - rank * c)) * math.prod(s[1:]) for c, s in zip(chunk, shapes))
    steps = 4 * len(shapes)
    if device == "cpu":
        return {"cpu": {"param_shard": params * FLOAT_BYTES, "optimizer_state": 2 * own * FLOAT_BYTES + steps}}
    return {"cuda": {"param_shard": params * FLOAT_BYTES, "optimizer_state": 2 * own * FLOAT_BYTES},
            "cpu": {"optimizer_state": steps}}


def check_rank(job_dir, rank, args, steps_recorded, expected):
    """The rank's metadata and its trace's collectives; returns the problems found."""
    import torch
    problems = []
    meta = json.loads((job_dir / f"rank-{rank}.shardscope.json").read_text())
    # A job recorded elsewhere (--recorded) ran under that machine's torch build.
    torch_version = meta.get("torch_version") if args.recorded else torch.__version__
    want = {"rank": rank, "world_size": args.world, "torch_version": torch_version,
            "steps_recorded": steps_recorded, "devices": args.device,
            "held_when_recording_began": expected_held(args.mode, args.world, rank, args.device)}
    if meta != want:
        problems.append(f"rank-{rank}.shardscope.json is {meta}, expected {want}")
    trace = json.loads((job_dir / f"rank-{rank}.pt.trace.json").read_text())
    info = trace.get("distributedInfo", {})
    if (info.get("rank"), info.get("world_size")) != (rank, args.world):
        problems.append(f"rank {rank}'s trace says distributedInfo {info}")
    seen = collectives_per_step(trace)
    for step in range(steps_recorded[0], steps_recorded[1] + 1):
        got = seen.get(step)
        if got is None:
            problems.append(f"rank {rank}'s trace has no ProfilerStep#{step}")
        elif len(got) != len(expected) or not all(map(same_collective, got, expected)):
            problems.append(f"rank {rank} step {step}: the trace has\n  {got}\n"
                            f"the model implies\n  {expected}")
    return problems


def check_files(job_dir, world, device):
    suffixes = ("pt.trace.json", "shardscope.json") + (("memory.pickle",) if device == "cuda" else ())
    wanted = {f"rank-{r}.{suffix}" for r in range(world) for suffix in suffixes}
    present = {p.name for p in job_dir.iterdir()}
    if present != wanted:
        fail(f"{job_dir} holds {sorted(present)}, expected {sorted(wanted)}")
    return sorted(wanted)


def fail(message):
    print(f"pytorch_profiler_jobs: {message}", file=sys.stderr)
    sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--steps", type=int, default=WAIT + WARMUP + ACTIVE)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cuda: NCCL ranks on the GPUs (sharing one where fewer), with memory snapshots")
    parser.add_argument("--recorded", action="store_true",
                        help="check the job already recorded in WORKDIR/job (e.g. brought back from a GPU "
                             "machine) instead of running it")
    parser.add_argument("--train", action="store_true", help=argparse.SUPPRESS)  # a rank
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.train:
        return train(args)
    if args.workdir is None:
        parser.error("--workdir is required")
    if args.steps <= WAIT + WARMUP:
        parser.error(f"--steps must exceed wait+warmup ({WAIT + WARMUP}) to record a step")

    if args.device == "cuda" and not args.recorded:
        import torch
        if not torch.cuda.is_available():
            parser.error("--device cuda: this machine has no CUDA device torch can use; leave it out for CPU ranks")

    job_dir = args.workdir / "job"
    if args.recorded:
        if not job_dir.is_dir():
            parser.error(f"--recorded: {job_dir} is not a directory; put the job's rank-R.* files there")
    else:
        job_dir.mkdir(parents=True, exist_ok=True)
        for old in [*job_dir.iterdir(), args.workdir / "expected.json"]:
            old.unlink(missing_ok=True)     # nothing from an earlier run may pass for this one's
        launch(args, job_dir, args.workdir / "torchrun.log")

    files = check_files(job_dir, args.world, args.device)
    # Steps ended by recorder.step() inside the window (ProfilerStep#k is training step k).
    steps_recorded = [WAIT + WARMUP, min(args.steps, WAIT + WARMUP + ACTIVE) - 1]
    expected = expected_collectives(args.mode, args.world)
    problems = [p for rank in range(args.world)
                for p in check_rank(job_dir, rank, args, steps_recorded, expected)]
    if problems:
        fail("\n".join(problems))
    (args.workdir / "expected.json").write_text(json.dumps({
        "mode": args.mode,
        "world_size": args.world,
        "steps": args.steps,
        "steps_recorded": steps_recorded,
        "files": files,
        "parameters": sum(math.prod(s) for layer in range(len(LAYERS))
                          for s in param_shapes(layer)),
        # Per rank: what it held as the recorded steps began (shardscope shows it from there).
        "device": args.device,
        "held_when_recording_began": [expected_held(args.mode, args.world, r, args.device)[args.device]
                                      for r in range(args.world)],
        # The same on every rank and in every recorded step, in issue order.
        "collectives_per_step": expected,
    }, indent=1) + "\n")
    print(f"{args.mode} world {args.world}: {len(expected)} collectives per step on each of "
          f"{args.world} ranks, steps {steps_recorded[0]}..{steps_recorded[1]}, as the model "
          f"implies; {args.workdir / 'expected.json'}")


if __name__ == "__main__":
    main()
