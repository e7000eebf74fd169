#!/usr/bin/env python3
"""Step time and peak allocated memory of shardscope against PyTorch on one GPU, in one run.

Same model (the GPT of engine/models/gpt_model.cpp), same data sizes, same optimizer (Adam), bf16
compute with fp32 reduction and master weights on both sides:
    shardscope ddp            vs  PyTorch DDP (torch.autocast bf16: fp32 weights and all-reduce)
    shardscope full_shard     vs  PyTorch FSDP2 fully_shard, reshard_after_forward=True,
    shardscope shard_grad_op  vs  PyTorch FSDP2 fully_shard, reshard_after_forward=False,
                                  both with MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)
    shardscope zero1          vs  PyTorch DDP (autocast bf16) + ZeroRedundancyOptimizer(Adam),
                                  only with --with-zero1 (not part of the issue's target)
The loss is computed on fp32 logits on both sides (shardscope always does; torchtitan does the
same; autocast does it for DDP). --pytorch-loss compute keeps FSDP2's loss on the bf16 logits, as a
model that does not cast would: cheaper in memory (measured on CPU by bench/loss_memory_cpu.py),
but a different computation from shardscope's.
at each world size (1, 2, 4 by default). With fewer GPUs than ranks, ranks share a GPU, on both
sides alike (pytorch_parity.place_rank): with NCCL 2.30+ through NCCL_MULTI_RANK_GPU_ENABLE, with an
older NCCL each rank process gets its own NCCL_HOSTID (NCCL over sockets on loopback).

Step time: per step, the slowest rank's wall time (both sides end a step with the loss all-reduce
and .item(), so the host waits for the GPU); the median over the steps after --warmup.
Peak allocated: max over ranks of torch.cuda.max_memory_allocated (PyTorch) and of the summary's
peak tensor bytes (shardscope: the CUDA caching allocator's own allocation events).
MFU: model FLOPs (6 x parameters + 12 x layers x seq x hidden per token) x tokens per second of
the whole GPU, over the bf16 matrix-product rate measured here first.
--warmup-runs W (default 1) first runs one short ddp pair per world size and discards it: in two
device sessions the first run at world 4 was the slowest of all (2.0 s per step, then 1.4 s), and
it fell on whichever side went first.
--repeats R runs each pair R times, interleaved with the order alternating (ours, theirs, theirs,
ours, ...), and reports the median over repeats with the range of the time ratio: single runs on a shared socket transport
vary by more than some of the differences measured. It also reports the paired ratio, the median
of the per-repeat ratios: at world 4 a run's step time jumps between levels from run to run; in the
third device session's table the two sides of a repeat, run back to back, mostly met the same
level, and then a repeat's own ratio cancels it where the ratio of the medians can pair one side's
fast level with the other's slow. Not always: in its variants call they met opposite levels.
--fsdp2-root: with reshard_after_forward=True given to the root as well (resharded, the default),
FSDP2 gathers the root again at the start of backward, one all-gather per step more than
shardscope's full_shard; kept leaves the root at FSDP2's default (None), the same collectives.
--pairs picks which pairs run (default: all three). --variants runs shardscope in several ways
against the same PyTorch runs, to find what a ratio depends on: NAME=OPTIONS entries separated by
";", e.g. --variants "default=;unrecorded=--recording off;prefetch2=--prefetch 2". A variant with
--recording off has no CUDA events, polling thread, NVML samples or allocator hook, so it measures
training alone (and has no peak memory: its memory ratio is left empty). Leading NAME=VALUE words
of a variant are set in shardscope's environment, as a shell does, e.g.
"pghigh=TORCH_NCCL_HIGH_PRIORITY=1".
--bind-cores rank pins each rank process of both sides to its own slice of the cores (shardscope
--bind-cores rank; the PyTorch rank processes the same slices, by the same rule), to see whether
the world-4 run-to-run levels come from how the ranks' threads, NCCL's proxy and socket threads
among them, share the cores.
--offload cpu runs the sharded pairs with shardscope --offload cpu against FSDP2 with
CPUOffloadPolicy(pin_memory=True) (shards, gradients and optimizer state in host memory, Adam on
the CPU, on both sides); the peak is then the device's, and shardscope's host peak is printed beside.
Writes a JSON with every number (--out) and prints a table.
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from pytorch_parity import Gpt, free_port, loaded_nccl_version, place_rank  # noqa: E402  (same model definition)

PAIRS = [("ddp", "ddp"), ("full_shard", "fsdp2_reshard_true"), ("shard_grad_op", "fsdp2_reshard_false")]
ZERO1_PAIR = ("zero1", "ddp_zero_redundancy")


def measured_bf16_peak():
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    reps = 20
    for _ in range(reps):
        a @ b
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3 / reps
    return 2 * n ** 3 / seconds


def build_pytorch(c, mode, device, fp32_loss):
    """PyTorch's side of a pair on this rank: the model wrapped as `mode` says, its optimizer, and
    whether its steps run under autocast (DDP) or FSDP2's MixedPrecisionPolicy."""
    torch.manual_seed(0)
    model = Gpt(c, fp32_loss=fp32_loss).to(device)
    if c.get("activation_checkpointing") == "blocks":  # before wrapping, as the FSDP2 recipe does
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

        for i, block in enumerate(model.blocks):
            model.blocks[i] = checkpoint_wrapper(block)
    autocast = mode in ("ddp", "ddp_zero_redundancy")
    if autocast:
        # DDP's default buckets (first 1 MiB, then 25 MiB), shardscope's: bucket_cap_mb=25 passed
        # explicitly would size the first bucket at 25 MiB too (scripts/pytorch_parity.py).
        model = torch.nn.parallel.DistributedDataParallel(model)
    else:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        offload = {}
        if c.get("offload") == "cpu":
            from torch.distributed.fsdp import CPUOffloadPolicy

            offload = {"offload_policy": CPUOffloadPolicy(pin_memory=True)}
        reshard = mode == "fsdp2_reshard_true"
        for block in model.blocks:
            fully_shard(block, reshard_after_forward=reshard, mp_policy=mp_policy, **offload)
        # An explicit True reshards the root too, so FSDP2 gathers it again at the start of
        # backward: one all-gather per step more than shardscope's full_shard, which keeps the
        # root gathered (as FSDP1 and FSDP2's default, None, do). --fsdp2-root says which.
        root_reshard = None if reshard and c.get("fsdp2_root") == "kept" else reshard
        fully_shard(model, reshard_after_forward=root_reshard, mp_policy=mp_policy, **offload)
    if mode == "ddp_zero_redundancy":
        from torch.distributed.optim import ZeroRedundancyOptimizer

        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-4)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    return model, opt, autocast


def pytorch_steps(model, opt, autocast, c, world, rank, device, steps, after_step=None):
    """Trains `steps` steps; returns each step's wall time. Every step ends with the loss
    all-reduce and .item(), as shardscope's do, so the host has waited for the GPU."""
    per = c["batch"] // world
    gen = torch.Generator(device="cpu").manual_seed(rank)
    times = []
    for _ in range(steps):
        x = torch.randint(0, c["vocab"], (per, c["seq"]), generator=gen).to(device)
        y = torch.randint(0, c["vocab"], (per, c["seq"]), generator=gen).to(device)
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        g = loss.detach().float().clone()
        dist.all_reduce(g)
        g.item()
        times.append(time.perf_counter() - t0)
        if after_step:
            after_step()
    return times


def add_model_arguments(ap):
    """The benchmark's GPT and batch, shared by the GPU benchmark scripts."""
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--batch-per-rank", type=int, default=8)
    ap.add_argument("--fsdp2-root", choices=["resharded", "kept"], default="resharded",
                    help="FSDP2 reshard_after_forward=True on the root module too (resharded: the "
                         "issue's pairing, one all-gather per step more than shardscope), or the "
                         "default None there (kept: the root stays gathered from forward to "
                         "backward, as in shardscope's full_shard)")
    ap.add_argument("--bind-cores", choices=["off", "rank"], default="off",
                    help="rank: every rank process of both sides pinned to its own slice of the "
                         "cores (shardscope --bind-cores rank; PyTorch's ranks by the same rule)")
    ap.add_argument("--activation-checkpointing", choices=["off", "blocks"], default="off",
                    help="blocks: every block checkpointed on both sides (shardscope "
                         "--activation-checkpointing blocks; PyTorch checkpoint_wrapper on each block)")
    ap.add_argument("--offload", choices=["off", "cpu"], default="off",
                    help="cpu: the sharded pairs with shardscope --offload cpu against FSDP2 with "
                         "CPUOffloadPolicy(pin_memory=True)")


def model_config(args, world):
    return {"layers": args.layers, "hidden": args.hidden, "heads": args.heads, "seq": args.seq,
            "vocab": args.vocab, "batch": args.batch_per_rank * world, "fsdp2_root": args.fsdp2_root,
            "activation_checkpointing": args.activation_checkpointing, "bind_cores": args.bind_cores,
            "offload": args.offload}


def core_slice(allowed, local_rank, local_world):
    """engine/launch/core_binding.cpp's coreSlice: consecutive equal slices of the allowed cores, the
    first len(allowed) % local_world ranks one more; ranks share cores when there are fewer."""
    n = len(allowed)
    if n == 0:
        raise RuntimeError("--bind-cores rank: this process's CPU affinity is empty; run without it")
    if n < local_world:
        return [allowed[local_rank % n]]
    per, extra = divmod(n, local_world)
    begin = local_rank * per + min(local_rank, extra)
    return allowed[begin:begin + per + (1 if local_rank < extra else 0)]


def bind_to_cores(cores):
    """Every thread of this process pinned to `cores`, as shardscope's bindProcessToCores does
    (os.sched_setaffinity pins one thread; threads started later inherit)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except ProcessLookupError:  # the thread has ended
            pass


def join_nccl_group(rank, world, port):
    """This rank process's GPU, with the default process group (NCCL) initialised on it."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    device = place_rank(rank, world)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    return device


def pytorch_rank(rank, world, port, c, mode, steps, out_path, fp32_loss):
    if c.get("bind_cores") == "rank":  # before CUDA and NCCL start their threads
        bind_to_cores(core_slice(sorted(os.sched_getaffinity(0)), rank, world))
    device = join_nccl_group(rank, world, port)
    model, opt, autocast = build_pytorch(c, mode, device, fp32_loss)
    if c.get("offload") == "cpu":
        # The whole model was on the GPU before its shards went to the host (built there, and
        # fully_shard moves parameters to the device first anyway: _move_states_to_device);
        # shardscope builds its shards on the host. The peak compared is training's, from here.
        torch.cuda.reset_peak_memory_stats(device)
    times = pytorch_steps(model, opt, autocast, c, world, rank, device, steps)
    peak = torch.cuda.max_memory_allocated(device)
    result = {"rank": rank, "step_time_s": times, "peak_allocated": peak}
    json.dump(result, open(f"{out_path}.{rank}", "w"))
    dist.destroy_process_group()


def run_pytorch(world, c, mode, steps, fp32_loss):
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    mp.spawn(pytorch_rank, args=(world, free_port(), c, mode, steps, out, fp32_loss), nprocs=world)
    ranks = [json.load(open(f"{out}.{r}")) for r in range(world)]
    step_times = [max(r["step_time_s"][s] for r in ranks) for s in range(steps)]
    return step_times, max(r["peak_allocated"] for r in ranks)


def split_environment(words):
    """({NAME: VALUE}, rest) from leading NAME=VALUE words, as a shell reads a command line."""
    env, rest = {}, list(words)
    while rest and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", rest[0]):
        name, _, value = rest.pop(0).partition("=")
        env[name] = value
    return env, rest


def run_shardscope(binary, world, c, strategy, steps, workdir, extra=()):
    env, extra = split_environment(extra)
    summary = os.path.join(workdir, f"shardscope_{strategy}_w{world}.json")
    cmd = [binary, "run", "--device", "cuda", "--model", "gpt", "--layers", str(c["layers"]),
           "--hidden", str(c["hidden"]), "--heads", str(c["heads"]), "--seq", str(c["seq"]),
           "--vocab", str(c["vocab"]), "--batch", str(c["batch"]), "--world", str(world),
           "--strategy", strategy, "--steps", str(steps), "--lr", "1e-4", "--precision", "bf16",
           "--summary", summary, *extra]
    if c.get("activation_checkpointing") == "blocks":  # only then: a --variants entry may set it too
        cmd += ["--activation-checkpointing", "blocks"]
    if c.get("bind_cores") == "rank":
        cmd += ["--bind-cores", "rank"]
    if c.get("offload") == "cpu":
        cmd += ["--offload", "cpu"]
    run = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env})
    if run.returncode != 0:
        raise RuntimeError(f"shardscope failed: {' '.join(f'{k}={v}' for k, v in env.items())} {' '.join(cmd)}\n{run.stdout}{run.stderr}")
    s = json.load(open(summary))
    step_times = [max(r["step_time_s"][i] for r in s["ranks"]) for i in range(steps)]
    # peak_bytes is null when the run recorded nothing (--recording off)
    peaks = [r["peak_bytes"]["total"] for r in s["ranks"] if r["peak_bytes"] is not None]
    host_peaks = [r["peak_host_bytes"]["total"] for r in s["ranks"] if r.get("peak_host_bytes")]
    if host_peaks:
        print(f"  shardscope {strategy}: host peak {max(host_peaks) / 2**30:.2f} GiB (--offload cpu)", flush=True)
    return step_times, (max(peaks) if peaks else None), s["parameter_count"]


def parse_variants(text):
    """[(name, [shardscope options])] from "NAME=OPTIONS;NAME=OPTIONS"; exits naming a bad entry."""
    variants = []
    for entry in filter(None, (e.strip() for e in text.split(";"))):
        name, sep, options = entry.partition("=")
        if not sep or not name.strip():
            sys.exit(f"--variants: '{entry}' is not NAME=OPTIONS; e.g. --variants \"default=;unrecorded=--recording off\"")
        variants.append((name.strip(), shlex.split(options)))
    names = [n for n, _ in variants]
    if not variants or len(set(names)) != len(names):
        sys.exit(f"--variants '{text}': give at least one variant, each name once")
    return variants


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", required=True)
    ap.add_argument("--worlds", default="1,2,4")
    add_model_arguments(ap)
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--warmup-runs", type=int, default=1,
                    help="short ddp pairs run and discarded at each world size before measuring")
    ap.add_argument("--pytorch-loss", choices=["fp32", "compute"], default="fp32",
                    help="PyTorch's loss on fp32 logits, as shardscope's (default), or on the "
                         "compute-dtype logits (bf16 under FSDP2)")
    ap.add_argument("--with-zero1", action="store_true",
                    help="also shardscope zero1 against PyTorch DDP + ZeroRedundancyOptimizer")
    ap.add_argument("--pairs", default=",".join(p for p, _ in PAIRS),
                    help="shardscope strategies to run, comma-separated, each against its PyTorch pair")
    ap.add_argument("--variants", default="default=",
                    help='shardscope run several ways against the same PyTorch runs: "NAME=OPTIONS;..." '
                         '(e.g. "default=;unrecorded=--recording off;prefetch2=--prefetch 2")')
    ap.add_argument("--out", default="gpu_strategies.json")
    args = ap.parse_args()
    known = dict(PAIRS + [ZERO1_PAIR])
    unknown = [p for p in args.pairs.split(",") if p not in known]
    if unknown:
        sys.exit(f"--pairs: {', '.join(unknown)} not known; choose from {', '.join(known)}")
    pairs = [(p, known[p]) for p in args.pairs.split(",")]
    if args.with_zero1 and ZERO1_PAIR not in pairs:
        pairs.append(ZERO1_PAIR)
    unsharded = [p for p, _ in pairs if p in ("ddp", "zero1")]
    if args.offload == "cpu" and unsharded:
        sys.exit(f"--offload cpu is for the sharded pairs; these shard no parameters: {', '.join(unsharded)}. "
                 "Pass --pairs full_shard,shard_grad_op (and no --with-zero1).")
    variants = parse_variants(args.variants)
    if not torch.cuda.is_available():
        sys.exit("bench/gpu_strategies.py needs a CUDA GPU and none is visible here; run it on a GPU "
                 "machine, e.g. `bash scripts/device_gpu.sh build bench` (docs/gpu.md).")
    peak = measured_bf16_peak()
    nccl = ".".join(map(str, loaded_nccl_version()))
    print(f"{torch.cuda.get_device_name(0)}: measured bf16 matmul peak {peak / 1e12:.0f} TFLOP/s, NCCL {nccl}", flush=True)
    print("loss: " + ("on fp32 logits on both sides" if args.pytorch_loss == "fp32" else
                      "shardscope on fp32 logits, PyTorch on its compute-dtype logits"), flush=True)
    rows = []
    workdir = tempfile.mkdtemp(prefix="gpu_bench_")
    for world in [int(w) for w in args.worlds.split(",")]:
        c = model_config(args, world)
        for _ in range(args.warmup_runs):
            print(f"world {world}: warm-up pair (discarded)", flush=True)
            run_shardscope(args.shardscope, world, c, "ddp", 3, workdir)
            run_pytorch(world, c, "ddp", 3, args.pytorch_loss == "fp32")
        for strategy, mode in pairs:
            ours_runs = {name: [] for name, _ in variants}
            ours_last = {}
            t_theirs_runs = []

            def run_ours():
                for name, options in variants:
                    ours_last[name] = run_shardscope(args.shardscope, world, c, strategy, args.steps, workdir,
                                                     extra=options)
                    ours_runs[name].append(statistics.median(ours_last[name][0][args.warmup:]))

            for repeat in range(args.repeats):
                # Who goes first alternates: a first run of a pair can meet a colder machine (seen
                # at world 4: 2.0 s per step, then 1.4 s), which must not always fall on one side.
                if repeat % 2 == 0:
                    run_ours()
                theirs, theirs_peak = run_pytorch(world, c, mode, args.steps, args.pytorch_loss == "fp32")
                if repeat % 2 == 1:
                    run_ours()
                t_theirs_runs.append(statistics.median(theirs[args.warmup:]))
            t_theirs = statistics.median(t_theirs_runs)
            for name, options in variants:
                ours, ours_peak, params = ours_last[name]
                t_ours_runs = ours_runs[name]
                t_ours = statistics.median(t_ours_runs)
                ratios = [a / b for a, b in zip(t_ours_runs, t_theirs_runs)]
                tokens = c["batch"] * c["seq"]  # the whole GPU's tokens per step (all ranks share it)
                flops_per_token = 6 * params + 12 * c["layers"] * c["seq"] * c["hidden"]
                row = {"world": world, "strategy": strategy, "pytorch": mode,
                       "variant": name, "shardscope_options": options,
                       "step_s": t_ours, "pytorch_step_s": t_theirs, "time_ratio": t_ours / t_theirs,
                       "peak_allocated": ours_peak, "pytorch_peak_allocated": theirs_peak,
                       "memory_ratio": ours_peak / theirs_peak if ours_peak is not None else None,
                       "mfu": flops_per_token * tokens / t_ours / peak,
                       "pytorch_mfu": flops_per_token * tokens / t_theirs / peak,
                       "time_ratio_range": [min(ratios), max(ratios)],
                       "time_ratio_paired": statistics.median(ratios),
                       "step_s_per_repeat": t_ours_runs, "pytorch_step_s_per_repeat": t_theirs_runs,
                       "step_times": ours, "pytorch_step_times": theirs}
                rows.append(row)
                label = strategy if len(variants) == 1 else f"{strategy} [{name}]"
                memory = (f"peak {ours_peak / 2**30:6.2f} GiB vs {theirs_peak / 2**30:6.2f} GiB "
                          f"(x{row['memory_ratio']:.2f})" if ours_peak is not None else "peak not recorded")
                print(f"world {world} {label:13s} {t_ours * 1e3:8.1f} ms vs {t_theirs * 1e3:8.1f} ms "
                      f"(x{row['time_ratio']:.2f}, paired x{row['time_ratio_paired']:.2f}, "
                      f"range {min(ratios):.2f}-{max(ratios):.2f})  {memory}  "
                      f"MFU {row['mfu'] * 100:5.1f}% vs {row['pytorch_mfu'] * 100:5.1f}%", flush=True)
    json.dump({"device": torch.cuda.get_device_name(0), "bf16_peak_flops": peak, "nccl": nccl,
               "config": vars(args), "parameters": params, "rows": rows}, open(args.out, "w"), indent=1)
    print("\n| world | shardscope | PyTorch | step ms (ours / theirs) | time ratio | paired | peak GiB (ours / theirs) | memory ratio | MFU (ours / theirs) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        name = r["strategy"] if len(variants) == 1 else f"{r['strategy']} [{r['variant']}]"
        peaks = (f"{r['peak_allocated'] / 2**30:.2f} / {r['pytorch_peak_allocated'] / 2**30:.2f} | {r['memory_ratio']:.2f}"
                 if r["peak_allocated"] is not None else "not recorded | -")
        print(f"| {r['world']} | {name} | {r['pytorch']} | {r['step_s'] * 1e3:.1f} / {r['pytorch_step_s'] * 1e3:.1f} "
              f"| {r['time_ratio']:.2f} | {r['time_ratio_paired']:.2f} | {peaks} | {r['mfu'] * 100:.1f}% / {r['pytorch_mfu'] * 100:.1f}% |")


if __name__ == "__main__":
    main()
