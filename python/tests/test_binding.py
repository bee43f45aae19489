"""The Python binding against libfp8rt on the mock CUDA driver
(tests/gpu/mock_cuda.c, whose "device memory" is host memory), so it runs
on every machine, without torch: loading, signatures, runs, states,
workspaces, externs written in Python, and every error path.

Run by ctest (python-binding) with FP8RT_LIBRARY and FP8RT_LIBCUDA set;
by hand: FP8RT_LIBRARY=build/runtime/libfp8rt.so
FP8RT_LIBCUDA=build/tests/libfp8rt_mockcuda.so PYTHONPATH=python
python3 -m unittest discover -s python/tests"""
import ctypes
import gc
import os
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

if not os.environ.get("FP8RT_LIBCUDA"):
    raise unittest.SkipTest("FP8RT_LIBCUDA (the mock driver) is not set")

import fp8cc  # noqa: E402

PTX = "\n.version 8.0\n.target sm_90\n.address_size 64\n"

# y = extern py.affine(x, scale=2.0, shift=-1, ...); z = x (a copy)
AFFINE = """// fp8cc-plan 2
// target sm_90
// function main
// input 0 x f32[4,8]
// output 0 y f32[4,8]
// output 1 z f32[4,8]
// call py.affine ins=in:0 outs=out:0 args=@0,scale=2.0,shift=-1,mode='it%5C's',dims=(1,(2,3)),dt=torch.float32,flag=True,none=None
// copy dst=out:1 src=in:0 bytes=128
// end-plan
""" + PTX

# forward saves x and returns it; backward multiplies g by the saved x
STEP = """// fp8cc-plan 2
// target sm_90
// state 0 x f32[16] from=forward
// function forward
// input 0 x f32[16]
// output 0 y f32[16]
// copy dst=st:0 src=in:0 bytes=64
// copy dst=out:0 src=in:0 bytes=64
// function backward
// input 0 g f32[16]
// output 0 gx f32[16]
// workspace 256
// buffer 0 f32[16] offset=0 bytes=64 zero
// call py.mul ins=in:0,st:0 outs=buf:0 args=@0,@1
// copy dst=out:0 src=buf:0 bytes=64
// end-plan
""" + PTX


# externs called more than once, in two functions: b, a, c in the order of
# their first call
CALLS = """// fp8cc-plan 2
// target sm_90
// function one
// input 0 x f32[4]
// output 0 y f32[4]
// call b ins=in:0 outs=out:0 args=@0
// call a ins=in:0 outs=out:0 args=@0
// call b ins=in:0 outs=out:0 args=@0
// function two
// input 0 x f32[4]
// output 0 y f32[4]
// call a ins=in:0 outs=out:0 args=@0
// call c ins=in:0 outs=out:0 args=@0
// end-plan
""" + PTX


# y = x, z = x: copies only, which the mock driver does
COPIES = """// fp8cc-plan 2
// target sm_90
// function main
// input 0 x f32[2,3]
// output 0 y f32[2,3]
// output 1 z f32[2,3]
// copy dst=out:0 src=in:0 bytes=24
// copy dst=out:1 src=in:0 bytes=24
// end-plan
""" + PTX

# x updated in place to n (x_updated), after old = x: copies only
UPDATES = """// fp8cc-plan 7
// target sm_90
// function main
// input 0 x f32[2,3]
// input 1 n f32[2,3]
// output 0 x_updated f32[2,3] updates=0 inplace=1
// output 1 old f32[2,3]
// copy dst=out:1 src=in:0 bytes=24
// copy dst=out:0 src=in:1 bytes=24
// end-plan
""" + PTX

# y = all_gather(x) over one rank
GATHER = """// fp8cc-plan 5
// target sm_90
// function main
// input 0 x f32[8]
// output 0 y f32[8]
// collective all_gather in=in:0 out=out:0 count=8 dtype=f32 ranks=1 id=0
// wait id=0
// end-plan
""" + PTX

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def floats(view_or_ptr, n):
    ptr = view_or_ptr if isinstance(view_or_ptr, int) else view_or_ptr.ptr
    return (ctypes.c_float * n).from_address(ptr)


def array(ctx, values, shape):
    a = ctx.empty("f32", shape)
    a.copy_from(struct.pack(f"{len(values)}f", *values))
    return a


def values(a):
    b = a.to_bytes()
    return list(struct.unpack(f"{len(b) // 4}f", b))


class CAI:
    """a foreign array: __cuda_array_interface__ over memory it does not own"""

    def __init__(self, ptr, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3}


def affine(call):
    x, = call.inputs
    y, = call.outputs
    assert call.args == [x], call.args
    assert call.kwargs == {"scale": 2.0, "shift": -1, "mode": "it's", "dims": (1, (2, 3)),
                           "dt": "torch.float32", "flag": True, "none": None}, call.kwargs
    assert isinstance(call.kwargs["dt"], fp8cc.Name) and not isinstance(call.kwargs["mode"], fp8cc.Name)
    assert x.shape == (4, 8) and x.dtype == "f32" and y.nbytes == 128
    src, dst = floats(x, 32), floats(y, 32)
    for i in range(32):
        dst[i] = src[i] * call.kwargs["scale"] + call.kwargs["shift"]


MOCK = ctypes.CDLL(os.environ["FP8RT_LIBCUDA"])   # the driver libfp8rt loaded: the same instance


def live():
    """what the mock driver still holds: allocations, modules, streams,
    graphs, execs, events, retains, pushes"""
    v = (ctypes.c_int * 8)()
    MOCK.mockcuda_live(v)
    return list(v)


class Binding(unittest.TestCase):
    def setUp(self):
        self.ctx = fp8cc.Context(0)

    def tearDown(self):
        gc.collect()   # the test's arrays and programs, freed
        self.ctx.close()
        self.assertEqual(live(), [0] * 8, "every driver object is released")

    def test_version_and_signature_without_device(self):
        self.assertGreaterEqual(fp8cc.version(), (0, 3, 0))
        p = fp8cc.read(STEP.encode())
        self.assertEqual([f.name for f in p.functions], ["forward", "backward"])
        self.assertEqual(p["backward"].inputs, [fp8cc.TensorInfo("g", "f32", (16,))])
        self.assertEqual(p[1].workspace_bytes, 256)
        self.assertEqual(p.state, [fp8cc.TensorInfo("x", "f32", (16,))])
        self.assertEqual((p.target, p.plan_version), ("sm_90", 2))
        self.assertEqual(p.externs, ["py.mul"])
        self.assertEqual(fp8cc.read(AFFINE.encode()).externs, ["py.affine"])
        self.assertEqual(fp8cc.read(CALLS.encode()).externs, ["b", "a", "c"])
        self.assertEqual(fp8cc.read(COPIES.encode()).externs, [])
        self.assertEqual(repr(p[0]), "forward(x: f32[16]) -> (y: f32[16])")
        with self.assertRaisesRegex(ValueError, "read without a device"):
            p[0](fp8cc.DeviceArray(self.ctx, "f32", (16,)))
        with self.assertRaisesRegex(KeyError, "has no function 'sideways' \\(it has forward, backward\\)"):
            p["sideways"]
        p.close()

    def test_extern_in_python(self):
        calls = []
        prog = fp8cc.load(AFFINE.encode(), context=self.ctx,
                          externs={"py.affine": lambda c: (calls.append(c.stream), affine(c))})
        x = array(self.ctx, [float(i) for i in range(32)], (4, 8))
        y, z = prog(x)
        self.assertEqual(values(y), [2.0 * i - 1 for i in range(32)])
        self.assertEqual(values(z), [float(i) for i in range(32)])
        y2, z2 = prog(x)   # new outputs: new pointers, a new capture
        prog(x, out=(y2, z2))   # the same pointers: replayed, the extern is not called again
        self.assertEqual(len(calls), 2)
        self.assertEqual(values(y2), values(y))

    def test_collectives_on_a_communicator(self):
        """a program with an all-gather: refused without a communicator, run
        with one of one rank (the mock NCCL: the gather is a copy)"""
        if not os.environ.get("FP8RT_NCCL"):
            self.skipTest("FP8RT_NCCL (the mock NCCL) is not set")
        text = GATHER.encode()
        with self.assertRaises(fp8cc.Error) as e:
            fp8cc.load(text, context=self.ctx)
        self.assertEqual(e.exception.status, "FP8RT_UNSUPPORTED")
        self.assertIn("has no communicator", str(e.exception))
        self.assertIsNone(self.ctx.comm)
        with self.assertRaises(ValueError):
            self.ctx.init_comm(b"short", 1, 0)
        self.ctx.init_comm(self.ctx.nccl_unique_id(), 1, 0)
        self.assertEqual(self.ctx.comm, (1, 0))
        prog = fp8cc.load(text, context=self.ctx)
        x = array(self.ctx, [float(i) for i in range(8)], (8,))
        y, = prog(x)
        self.assertEqual(values(y), [float(i) for i in range(8)])
        prog.close()

    def test_outputs_that_are_inputs(self):
        prog = fp8cc.load(AFFINE.encode(), context=self.ctx,
                          externs={"py.affine": affine})
        f = prog.functions[0]
        self.assertEqual(f.sources, [None, 0])   # y by the extern, z a copy of x
        x = array(self.ctx, [float(i) for i in range(32)], (4, 8))
        y, z = prog(x)
        self.assertIs(z, x)   # x itself: nothing allocated, nothing copied
        z2 = array(self.ctx, [0.0] * 32, (4, 8))
        prog(x, out=(y, z2))   # given, it is written
        self.assertEqual(values(z2), [float(i) for i in range(32)])

    def test_updates_in_place(self):
        prog = fp8cc.load(UPDATES.encode(), context=self.ctx)
        f = prog.functions[0]
        self.assertEqual(f.updates, [(0, True), None])
        x = array(self.ctx, [float(i) for i in range(6)], (2, 3))
        n = array(self.ctx, [10.0 + i for i in range(6)], (2, 3))
        xu, old = prog(x, n)   # functional: x stays
        self.assertIsNot(xu, x)
        self.assertEqual(values(xu), [10.0 + i for i in range(6)])
        self.assertEqual(values(x), [float(i) for i in range(6)])
        xu, old = prog(x, n, in_place=True)   # x itself is updated
        self.assertIs(xu, x)
        self.assertEqual(values(x), [10.0 + i for i in range(6)])
        self.assertEqual(values(old), [float(i) for i in range(6)])
        with self.assertRaisesRegex(ValueError, "give `out` or in_place=True, not both"):
            prog(x, n, out=(xu, old), in_place=True)
        with self.assertRaisesRegex(fp8cc.Error, "output 1 'old' shares memory with input 1 'n'"):
            prog(x, n, out=(xu, n))
        prog.close()
        no = fp8cc.load(UPDATES.replace("inplace=1", "inplace=0").encode(), context=self.ctx)
        self.assertEqual(no.functions[0].updates, [(0, False), None])
        with self.assertRaisesRegex(ValueError, "output 0 'x_updated' updates input 0 'x', but the program "
                                                "reads that input after writing there"):
            no(x, n, in_place=True)
        with self.assertRaisesRegex(fp8cc.Error, "the plan's inplace=0"):
            no(x, n, out=(x, old))
        no.close()

    def test_extern_without_graph_runs_every_time(self):
        calls = []
        prog = fp8cc.load(AFFINE.encode(), context=self.ctx,
                          externs={"py.affine": (lambda c: (calls.append(1), affine(c)), False)})
        x = array(self.ctx, [1.0] * 32, (4, 8))
        out = (self.ctx.empty("f32", (4, 8)), self.ctx.empty("f32", (4, 8)))
        for _ in range(3):
            prog(x, out=out)
        self.assertEqual(len(calls), 3)
        self.assertEqual(values(out[0]), [1.0] * 32)

    def test_one_thread_at_a_time(self):
        """While a run is inside its extern, another thread's calls on the
        context raise libfp8rt's refusal (nothing done); once it is over,
        they run."""
        seen = []
        x = array(self.ctx, [1.0] * 32, (4, 8))
        out = (self.ctx.empty("f32", (4, 8)), self.ctx.empty("f32", (4, 8)))

        lib = fp8cc._lib

        def other():
            for call in (lambda: prog(x, out=out), lambda: self.ctx.empty("f32", (4,))):
                try:
                    call()
                    seen.append("ran")
                except fp8cc.Error as e:
                    seen.append((e.status, str(e)))
            # a bad argument, found before the claim: the message is this
            # thread's, and not written into the context another thread holds
            seen.append(lib.fp8rt_malloc(self.ctx._ctx, 4, None))
            seen.append(lib.fp8rt_last_error(None).decode())

        def inside(c):
            if not seen:   # the first run: another thread tries while this one is inside
                t = threading.Thread(target=other)
                t.start()
                t.join()
            affine(c)
        prog = fp8cc.load(AFFINE.encode(), context=self.ctx, externs={"py.affine": (inside, False)})
        prog(x, out=out)
        self.assertEqual(values(out[0]), [1.0] * 32)
        self.assertEqual([s for s, _ in seen[:2]], ["FP8RT_INVALID_ARGUMENT"] * 2, seen)
        self.assertRegex(seen[0][1], "^fp8rt_run_function: the context is in use by another thread")
        self.assertRegex(seen[1][1], "fp8rt_malloc: the context is in use by another thread")
        self.assertEqual(seen[2:], [fp8cc.N.INVALID_ARGUMENT, "fp8rt_malloc: dptr is NULL"])
        self.assertNotIn("dptr is NULL", lib.fp8rt_last_error(self.ctx._ctx).decode())
        seen[:] = ["over"]
        t = threading.Thread(target=other)
        t.start()
        t.join()
        self.assertEqual(seen, ["over", "ran", "ran", fp8cc.N.INVALID_ARGUMENT, "fp8rt_malloc: dptr is NULL"])
        # with no thread inside, the context takes the message as before
        self.assertEqual(lib.fp8rt_last_error(self.ctx._ctx).decode(), "fp8rt_malloc: dptr is NULL")

    def test_missing_extern_is_named(self):
        with self.assertRaises(fp8cc.Error) as e:
            fp8cc.load(AFFINE.encode(), context=self.ctx)
        self.assertEqual(e.exception.status, "FP8RT_UNSUPPORTED")
        self.assertIn("py.affine", str(e.exception))

    def test_extern_exception_fails_the_run_with_its_message(self):
        def broken(call):
            raise ZeroDivisionError("no luck")
        prog = fp8cc.load(AFFINE.encode(), context=self.ctx, externs={"py.affine": broken})
        x = array(self.ctx, [0.0] * 32, (4, 8))
        with self.assertRaisesRegex(fp8cc.Error, "call py.affine: the extern failed .*ZeroDivisionError: no luck"):
            prog(x)
        def unsupported(call):
            raise NotImplementedError("not this shape")
        self.ctx.register_extern("py.affine", unsupported)
        prog = fp8cc.load(AFFINE.encode(), context=self.ctx)
        with self.assertRaises(fp8cc.Error) as e:
            prog(x)
        self.assertIn("NotImplementedError: not this shape", str(e.exception))

    def test_training_step_state_and_workspace(self):
        def mul(call):
            g, x = (floats(v, 16) for v in call.inputs)
            out = floats(call.outputs[0], 16)
            for i in range(16):
                out[i] = g[i] * x[i]
        prog = fp8cc.load(STEP.encode(), context=self.ctx, externs={"py.mul": mul})
        fwd, bwd = prog["forward"], prog["backward"]
        x1 = array(self.ctx, [float(i) for i in range(16)], (16,))
        x2 = array(self.ctx, [2.0] * 16, (16,))
        g = array(self.ctx, [3.0] * 16, (16,))
        with self.assertRaisesRegex(fp8cc.Error, "backward reads state slot 0 'x'"):
            bwd(g)
        s2 = prog.new_state()
        fwd(x1)
        fwd(x2, state=s2)
        gx, = bwd(g)
        self.assertEqual(values(gx), [3.0 * i for i in range(16)])
        gx2, = bwd(g, state=s2)
        self.assertEqual(values(gx2), [6.0] * 16)
        s2.close()
        # the backward's workspace from the caller
        ws = self.ctx.empty("u8", (512,))
        ws.copy_from(b"\xab" * 512)
        bwd.set_workspace(ws)
        self.assertEqual(ws.to_bytes()[:64], b"\0" * 64, "the zero buffer is zeroed in the caller's workspace")
        gx3, = bwd(g)
        self.assertEqual(values(gx3), values(gx))
        with self.assertRaisesRegex(fp8cc.Error, "needs 256 bytes of workspace, not 128"):
            bwd.set_workspace(self.ctx.empty("u8", (128,)))
        bwd.set_workspace(None)
        self.assertEqual(values(bwd(g)[0]), values(gx))

    def test_prepared_run(self):
        """Function.prepared: a run that takes only the stream and the
        pointers in its slots, checked by libfp8rt as a call's tensors"""
        prog = fp8cc.load(COPIES.encode(), context=self.ctx)
        f = prog[0]
        run, slots = f.prepared()
        self.assertEqual(len(slots), 4)
        self.assertEqual(list(slots), [0, 0, 0, 0])
        x = array(self.ctx, [1.0, -2.0, 3.5, 4.0, 5.0, 6.0], (2, 3))
        y, z = self.ctx.empty("f32", (2, 3)), self.ctx.empty("f32", (2, 3))
        with self.assertRaisesRegex(fp8cc.Error, "fp8rt_prepared_run: input 0"):
            fp8cc._check(fp8cc._lib.fp8rt_prepared_run(run))
        slots[1], slots[2], slots[3] = x.ptr, y.ptr, z.ptr
        fp8cc._check(fp8cc._lib.fp8rt_prepared_run(run))
        self.assertEqual(values(y), values(x))
        self.assertEqual(values(z), values(x))
        slots[3] = z.ptr + 4
        with self.assertRaisesRegex(fp8cc.Error, "output 1"):
            fp8cc._check(fp8cc._lib.fp8rt_prepared_run(run))
        prog.close()   # frees the prepared run with it
        with self.assertRaisesRegex(ValueError, "is closed"):
            f.prepared()

    def test_foreign_arrays(self):
        prog = fp8cc.load(AFFINE.encode(), context=self.ctx, externs={"py.affine": affine})
        x = array(self.ctx, [float(i) for i in range(32)], (4, 8))
        y, z = self.ctx.empty("f32", (4, 8)), self.ctx.empty("f32", (4, 8))
        prog(CAI(x.ptr, (4, 8)), out=(CAI(y.ptr, (4, 8)), CAI(z.ptr, (4, 8), strides=(32, 4))))
        self.assertEqual(values(z), values(x))
        with self.assertRaisesRegex(ValueError, "not dense row-major"):
            prog(CAI(x.ptr, (4, 8), strides=(4, 16)))
        with self.assertRaisesRegex(ValueError, "typestr '<c8'"):
            prog(CAI(x.ptr, (4, 8), typestr="<c8"))
        with self.assertRaisesRegex(ValueError, "not a device array"):
            prog([1.0] * 32)

    def test_argument_errors_before_anything_runs(self):
        calls = []
        prog = fp8cc.load(AFFINE.encode(), context=self.ctx,
                          externs={"py.affine": lambda c: calls.append(1)})
        x = array(self.ctx, [0.0] * 32, (4, 8))
        with self.assertRaisesRegex(ValueError, "main takes 1 inputs, not 2"):
            prog(x, x)
        with self.assertRaisesRegex(ValueError, r"main input 0 'x' is f32\[4, 8\], not f32\[8, 4\]"):
            prog(self.ctx.empty("f32", (8, 4)))
        with self.assertRaisesRegex(ValueError, r"input 0 'x' is f32\[4, 8\], not bf16\[4, 8\]"):
            prog(self.ctx.empty("bf16", (4, 8)))
        with self.assertRaisesRegex(ValueError, "not 16-byte aligned"):
            prog(CAI(x.ptr + 4, (4, 8)))
        with self.assertRaisesRegex(ValueError, "takes 2 outputs, not 1"):
            prog(x, out=(x,))
        with self.assertRaisesRegex(ValueError, "a stream must be an int"):
            prog(x, stream="fast")
        y = self.ctx.empty("f32", (4, 8))
        y.free()
        with self.assertRaisesRegex(ValueError, "was freed"):
            prog(y)
        self.assertEqual(calls, [])

    def test_bad_program_and_closed_objects(self):
        with self.assertRaises(fp8cc.Error) as e:
            fp8cc.load(b"// fp8cc-plan 2\n// target sm_90\n// function main\n// launch\n", context=self.ctx)
        self.assertEqual(e.exception.status, "FP8RT_BAD_PROGRAM")
        self.assertIn("<memory>:4", str(e.exception))
        with self.assertRaises(OSError):
            fp8cc.load("/nonexistent/p.ptx", context=self.ctx)
        prog = fp8cc.load(AFFINE.encode(), context=self.ctx, externs={"py.affine": affine})
        x = array(self.ctx, [0.0] * 32, (4, 8))
        prog.close()
        with self.assertRaisesRegex(ValueError, "is closed"):
            prog(x)
        prog2 = fp8cc.load(AFFINE.encode(), context=self.ctx)
        self.ctx.close()   # frees prog2 with it
        with self.assertRaisesRegex(ValueError, "is closed"):
            prog2(x)
        prog2.close()

    def test_example_run_py(self):
        """examples/python/run.py: a safetensors file in, one out, no torch"""
        sys.path.insert(0, os.path.join(ROOT, "examples", "python"))
        import run
        with tempfile.TemporaryDirectory() as d:
            ptx, inp, out = (os.path.join(d, n) for n in ("p.ptx", "in.safetensors", "out.safetensors"))
            with open(ptx, "w") as f:
                f.write(COPIES)
            x = struct.pack("6f", 1, 2, 3, 4, 5, 6.5)
            run.write_safetensors(inp, {"x": ("f32", (2, 3), x)})
            r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "run.py"), ptx, inp, out],
                               capture_output=True, text=True, env=os.environ)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("wrote 2 output(s)", r.stdout)
            got = run.read_safetensors(out)
            self.assertEqual(got, {"y": ("f32", (2, 3), x), "z": ("f32", (2, 3), x)})
            run.write_safetensors(inp, {"x": ("f32", (3, 2), x)})
            r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "python", "run.py"), ptx, inp, out],
                               capture_output=True, text=True, env=os.environ)
            self.assertEqual(r.returncode, 1)
            self.assertIn("'x' is f32[3, 2] in", r.stderr)

    def test_no_device(self):
        with self.assertRaises(fp8cc.Error) as e:
            fp8cc.Context(7)
        self.assertEqual(e.exception.status, "FP8RT_NO_DEVICE")


if __name__ == "__main__":
    unittest.main()
