#!/usr/bin/env python3
"""The fp8 all-gather: torchao's fp8 linear layer with an FSDP weight, its
weight's shards gathered in fp8 (fp8cc's shards pass) against the same
program gathering bf16 (compiled without the pass) and against torch
(torch.distributed's all_gather_into_tensor of bf16, then torchao's
recipe in torch ops and torch._scaled_mm), on every rank at once.

usage: python3 -m torch.distributed.run --nproc_per_node=N bench/bench_gather.py DIR [OUT.md]
DIR holds gather_MxKxN_fp8_rN.ptx and gather_MxKxN_bf16_rN.ptx
(tests/gpu/prepare.sh: bench/gather_ir.py for N ranks). Each figure: the
median over 30 runs of one rank's step between CUDA events, the ranks in
step (a barrier before each run): the collective's time is in it, as a
step's is. With one rank the gathers are local copies: the figures show
what the program costs beside its gathers, not the gathers' saving, which
needs two GPUs or more (NVLink multicast off: NCCL_NVLS_ENABLE=0)."""
import os
import statistics
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import fp8cc  # noqa: E402
import fp8cc.torch as ft  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "gpu"))
from torch_layer import layer  # noqa: E402  (torchao's recipe in torch ops)

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]


def timed(fn, reps=30):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        dist.barrier()
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000)
    return statistics.median(times)


def main():
    d = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else None
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    ctx = fp8cc.default_context(rank)
    uid = [ctx.nccl_unique_id() if rank == 0 else None]
    dist.broadcast_object_list(uid, src=0)
    ctx.init_comm(uid[0], world, rank)
    rows = [f"\n### fp8 all-gather, {world} rank(s) ({torch.cuda.get_device_name()})\n",
            "| M×K×N | bf16 gathered, fp8 gathered (MiB a rank) | fp8cc, fp8 gather µs | fp8cc, bf16 gather µs "
            "| torch eager µs | fp8 / bf16 | fp8cc fp8 / torch |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for m, k, n in SHAPES:
        name = f"gather_{m}x{k}x{n}"
        fp8 = ft.load(f"{d}/{name}_fp8_r{world}.ptx", device=rank)[0]
        bf16 = ft.load(f"{d}/{name}_bf16_r{world}.ptx", device=rank)[0]
        x = torch.randn(m, k, device=dev).to(torch.bfloat16)
        shard = (torch.randn(n // world, k, device=dev) / 8).to(torch.bfloat16)
        outs = [torch.empty(o.shape, dtype=ft.DTYPE[o.dtype], device=dev) for o in fp8.outputs]
        full = torch.empty(n, k, dtype=torch.bfloat16, device=dev)

        def torch_step():
            dist.all_gather_into_tensor(full, shard)
            return layer(x, full)

        t_fp8 = timed(lambda: fp8(x, shard, out=outs))
        t_bf16 = timed(lambda: bf16(x, shard, out=outs))
        t_torch = timed(torch_step)
        mib = n * k / 2**20
        rows.append(f"| {m}×{k}×{n} | {2 * mib:.0f}, {mib:.0f} | {t_fp8:.1f} | {t_bf16:.1f} | {t_torch:.1f} | "
                    f"{t_fp8 / t_bf16:.2f} | {t_fp8 / t_torch:.2f} |")
    if rank == 0:
        text = "\n".join(rows) + "\n"
        print(text)
        if out:
            with open(out, "a") as f:
                f.write(text)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
