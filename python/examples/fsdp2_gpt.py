#!/usr/bin/env python3
"""A PyTorch FSDP2 job on the GPT that shardscope's engine trains (`--model gpt`), recorded per
rank with shardscope_record, to open beside shardscope's own run of the same model:

    torchrun --standalone --nproc-per-node 2 python/examples/fsdp2_gpt.py --out pt_job
    shardscope run --model gpt --layers 4 --hidden 128 --strategy full_shard --world 2 --steps 5 \\
        --trace ours.json
    shardscope view ours.json pt_job       # two sessions, one axis, one memory scale

The model is scripts/pytorch_parity.py's Gpt, the engine's GPT in PyTorch (the parity tests check
that both train to the same losses); each block is one FSDP2 unit, then the root, as shardscope's
full_shard wraps it. CPU ranks use gloo, GPU ranks NCCL. The defaults match the run above; the
options match shardscope's.
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))   # pytorch_parity: the engine's GPT
from pytorch_parity import Gpt  # noqa: E402

try:
    import shardscope_record
except ImportError:  # not installed (pip install ./python): the checkout's copy
    sys.path.insert(0, os.path.join(HERE, ".."))
    import shardscope_record


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="pt_job", help="the directory each rank writes its records into")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16, help="global batch in samples, split over the ranks")
    ap.add_argument("--steps", type=int, default=5, help="steps 2..4 are recorded (shardscope_record's default)")
    ap.add_argument("--reshard-after-forward", choices=("true", "false"), default="true",
                    help="true: FULL_SHARD (shardscope's full_shard); false: SHARD_GRAD_OP (shard_grad_op)")
    args = ap.parse_args()

    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    if args.batch % world:
        sys.exit(f"--batch {args.batch} does not split over {world} ranks: give a multiple of {world}")

    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)  # every rank builds the same model; fully_shard keeps each its slice
    config = {"layers": args.layers, "hidden": args.hidden, "heads": args.heads, "seq": args.seq,
              "vocab": args.vocab}
    model = Gpt(config).to(device)
    reshard = args.reshard_after_forward == "true"
    for block in model.blocks:
        fully_shard(block, reshard_after_forward=reshard)
    # The root left to FSDP2's default when resharding: it then keeps the root's parameters
    # (embeddings, final norm, head) gathered from forward into backward, which needs them at
    # once, as shardscope's full_shard does. Passed True explicitly, FSDP2 would gather them again.
    fully_shard(model, **({} if reshard else {"reshard_after_forward": False}))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    data = torch.Generator(device=device).manual_seed(rank)
    rec = shardscope_record.start(args.out, model=model, optimizer=optimizer)
    for _ in range(args.steps):
        x = torch.randint(0, args.vocab, (args.batch // world, args.seq), device=device, generator=data)
        y = torch.randint(0, args.vocab, (args.batch // world, args.seq), device=device, generator=data)
        model(x, y).backward()
        optimizer.step()
        optimizer.zero_grad()
        rec.step()
    rec.stop()
    dist.destroy_process_group()
    if rank == 0:
        print(f"fsdp2_gpt: {world} ranks' records in {args.out}: shardscope view {args.out}")


if __name__ == "__main__":
    main()
