#!/usr/bin/env python3
"""Thunder's FSDP forward and backward (real traces 22 and 23) compiled by
fp8cc, run on every rank of a machine's GPUs through fp8cc.torch, each rank
on its own input and its own shards of the parameters, against the same
steps written with torch.distributed (all_gather_into_tensor,
reduce_scatter_tensor, torch's linear and matmul) on the same tensors.

usage: python3 -m torch.distributed.run --nproc_per_node=N tests/gpu/test_collectives.py CARRYDIR
(CARRYDIR from tests/gpu/prepare.sh: extra/real_22.ptx, extra/pair_22_23.ptx;
the traces are written for 2 ranks, and skipped, said so, on another
number). Exit status 1 when a check fails.

The gathered weights are the shards' bits (an all-gather copies); the
layers' f32 GEMMs are cuBLASLt's in both (TF32 off), within 1e-5 relative;
the reduce-scattered gradients sum the ranks' f32 values in NCCL's order in
both, within 1e-5 relative.

And the fp8 all-gather, on any number of ranks (1 on one GPU): torchao's
fp8 linear layer with its weight gathered (bench/gather_ir.py, compiled
for this world size: extra/fp8_gather_rN.ptx, and without the shards pass,
gathering bf16: extra/bf16_gather_rN.ptx). The two give the same bits, and
torch's gather-then-quantize gives the fp8 weight and its scale bit for bit
(the layer within 1e-2, torch._scaled_mm's), also when one rank's shard
holds a NaN (every rank's scale NaN)."""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import fp8cc  # noqa: E402
import fp8cc.torch as ft  # noqa: E402
from torch_layer import layer, quantize  # noqa: E402  (torchao's recipe in torch; this folder)

fails = 0


def check(ok, what):
    global fails
    if dist.get_rank() == 0 or not ok:
        print(f"{'ok  ' if ok else 'FAILED'} rank {dist.get_rank()}: {what}", flush=True)
    fails += not ok


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()


def gather(t):
    out = torch.empty((t.shape[0] * dist.get_world_size(),) + tuple(t.shape[1:]), dtype=t.dtype, device=t.device)
    dist.all_gather_into_tensor(out, t)
    return out


def scatter(t):
    out = torch.empty((t.shape[0] // dist.get_world_size(),) + tuple(t.shape[1:]), dtype=t.dtype, device=t.device)
    dist.reduce_scatter_tensor(out, t)
    return out


def main():
    d = sys.argv[1]
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    torch.backends.cuda.matmul.allow_tf32 = False
    # fp8cc's communicator, from an id rank 0 makes
    ctx = fp8cc.default_context(rank)
    uid = [ctx.nccl_unique_id() if rank == 0 else None]
    dist.broadcast_object_list(uid, src=0)
    ctx.init_comm(uid[0], world, rank)
    check(ctx.comm == (world, rank), f"fp8cc's communicator: {ctx.comm}")

    fp8_gather(d, rank, world, dev)
    if world != 2:
        if rank == 0:
            print(f"SKIP traces 22 and 23: written for 2 ranks, this world has {world}", flush=True)
        finish()
    fsdp_traces(d, rank, world, dev)
    finish()


def finish():
    dist.barrier()
    dist.destroy_process_group()
    sys.exit(1 if fails else 0)


def fp8_gather(d, rank, world, dev):
    """the layer with its weight gathered, fp8 (shards.c) against bf16 and torch"""
    fp8 = ft.load(f"{d}/extra/fp8_gather_r{world}.ptx", device=rank)[0]
    bf16 = ft.load(f"{d}/extra/bf16_gather_r{world}.ptx", device=rank)[0]
    n, k = fp8.outputs[3].shape
    m = fp8.inputs[0].shape[0]
    w = (torch.randn(n, k, generator=torch.Generator().manual_seed(3)) / 8).to(torch.bfloat16)
    x = torch.randn(m, k, generator=torch.Generator().manual_seed(40 + rank)).to(torch.bfloat16).to(dev)
    for case in ("normal", "NaN"):
        shard = w.chunk(world)[rank].contiguous().to(dev)
        if case == "NaN" and rank == world - 1:
            shard[1, 2] = float("nan")
        a = dict(zip((o.name for o in fp8.outputs), fp8(x, shard)))
        b = dict(zip((o.name for o in bf16.outputs), bf16(x, shard)))
        wf = gather(shard)
        w8, sw = quantize(wf)
        torch.cuda.synchronize()
        check(all(torch.equal(a[o].reshape(-1).view(torch.uint8), b[o].reshape(-1).view(torch.uint8)) for o in a),
              f"fp8 all-gather ({case}): the same bits as gathering bf16 first, every output")
        ws = a["weight_scale"].reshape(())
        same_scale = torch.isnan(ws).item() and torch.isnan(sw).item() if case == "NaN" else \
            torch.equal(ws.reshape(-1).view(torch.int32), sw.reshape(-1).view(torch.int32))   # NaN payloads aside
        check(torch.equal(a["t223"].reshape(-1).view(torch.uint8), w8.reshape(-1).view(torch.uint8)) and same_scale,
              f"fp8 all-gather ({case}): the gathered fp8 weight and its scale as torch's gather-then-quantize, "
              f"bit for bit (scale {ws.item():.6g})")
        if case == "normal":
            err = rel(a["t122"].float(), layer(x, wf)[0].float())
            check(err <= 1e-2, f"fp8 all-gather: the layer as torch._scaled_mm's (relative Frobenius {err:.1e})")


def fsdp_traces(d, rank, world, dev):
    # the parameters from one seed, each rank its shards; the input its own
    g = torch.Generator().manual_seed(0)
    full = {"t_0_bias": torch.randn(64, generator=g), "t_2_bias": torch.randn(64, generator=g),
            "t_0_weight": torch.randn(64, 64, generator=g) / 8, "t_2_weight": torch.randn(64, 64, generator=g) / 8}
    args = {n: t.chunk(world)[rank].contiguous().to(dev) for n, t in full.items()}
    args["input"] = torch.randn(64, 64, generator=torch.Generator().manual_seed(10 + rank)).to(dev)

    # the forward alone (trace 22)
    f = ft.load(f"{d}/extra/real_22.ptx", device=rank)[0]
    outs = dict(zip((o.name for o in f.outputs), f(*(args[i.name] for i in f.inputs))))
    w0, b0, w2, b2 = (gather(args[n]) for n in ("t_0_weight", "t_0_bias", "t_2_weight", "t_2_bias"))
    t6 = F.linear(args["input"], w0, b0)
    t7 = t6 > 0
    t8 = torch.where(t7, t6, 0.0)
    t11 = F.linear(t8, w2, b2)
    torch.cuda.synchronize()
    check(torch.equal(outs["t10"], w2), "trace 22: the gathered weight t10 has the shards' bits")
    check(torch.equal(outs["t7"], t7), "trace 22: t7 (the ReLU's mask) as torch's")
    check(rel(outs["t8"], t8) <= 1e-5 and rel(outs["t11"], t11) <= 1e-5,
          f"trace 22: t8 and the output t11 as torch.distributed's (relative Frobenius "
          f"{rel(outs['t8'], t8):.1e}, {rel(outs['t11'], t11):.1e})")

    # the forward and backward as one program (22 + 23): the backward's four
    # reduce-scattered gradient shards
    prog = ft.load(f"{d}/extra/pair_22_23.ptx", device=rank)
    fwd, bwd = prog[0], prog[1]
    fouts = dict(zip((o.name for o in fwd.outputs), fwd(*(args[i.name] for i in fwd.inputs))))
    t0 = torch.randn(64, 64, generator=torch.Generator().manual_seed(20 + rank)).to(dev)
    grads = dict(zip((o.name for o in bwd.outputs), bwd(t0)))
    # trace 23, op by op
    x, t10 = args["input"], w2
    t53 = scatter(t0.sum(0) / 2.0)
    t30 = t0 @ t10
    t34 = t0.t() @ t8
    t39 = torch.where(t7, t30, 0.0)
    t56 = scatter(t39.sum(0) / 2.0)
    t38 = scatter(t34 / 2.0)
    t50 = scatter((t39.t() @ x) / 2.0)
    torch.cuda.synchronize()
    check(rel(fouts["t11"], t11) <= 1e-5, f"traces 22+23: the forward's output (relative Frobenius "
          f"{rel(fouts['t11'], t11):.1e})")
    for name, want in (("t53", t53), ("t56", t56), ("t38", t38), ("t50", t50)):
        err = rel(grads[name], want)
        check(err <= 1e-5, f"traces 22+23: the gradient shard {name} {tuple(want.shape)} as torch.distributed's "
              f"(relative Frobenius {err:.1e})")
    # again, for the same bits (a graph of the step, collectives included, when its pointers repeat)
    again = dict(zip((o.name for o in bwd.outputs), bwd(t0)))
    torch.cuda.synchronize()
    check(all(torch.equal(again[n], grads[n]) for n in grads), "traces 22+23: a second run, the same bits")


if __name__ == "__main__":
    main()
