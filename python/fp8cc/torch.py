"""fp8cc with PyTorch: programs that take and give torch tensors on torch's
current stream, with outputs and workspaces from torch's caching
allocator; torch implementations of the executor ops real Thunder traces
call (attention, apex cross entropy); and Function, a
torch.autograd.Function over a compiled forward+backward pair.

    import fp8cc.torch as ft
    prog = ft.load("fused.ptx")                 # externs of real traces registered
    y, = prog(x, w)                             # on torch.cuda.current_stream()
    step = ft.Function("step.ptx")              # fp8cc fwd.trace bwd.trace -o step.ptx
    loss = step(x, *params).sum(); loss.backward()
"""
import struct

import torch
import torch.nn.functional as F

import fp8cc

DTYPE = {"b8": torch.bool, "u8": torch.uint8, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32,
         "i64": torch.int64, "f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
         "f64": torch.float64, "f8e4m3fn": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}
NAME = {v: k for k, v in DTYPE.items()}
# a torch dtype of the same width that __cuda_array_interface__ spells
_CARRIER = {"bf16": ("<i2", torch.int16), "f8e4m3fn": ("|u1", torch.uint8), "f8e5m2": ("|u1", torch.uint8)}
_TYPESTR = {"b8": "|b1", "u8": "|u1", "i8": "|i1", "i16": "<i2", "i32": "<i4", "i64": "<i8", "f16": "<f2",
            "f32": "<f4", "f64": "<f8"}


def _describe(t):
    if not t.is_cuda:
        raise ValueError(f"a tensor on {t.device}, not on a CUDA device")
    if not t.is_contiguous():
        raise ValueError(f"a {NAME.get(t.dtype, t.dtype)}{list(t.shape)} tensor that is not contiguous: "
                         ".contiguous() it first")
    dt = NAME.get(t.dtype)
    if dt is None:
        raise ValueError(f"a {t.dtype} tensor, which fp8cc does not take")
    return t.data_ptr(), dt, tuple(t.shape), None


fp8cc.describers.insert(0, (torch.Tensor, _describe))


class _Memory:
    def __init__(self, ptr, typestr, shape):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": None, "version": 3}


def tensor(view, device=None):
    """A torch tensor over an extern's View (no copy)."""
    typestr, carrier = _CARRIER[view.dtype] if view.dtype in _CARRIER else (_TYPESTR[view.dtype], None)
    t = torch.as_tensor(_Memory(view.ptr, typestr, view.shape), device=device or "cuda")
    return t.view(DTYPE[view.dtype]) if carrier is not None else t


def _device(device):
    d = torch.device(device if device is not None else "cuda")
    return d.index if d.index is not None else torch.cuda.current_device()


def load(source, device=None, externs=True, graphs=True, context=None):
    """fp8cc.load with torch: outputs from torch.empty and the functions'
    workspaces from torch's allocator (kept by the program), calls on the
    current torch stream, and (externs=True) the torch implementations of
    EXTERNS registered first; externs may also be a dict of more. The
    program goes into `context`, by default the device's default context,
    which every load shares: a context's programs run on one thread at a
    time and their work in one order (libfp8rt's rule), so a thread that
    runs on a stream of its own beside another loads its programs into an
    fp8cc.Context of its own."""
    if context is not None:
        index = context.device
        if device is not None and _device(device) != index:
            raise ValueError(f"load: device {device}, but the context is device {index}'s")
    else:
        index = _device(device)
    ctx = context or fp8cc.default_context(index)
    table = dict(EXTERNS) if externs is True else {}
    if isinstance(externs, dict):
        table.update(externs)
    if externs is not False:
        # torch's own functions, for the torch executor's ops that the trace
        # printed without subsymbols (torch.mul, torch.nn.functional.embedding)
        sig = fp8cc.read(source)
        for name in sig.externs:
            fn = _torch_function(name)
            if name not in table and fn is not None:
                table[name] = _torch_op(name, fn)
        sig.close()
    prog = fp8cc.load(source, context=ctx, externs={n: (f, False) for n, f in table.items()}, graphs=graphs)
    dev = torch.device("cuda", index)
    prog.allocator = lambda dt, shape: torch.empty(shape, dtype=DTYPE[dt], device=dev)
    # the current stream's handle, per call: torch's raw getter (what
    # torch.compile's generated code calls) makes no Stream object
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    prog.stream = (lambda: raw(index)) if raw else (lambda: torch.cuda.current_stream(dev).cuda_stream)
    for f in prog.functions:
        f.__class__ = _quick_class(f, raw, index)
        if f.workspace_bytes:
            f.set_workspace(torch.empty(f.workspace_bytes, dtype=torch.uint8, device=dev))
    return prog


def _renew(env, tensors):
    """guard(*tensors) for the next calls: torch's own check, in C++, that
    each tensor has the type, dispatch keys, dtype, device, sizes and strides
    of these (torch._C._dynamo.guards.TensorGuards, what torch.compile's
    guards call), once these have passed the quick path's checks in Python;
    no guard ever again where this torch has no TensorGuards that takes
    these (a private API: its arguments have changed before). True, for
    the caller's test."""
    env["guard"] = None
    try:
        g = torch._C._dynamo.guards.TensorGuards(*tensors, dynamic_dims_sizes=[list(t.shape) for t in tensors],
                                                 dynamic_dims_strides=[list(t.stride()) for t in tensors])
        if g.check(*tensors):
            env["guard"] = g.check
            return True
    except Exception:
        pass
    env["renew"] = lambda *ts: True
    return True


def _quick_class(f, raw, index):
    """A subclass of fp8cc.Function for f whose __call__ takes a quick path
    for a call with every output given, or none (then made here, by
    torch.empty on the program's device, or the input an output is), on
    torch's current stream and the default state: one expression checks
    exactly what f takes of each tensor (a torch.Tensor or Parameter, f's
    dtype and shape, on the program's device, contiguous) with the fewest
    attribute reads, one pack sets a prepared run's stream and pointers,
    and one ctypes call of one argument runs it, the GIL held. Once a call
    has passed the checks, torch's C++ guard of those tensors' metadata
    (_renew) checks the next calls instead, in one call for all of them.
    The 16-byte alignment is libfp8rt's check, the first it makes: a run it
    refuses with a misaligned pointer has enqueued nothing, and goes to the
    general path for its ValueError. Anything else unusual goes to Function.__call__,
    which checks it all and raises what is wrong. The class holds while the
    program is open and prog.stream is the getter it was made with
    (Program sets its functions back to Function when either changes), so
    the call tests neither. The method is written out for f's count of
    tensors, as namedtuple writes its class: a loop over the tensors costs
    as much again as the checks."""
    prog = f.program
    getter = prog.stream
    run, slots = f.prepared()
    ins, outs = [f"i{k}" for k in range(len(f.inputs))], [f"o{k}" for k in range(len(f.outputs))]
    every = ins + outs
    ptrs = [f"p{k}" for k in range(len(every))]
    env = {"T": torch.Tensor, "P": torch.nn.Parameter, "getter": getter, "slots": slots,
           "handle": run, "dev": index, "raw": raw, "run": fp8cc.N.holding_gil(fp8cc._lib, "fp8rt_prepared_run"),
           "check": fp8cc._check, "general": fp8cc.Function.__call__,
           "pack": struct.Struct(f"={1 + len(every)}Q").pack_into, "empty": torch.empty, "D": torch.device("cuda", index)}
    env["guard"], env["renew"] = None, lambda *ts: _renew(env, ts)
    tests = []
    for k, (x, info) in enumerate(zip(every, f.inputs + f.outputs)):
        env[f"d{k}"], env[f"s{k}"] = DTYPE[info.dtype], tuple(info.shape)
        tests.append(f"(type({x}) is T or type({x}) is P) and {x}.dtype is d{k} and {x}.shape == s{k} "
                     f"and {x}.get_device() == dev and {x}.is_contiguous()")
    # an output that is an input itself (a trace returning its argument) is
    # that input, as Function._bind makes it
    made = ", ".join(f"i{j}" if j is not None else f"empty(s{len(ins) + k}, dtype=d{len(ins) + k}, device=D)"
                     for k, j in enumerate(f.sources))
    lines = ["def __call__(self, *inputs, out=None, state=None, stream=None, in_place=False):",
             "    if not in_place and state is None and stream is None:",
             "        try:"]
    if ins:
        lines.append(f"            {', '.join(ins)}, = inputs")
    if outs:
        lines += ["            if out is None:",
                  f"                {', '.join(outs)}, = {made},",
                  "            else:",
                  f"                {', '.join(outs)}, = out"]
    lines += ["        except (TypeError, ValueError):",
              "            pass",
              "        else:"]
    body = [f"pack(slots, 0, {', '.join([('raw(dev)' if raw is not None else 'getter()')] + ptrs)})",
            "st = run(handle)",
            "if st:"]
    if every:
        body += [f"    if ({' | '.join(ptrs)}) & 15:",
                 "        return general(self, *inputs, out=out, state=state, stream=stream, in_place=in_place)"]
    body += ["    check(st)",
             "if out is None:",
             f"    return ({''.join(o + ', ' for o in outs)})",
             "return out if type(out) is tuple else tuple(out)"]
    if every:
        body = [f"if (guard is not None and guard({', '.join(every)})) or ({' and '.join(tests)} and "
                f"renew({', '.join(every)})):",
                f"    {', '.join(ptrs)} = {', '.join(x + '.data_ptr()' for x in every)}"] + ["    " + b for b in body]
    lines += ["            " + b for b in body]
    lines.append("    return general(self, *inputs, out=out, state=state, stream=stream, in_place=in_place)")
    exec("\n".join(lines), env)
    return type(f"Function_{f.index}", (fp8cc.Function,), {"__call__": env["__call__"], "__slots__": ()})


def _torch_attr(name):
    """the object of a dotted name under torch (torch.float32,
    torch.nn.functional.embedding; Thunder's ltorch.exp is torch.exp), or
    None"""
    if not name.startswith(("torch.", "ltorch.")):
        return None
    obj = torch
    for part in name.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _torch_function(name):
    """torch's function of a dotted name, or None"""
    fn = _torch_attr(name)
    return fn if callable(fn) else None


def _torch_arg(a):
    """an extern's argument for torch: a View as a tensor, a dotted name of
    torch's (torch.float32) as its object, tuples of these"""
    if isinstance(a, fp8cc.View):
        return tensor(a)
    if isinstance(a, fp8cc.Name):
        obj = _torch_attr(a) if a.startswith("torch.") else None
        return a if obj is None else obj
    if isinstance(a, tuple):
        return tuple(_torch_arg(x) for x in a)
    return a


def _torch_op(name, fn):
    """An extern that runs torch's own function of its name on the call's
    arguments as the trace wrote them; each result must have the dtype and
    shape the trace gave it (what the plan's outputs are)."""
    def run(call):
        r = fn(*(_torch_arg(a) for a in call.args), **{k: _torch_arg(v) for k, v in call.kwargs.items()})
        rs = tuple(r) if isinstance(r, (tuple, list)) else (r,)
        if len(rs) != len(call.outputs):
            raise ValueError(f"{name} gave {len(rs)} results, the trace {len(call.outputs)}")
        for dst, src in zip(call.outputs, rs):
            d = tensor(dst)
            if not isinstance(src, torch.Tensor) or src.dtype != d.dtype or tuple(src.shape) != tuple(d.shape):
                got = f"{src.dtype} {tuple(src.shape)}" if isinstance(src, torch.Tensor) else type(src).__name__
                raise ValueError(f"{name} gave {got} where the trace has {d.dtype} {tuple(d.shape)}")
            d.copy_(src)
    run.__name__ = run.__qualname__ = name
    return _on_stream(run)


# ---- externs: the executor ops of real traces, in torch ------------------------
#
# Each gets the call as the trace wrote it (fp8cc.ExternCall), runs torch's
# op on the call's stream, and copies the results into the outputs the
# plan made (typed by the op's meta in fp8cc: frontend/externs.c). They
# allocate, so they are registered as not capturable (graph=False).

def _bind(call, params):
    """the call's arguments by parameter name, defaults filled in; a name
    "a|input" is "a", which the call may also pass as input="""
    out, pos = {}, list(call.args)
    for spelled, default in params:
        names = spelled.split("|")
        name, given = names[0], [n for n in names if n in call.kwargs]
        if pos:
            out[name] = pos.pop(0)
        elif given:
            out[name] = call.kwargs[given[0]]
        elif default is not _REQUIRED:
            out[name] = default
        else:
            raise ValueError(f"{call.name}: missing argument '{name}'")
    if pos:
        raise ValueError(f"{call.name}: {len(pos)} arguments too many")
    return out


_REQUIRED = object()


def _t(x):
    return tensor(x) if isinstance(x, fp8cc.View) else x


def _put(dst, src):
    """src into dst: the same shape, or dst larger (padding, zeroed), or src
    without elements (an undefined result: dst zeroed)"""
    dst = tensor(dst)
    if src is None or not isinstance(src, torch.Tensor) or src.numel() == 0:
        dst.zero_()
    elif tuple(src.shape) == tuple(dst.shape) or src.numel() == dst.numel():
        dst.copy_(src.reshape(dst.shape))
    elif src.dim() > dst.dim() and src.numel() > dst.numel():
        # a newer torch's larger form of what the meta types as less (flash
        # attention's philox seed and offset: one uint64[2] RNG state now)
        flat = src.reshape(-1)[:dst.numel()]
        if flat.dtype != dst.dtype and flat.element_size() == dst.element_size():
            flat = flat.view(dst.dtype)
        dst.copy_(flat.reshape(dst.shape))
    else:
        dst.zero_()
        dst[tuple(slice(0, n) for n in src.shape)].copy_(src)


def _on_stream(fn):
    def run(call):
        s = torch.cuda.ExternalStream(call.stream) if call.stream else torch.cuda.default_stream()
        with torch.cuda.stream(s):
            fn(call)
    run.__name__, run.__doc__ = fn.__name__, fn.__doc__
    return run


Q, K, V = ("query", _REQUIRED), ("key", _REQUIRED), ("value", _REQUIRED)


@_on_stream
def flash_forward(call):
    a = _bind(call, [Q, K, V, ("dropout_p", 0.0), ("is_causal", False), ("scale", None)])
    q, k, v = (_t(a[n]) for n in ("query", "key", "value"))
    r = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, a["dropout_p"], a["is_causal"],
                                                           return_debug_mask=False, scale=a["scale"])
    # out, logsumexp, cum_seq_q, cum_seq_k, (max_q, max_k: Python ints), philox_seed, philox_offset, debug
    for dst, src in zip(call.outputs, (r[0], r[1], r[2], r[3], r[6], r[7], r[8])):
        _put(dst, src)


@_on_stream
def flash_backward(call):
    a = _bind(call, [("grad_out", _REQUIRED), Q, K, V, ("out", _REQUIRED), ("logsumexp", _REQUIRED),
                     ("cum_seq_q", _REQUIRED), ("cum_seq_k", _REQUIRED), ("max_q", _REQUIRED),
                     ("max_k", _REQUIRED), ("dropout_p", _REQUIRED), ("is_causal", _REQUIRED),
                     ("philox_seed", _REQUIRED), ("philox_offset", _REQUIRED), ("scale", None)])
    q = _t(a["query"])
    lse = _t(a["logsumexp"])[..., :q.shape[2]]   # the meta pads it to a multiple of 16
    empty = torch.empty(0, dtype=torch.int64, device=q.device)   # dense batches: no cumulative lengths
    g = torch.ops.aten._scaled_dot_product_flash_attention_backward(
        _t(a["grad_out"]), q, _t(a["key"]), _t(a["value"]), _t(a["out"]), lse.contiguous(), empty, empty,
        a["max_q"], a["max_k"], a["dropout_p"], a["is_causal"], _t(a["philox_seed"]), _t(a["philox_offset"]),
        scale=a["scale"])
    for dst, src in zip(call.outputs, g):
        _put(dst, src)


def _mask(m, q, k):
    return None if m is None else _t(m).expand(q.shape[0], q.shape[1], q.shape[2], k.shape[2])


@_on_stream
def efficient_forward(call):
    a = _bind(call, [Q, K, V, ("attn_mask", _REQUIRED), ("dropout_p", 0.0), ("is_causal", False),
                     ("scale", None)])
    q, k, v = (_t(a[n]) for n in ("query", "key", "value"))
    r = torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, _mask(a["attn_mask"], q, k), True,
                                                               a["dropout_p"], a["is_causal"], scale=a["scale"])
    for dst, src in zip(call.outputs, r):
        _put(dst, src)


@_on_stream
def efficient_backward(call):
    a = _bind(call, [("grad_out", _REQUIRED), Q, K, V, ("attn_mask", _REQUIRED), ("out", _REQUIRED),
                     ("logsumexp", _REQUIRED), ("philox_seed", _REQUIRED), ("philox_offset", _REQUIRED),
                     ("dropout_p", _REQUIRED), ("is_causal", False), ("scale", None)])
    q, k, v = (_t(a[n]) for n in ("query", "key", "value"))
    mask = _mask(a["attn_mask"], q, k)
    g = torch.ops.aten._scaled_dot_product_efficient_attention_backward(
        _t(a["grad_out"]), q, k, v, mask, _t(a["out"]), _t(a["logsumexp"]), _t(a["philox_seed"]),
        _t(a["philox_offset"]), a["dropout_p"], [True, True, True, mask is not None], a["is_causal"],
        scale=a["scale"])
    g = list(g)
    if mask is not None and g[3] is not None and g[3].shape != _t(a["attn_mask"]).shape:
        g[3] = g[3].sum(dim=1, keepdim=True)   # the mask was expanded over the heads
    for dst, src in zip(call.outputs, g):
        _put(dst, src)


def _cross_entropy(call, a):
    """apex's xentropy forward in torch: per-row losses (label smoothing as
    apex: (1 - s) on the target, s / C everywhere) and log-sum-exp"""
    x, target = _t(a["a"]), _t(a["target"])
    how, s = a["reduction"], a["label_smoothing"]
    xf = x.float()
    lse = torch.logsumexp(xf, dim=-1)
    picked = xf.gather(1, target.unsqueeze(1)).squeeze(1)
    losses = lse - (1 - s) * picked - s * xf.mean(dim=-1)
    if how == "mean":
        losses = losses.mean()
    elif how == "sum":
        losses = losses.sum()
    elif how != "none":
        raise ValueError(f"{call.name}: reduction {how!r}")
    _put(call.outputs[0], losses.to(x.dtype))
    if len(call.outputs) > 1:   # the older form gives the losses alone
        _put(call.outputs[1], lse.to(x.dtype))


def _cross_entropy_grad(call, a):
    g, x, target = _t(a["g"]), _t(a["a"]), _t(a["target"])
    s = a["label_smoothing"]
    p = torch.exp(x.float() - _t(a["max_log_sum_exp"]).float().unsqueeze(1))
    p -= s / x.shape[1]
    p.scatter_add_(1, target.unsqueeze(1), torch.full_like(p[:, :1], -(1 - s)))
    _put(call.outputs[0], (p * g.float().reshape(-1, 1)).to(x.dtype))


_CE = [("a", _REQUIRED), ("target", _REQUIRED)]


# torch's cross_entropy arguments, which older Thunder passed (fp8cc's meta
# refuses a weight, size_average, reduce or an ignore_index that is a class:
# frontend/externs.c)
_CE_TORCH = [("a|input", _REQUIRED), ("target", _REQUIRED), ("weight", None), ("size_average", None),
             ("ignore_index", -100), ("reduce", None), ("reduction", "mean"), ("label_smoothing", 0.0)]
_TORCH_ONLY = ("input", "weight", "size_average", "ignore_index", "reduce")


@_on_stream
def apex_cross_entropy(call):
    if len(call.args) + len(call.kwargs) > 4 or any(k in call.kwargs for k in _TORCH_ONLY):
        _cross_entropy(call, _bind(call, _CE_TORCH))
    else:
        _cross_entropy(call, _bind(call, _CE + [("reduction", "mean"), ("label_smoothing", 0.0)]))


@_on_stream
def apex_xentropy_forward(call):
    _cross_entropy(call, _bind(call, _CE_TORCH))


_CEG = [("g", _REQUIRED), ("a", _REQUIRED), ("target", _REQUIRED), ("max_log_sum_exp", _REQUIRED),
        ("label_smoothing", 0.0)]


@_on_stream
def apex_cross_entropy_backward(call):
    _cross_entropy_grad(call, _bind(call, _CEG))


@_on_stream
def unsloth_apply_rope_backward(call):
    """Unsloth's RoPE backward (the Triton kernel of Thunder's zero_to_thunder
    notebook) in torch: dY (batch, heads, seq, head_dim) rotated back by the
    first head_dim / 2 columns of cos and sin rows 0 to seq - 1 (the kernel's
    row % seq_len), dx1 = dy1·c + dy2·s and dx2 = dy2·c − dy1·s, in f32 and
    rounded once; BLOCK_SIZE and num_warps are the kernel's launch shape"""
    a = _bind(call, [("BLOCK_SIZE", _REQUIRED), ("num_warps", _REQUIRED), ("cos", _REQUIRED), ("sin", _REQUIRED),
                     ("dY", _REQUIRED)])
    dy = _t(a["dY"])
    seq, half = dy.shape[-2], dy.shape[-1] // 2
    c, s = (_t(a[n])[:seq, :half].float() for n in ("cos", "sin"))
    d1, d2 = dy[..., :half].float(), dy[..., half:].float()
    _put(call.outputs[0], torch.cat((d1 * c + d2 * s, d2 * c - d1 * s), dim=-1).to(dy.dtype))


EXTERNS = {
    "sdpafx_grad_forward_scaled_dot_product_efficient_attention": flash_forward,
    "sdpafx_scaled_dot_product_efficient_attention_backward": flash_backward,
    "sdpaex_grad_forward_scaled_dot_product_efficient_attention": efficient_forward,
    "sdpaex_scaled_dot_product_efficient_attention_backward": efficient_backward,
    "apex_cross_entropy": apex_cross_entropy,
    "apex_cross_entropy_backward": apex_cross_entropy_backward,
    "apex_xentropy_forward": apex_xentropy_forward,
    "apex_xentropy_backward": apex_cross_entropy_backward,
    "unsloth_apply_rope_backward": unsloth_apply_rope_backward,
}


# ---- autograd --------------------------------------------------------------------

class Function:
    """A compiled forward+backward pair as a differentiable function:
    step(*inputs) runs `forward` now and `backward` when autograd asks,
    with the saved tensors kept in a state of the program's (one per call
    in flight). The backward's gradients go, in order, to the inputs that
    require grad — as Thunder's backward returns them, None for the
    others — so call it with the requires_grad of the traced module. An
    input the forward updates in place (a batch norm's running statistics,
    a copy_ into an input) is updated, as Thunder does: in its own memory
    where the program can write it there, else copied back; those outputs
    are not among step's results."""

    def __init__(self, source, device=None, forward="forward", backward="backward", externs=True, context=None):
        self.program = load(source, device, externs, context=context)
        self.forward, self.backward = self.program[forward], self.program[backward]
        self._states = []
        # (output, input, shares) of each output of the forward that updates an input; the others
        self._updates = [(k, u[0], u[1]) for k, u in enumerate(self.forward.updates) if u is not None]
        self._results = [k for k, u in enumerate(self.forward.updates) if u is None]

    def __call__(self, *inputs):
        outs = _Step.apply(self, *inputs)
        return outs[0] if len(outs) == 1 else outs

    def _state(self):
        return self._states.pop() if self._states else self.program.new_state()

    def _run(self, inputs, state):
        """the forward's outputs but those that update an input, which
        update it: in place when every one can be (and the input is
        contiguous, so that its memory is the one the program gets)"""
        ins, upd = [x.contiguous() for x in inputs], self._updates
        if not upd:
            return tuple(self.forward(*ins, state=state))
        in_place = all(shares and ins[i] is inputs[i] for _, i, shares in upd)
        outs = self.forward(*ins, state=state, in_place=in_place)
        for k, i, _ in upd:
            if outs[k] is inputs[i]:   # written by the program: tell autograd it changed
                torch.autograd.graph.increment_version(inputs[i])
            else:
                inputs[i].copy_(outs[k])
        return tuple(outs[k] for k in self._results)


class _Step(torch.autograd.Function):
    @staticmethod
    def forward(ctx, step, *inputs):
        ctx.step, ctx.state = step, step._state()
        return step._run(inputs, ctx.state)

    @staticmethod
    def backward(ctx, *grads):
        step = ctx.step
        bwd = step.backward
        if len(grads) != len(bwd.inputs):
            raise RuntimeError(f"{step.program.name}: {bwd.name} takes {len(bwd.inputs)} cotangents, the "
                               f"forward gave {len(grads)} outputs")
        gs = [torch.zeros(i.shape, dtype=DTYPE[i.dtype], device="cuda") if g is None else g.contiguous()
              for g, i in zip(grads, bwd.inputs)]
        gins = bwd(*gs, state=ctx.state)
        step._states.append(ctx.state)
        want = [i for i, need in enumerate(ctx.needs_input_grad[1:]) if need]
        if len(gins) != len(want):
            raise RuntimeError(f"{step.program.name}: {bwd.name} gives {len(gins)} gradients, but "
                               f"{len(want)} inputs require grad")
        res = [None] * (len(ctx.needs_input_grad) - 1)
        for i, g in zip(want, gins):
            res[i] = g
        return (None, *res)
