#!/usr/bin/env python3
"""Parity of shardscope with PyTorch's own DDP and FSDP2, on CPU ranks over Gloo (default) or on
GPU ranks over NCCL (--device cuda; several ranks share a GPU when there are fewer GPUs than ranks,
each PyTorch rank then gets its own NCCL_HOSTID, as shardscope's ranks do with an NCCL older than
2.30).

For each model and world size: shardscope trains with ddp, zero1, full_shard and shard_grad_op and
exports its initial parameters, data and per-step losses (--export). PyTorch then trains the same
model definition from those files with torch.nn.parallel.DistributedDataParallel (alone, and with
ZeroRedundancyOptimizer) and with FSDP2's fully_shard (reshard_after_forward True and False), one
process per rank (torch.multiprocessing, gloo). Per-step global mean losses must agree within a
relative 1e-5:
    shardscope ddp           <-> PyTorch DDP
    shardscope no_shard      <-> PyTorch FSDP1, ShardingStrategy.NO_SHARD (each block and the root)
    shardscope zero1         <-> PyTorch DDP + ZeroRedundancyOptimizer
    shardscope full_shard    <-> PyTorch FSDP2, reshard_after_forward=True
    shardscope shard_grad_op <-> PyTorch FSDP2, reshard_after_forward=False
With --hsdp, the hybrid strategies against FSDP2 on a 2-D DeviceMesh (replicate, shard) instead,
at each world:S of --hsdp-meshes (S ranks per shard group):
    shardscope hybrid_shard       <-> PyTorch FSDP2 on the 2-D mesh, reshard_after_forward=True
    shardscope hybrid_shard_zero2 <-> PyTorch FSDP2 on the 2-D mesh, reshard_after_forward=False
With --tp, tensor parallelism on a 2-D DeviceMesh (data, tensor) at each world:N of --tp-meshes:
PyTorch's DTensor parallelize_module (ColwiseParallel on attention's q, k and v and the MLP's fc,
RowwiseParallel on their projections; mlp: its linears paired column-then-row), then fully_shard
over the data dimension, as torchtitan composes them. Losses within the tolerance, and the final
weights too (gathered with full_tensor()):
    shardscope --tp N full_shard    <-> DTensor TP + FSDP2, reshard_after_forward=True
    shardscope --tp N shard_grad_op <-> DTensor TP + FSDP2, reshard_after_forward=False
At WORLD:N:S, the hybrid strategies with shard groups of S data ranks, against HSDP on torchtitan's
3-D mesh (dp_replicate, dp_shard, tp), fully_shard over mesh["dp_replicate", "dp_shard"]:
    shardscope --tp N hybrid_shard       <-> DTensor TP + HSDP, reshard_after_forward=True
    shardscope --tp N hybrid_shard_zero2 <-> DTensor TP + HSDP, reshard_after_forward=False
With --tp --sequence-parallel, gpt with sequence parallelism against torchtitan's plan:
SequenceParallel on the LayerNorms, the residual stream Shard(1) between blocks, PrepareModuleInput
gathering it into attention and the MLP, RowwiseParallel(output_layouts=Shard(1)) on the projections.
With --offload (GPU only), the sharded pairs run with shardscope --offload cpu against FSDP2 with
CPUOffloadPolicy(pin_memory=True): shards, gradients and optimizer state on the host, the optimizer
step on the CPU, on both sides.
With --pp, pipeline parallelism against torch.distributed.pipelining: each rank's stage a module of
the model's blocks split as the engine splits them (the first with the embeddings, the last with the
final norm and the head, the loss the schedule's loss_fn), in a PipelineStage over the mesh's "pp"
dimension, run by the schedule class; with a data dimension, fully_shard per stage over "dp", as
torchtitan composes them:
    shardscope --pp 2 --schedule gpipe                 <-> ScheduleGPipe
    shardscope --pp 2 --schedule 1f1b                  <-> Schedule1F1B
    shardscope --pp 2 --schedule interleaved_1f1b      <-> ScheduleInterleaved1F1B, 2 stages per rank
    shardscope --pp 2 --schedule zero_bubble           <-> ScheduleInterleavedZeroBubble, 2 stages per rank
    shardscope --pp 2 --world 4 --strategy full_shard  <-> Schedule1F1B + FSDP2 per stage over dp 2 (zbv and
                                                           dualpipev likewise, their blocks not resharded after
                                                           forward: see SPLIT_BACKWARD)
    shardscope --pp 2 --world 8 --strategy hybrid_shard <-> Schedule1F1B + HSDP per stage, (pp, dp_replicate 2,
                                                            dp_shard 2)
    shardscope --pp 2 --schedule zbv                   <-> ScheduleZBVZeroBubble, stages r and 2P-1-r on rank r
    shardscope --pp 2 --schedule dualpipev             <-> ScheduleDualPipeV, the same V
(over Gloo, PyTorch's V schedules run with their warm-up's sends to their own rank left out: Gloo
cannot send to itself, and the schedule passes those tensors locally).
Exit status 0 when every pair agrees, 1 otherwise. Run by ctest as `pytorch_parity`.
"""
import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import traceback
import uuid

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

TOLERANCE = 1e-5
TOLERANCE_BF16 = 1e-5

# ---- the models, exactly as engine/models/*.cpp define them -----------------------------------


class LoraLinear(nn.Linear):
    """nn.Linear with, for rank > 0, LoRA's update (x A^T) B^T at scaling lora_alpha / r = 1, as
    PEFT's LoraConfig(r, lora_alpha=r) adds it and engine/models/model.cpp's linearWithAdapter computes it.
    Its parameters are named weight, bias, lora_A and lora_B, as the engine's layout names them."""

    def __init__(self, in_features, out_features, bias=True, rank=0):
        super().__init__(in_features, out_features, bias=bias)
        self.rank = rank
        if rank:
            self.lora_A = nn.Parameter(torch.empty(rank, in_features))
            self.lora_B = nn.Parameter(torch.zeros(out_features, rank))

    def forward(self, x):
        y = F.linear(x, self.weight, self.bias)
        return y + F.linear(F.linear(x, self.lora_A), self.lora_B) if self.rank else y


def lora_rank(c):
    return c.get("lora-rank", 0)


def freeze_all_but_adapters(model):
    """LoRA: only the adapters train (requires_grad), as PEFT's get_peft_model leaves it."""
    for name, p in model.named_parameters():
        p.requires_grad_(".lora_" in name)


class Mlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.inp = nn.Linear(c["features"], c["hidden"])
        self.blocks = nn.ModuleList(LoraLinear(c["hidden"], c["hidden"], rank=lora_rank(c))
                                    for _ in range(c["layers"]))
        self.head = nn.Linear(c["hidden"], c["classes"])

    def forward(self, x, y):
        h = F.gelu(self.inp(x))
        for block in self.blocks:
            h = F.gelu(block(h))
        return F.cross_entropy(self.head(h).float(), y)


class Attention(nn.Module):
    def __init__(self, hidden, heads, rank=0):
        super().__init__()
        self.heads = heads
        self.qkv = LoraLinear(hidden, 3 * hidden, bias=False, rank=rank)
        self.proj = LoraLinear(hidden, hidden, rank=rank)

    def forward(self, x):
        B, T, H = x.shape
        q, k, v = self.qkv(x).split(H, dim=2)
        heads = lambda t: t.view(B, T, self.heads, H // self.heads).transpose(1, 2)
        y = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, H))


class SplitQkvAttention(Attention):
    """Attention with q, k and v as three Linears, as ColwiseParallel splits them (each by output
    features: a rank gets whole heads of each). Under tensor parallelism a rank's q holds heads/N
    heads, counted here from the width it gets."""

    def __init__(self, hidden, heads):
        super().__init__(hidden, heads)
        del self.qkv
        self.q, self.k, self.v = (nn.Linear(hidden, hidden, bias=False) for _ in range(3))

    def forward(self, x):
        B, T, H = x.shape
        q, k, v = self.q(x), self.k(x), self.v(x)
        head_dim = H // self.heads
        heads = lambda t: t.view(B, T, t.shape[-1] // head_dim, head_dim).transpose(1, 2)
        y = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, q.shape[-1]))


class FeedForward(nn.Module):
    def __init__(self, hidden, rank=0):
        super().__init__()
        self.fc = LoraLinear(hidden, 4 * hidden, rank=rank)
        self.proj = LoraLinear(4 * hidden, hidden, rank=rank)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, hidden, heads, rank=0):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = Attention(hidden, heads, rank)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = FeedForward(hidden, rank)

    def forward(self, x):
        h = x + self.attn(self.ln1(x))
        return h + self.mlp(self.ln2(h))


class Gpt(nn.Module):
    def __init__(self, c, fp32_loss=True):
        super().__init__()
        self.fp32_loss = fp32_loss
        h = c["hidden"]
        self.wte = nn.Embedding(c["vocab"], h)
        self.wpe = nn.Embedding(c["seq"], h)
        self.blocks = nn.ModuleList(Block(h, c["heads"], lora_rank(c)) for _ in range(c["layers"]))
        self.ln_f = nn.LayerNorm(h)
        self.lm_head = nn.Linear(h, c["vocab"], bias=False)

    def forward(self, x, y):
        pos = torch.arange(x.shape[1], device=x.device)
        h = self.wte(x) + self.wpe(pos)
        for block in self.blocks:
            h = block(h)
        logits = self.lm_head(self.ln_f(h))
        logits = logits.view(-1, logits.shape[-1])
        # The loss in fp32 whatever the compute dtype, as the engine does (and torchtitan, and
        # autocast); a no-op under fp32. fp32_loss=False keeps bf16 logits' loss in bf16.
        return F.cross_entropy(logits.float() if self.fp32_loss else logits, y.reshape(-1))


def optimizer_class(c):
    """The torch.optim class and its arguments for the run's --optimizer and --lr."""
    if c["optimizer"] == "sgd":
        return torch.optim.SGD, {"lr": c["lr"]}
    if c["optimizer"] == "adamw":
        return torch.optim.AdamW, {"lr": c["lr"], "weight_decay": 0.01}
    return torch.optim.Adam, {"lr": c["lr"]}


def make_optimizer(c, params):
    cls, kwargs = optimizer_class(c)
    return cls(params, **kwargs)


# ---- one PyTorch rank ---------------------------------------------------------------------------


def loaded_nccl_version():
    """The NCCL this process runs, e.g. (2, 30, 7): torch.cuda.nccl.version() is the one torch was
    built with, not one put in front of it with LD_PRELOAD (scripts/device_nccl.sh)."""
    import ctypes

    code = ctypes.c_int()
    ctypes.CDLL("libnccl.so.2").ncclGetVersion(ctypes.byref(code))
    return code.value // 10000, code.value // 100 % 100, code.value % 100


def place_rank(rank, world):
    """The GPU of a rank, and the environment that lets several ranks share one GPU: chosen as
    shardscope's ranks choose it (engine/launch/rank_device.cpp), so both sides of a comparison share the
    GPU the same way. NCCL 2.30+ (e.g. carried with scripts/device_nccl.sh and LD_PRELOAD) has
    NCCL_MULTI_RANK_GPU_ENABLE; older ones get a host identity per rank (sockets on loopback).
    SHARDSCOPE_SHARED_GPU=hostid|multirank forces one, as it does for shardscope."""
    gpus = torch.cuda.device_count()
    if world > gpus:
        forced = os.environ.get("SHARDSCOPE_SHARED_GPU", "")
        multirank = forced == "multirank" or (not forced and loaded_nccl_version() >= (2, 30, 0))
        if multirank:
            os.environ["NCCL_MULTI_RANK_GPU_ENABLE"] = "1"
        else:
            os.environ["NCCL_HOSTID"] = f"pytorch-rank{rank}"
            os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
            os.environ.setdefault("NCCL_IB_DISABLE", "1")
    return torch.device("cuda", rank % gpus)


def join_process_group(rank, world, init_method, device_kind):
    """This rank's default process group, NCCL on its GPU (place_rank) or Gloo on CPU; its device."""
    if device_kind != "cuda":
        dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=world)
        return torch.device("cpu")
    device = place_rank(rank, world)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", init_method=init_method, rank=rank, world_size=world, device_id=device)
    return device


def ddp_bucket_options(cap_mb):
    """DDP's keyword arguments for the bucket layout of shardscope's ddp and zero1 at --bucket-cap-mb
    cap_mb: the first bucket 1 MiB, every later one up to the cap (engine/strategies/gradient_buckets.cpp).
    DDP 2.11 builds that layout only with bucket_cap_mb left unset (25 MiB); a cap passed explicitly
    sizes the first bucket too (bucket_cap_mb=25 puts this GPT's 14.8 MB of gradients in one bucket,
    a single all-reduce a step where shardscope runs two). Any other cap goes through
    bucket_cap_mb_list, whose first entry is the first bucket's."""
    if cap_mb == 25:
        return {}
    return {"bucket_cap_mb_list": [1, cap_mb]}


def parallelize(model, c, mode, device, world, shard_group=0):
    """`model` wrapped as PyTorch runs `mode` (DDP, DDP + ZeroRedundancyOptimizer, FSDP2 on a 1-D or,
    for hsdp_*, a 2-D mesh of shard_group ranks per row), and its optimizer. Also bench/cpu_strategies.py's."""
    if mode in ("ddp", "ddp_zero_redundancy"):
        model = nn.parallel.DistributedDataParallel(model, **ddp_bucket_options(c["bucket-cap-mb"]))
    elif mode == "fsdp1_no_shard":
        # FSDP1 (FSDP2 has no NO_SHARD): every block a unit, then the root, nothing divided.
        from torch.distributed.fsdp import FullyShardedDataParallel, ShardingStrategy

        unit = dict(sharding_strategy=ShardingStrategy.NO_SHARD, device_id=device, use_orig_params=True)
        for i, block in enumerate(model.blocks):
            model.blocks[i] = FullyShardedDataParallel(block, **unit)
        model = FullyShardedDataParallel(model, **unit)
    else:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        reshard = mode in ("fsdp2_reshard_true", "hsdp_reshard_true")
        policy = MixedPrecisionPolicy()  # fp32: no casts
        if c.get("precision") == "bf16":
            policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        # --offload cpu (the export's config says so): FSDP2's CPUOffloadPolicy on every unit.
        from torch.distributed.fsdp import CPUOffloadPolicy

        offload = {"offload_policy": CPUOffloadPolicy(pin_memory=True)} if c.get("offload") == "cpu" else {}
        mesh = None
        if mode.startswith("hsdp"):
            # HSDP: FSDP2 on a 2-D mesh, rows the shard groups, columns the replicate groups.
            from torch.distributed.device_mesh import init_device_mesh

            mesh = init_device_mesh(device.type, (world // shard_group, shard_group),
                                    mesh_dim_names=("replicate", "shard"))
        for block in model.blocks:
            fully_shard(block, mesh=mesh, reshard_after_forward=reshard, mp_policy=policy, **offload)
        # The root resharding left to FSDP2's default (None): the root's parameters (embeddings,
        # final norm, head) then stay gathered from forward into backward, as the engine's
        # full_shard keeps them. Passed True explicitly, FSDP2 2.11 gathers the root again for
        # backward: one all-gather a step more than the engine runs.
        root_reshard = {} if reshard else {"reshard_after_forward": False}
        fully_shard(model, mesh=mesh, mp_policy=policy, **root_reshard, **offload)
    trained = [p for p in model.parameters() if p.requires_grad]
    if mode == "ddp_zero_redundancy":
        from torch.distributed.optim import ZeroRedundancyOptimizer

        cls, kwargs = optimizer_class(c)
        return model, ZeroRedundancyOptimizer(trained, optimizer_class=cls, **kwargs)
    return model, make_optimizer(c, trained)


def pytorch_rank(rank, world, init_method, export_dir, mode, out_path, device_kind="cpu", shard_group=0):
    torch.set_num_threads(1)
    device = join_process_group(rank, world, init_method, device_kind)

    def train():
        c = json.load(open(os.path.join(export_dir, "config.json")))
        model = (Mlp if c["model"] == "mlp" else Gpt)(c)
        model.load_state_dict(torch.load(os.path.join(export_dir, "init.pt")))
        if lora_rank(c):
            freeze_all_but_adapters(model)
        model.to(device)
        model, opt = parallelize(model, c, mode, device, world, shard_group)
        data = torch.load(os.path.join(export_dir, "data.pt"))
        per = c["batch"] // world
        micro_batches = c.get("accumulate", 1)
        rows = per // micro_batches
        losses = []
        for step in range(c["steps"]):
            x = data["x"][step][rank * per:(rank + 1) * per].to(device)
            y = data["y"][step][rank * per:(rank + 1) * per].to(device)
            total = None
            for k in range(micro_batches):
                last = k == micro_batches - 1
                # Gradient accumulation as PyTorch does it: DDP's no_sync() and FSDP2's
                # set_requires_gradient_sync(False) for every micro-batch but the last.
                if mode in ("ddp", "ddp_zero_redundancy", "fsdp1_no_shard"):
                    sync = contextlib.nullcontext() if last else model.no_sync()
                else:
                    model.set_requires_gradient_sync(last)
                    sync = contextlib.nullcontext()
                with sync:
                    loss = model(x[k * rows:(k + 1) * rows], y[k * rows:(k + 1) * rows])
                    (loss / micro_batches if micro_batches > 1 else loss).backward()
                total = loss.detach() if total is None else total + loss.detach()
            opt.step()
            opt.zero_grad(set_to_none=True)
            g = (total / micro_batches if micro_batches > 1 else total).clone()
            dist.all_reduce(g)
            losses.append(g.item() / world)
        return {"losses": losses}

    report_and_exit(rank, out_path, train)


def report_and_exit(rank, out_path, train):
    """Runs `train` and has rank 0 write what it returns, or the traceback, to out_path as JSON."""
    try:
        result = train()
        if rank == 0:
            with open(out_path, "w") as f:
                json.dump(result, f)
    except Exception:
        if rank == 0:
            with open(out_path, "w") as f:
                json.dump({"error": traceback.format_exc()}, f)
        raise
    finally:
        dist.destroy_process_group()
    # Out without Python's teardown: freeing DDP's reducer after its gloo group can deadlock, the
    # group's destructor holding the GIL while gloo's thread waits for it to free a work item's
    # tensors (seen once in 80 runs: one rank of a world-3 ddp job stuck at exit).
    os._exit(0)


def split_qkv(state):
    """The engine's fused blocks.i.attn.qkv.weight as SplitQkvAttention's q, k and v (and back)."""
    out = {}
    for name, value in state.items():
        if name.endswith("attn.qkv.weight"):
            for part, rows in zip("qkv", value.chunk(3)):
                out[name.replace("qkv.weight", part + ".weight")] = rows
        else:
            out[name] = value
    return out


def fuse_qkv(state):
    out = {n: v for n, v in state.items() if not n.endswith(("attn.q.weight", "attn.k.weight", "attn.v.weight"))}
    for name in state:
        if name.endswith("attn.q.weight"):
            out[name.replace("q.weight", "qkv.weight")] = torch.cat(
                [state[name.replace("q.weight", p + ".weight")] for p in "qkv"])
    return out


def tensor_parallel_plan(model, c):
    """Megatron's split, as the engine's config/tensor_parallel.cpp lays it out."""
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel

    if c["model"] == "gpt" and c.get("sequence-parallel"):
        return sequence_parallel_plan(c)
    if c["model"] == "gpt":
        plan = {}
        for i in range(c["layers"]):
            for part in "qkv":
                plan[f"blocks.{i}.attn.{part}"] = ColwiseParallel()
            plan[f"blocks.{i}.attn.proj"] = RowwiseParallel()
            plan[f"blocks.{i}.mlp.fc"] = ColwiseParallel()
            plan[f"blocks.{i}.mlp.proj"] = RowwiseParallel()
        return plan
    linears = ["inp"] + [f"blocks.{i}" for i in range(c["layers"])] + ["head"]
    pairs = len(linears) // 2  # an odd head stays whole
    return {name: (ColwiseParallel() if k % 2 == 0 else RowwiseParallel())
            for k, name in enumerate(linears[:2 * pairs])}


def sequence_parallel_plan(c):
    """shardscope --sequence-parallel as torchtitan writes it: SequenceParallel on the norms, the
    residual stream a rank's tokens (Shard(1)) between blocks, gathered (Replicate) into attention
    and the MLP, reduce-scattered (Shard(1)) out of their projections; the embedding's output split
    into the first block, the final norm's gathered into the LM head (both whole here)."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel)

    def gather():
        return PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),))

    plan = {"blocks.0": PrepareModuleInput(input_layouts=(Replicate(),), desired_input_layouts=(Shard(1),),
                                           use_local_output=True),
            "ln_f": SequenceParallel(),
            "lm_head": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),),
                                          use_local_output=True)}
    for i in range(c["layers"]):
        plan[f"blocks.{i}.ln1"] = SequenceParallel()
        plan[f"blocks.{i}.attn"] = gather()
        for part in "qkv":
            plan[f"blocks.{i}.attn.{part}"] = ColwiseParallel()
        plan[f"blocks.{i}.attn.proj"] = RowwiseParallel(output_layouts=Shard(1))
        plan[f"blocks.{i}.ln2"] = SequenceParallel()
        plan[f"blocks.{i}.mlp"] = gather()
        plan[f"blocks.{i}.mlp.fc"] = ColwiseParallel()
        plan[f"blocks.{i}.mlp.proj"] = RowwiseParallel(output_layouts=Shard(1))
    return plan


def tensor_parallel_model(c):
    """The engine's model for a tensor-parallel plan: gpt's fused qkv as three Linears."""
    model = Mlp(c) if c["model"] == "mlp" else Gpt(c)
    if c["model"] == "gpt":
        for block in model.blocks:
            block.attn = SplitQkvAttention(c["hidden"], c["heads"])
    return model


def parallelize_tensor_parallel(model, c, mode, world, tp, shard_group=0, device_type="cpu"):
    """DTensor TP over mesh["tp"], then FSDP2 over mesh["dp"] (reshard after forward as `mode`
    says), as torchtitan composes them; with `shard_group` S, HSDP over a 3-D mesh's
    ("dp_replicate", "dp_shard") instead, torchtitan's layout. And the optimizer. Also
    bench/cpu_strategies.py's."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import parallelize_module

    if shard_group:
        mesh = init_device_mesh(device_type, (world // tp // shard_group, shard_group, tp),
                                mesh_dim_names=("dp_replicate", "dp_shard", "tp"))
        data = mesh["dp_replicate", "dp_shard"]
    else:
        mesh = init_device_mesh(device_type, (world // tp, tp), mesh_dim_names=("dp", "tp"))
        data = mesh["dp"]
    parallelize_module(model, mesh["tp"], tensor_parallel_plan(model, c))
    reshard = mode.endswith("reshard_true")
    for block in model.blocks:
        fully_shard(block, mesh=data, reshard_after_forward=reshard)
    fully_shard(model, mesh=data, **({} if reshard else {"reshard_after_forward": False}))
    return model, make_optimizer(c, list(model.parameters()))


def pytorch_tp_rank(rank, world, init_method, export_dir, mode, out_path, tp, shard_group=0, device_kind="cpu"):
    """One rank of DTensor TP inside FSDP2: parallelize_module over mesh["tp"], then fully_shard over
    mesh["dp"]; its tensor group shares one slice of the batch. Gloo on CPU, NCCL on a GPU."""
    torch.set_num_threads(1)
    # full_tensor() of a parameter sharded on both dimensions warns, on every rank, that it gathers
    # in two all-gathers; it is the export only, not the training compared.
    import logging
    logging.getLogger("torch.distributed.tensor._redistribute").setLevel(logging.ERROR)
    device = join_process_group(rank, world, init_method, device_kind)

    def train():
        c = json.load(open(os.path.join(export_dir, "config.json")))
        model = tensor_parallel_model(c)
        model.load_state_dict(split_qkv(torch.load(os.path.join(export_dir, "init.pt"))))
        model.to(device)
        model, opt = parallelize_tensor_parallel(model, c, mode, world, tp, shard_group, device.type)
        data = torch.load(os.path.join(export_dir, "data.pt"))
        per, dp = c["batch"] // (world // tp), rank // tp
        losses = []
        for step in range(c["steps"]):
            rows = slice(dp * per, (dp + 1) * per)
            loss = model(data["x"][step][rows].to(device), data["y"][step][rows].to(device))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            g = loss.detach().clone()
            dist.all_reduce(g)
            losses.append(g.item() / world)
        final = {n: (v.full_tensor() if hasattr(v, "full_tensor") else v).cpu() for n, v in model.state_dict().items()}
        if rank == 0:
            torch.save(fuse_qkv(final), out_path + ".pt")
        return {"losses": losses, "final": out_path + ".pt"}

    report_and_exit(rank, out_path, train)


# ---- pipelines -----------------------------------------------------------------------------------


class GptStage(nn.Module):
    """One pipeline stage of Gpt: blocks [first, first + count), with the embeddings on the first
    stage and the final norm and head on the last, as the engine splits it (config/pipeline_schedule.h).
    The last returns the logits; the schedule's loss_fn takes the loss as the engine does."""

    def __init__(self, whole, first, count, is_first, is_last):
        super().__init__()
        self.is_first, self.is_last = is_first, is_last
        if is_first:
            self.wte, self.wpe = whole.wte, whole.wpe
        self.blocks = nn.ModuleList(whole.blocks[first:first + count])
        if is_last:
            self.ln_f, self.lm_head = whole.ln_f, whole.lm_head

    def forward(self, h):
        if self.is_first:
            h = self.wte(h) + self.wpe(torch.arange(h.shape[1], device=h.device))
        for block in self.blocks:
            h = block(h)
        if self.is_last:
            logits = self.lm_head(self.ln_f(h))
            return logits.view(-1, logits.shape[-1])
        return h


def stage_blocks(blocks, stages):
    """Stage k's blocks as the engine gives them: [k*L/S, (k+1)*L/S)."""
    return [(k * blocks // stages, (k + 1) * blocks // stages - k * blocks // stages) for k in range(stages)]


# The schedules whose backward is split (I, then W). PyTorch 2.11 loses their blocks' weight gradients
# under FSDP2's reshard_after_forward=True: its I step (stage_backward_input(..., submod.parameters()),
# pipelining/stage.py) is handed the resharded DTensors, not the unsharded weights the autograd graph
# holds, so a micro-batch whose I follows a forward gets no weight gradient (on the last stage, none
# does). Their blocks keep their weights unsharded after forward here (reshard_after_forward=False, as
# torchtitan sets under pipelining), which trains as 1F1B does; docs/parity.md.
SPLIT_BACKWARD = ("zero_bubble", "zbv", "dualpipev")


def without_sends_to_itself(stage):
    """The stage's first exchange with its neighbours, less any with its own rank. PyTorch's
    _initialize_stages first sends to and receives from every stage's neighbours, to set NCCL's
    communicators up; in a V (zbv, dualpipev) a stage's neighbour can be on its own rank, and Gloo
    cannot send to itself ("Pair is not connected"). The schedule itself passes those tensors
    locally (set_local_fwd_input), so only this warm-up is trimmed."""
    own = dist.get_rank()
    neighbours = stage._get_init_p2p_neighbors_ops
    stage._get_init_p2p_neighbors_ops = lambda: [op for op in neighbours() if op.peer != own]


def pipeline_rank(rank, world, init_method, export_dir, out_path, schedule, pp, stages_per_rank, strategy,
                  device_kind="cpu"):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining import schedules as pipeline_schedules

    torch.set_num_threads(1)
    device = join_process_group(rank, world, init_method, device_kind)

    def train():
        c = json.load(open(os.path.join(export_dir, "config.json")))
        whole = Gpt(c)
        whole.load_state_dict(torch.load(os.path.join(export_dir, "init.pt")))
        dp = world // pp
        # torchtitan's mesh: (pp, dp), each stage's ranks a contiguous block; HSDP's data ranks in
        # shard groups of 2 (the engine's default at dp 4).
        if strategy == "hybrid_shard":
            mesh = init_device_mesh(device.type, (pp, dp // 2, 2), mesh_dim_names=("pp", "dp_replicate", "dp_shard"))
            data_mesh = mesh["dp_replicate", "dp_shard"]
        else:
            mesh = init_device_mesh(device.type, (pp, dp), mesh_dim_names=("pp", "dp"))
            data_mesh = mesh["dp"]
        pipe_rank = rank // dp
        n_stages = pp * stages_per_rank
        split = stage_blocks(c["layers"], n_stages)
        # Looped: stages r, r + P, ...; zbv's V: r and 2P - 1 - r.
        held = [pipe_rank, 2 * pp - 1 - pipe_rank] if schedule in ("zbv", "dualpipev") else \
            [pipe_rank + v * pp for v in range(stages_per_rank)]
        stages, params = [], []
        for k in held:
            module = GptStage(whole, *split[k], k == 0, k == n_stages - 1).to(device)
            if strategy in ("full_shard", "hybrid_shard"):
                from torch.distributed.fsdp import fully_shard
                for block in module.blocks:
                    fully_shard(block, mesh=data_mesh, reshard_after_forward=schedule not in SPLIT_BACKWARD)
                fully_shard(module, mesh=data_mesh)
            params += list(module.parameters())
            stages.append(PipelineStage(module, k, n_stages, device, group=mesh["pp"].get_group()))
            if device.type == "cpu":
                without_sends_to_itself(stages[-1])
        loss_fn = lambda logits, y: F.cross_entropy(logits.float(), y.reshape(-1))
        m = c["microbatches"]
        cls = {"gpipe": pipeline_schedules.ScheduleGPipe, "1f1b": pipeline_schedules.Schedule1F1B,
               "interleaved_1f1b": pipeline_schedules.ScheduleInterleaved1F1B,
               "zero_bubble": pipeline_schedules.ScheduleInterleavedZeroBubble,
               "zbv": pipeline_schedules.ScheduleZBVZeroBubble,
               "dualpipev": pipeline_schedules.ScheduleDualPipeV}[schedule]
        runner = cls(stages if stages_per_rank > 1 else stages[0], m, loss_fn=loss_fn)
        opt = make_optimizer(c, params)
        data = torch.load(os.path.join(export_dir, "data.pt"))
        dp_rank = rank % dp
        per = c["batch"] // dp
        holds_loss = n_stages - 1 in held
        losses = []
        for step in range(c["steps"]):
            x = data["x"][step][dp_rank * per:(dp_rank + 1) * per].to(device)
            y = data["y"][step][dp_rank * per:(dp_rank + 1) * per].to(device)
            step_losses = []
            if pipe_rank == 0 and holds_loss:
                runner.step(x, target=y, losses=step_losses)
            elif pipe_rank == 0:
                runner.step(x)
            elif holds_loss:
                runner.step(target=y, losses=step_losses)
            else:
                runner.step()
            opt.step()
            opt.zero_grad(set_to_none=True)
            g = torch.stack(step_losses).mean().reshape(1) if holds_loss else torch.zeros(1, device=device)
            dist.all_reduce(g)
            losses.append(g.item() / dp)
        return {"losses": losses}

    report_and_exit(rank, out_path, train)


# (schedule, world, pp, stages per rank, strategy, micro-batches). zbv and dualpipev are V schedules:
# over Gloo PyTorch's side runs with its warm-up's sends to its own rank trimmed (without_sends_to_itself).
PIPELINE_CASES = [("gpipe", 2, 2, 1, "ddp", 4), ("1f1b", 2, 2, 1, "ddp", 4), ("interleaved_1f1b", 2, 2, 2, "ddp", 4),
                  ("zero_bubble", 2, 2, 2, "ddp", 4),
                  ("zbv", 2, 2, 2, "ddp", 4), ("dualpipev", 2, 2, 2, "ddp", 4), ("dualpipev", 3, 3, 2, "ddp", 6),
                  ("1f1b", 3, 3, 1, "ddp", 3), ("1f1b", 4, 2, 1, "full_shard", 4), ("zbv", 4, 2, 2, "full_shard", 4),
                  ("dualpipev", 4, 2, 2, "full_shard", 4),
                  ("1f1b", 8, 2, 1, "hybrid_shard", 2)]
# On NCCL, what it adds to Gloo's checks (its point-to-point between ranks sharing a GPU, a V's sends
# to a stage's own rank, FSDP2's collectives beside them), within a device session's few minutes.
PIPELINE_CASES_NCCL = [case for case in PIPELINE_CASES if case[1] == 2 or case[4] == "full_shard"]


def compare_pipelines(args):
    """shardscope --pp against torch.distributed.pipelining, case by case, on the device asked for."""
    failures = 0
    cases = PIPELINE_CASES_NCCL if args.device == "cuda" else PIPELINE_CASES
    where = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    print(f"torch {torch.__version__} on {where}, pipelines; tolerance: relative {TOLERANCE} on each step's global "
          f"mean loss")
    for schedule, world, pp, v, strategy, m in cases:
        failures += not compare_pipeline(args, schedule, world, pp, v, strategy, m)
    print(f"{len(cases) - failures} passed, {failures} failed")
    return 1 if failures else 0


def compare_pipeline(args, schedule, world, pp, v, strategy, m):
    """One case: shardscope's run exported, PyTorch's on the same start, their losses compared."""
    export = os.path.join(args.workdir, f"gpt_pp{pp}_w{world}_{schedule}_{strategy}_{args.device}")
    dp = world // pp
    cmd = [args.shardscope, "run", "--model", "gpt", "--layers", str(pp * v + 1), "--hidden", "12", "--heads",
           "3", "--seq", "5", "--vocab", "11", "--strategy", strategy, "--world", str(world), "--pp", str(pp),
           "--schedule", schedule, "--microbatches", str(m), "--batch", str(m * dp * 2), "--steps",
           str(args.steps), "--lr", "0.01", "--seed", "3", "--export", export, "--device", args.device]
    if v > 1:
        cmd += ["--stages-per-rank", str(v)]
    label = f"gpt world {world} pp {pp} v {v} {schedule:16s} {strategy:10s}"
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"FAIL {label}: shardscope failed\n{run.stdout}{run.stderr}")
        return False
    # From the fork server on NCCL too: it has imported torch but never touched CUDA (main() preloads it).
    theirs = launch_ranks(world, pipeline_rank,
                          lambda init_method, out: (world, init_method, export, out, schedule, pp, v, strategy,
                                                    args.device))
    if "error" in theirs:
        print(f"FAIL {label}: PyTorch raised:\n{theirs['error']}")
        return False
    rel, ref = loss_difference(export, theirs)
    ok = rel <= TOLERANCE
    print(f"{'ok  ' if ok else 'FAIL'} {label}: max rel diff {rel:.2e}  losses {' '.join(f'{x:.6f}' for x in ref.tolist())}")
    return ok


def rendezvous(directory):
    """A fresh file for the ranks to meet through (a FileStore): a port picked free and released
    could be taken by another process before rank 0's TCPStore bound it (EADDRINUSE, seen in a full run)."""
    os.makedirs(directory, exist_ok=True)
    return "file://" + os.path.join(os.path.abspath(directory), f"rendezvous-{uuid.uuid4().hex}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_ranks(world, rank_fn, args_of, start_method="forkserver"):
    """Runs rank_fn(rank, *args_of(init_method, out_path)) on `world` processes; what rank 0 wrote to
    out_path (report_and_exit), or the error."""
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    meeting = tempfile.mkdtemp(prefix="parity-rendezvous-")
    try:
        mp.start_processes(rank_fn, args=args_of(rendezvous(meeting), out), nprocs=world, start_method=start_method)
    except Exception:  # the rank's own traceback is in `out`
        pass
    result = json.load(open(out)) if os.path.getsize(out) else {"error": "no result written"}
    os.unlink(out)
    shutil.rmtree(meeting, ignore_errors=True)
    return result


def run_pytorch(world, export_dir, mode, device_kind="cpu", shard_group=0, tp=0):
    # CPU ranks come from a fork server that has imported torch and its distributed modules
    # once (main() preloads them): spawning re-imported them in every rank (5 s of CPU each,
    # about half of this script's time on 2 cores). Not forked from this process: it has run
    # tensor code, and a child forked from a process with threads can inherit a held lock (a
    # rank once hung so). CUDA ranks are spawned, as a process that has touched CUDA cannot fork.
    def args_of(init_method, out):
        tail = (tp, shard_group, device_kind) if tp else (device_kind, shard_group)
        return (world, init_method, export_dir, mode, out) + tail

    return launch_ranks(world, pytorch_tp_rank if tp else pytorch_rank, args_of,
                        "spawn" if device_kind == "cuda" else "forkserver")


def loss_difference(export, theirs):
    """The largest relative difference of the engine's per-step losses from PyTorch's, and PyTorch's."""
    ours = torch.load(os.path.join(export, "losses.pt")).double()
    ref = torch.tensor(theirs["losses"], dtype=torch.float64)
    return ((ours - ref).abs() / ref.abs()).max().item(), ref


# ---- comparison ---------------------------------------------------------------------------------

MODELS = {
    "mlp": ["--model", "mlp", "--layers", "3", "--hidden", "13", "--features", "7", "--classes", "5"],
    "gpt": ["--model", "gpt", "--layers", "2", "--hidden", "12", "--heads", "3", "--seq", "5",
            "--vocab", "11"],
    # LoRA: frozen base weights, trained rank-2 adapters (PEFT-style) on every block matrix.
    "gpt_lora": ["--model", "gpt", "--layers", "2", "--hidden", "12", "--heads", "3", "--seq", "5",
                 "--vocab", "11", "--lora-rank", "2"],
    # Plain SGD: unlike Adam, it moves by the gradient's scale, so a wrong averaging factor shows.
    "mlp_sgd": ["--model", "mlp", "--layers", "3", "--hidden", "13", "--features", "7", "--classes", "5",
                "--optimizer", "sgd"],
    # Gradient accumulation: 2 micro-batches per step, reduced after the last (no_sync).
    "gpt_accumulate": ["--model", "gpt", "--layers", "2", "--hidden", "12", "--heads", "3", "--seq", "5",
                       "--vocab", "11", "--accumulate", "2"],
}
PAIRS = [("ddp", "ddp"), ("no_shard", "fsdp1_no_shard"), ("zero1", "ddp_zero_redundancy"), ("full_shard", "fsdp2_reshard_true"),
         ("shard_grad_op", "fsdp2_reshard_false")]
HSDP_PAIRS = [("hybrid_shard", "hsdp_reshard_true"), ("hybrid_shard_zero2", "hsdp_reshard_false")]


TP_PAIRS = [("full_shard", "tp_fsdp2_reshard_true"), ("shard_grad_op", "tp_fsdp2_reshard_false")]
TP_HSDP_PAIRS = [("hybrid_shard", "tp_hsdp_reshard_true"), ("hybrid_shard_zero2", "tp_hsdp_reshard_false")]
WEIGHT_TOLERANCE = 1e-4  # Adam turns last-bit differences of near-zero gradients into visible steps


def tensor_parallel_models(tp):
    """Sizes each tensor group divides: gpt's heads, mlp's width; odd widths at --tp 3, where the
    mlp's 5 linears leave its head whole."""
    if tp % 3 == 0:
        return {"mlp": ["--model", "mlp", "--layers", "3", "--hidden", "15", "--features", "7", "--classes", "5"],
                "gpt": ["--model", "gpt", "--layers", "2", "--hidden", "15", "--heads", "3", "--seq", "5",
                        "--vocab", "11"]}
    return {"mlp": ["--model", "mlp", "--layers", "2", "--hidden", "14", "--features", "7", "--classes", "5"],
            "gpt": ["--model", "gpt", "--layers", "2", "--hidden", "12", "--heads", "6", "--seq", "5",
                    "--vocab", "11"]}


def weights_difference(export, final_path):
    """The largest of max |ours - theirs| / max |theirs| over the final weights, and its name."""
    ours, theirs = torch.load(os.path.join(export, "final.pt")), torch.load(final_path)
    if sorted(ours) != sorted(theirs):
        return float("inf"), f"names differ: {sorted(set(ours) ^ set(theirs))}"
    worst = max(((ours[n] - theirs[n]).abs().max() / theirs[n].abs().max().clamp_min(1e-12)).item() for n in ours)
    return worst, ""


def compare_tensor_parallel(args):
    """shardscope --tp against DTensor TP + FSDP2 at each world:N of --tp-meshes."""
    failures = total = 0
    where = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    print(f"torch {torch.__version__} on {where}, tensor parallel; tolerance: relative {TOLERANCE} on each step's "
          f"global mean loss, {WEIGHT_TOLERANCE} on each final weight")
    for world, tp, shard_group in parse_tp_meshes(args.tp_meshes):
        models = tensor_parallel_models(tp)
        if args.sequence_parallel:  # gpt's only; 6 tokens split 2 or 3 ways
            gpt = models["gpt"]
            gpt[gpt.index("--seq") + 1] = "6"
            models = {"gpt": gpt + ["--sequence-parallel"]}
        for model, model_args in models.items():
            for strategy, mode in TP_HSDP_PAIRS if shard_group else TP_PAIRS:
                total += 1
                export = os.path.join(args.workdir, f"{model}_w{world}_tp{tp}_{strategy}")
                cmd = [args.shardscope, "run", *model_args, "--strategy", strategy, "--world", str(world),
                       "--tp", str(tp), "--batch", str(4 * world // tp), "--steps", str(args.steps),
                       "--lr", "0.01", "--seed", "3", "--export", export, "--device", args.device]
                if shard_group:
                    cmd += ["--shard-group-size", str(shard_group)]
                run = subprocess.run(cmd, capture_output=True, text=True)
                label = (f"{model:4s} world {world} tp {tp}{' sp' if args.sequence_parallel else ''} {strategy:13s} "
                         f"vs PyTorch {mode:22s}")
                if run.returncode != 0:
                    print(f"FAIL {label}: shardscope failed\n{run.stdout}{run.stderr}")
                    failures += 1
                    continue
                theirs = run_pytorch(world, export, mode, args.device, shard_group=shard_group, tp=tp)
                if "error" in theirs:
                    print(f"FAIL {label}: PyTorch raised:\n{theirs['error']}")
                    failures += 1
                    continue
                rel, ref = loss_difference(export, theirs)
                weights, why = weights_difference(export, theirs["final"])
                os.unlink(theirs["final"])
                ok = rel <= TOLERANCE and weights <= WEIGHT_TOLERANCE
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {label}: max rel diff {rel:.2e}, weights {weights:.2e}{why}  "
                      f"losses {' '.join(f'{v:.6f}' for v in ref.tolist())}")
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


def parse_tp_meshes(text):
    """'4:2,8:2:2' -> [(4, 2, 0), (8, 2, 2)]: world sizes, the tensor groups' size and, for the
    hybrid strategies, the shard groups' among the data ranks (0: the 1-D strategies)."""
    meshes = []
    for entry in text.split(","):
        parts = entry.split(":")
        numbers = [int(p) for p in parts if p.isdigit()]
        ok = len(parts) in (2, 3) and len(numbers) == len(parts) and all(numbers)
        world, tp, shard = (numbers + [0])[:3] if ok else (0, 0, 0)
        if not ok or world % tp or (shard and (world // tp) % shard) or shard >= max(1, world // tp):
            sys.exit(f"--tp-meshes: '{entry}' is not WORLD:N or WORLD:N:S with N dividing WORLD and S dividing "
                     f"WORLD/N below it (e.g. 4:2,8:2:2)")
        meshes.append((world, tp, shard))
    return meshes


def parse_meshes(text, option="--hsdp-meshes"):
    """'4:2,6:3' -> [(4, 2), (6, 3)]: world sizes and the group size (shard or tensor) at each."""
    meshes = []
    for entry in text.split(","):
        world, _, group = entry.partition(":")
        if not (world.isdigit() and group.isdigit()) or int(group) < 1 or int(world) % int(group):
            sys.exit(f"{option}: '{entry}' is not WORLD:N with N dividing WORLD (e.g. 4:2,6:3)")
        meshes.append((int(world), int(group)))
    return meshes


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shardscope", required=True, help="path of the shardscope binary")
    ap.add_argument("--workdir", required=True, help="directory for the exported runs")
    ap.add_argument("--worlds", default="2,3", help="comma-separated world sizes [2,3]")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated, of %s [all]" % ", ".join(MODELS))
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="cpu: Gloo ranks; cuda: NCCL ranks on the visible GPUs [cpu]")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                    help="bf16: shardscope --precision bf16 against FSDP2 with "
                         "MixedPrecisionPolicy(bf16, fp32), tolerance %g; DDP is left out (PyTorch's "
                         "DDP has no bf16-compute, fp32-reduce mode to compare with) [fp32]" % TOLERANCE_BF16)
    ap.add_argument("--hsdp", action="store_true",
                    help="compare the hybrid strategies against FSDP2 on a 2-D mesh, at --hsdp-meshes")
    ap.add_argument("--hsdp-meshes", default="4:2,6:3",
                    help="with --hsdp: WORLD:S pairs, S ranks per shard group [4:2,6:3]")
    ap.add_argument("--tp", action="store_true",
                    help="compare shardscope --tp against DTensor tensor parallelism inside FSDP2, at --tp-meshes")
    ap.add_argument("--tp-meshes", default="2:2,4:2,6:3",
                    help="with --tp: WORLD:N pairs, N ranks per tensor group, or WORLD:N:S for the hybrid strategies "
                         "with shard groups of S data ranks (DTensor TP + HSDP on a (dp_replicate, dp_shard, tp) "
                         "mesh) [2:2,4:2,6:3]")
    ap.add_argument("--sequence-parallel", action="store_true",
                    help="with --tp: gpt with --sequence-parallel against torchtitan's plan (SequenceParallel on "
                         "the norms, Shard(1) between blocks)")
    ap.add_argument("--offload", action="store_true",
                    help="with --device cuda: the sharded strategies with --offload cpu against FSDP2 with "
                         "CPUOffloadPolicy(pin_memory=True); the unsharded pairs are left out")
    ap.add_argument("--pp", action="store_true",
                    help="pipeline parallelism against torch.distributed.pipelining's schedules (on --device)")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda needs a CUDA GPU and none is visible here; run without it for CPU "
                 "ranks, or on a GPU machine (scripts/device_gpu.sh parity).")
    if args.pp:
        import multiprocessing
        multiprocessing.set_forkserver_preload(["torch", "torch.distributed.device_mesh", "torch.distributed.fsdp",
                                                "torch.distributed.pipelining", "__main__"])
        return compare_pipelines(args)
    if args.tp:
        import multiprocessing
        multiprocessing.set_forkserver_preload(["torch", "torch.distributed.device_mesh", "torch.distributed.fsdp",
                                                "torch.distributed.tensor.parallel", "__main__"])
        return compare_tensor_parallel(args)
    tolerance = TOLERANCE if args.precision == "fp32" else TOLERANCE_BF16
    # PyTorch's DDP has no bf16-compute, fp32-reduce mode: bf16 compares the FSDP pairs only.
    unsharded = ("ddp", "no_shard", "zero1")
    pairs = PAIRS if args.precision == "fp32" else [p for p in PAIRS if p[0] not in unsharded]
    if args.offload and args.device != "cuda":
        sys.exit("--offload moves a GPU rank's shards to host memory; it needs --device cuda (a CPU "
                 "run's state is in host memory already).")
    if args.offload:
        pairs = [p for p in pairs if p[0] not in unsharded]
    # (world, shard group size) per run; 0: not hybrid.
    meshes = [(int(w), 0) for w in args.worlds.split(",")]
    if args.hsdp:
        meshes = parse_meshes(args.hsdp_meshes)
        pairs = HSDP_PAIRS
    if args.device == "cpu":
        # The fork server imports these once; each rank imported them itself before (5 s of CPU).
        import multiprocessing
        multiprocessing.set_forkserver_preload(["torch", "torch.distributed.device_mesh", "torch.distributed.fsdp",
                                                "torch.distributed.optim", "torch.nn.parallel", "__main__"])
    failures = 0
    where = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    print(f"torch {torch.__version__} on {where}, {args.precision}{', offload cpu' if args.offload else ''}; tolerance: relative {tolerance} "
          f"on each step's global mean loss")
    models = args.models.split(",")
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        sys.exit(f"--models: {', '.join(unknown)} not known; choose from {', '.join(MODELS)}")
    for model in models:
        model_args = MODELS[model]
        for world, group in meshes:
            for strategy, mode in pairs:
                export = os.path.join(args.workdir, f"{model}_w{world}_{strategy}_{args.precision}")
                cmd = [args.shardscope, "run", *model_args, "--strategy", strategy, "--world", str(world),
                       "--batch", str(4 * world), "--steps", str(args.steps), "--lr", "0.01", "--seed", "3",
                       "--export", export, "--device", args.device, "--precision", args.precision]
                if group:
                    cmd += ["--shard-group-size", str(group)]
                if args.offload:
                    cmd += ["--offload", "cpu"]
                run = subprocess.run(cmd, capture_output=True, text=True)
                where = f"world {world}" + (f" S={group}" if group else "")
                label = f"{model:4s} {where} {strategy:13s} vs PyTorch {mode:20s}"
                if run.returncode != 0:
                    print(f"FAIL {label}: shardscope failed\n{run.stdout}{run.stderr}")
                    failures += 1
                    continue
                theirs = run_pytorch(world, export, mode, args.device, group)
                if "error" in theirs:
                    print(f"FAIL {label}: PyTorch raised:\n{theirs['error']}")
                    failures += 1
                    continue
                rel, ref = loss_difference(export, theirs)
                ok = rel <= tolerance
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {label}: max rel diff {rel:.2e}  "
                      f"losses {' '.join(f'{v:.6f}' for v in ref.tolist())}")
    total = len(models) * len(meshes) * len(pairs)
    print(f"{total - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
