"""A Thunder trace executed op by op with torch: the reference fp8cc's
results on real traces are compared with on the H200.

A trace as Thunder prints it is Python. Its top-level statements call torch
(`torch.nn.functional.linear`, `torch.reshape`, ...) or an executor's op
(`torch_slice_prim_impl`, `sdpafx_...`, `sdpaex_...`); a fusion region (`[a, b] =
nvFusion0(x, y)`) has its body only as comments under it, in Thunder's
prims. `source(text)` turns the trace into runnable Python: each region's
call is replaced by its body, uncommented; `namespace()` gives the names
the trace uses — `prims` in torch (the prims fusion regions of the real
traces use), the executor ops, a no-op `no_autocast`. `run(path, args)`
calls the trace's function.

The prims follow thunder/core/prims.py: broadcast_in_dim(a, shape, dims)
puts a's dims at `dims` of the result and expands; sum(a, dims) keeps a's
dtype; convert_element_type(a, dtype) is a cast; Python numbers are
promoted by torch as by Thunder.

usage: python3 tests/gpu/torch_trace.py TRACE   (checks that the trace
turns into Python that compiles; no GPU or torch needed)"""
import re
import sys
import types

_REGION = re.compile(r"^(\s+)(\[?[\w, ]+\]?) = (nvFusion\d+|TorchCompile\d+)\((.*)\)\s*$")


def source(text):
    """The trace as Python that torch runs: fusion regions inlined."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        m = _REGION.match(line)
        if not m:
            out.append(line)
            i += 1
            continue
        indent = m.group(1)
        body = indent + "  # "   # the region's body: comments one level deeper
        i += 1
        while i < len(lines) and lines[i].startswith(body):
            stmt = lines[i][len(body):]
            out.append(indent + stmt.split("  # ")[0].rstrip())   # the statement without its type comment
            i += 1
    return "\n".join(out)


def _prims(torch):
    p = types.SimpleNamespace()

    def broadcast_in_dim(a, shape, dims):
        view = [1] * len(shape)
        for d, n in zip(dims, a.shape):
            view[d] = n
        return a.reshape(view).expand(tuple(shape))

    p.broadcast_in_dim = broadcast_in_dim
    p.convert_element_type = lambda a, dt: a.to(dt) if isinstance(a, torch.Tensor) else dt(a)
    p.sum = lambda a, dims: a.sum(tuple(dims))
    p.add, p.sub, p.mul, p.div = torch.add, torch.sub, torch.mul, torch.div
    p.neg, p.exp, p.rsqrt, p.reciprocal = torch.neg, torch.exp, torch.rsqrt, torch.reciprocal
    p.reshape = lambda a, shape: a.reshape(tuple(shape))
    p.transpose = lambda a, perm: a.permute(tuple(perm))
    p.where = torch.where
    p.gt, p.lt, p.ge, p.le, p.eq, p.ne = torch.gt, torch.lt, torch.ge, torch.le, torch.eq, torch.ne
    p.slice_prim = lambda a, start, end, strides=None: _slice(a, start, end, strides)
    p.cat = lambda ts, dim: torch.cat(ts, dim)
    p.take = lambda a, idx, dim: torch.index_select(a, dim, idx)
    return p


def _slice(a, start, end, strides):
    strides = strides or [1] * len(start)
    return a[tuple(slice(s, e, st) for s, e, st in zip(start, end, strides))]


def namespace(torch):
    """The names a real trace uses, in torch."""
    import torch.nn.functional as F

    def flash_forward(q, k, v, dropout_p=0.0, is_causal=False, *, scale=None):
        # Thunder's meta: out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k,
        # philox_seed, philox_offset, debug_attn_mask
        r = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, return_debug_mask=False,
                                                               scale=scale)
        return tuple(r)

    def efficient_forward(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
        # Thunder's meta: out, logsumexp, philox_seed, philox_offset (no mask here)
        if attn_mask is not None:
            raise NotImplementedError("efficient attention with a mask")
        return tuple(torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, True, dropout_p, is_causal,
                                                                            scale=scale))

    thunder = types.ModuleType("thunder")
    ex = types.ModuleType("thunder.executors")
    tex = types.ModuleType("thunder.executors.torchex")
    tex.no_autocast = lambda fn=None: fn if fn is not None else (lambda f: f)   # @no_autocast and @no_autocast()
    sys.modules.setdefault("thunder", thunder)
    sys.modules.setdefault("thunder.executors", ex)
    sys.modules.setdefault("thunder.executors.torchex", tex)
    dtypes = types.SimpleNamespace(float32=torch.float32, float16=torch.float16, bfloat16=torch.bfloat16,
                                   float64=torch.float64, int64=torch.int64, int32=torch.int32, bool8=torch.bool,
                                   float8_e4m3fn=torch.float8_e4m3fn, float8_e5m2=torch.float8_e5m2)
    return {
        "torch": torch, "Tensor": torch.Tensor, "F": F, "prims": _prims(torch), "dtypes": dtypes,
        "torch_slice_prim_impl": _slice,
        "sdpafx_grad_forward_scaled_dot_product_efficient_attention": flash_forward,
        "sdpaex_grad_forward_scaled_dot_product_efficient_attention": efficient_forward,
        "no_autocast": tex.no_autocast,
    }


def function(text, torch):
    """The trace's function, ready to call."""
    name = re.search(r"^def (\w+)\(", text, re.M)
    if not name:
        raise ValueError("the trace defines no function")
    ns = namespace(torch)
    exec(compile(source(text), "<trace>", "exec"), ns)
    return ns[name.group(1)]


def run(path, args):
    import torch
    with open(path) as f:
        fn = function(f.read(), torch)
    with torch.no_grad():
        return fn(*args)


def main():
    with open(sys.argv[1]) as f:
        text = f.read()
    src = source(text)
    compile(src, sys.argv[1], "exec")
    regions = sum(1 for line in text.splitlines() if _REGION.match(line))
    print(f"{sys.argv[1]}: {regions} fusion regions inlined, {len(src.splitlines())} lines of Python")


if __name__ == "__main__":
    main()
