"""fp8cc.torch's quick path (_quick_class, _renew) on the mock CUDA driver,
without torch: a stand-in `torch` module gives just what the quick path
reads of a tensor (type, dtype, shape, device, contiguity, pointer,
strides) over the mock's "device memory" (host memory), torch.empty over
the same, and a stand-in TensorGuards that records its checks. What it
shows: the quick path runs the prepared run with the right pointers, into
the outputs given or into ones it makes; every unusual call goes to the
general path and gets its ValueError; the guard checks the calls after the
first, is built again when a call passes in Python but not the guard, and
is never tried again where TensorGuards does not take the arguments; a
closed program raises. The GPU suite runs the same path with torch
(tests/gpu/test_python.py)."""
import ctypes
import os
import struct
import sys
import types
import unittest

if not os.environ.get("FP8RT_LIBCUDA"):
    raise unittest.SkipTest("FP8RT_LIBCUDA (the mock driver) is not set")

import fp8cc  # noqa: E402
from test_binding import PTX, array, floats, values  # noqa: E402  (python/tests, beside this file)


class Tensor:
    """the attributes the quick path and fp8cc.torch._describe read"""

    def __init__(self, ptr, dtype, shape, device=0, contiguous=True):
        self.ptr, self.dtype, self.shape, self.dev, self.contiguous = ptr, dtype, tuple(shape), device, contiguous
        self.is_cuda = device >= 0
        self.device = f"cuda:{device}" if device >= 0 else "cpu"

    def get_device(self):
        return self.dev

    def is_contiguous(self):
        return self.contiguous

    def data_ptr(self):
        return self.ptr

    def stride(self):
        return (self.shape[1], 1) if len(self.shape) == 2 else (1,)


class Parameter(Tensor):
    pass


class TensorGuards:
    """records each check; holds when every tensor has the example's dtype,
    shape and pointer's object (the real one compares metadata only)"""
    checks = 0

    def __init__(self, *examples, dynamic_dims_sizes, dynamic_dims_strides):
        if TensorGuards.refuse:
            raise TypeError("this torch's TensorGuards takes other arguments")
        self.meta = [(type(t), t.dtype, t.shape, t.dev, t.contiguous) for t in examples]
        TensorGuards.built += 1

    def check(self, *tensors):
        TensorGuards.checks += 1
        return [(type(t), t.dtype, t.shape, t.dev, t.contiguous) for t in tensors] == self.meta


def stand_in_torch():
    torch = types.ModuleType("torch")
    torch.Tensor = Tensor
    for name in ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
                 "float8_e4m3fn", "float8_e5m2"):
        setattr(torch, name, name)
    torch.device = lambda kind, index: f"{kind}:{index}"
    torch.empty = None   # set by each test: memory of its context
    torch.nn = types.ModuleType("torch.nn")
    torch.nn.Parameter = Parameter
    torch.nn.functional = types.ModuleType("torch.nn.functional")
    torch.autograd = types.ModuleType("torch.autograd")
    torch.autograd.Function = object
    guards = types.ModuleType("torch._C._dynamo.guards")
    guards.TensorGuards = TensorGuards
    torch._C = types.ModuleType("torch._C")
    torch._C._dynamo = types.ModuleType("torch._C._dynamo")
    torch._C._dynamo.guards = guards
    return {"torch": torch, "torch.nn": torch.nn, "torch.nn.functional": torch.nn.functional,
            "torch.autograd": torch.autograd, "torch._C": torch._C, "torch._C._dynamo": torch._C._dynamo,
            "torch._C._dynamo.guards": guards}


real = sys.modules.get("torch")
sys.modules.update(stand_in_torch())
try:
    import fp8cc.torch as ft  # noqa: E402
finally:   # fp8cc.torch keeps the stand-in; nothing else sees it
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        del sys.modules[name]
    if real is not None:
        sys.modules["torch"] = real

# y = x, z = x: copies only, which the mock driver does
COPIES = """// fp8cc-plan 2
// target sm_90
// function main
// input 0 x f32[2,8]
// output 0 y f32[2,8]
// output 1 z f32[2,8]
// copy dst=out:0 src=in:0 bytes=64
// copy dst=out:1 src=in:0 bytes=64
// end-plan
""" + PTX

# y = x, then z = y: no output is an input itself
MADE = COPIES.replace("copy dst=out:1 src=in:0", "copy dst=out:1 src=out:0")


class QuickPath(unittest.TestCase):
    def setUp(self):
        TensorGuards.refuse, TensorGuards.built, TensorGuards.checks = False, 0, 0
        self.ctx = fp8cc.Context(0)
        self.prog = fp8cc.load(COPIES.encode(), context=self.ctx)
        self.streams = []
        self.prog.stream = lambda: self.streams.append(0) or 0
        self.made = []
        ft.torch.empty = self.empty
        self.f = self.prog[0]
        self.f.__class__ = ft._quick_class(self.f, None, 0)
        self.arrays = [array(self.ctx, [float(i) for i in range(16)], (2, 8))] + [
            self.ctx.empty("f32", (2, 8)) for _ in range(2)]
        self.x, self.y, self.z = (Tensor(a.ptr, "float32", (2, 8)) for a in self.arrays)

    def tearDown(self):
        self.prog.close()
        del self.arrays, self.made
        self.ctx.close()

    def values(self, i):
        return values(self.arrays[i])

    def empty(self, shape, dtype, device):
        """torch.empty's stand-in: the context's memory, kept until the test ends"""
        self.assertEqual(device, "cuda:0")
        self.made.append(self.ctx.empty(ft.NAME[dtype], shape))
        return Tensor(self.made[-1].ptr, dtype, shape)

    def test_outputs_made_when_none_are_given(self):
        # COPIES's outputs are its input itself (Function.sources): the
        # input comes back, nothing is made
        self.f(self.x, out=(self.y, self.z))   # the guard built
        y, z = self.f(self.x)
        self.assertTrue(y is self.x and z is self.x and not self.made)
        self.assertEqual((TensorGuards.built, TensorGuards.checks), (1, 2), "the input as output passes the guard")
        # y = x then z = y: neither output is an input, both are made
        prog = fp8cc.load(MADE.encode(), context=self.ctx)
        prog.stream = lambda: 0
        f = prog[0]
        f.__class__ = ft._quick_class(f, None, 0)
        try:
            f(self.x, out=(self.y, self.z))
            y, z = f(self.x)
            self.assertEqual(len(self.made), 2, "two outputs made, once")
            self.assertEqual([(t.dtype, t.shape) for t in (y, z)], [("float32", (2, 8))] * 2)
            self.assertEqual(values(self.made[1]), [float(i) for i in range(16)])
            self.assertEqual((TensorGuards.built, TensorGuards.checks), (2, 4), "the made outputs pass the guard")
            with self.assertRaisesRegex(ValueError, r"is f32\[2, 8\], not bf16\[2, 8\]"):
                f(Tensor(self.x.ptr, "bfloat16", (2, 8)))
        finally:
            prog.close()

    def test_runs_and_the_guard_takes_over(self):
        out = (self.y, self.z)
        self.assertIs(self.f(self.x, out=out), out)
        self.assertEqual(self.values(2), [float(i) for i in range(16)])
        self.assertEqual(TensorGuards.built, 1, "the first call builds the guard")
        self.assertEqual(self.f(self.x, out=[self.y, self.z]), (self.y, self.z))
        self.assertEqual((TensorGuards.built, TensorGuards.checks), (1, 2), "the next call is the guard's")
        self.assertEqual(len(self.streams), 2, "each call asks for the stream")
        # a Parameter passes the Python checks, not the guard: built again
        self.f(Parameter(self.x.ptr, "float32", (2, 8)), out=out)
        self.assertEqual(TensorGuards.built, 2)

    def test_unusual_calls_raise_the_general_paths_errors(self):
        out = (self.y, self.z)
        p = self.x.ptr
        self.arrays[2].copy_from(struct.pack("16f", *[-1.0] * 16))
        for what, x, msg in [
                ("dtype", Tensor(p, "bfloat16", (2, 8)), r"is f32\[2, 8\], not bf16\[2, 8\]"),
                ("shape", Tensor(p, "float32", (8, 2)), r"is f32\[2, 8\], not f32\[8, 2\]"),
                ("alignment", Tensor(p + 4, "float32", (2, 8)), "not 16-byte aligned"),
                ("device", Tensor(p, "float32", (2, 8), device=-1), "not on a CUDA device"),
                ("layout", Tensor(p, "float32", (2, 8), contiguous=False), "not contiguous")]:
            with self.subTest(what), self.assertRaisesRegex(ValueError, msg):
                self.f(x, out=out)
        with self.assertRaisesRegex(ValueError, "takes 1 inputs, not 2"):
            self.f(self.x, self.x, out=out)
        with self.assertRaisesRegex(ValueError, "takes 2 outputs, not 1"):
            self.f(self.x, out=(self.y,))
        self.assertEqual(self.values(2), [-1.0] * 16, "nothing ran")
        self.prog.close()
        with self.assertRaisesRegex(ValueError, "is closed"):
            self.f(self.x, out=out)

    def test_another_stream_getter_or_a_closed_context_ends_the_quick_path(self):
        out = (self.y, self.z)
        self.f(self.x, out=out)
        self.assertEqual(len(self.streams), 1)
        other = []
        self.prog.stream = lambda: other.append(0) or 0
        self.assertIs(type(self.f), fp8cc.Function)
        self.f(self.x, out=out)
        self.assertEqual((len(self.streams), len(other)), (1, 1), "the new getter gives the call's stream")
        ctx = fp8cc.Context(0)
        prog = fp8cc.load(MADE.encode(), context=ctx)
        f = prog[0]
        f.__class__ = ft._quick_class(f, None, 0)
        ctx.close()
        self.assertIs(type(f), fp8cc.Function)
        with self.assertRaisesRegex(ValueError, "is closed"):
            f(self.x, out=out)

    def test_misaligned_pointers_reach_libfp8rt_and_come_back_as_value_error(self):
        out = (self.y, self.z)
        self.f(self.x, out=out)   # the guard built: the next call is the guard's and libfp8rt's
        runs = []
        env = type(self.f).__call__.__globals__
        run = env["run"]
        env["run"] = lambda h: runs.append(h) or run(h)
        try:
            with self.assertRaisesRegex(ValueError, "input 0 'x' is not 16-byte aligned"):
                self.f(Tensor(self.x.ptr + 4, "float32", (2, 8)), out=out)
        finally:
            env["run"] = run
        self.assertEqual(len(runs), 1, "libfp8rt's check refused it")

    def test_an_extern_runs_inside_the_call_that_holds_the_gil(self):
        def neg(call):
            x, y = floats(call.inputs[0], 16), floats(call.outputs[0], 16)
            if x[0] < -100:
                raise RuntimeError("neg refuses")
            for i in range(16):
                y[i] = -x[i]
        plan = COPIES.replace("copy dst=out:0 src=in:0 bytes=64", "call py.neg ins=in:0 outs=out:0 args=@0")
        prog = fp8cc.load(plan.encode(), context=self.ctx, externs={"py.neg": (neg, False)})
        prog.stream = lambda: 0
        f = prog[0]
        f.__class__ = ft._quick_class(f, None, 0)
        run = type(f).__call__.__globals__["run"]
        self.assertTrue(type(run)._flags_ & ctypes._FUNCFLAG_PYTHONAPI, "ctypes.PyDLL's: the GIL is not released")
        try:
            for _ in range(2):   # Python's checks, then the guard's
                f(self.x, out=(self.y, self.z))
                self.assertEqual(self.values(1), [-float(i) for i in range(16)])
            self.arrays[0].copy_from(struct.pack("16f", *[-1000.0] * 16))
            with self.assertRaisesRegex(fp8cc.Error, "neg refuses"):
                f(self.x, out=(self.y, self.z))
        finally:
            prog.close()

    def test_load_into_a_context_of_ones_own(self):
        ctx = fp8cc.Context(0)
        ft.torch._C._cuda_getCurrentRawStream = lambda index: 0
        try:
            prog = ft.load(COPIES.encode(), externs=False, context=ctx)
            self.assertIs(prog.context, ctx)
            self.assertIsNot(ctx, fp8cc.default_context(0))
            out = (self.y, self.z)
            self.assertIs(prog[0](self.x, out=out), out)
            self.assertIsNot(type(prog[0]), fp8cc.Function, "the quick path's class")
            self.assertEqual(self.values(2), [float(i) for i in range(16)])
            ft.torch.device = lambda d, index=None: types.SimpleNamespace(index=d if isinstance(d, int) else index)
            with self.assertRaisesRegex(ValueError, "the context is device 0's"):
                ft.load(COPIES.encode(), device=1, externs=False, context=ctx)
        finally:
            del ft.torch._C._cuda_getCurrentRawStream
            ft.torch.device = lambda kind, index: f"{kind}:{index}"
            ctx.close()

    def test_without_tensor_guards_python_checks_every_call(self):
        TensorGuards.refuse = True
        for _ in range(3):
            self.f(self.x, out=(self.y, self.z))
        env = type(self.f).__call__.__globals__
        self.assertIsNone(env["guard"])
        self.assertEqual(TensorGuards.built, 0)
        TensorGuards.refuse = False
        self.f(self.x, out=(self.y, self.z))
        self.assertEqual(TensorGuards.built, 0, "not tried again")
        self.assertEqual(self.values(1), [float(i) for i in range(16)])


if __name__ == "__main__":
    unittest.main()
