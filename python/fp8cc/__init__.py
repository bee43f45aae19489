"""fp8cc from Python: load a program fp8cc compiled, see its functions and
their signatures, run them on device arrays, and supply its externs as
Python callables. Standard library only (ctypes over libfp8rt); torch is
not imported here — fp8cc.torch adds torch's allocator, stream and the
executor ops of real traces.

    import fp8cc
    prog = fp8cc.load("step.ptx")
    print(prog.functions)               # [forward(x: bf16[16, 32], ...) -> (...), ...]
    y, = prog["forward"](x, w)          # arrays with __cuda_array_interface__ or __dlpack__

Arrays are anything with __cuda_array_interface__ (CuPy, Numba, torch for
the dtypes the interface spells) or __dlpack__ (torch, JAX, CuPy; bf16 and
fp8 too), dense row-major, on the program's device. Outputs are made by the
program's allocator (by default device memory from libfp8rt, as
fp8cc.DeviceArray) unless given with out=. Errors of libfp8rt raise
fp8cc.Error with the library's message; a wrong count, dtype or shape, or
an array that is not dense, raises ValueError before anything is enqueued.

A context and its programs are used by one thread at a time (libfp8rt
refuses a second thread's call while one is inside: fp8cc.Error), and the work
of one context is ordered (its GEMMs share a cuBLASLt workspace, a
program's intermediates one workspace): threads that run programs at the
same time, or on streams of their own, each load them into a Context of
their own (load(..., context=fp8cc.Context(device))).
"""
import ctypes
import struct
import weakref

from . import _native as N

__all__ = ["Error", "Context", "Program", "Function", "State", "TensorInfo", "DeviceArray", "Name", "View",
           "ExternCall", "load", "read", "version", "default_context", "describe"]

_lib = N.load_library()
_TENSOR_SIZE = ctypes.sizeof(N.Tensor)
_PTR = struct.Struct("=Q")   # fp8rt_tensor.data, at offset 0


class Error(RuntimeError):
    """A libfp8rt failure: .status is its fp8rt_status name, the message
    the library's (with the place it failed)."""

    def __init__(self, status, message):
        self.status = _lib.fp8rt_status_name(status).decode()
        self.code = status
        super().__init__(f"{message} [{self.status}]")


def _check(st):
    """Raise the failure st with libfp8rt's message for this thread: every
    failure is recorded there, also a call refused because another thread
    is inside the context (whose own message is that thread's)."""
    if st != N.OK:
        raise Error(st, _lib.fp8rt_last_error(None).decode(errors="replace"))


def version():
    """libfp8rt's version as (major, minor, patch)."""
    v = _lib.fp8rt_version()
    return v // 10000, v // 100 % 100, v % 100


class TensorInfo:
    """One input, output or state slot as the plan declares it."""
    __slots__ = ("name", "dtype", "shape")

    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, dtype, shape

    @property
    def nbytes(self):
        return _nbytes(self.dtype, self.shape)

    def __repr__(self):
        return f"{self.name}: {self.dtype}[{', '.join(map(str, self.shape))}]"

    def __eq__(self, other):
        return isinstance(other, TensorInfo) and (self.name, self.dtype, self.shape) == (
            other.name, other.dtype, other.shape)


def _info(ti):
    return TensorInfo(ti.name.decode(), N.DTYPES[ti.dtype], tuple(ti.dims[i] for i in range(ti.rank)))


# ---- arrays ------------------------------------------------------------------

_TYPESTR = {"|b1": "b8", "|u1": "u8", "|i1": "i8", "<i2": "i16", "<i4": "i32", "<i8": "i64", "<f2": "f16",
            "<f4": "f32", "<f8": "f64"}
_TYPESTR_OF = {v: k for k, v in _TYPESTR.items()}
# DLPack (code, bits) -> dtype; float8 codes from DLPack 1.1
_DLPACK = {(1, 8): "u8", (0, 8): "i8", (0, 16): "i16", (0, 32): "i32", (0, 64): "i64", (2, 16): "f16",
           (2, 32): "f32", (2, 64): "f64", (4, 16): "bf16", (6, 8): "b8", (10, 8): "f8e4m3fn",
           (12, 8): "f8e5m2"}
_KDLCUDA, _KDLCUDAMANAGED = 2, 13


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def _dense(shape, strides, itemsize):
    """strides (in bytes, or None) are dense row-major for shape"""
    if strides is None:
        return True
    want = itemsize
    for d, s in zip(reversed(shape), reversed(strides)):
        if d != 1 and s != want:
            return False
        want *= d
    return True


# (type, fn): fn(a) -> (ptr, dtype, shape, keep) for arrays of that type,
# tried first (fp8cc.torch adds torch.Tensor's)
describers = []


def describe(a, stream=None):
    """(data pointer, dtype, shape, keep) of an array: a DeviceArray, an
    object with __cuda_array_interface__ or __dlpack__. `keep` must live
    until the work using the pointer is enqueued. ValueError if it is
    none of these, not on a CUDA device, or not dense row-major."""
    for cls, fn in describers:
        if isinstance(a, cls):
            return fn(a)
    if isinstance(a, DeviceArray):
        if a.ptr is None:
            raise ValueError(f"{a!r} was freed")
        return a.ptr, a.dtype, a.shape, None
    try:
        cai = a.__cuda_array_interface__
    except (AttributeError, TypeError):   # none, or none for this dtype (torch's bf16)
        cai = None
    if cai is not None:
        dt = _TYPESTR.get(cai["typestr"])
        if dt is None:
            raise ValueError(f"an array of typestr {cai['typestr']!r}, which fp8cc does not take")
        shape = tuple(cai["shape"])
        if not _dense(shape, cai.get("strides"), N.ITEMSIZE[dt]):
            raise ValueError(f"a {dt}{list(shape)} array that is not dense row-major (strides "
                             f"{cai.get('strides')}): make it contiguous first")
        return cai["data"][0] or 0, dt, shape, None
    if hasattr(a, "__dlpack__"):
        try:
            cap = a.__dlpack__(stream=stream)
        except TypeError:
            cap = a.__dlpack__()
        t = ctypes.cast(_capsule_pointer(cap, b"dltensor"), ctypes.POINTER(_DLTensor)).contents
        if t.device.device_type not in (_KDLCUDA, _KDLCUDAMANAGED):
            raise ValueError(f"an array on DLPack device type {t.device.device_type}, not a CUDA device")
        dt = _DLPACK.get((t.dtype.code, t.dtype.bits))
        if dt is None or t.dtype.lanes != 1:
            raise ValueError(f"an array of DLPack dtype code {t.dtype.code}, {t.dtype.bits} bits, which "
                             "fp8cc does not take")
        shape = tuple(t.shape[i] for i in range(t.ndim))
        strides = tuple(t.strides[i] * N.ITEMSIZE[dt] for i in range(t.ndim)) if t.strides else None
        if not _dense(shape, strides, N.ITEMSIZE[dt]):
            raise ValueError(f"a {dt}{list(shape)} array that is not dense row-major: make it contiguous first")
        return (t.data or 0) + t.byte_offset, dt, shape, cap
    raise ValueError(f"a {type(a).__name__}, which is not a device array (no __cuda_array_interface__ or "
                     "__dlpack__)")


def _nbytes(dtype, shape):
    n = N.ITEMSIZE[dtype]
    for d in shape:
        n *= d
    return n


def _interface(ptr, dtype, shape):
    """__cuda_array_interface__ of dense memory, for the dtypes it spells"""
    if dtype not in _TYPESTR_OF:
        raise AttributeError(f"__cuda_array_interface__ has no typestr for {dtype}")
    return {"shape": shape, "typestr": _TYPESTR_OF[dtype], "data": (ptr, False), "strides": None, "version": 3}


class DeviceArray:
    """Device memory from libfp8rt (fp8rt_malloc), dense row-major: what a
    program's outputs are by default. It speaks __cuda_array_interface__
    for the dtypes that interface has; .to_bytes() and .copy_from(bytes)
    move its contents (synchronously). It is freed when it is collected,
    by .free(), or with its context."""

    def __init__(self, context, dtype, shape):
        self.context, self.dtype, self.shape = context, dtype, tuple(shape)
        self.nbytes = _nbytes(dtype, self.shape)
        p = ctypes.c_void_p()
        _check(_lib.fp8rt_malloc(context._ctx, max(self.nbytes, 1), ctypes.byref(p)))
        self.ptr = p.value
        context._arrays.add(self)

    @property
    def __cuda_array_interface__(self):
        return _interface(self.ptr, self.dtype, self.shape)

    def to_bytes(self):
        buf = ctypes.create_string_buffer(self.nbytes)
        _check(_lib.fp8rt_synchronize(self.context._ctx, None))
        _check(_lib.fp8rt_memcpy_dtoh(self.context._ctx, buf, self.ptr, self.nbytes))
        return buf.raw

    def copy_from(self, data):
        data = bytes(data)
        if len(data) != self.nbytes:
            raise ValueError(f"{len(data)} bytes for a {self.dtype}{list(self.shape)} array of {self.nbytes}")
        _check(_lib.fp8rt_memcpy_htod(self.context._ctx, self.ptr, data, self.nbytes))
        return self

    def free(self):
        if self.ptr is not None and self.context._ctx:
            _check(_lib.fp8rt_free(self.context._ctx, self.ptr))
        self.ptr = None

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass

    def __repr__(self):
        return f"DeviceArray({self.dtype}[{', '.join(map(str, self.shape))}])"


# ---- externs -------------------------------------------------------------------

class Name(str):
    """An extern's argument that the trace wrote as a dotted name
    (torch.float32), not as a string."""


class View:
    """One tensor of an extern call: device memory of the plan's type,
    dense row-major, valid during the call."""
    __slots__ = ("ptr", "dtype", "shape")

    def __init__(self, t):
        self.ptr, self.dtype = t.data or 0, N.DTYPES[t.dtype]
        self.shape = tuple(t.dims[i] for i in range(t.rank))

    @property
    def nbytes(self):
        return _nbytes(self.dtype, self.shape)

    @property
    def __cuda_array_interface__(self):
        return _interface(self.ptr, self.dtype, self.shape)

    def __repr__(self):
        return f"View({self.dtype}[{', '.join(map(str, self.shape))}] at {self.ptr:#x})"


class ExternCall:
    """What an extern gets: .name; .args and .kwargs as the trace wrote them
    (tensors as Views of .inputs, tuples as tuples, dotted names as Name);
    .outputs, the Views to write; .stream, the CUstream (an int) to enqueue
    the work on; .context."""
    __slots__ = ("name", "args", "kwargs", "inputs", "outputs", "stream", "context")


def _decode_args(c, inputs):
    """the call's preorder argument array as (args, kwargs)"""
    def one(i):
        a = c.args[i]
        k = a.kind
        if k == N.ARG_TENSOR:
            return inputs[a.i], i + 1
        if k == N.ARG_INT:
            return a.i, i + 1
        if k == N.ARG_FLOAT:
            return a.f, i + 1
        if k == N.ARG_BOOL:
            return bool(a.i), i + 1
        if k == N.ARG_NONE:
            return None, i + 1
        if k == N.ARG_STRING:
            return a.s.decode(), i + 1
        if k == N.ARG_NAME:
            return Name(a.s.decode()), i + 1
        if k == N.ARG_TUPLE:
            vals, j = [], i + 1
            for _ in range(a.i):
                v, j = one(j)
                vals.append(v)
            return tuple(vals), j
        raise ValueError(f"argument kind {k} unknown to this binding")

    args, kwargs, i = [], {}, 0
    while i < c.nargs:
        key = c.args[i].key
        v, i = one(i)
        if key:
            kwargs[key.decode()] = v
        else:
            args.append(v)
    return args, kwargs


def _status_of(e):
    if isinstance(e, NotImplementedError):
        return N.UNSUPPORTED
    if isinstance(e, MemoryError):
        return N.OUT_OF_MEMORY
    if isinstance(e, Error):
        return e.code
    return N.INVALID_ARGUMENT


def _trampoline(context, fn):
    def call(user, cp, err, errlen):
        try:
            c = cp.contents
            x = ExternCall()
            x.name = c.name.decode()
            x.inputs = [View(c.inputs[i]) for i in range(c.ninputs)]
            x.outputs = [View(c.outputs[i]) for i in range(c.noutputs)]
            x.args, x.kwargs = _decode_args(c, x.inputs)
            x.stream = c.stream or 0
            x.context = context
            fn(x)
            return N.OK
        except BaseException as e:   # nothing may unwind into C
            msg = f"{type(e).__name__}: {e}".encode(errors="replace")[:max(errlen - 1, 0)]
            if errlen:
                ctypes.memmove(err, msg + b"\0", len(msg) + 1)
            return _status_of(e)
    return N.EXTERN_FN(call)


# ---- contexts ------------------------------------------------------------------

class _Closing:
    """close() on leaving a with block and when collected"""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Context(_Closing):
    """A CUDA device's context in libfp8rt. Externs registered here are for
    programs loaded into it afterwards."""

    def __init__(self, device=0):
        p = ctypes.c_void_p()
        self._ctx = None
        self._externs = {}       # name -> the C callback (kept alive with the context)
        self._programs = weakref.WeakSet()
        self._arrays = weakref.WeakSet()   # DeviceArrays: freed before the context
        _check(_lib.fp8rt_context_create(device, ctypes.byref(p)))
        self._ctx = p.value
        self.device = device

    def register_extern(self, name, fn, graph=True):
        """fn(call: ExternCall) implements the extern `name` for programs
        loaded from now on. graph=False when its work cannot be captured
        into a CUDA graph (it synchronizes, allocates, reads host state);
        the functions that call it then run step by step. An exception
        in fn fails the run with its message."""
        cb = _trampoline(self, fn)
        _check(_lib.fp8rt_register_extern(self._ctx, name.encode(), cb, None,
                                          0 if graph else N.EXTERN_NO_GRAPH))
        self._externs[name] = cb

    def synchronize(self, stream=None):
        _check(_lib.fp8rt_synchronize(self._ctx, _stream(stream)))

    def nccl_unique_id(self):
        """A new NCCL unique id (bytes), made on one rank and handed to every
        rank's init_comm (NCCL is loaded then: libnccl.so.2, or FP8RT_NCCL)."""
        buf = ctypes.create_string_buffer(N.NCCL_ID_BYTES)
        _check(_lib.fp8rt_nccl_unique_id(self._ctx, buf))
        return buf.raw

    def init_comm(self, unique_id, nranks, rank):
        """This context's communicator for programs with collectives: rank
        `rank` of `nranks`, every rank with the same unique_id (returns once
        all have joined); destroyed with the context."""
        if not isinstance(unique_id, (bytes, bytearray)) or len(unique_id) != N.NCCL_ID_BYTES:
            raise ValueError(f"init_comm: unique_id must be the {N.NCCL_ID_BYTES} bytes of nccl_unique_id()")
        buf = ctypes.create_string_buffer(bytes(unique_id), N.NCCL_ID_BYTES)
        _check(_lib.fp8rt_context_init_comm(self._ctx, buf, nranks, rank))

    def set_comm(self, comm):
        """The application's NCCL communicator (an ncclComm_t as an int), which
        it destroys after this context."""
        _check(_lib.fp8rt_context_set_comm(self._ctx, comm))

    @property
    def comm(self):
        """(nranks, rank) of the context's communicator; None without one."""
        n, r = ctypes.c_int(), ctypes.c_int()
        if _lib.fp8rt_context_comm(self._ctx, ctypes.byref(n), ctypes.byref(r)):
            return None
        return n.value, r.value

    def empty(self, dtype, shape):
        """A DeviceArray of dtype and shape (contents undefined)."""
        return DeviceArray(self, dtype, shape)

    def close(self):
        """Frees the context and every program loaded into it."""
        if self._ctx:
            for p in list(self._programs):   # the library frees them with the context
                p._prog = None
                p._plain()
            for a in list(self._arrays):
                a.free()
            ctx, self._ctx = self._ctx, None
            _check(_lib.fp8rt_context_destroy(ctx))



_contexts = {}


def default_context(device=0):
    """The context load() uses for `device`, made on first use."""
    if device not in _contexts:
        _contexts[device] = Context(device)
    return _contexts[device]


def _stream(s):
    if s is None:
        return None
    if isinstance(s, int):
        return s or None
    if hasattr(s, "__cuda_stream__"):
        return s.__cuda_stream__()[1] or None
    if hasattr(s, "cuda_stream"):
        return s.cuda_stream or None
    raise ValueError(f"a stream must be an int (a CUstream), or have __cuda_stream__ or .cuda_stream; "
                     f"got a {type(s).__name__}")


# ---- programs ------------------------------------------------------------------

class State:
    """The saved tensors of one sequence of a program's calls (a training
    step's forward and backward); see Program.new_state."""

    def __init__(self, program, ptr, owned):
        self.program, self._st, self._owned = program, ptr, owned

    def close(self):
        if self._owned and self._st and self.program._prog:
            st, self._st = self._st, None
            _check(_lib.fp8rt_state_destroy(st))


class Function:
    """One function of a program: .name, .inputs and .outputs (TensorInfo),
    .workspace_bytes, .sources (per output: the number of the input it is a
    copy of — a trace that returns its inputs — or None), .updates (per
    output: (i, shares) if it holds the new values of input i, which the
    trace updates in place — shares: whether it may be written in i's
    memory — or None). Calling it runs it; an output that is a copy of an
    input is, unless `out` is given, that input's array itself (nothing is
    copied), and so, with in_place=True, is an output that updates one."""

    def __init__(self, program, index):
        self.program, self.index = program, index
        p = program._prog
        self.name = _lib.fp8rt_program_function_name(p, index).decode()
        ni, no = ctypes.c_int(), ctypes.c_int()
        _check(_lib.fp8rt_function_io_count(p, index, ctypes.byref(ni), ctypes.byref(no)))
        ti = N.TensorInfo()
        self.inputs, self.outputs = [], []
        for i in range(ni.value):
            _check(_lib.fp8rt_function_input(p, index, i, ctypes.byref(ti)))
            self.inputs.append(_info(ti))
        src, shares = ctypes.c_int(), ctypes.c_int()
        self.sources, self.updates = [], []
        for i in range(no.value):
            _check(_lib.fp8rt_function_output(p, index, i, ctypes.byref(ti)))
            self.outputs.append(_info(ti))
            _check(_lib.fp8rt_function_output_source(p, index, i, ctypes.byref(src)))
            self.sources.append(src.value if src.value >= 0 else None)
            _check(_lib.fp8rt_function_output_updates(p, index, i, ctypes.byref(src), ctypes.byref(shares)))
            self.updates.append((src.value, bool(shares.value)) if src.value >= 0 else None)
        ws = ctypes.c_size_t()
        _check(_lib.fp8rt_function_workspace(p, index, ctypes.byref(ws)))
        self.workspace_bytes = ws.value
        self._workspace = None
        # the descriptors, filled once from the plan: a call sets only the pointers
        self._tin = self._descriptors(self.inputs)
        self._tout = self._descriptors(self.outputs)

    @staticmethod
    def _descriptors(infos):
        arr = (N.Tensor * max(len(infos), 1))()
        for t, info in zip(arr, infos):
            t.dtype, t.rank = N.DTYPE_CODE[info.dtype], len(info.shape)
            for k, d in enumerate(info.shape):
                t.dims[k] = d
        return arr

    def __repr__(self):
        return f"{self.name}({', '.join(map(repr, self.inputs))}) -> ({', '.join(map(repr, self.outputs))})"

    def _pointers(self, arrays, infos, what, stream, keep):
        if len(arrays) != len(infos):
            raise ValueError(f"{self.program.name}: {self.name} takes {len(infos)} {what}, not {len(arrays)}")
        ptrs = []
        for i, (a, info) in enumerate(zip(arrays, infos)):
            ptr, dt, shape, k = describe(a, stream)
            if dt != info.dtype or shape != info.shape:
                raise ValueError(f"{self.program.name}: {self.name} {what[:-1]} {i} '{info.name}' is "
                                 f"{info.dtype}[{', '.join(map(str, info.shape))}], not "
                                 f"{dt}[{', '.join(map(str, shape))}]")
            if ptr % 16:
                raise ValueError(f"{self.program.name}: {self.name} {what[:-1]} {i} '{info.name}' is not "
                                 "16-byte aligned")
            if k is not None:
                keep.append(k)
            ptrs.append(ptr)
        return ptrs

    def _made(self, inputs, in_place):
        """the outputs of a call that gives none: an input where the output
        is its copy — but for an input updated in place — or (in_place) its
        update"""
        prog, outs = self.program, []
        updated = {u[0] for u in self.updates if u is not None} if in_place else set()
        for k, (o, j, u) in enumerate(zip(self.outputs, self.sources, self.updates)):
            if in_place and u is not None and not u[1]:
                i = self.inputs[u[0]]
                raise ValueError(f"{prog.name}: {self.name} output {k} '{o.name}' updates input {u[0]} "
                                 f"'{i.name}', but the program reads that input after writing there: it "
                                 "cannot run in place; call it with in_place=False and copy the output back")
            if in_place and u is not None:
                j = u[0]
            elif j in updated:
                j = None
            outs.append(inputs[j] if j is not None else prog.allocate(o.dtype, o.shape))
        return tuple(outs)

    def _bind(self, inputs, out, stream, in_place=False):
        """checks the arrays and sets their pointers in the descriptors"""
        prog = self.program
        prog.need_open()
        if in_place and out is not None:
            raise ValueError(f"{prog.name}: {self.name}: give `out` or in_place=True, not both")
        s = _stream(stream if stream is not None or prog.stream is None else prog.stream())
        keep = []
        ptrs = self._pointers(inputs, self.inputs, "inputs", s, keep)
        outs = tuple(out) if out is not None else self._made(inputs, in_place)
        optrs = self._pointers(outs, self.outputs, "outputs", s, keep)
        for i, p in enumerate(ptrs):   # only the pointers: pad bytes would overwrite the rest
            _PTR.pack_into(self._tin, i * _TENSOR_SIZE, p)
        for i, p in enumerate(optrs):
            _PTR.pack_into(self._tout, i * _TENSOR_SIZE, p)
        return outs, s, keep

    def prepared(self):
        """A prepared run of this function with the default state
        (fp8rt_prepare), for a binding's quick path (fp8cc.torch gives each
        function one, for calls with every output given or none, in a
        subclass whose __call__ falls back to this class's): (run, slots), where slots is a
        ctypes array of 1 + inputs + outputs uint64 — the stream, then each
        array's device pointer — to set before each
        _lib.fp8rt_prepared_run(run). Both are the program's: use neither
        after it is closed."""
        prog = self.program
        prog.need_open()
        run = ctypes.c_void_p()
        _check(_lib.fp8rt_prepare(prog._prog, self.index, ctypes.byref(run)))
        n = 1 + len(self.inputs) + len(self.outputs)
        return run, (ctypes.c_uint64 * n).from_address(_lib.fp8rt_prepared_slots(run))

    def __call__(self, *inputs, out=None, state=None, stream=None, in_place=False):
        """Run it on `stream` (an int CUstream or a stream object; None:
        the legacy default stream) with `state` (None: the program's
        default one); returns its outputs, a tuple (`out` when given).
        in_place: the inputs the trace updates in place are updated (each
        such output is its input; ValueError, before anything runs, if
        the program cannot write one there — .updates says which can)."""
        outs, s, keep = self._bind(inputs, out, stream, in_place)
        _check(_lib.fp8rt_run_function(self.program._prog, self.index, state._st if state else None, self._tin,
                                       len(self.inputs), self._tout, len(outs), s))
        return outs

    def time(self, *inputs, out=None, state=None, stream=None, warmup=3, iters=20, in_place=False):
        """Microseconds of each of `iters` runs (after `warmup`), with CUDA events."""
        outs, s, keep = self._bind(inputs, out, stream, in_place)
        us = (ctypes.c_float * iters)()
        _check(_lib.fp8rt_time_function(self.program._prog, self.index, state._st if state else None, self._tin,
                                        len(self.inputs), self._tout, len(outs), s, warmup, iters, us))
        return list(us)

    def set_workspace(self, array):
        """Use `array` (device memory of at least workspace_bytes, 256-byte
        aligned, any dtype) as this function's workspace; it is kept alive
        here. None gives back a library-allocated one."""
        prog = self.program
        if array is None:
            _check(_lib.fp8rt_function_set_workspace(prog._prog, self.index, None, 0))
            self._workspace = None
            return
        ptr, dt, shape, _ = describe(array)
        n = _nbytes(dt, shape)
        _check(_lib.fp8rt_function_set_workspace(prog._prog, self.index, ptr, n))
        self._workspace = array


class Program(_Closing):
    """A loaded program: .functions (a list of Function; a program from one
    trace has one, from a forward and a backward "forward" and
    "backward"), .state (the state slots, TensorInfo), .externs (the names
    of the externs it calls, in the order of their first call), .target. prog(...)
    runs the first function; prog["backward"] or prog[1] is one by name or
    number. `allocator(dtype, shape)` makes outputs that are not given;
    `stream()` gives the stream of a call that names none."""

    def __init__(self, context, prog, name):
        self.context, self._prog, self.name = context, prog, name
        self.allocator = None   # (dtype, shape) -> array, for outputs not given
        self._stream = None
        self.target = (_lib.fp8rt_program_target(prog) or b"").decode()
        self.plan_version = _lib.fp8rt_program_plan_version(prog)
        self.functions = [Function(self, f) for f in range(_lib.fp8rt_program_function_count(prog))]
        self.externs = [_lib.fp8rt_program_extern_name(prog, i).decode()
                        for i in range(_lib.fp8rt_program_extern_count(prog))]
        self.state = []
        ti, frm = N.TensorInfo(), ctypes.c_int()
        for i in range(_lib.fp8rt_program_state_count(prog)):
            _check(_lib.fp8rt_program_state_info(prog, i, ctypes.byref(ti), ctypes.byref(frm)))
            self.state.append(_info(ti))

    def __getitem__(self, key):
        if isinstance(key, int):
            return self.functions[key]
        for f in self.functions:
            if f.name == key:
                return f
        raise KeyError(f"{self.name} has no function {key!r} (it has {', '.join(f.name for f in self.functions)})")

    def __call__(self, *inputs, **kw):
        return self.functions[0](*inputs, **kw)

    @property
    def stream(self):
        """() -> the stream of a call that names none (None: the legacy
        default stream)"""
        return self._stream

    @stream.setter
    def stream(self, getter):
        self._stream = getter
        self._plain()

    def _plain(self):
        """every function back to Function's own __call__: a binding's
        quicker one (fp8cc.torch) holds only for the open program and the
        stream getter it was made with"""
        for f in getattr(self, "functions", ()):
            f.__class__ = Function

    def __repr__(self):
        return f"<fp8cc program {self.name}: {', '.join(map(repr, self.functions))}>"

    def need_device(self):
        if self.context is None:
            raise ValueError(f"{self.name} was read without a device: it cannot run")

    def need_open(self):
        """ValueError unless it can run: not closed, read with a device"""
        if not self._prog:
            raise ValueError(f"{self.name} is closed")
        self.need_device()

    def allocate(self, dtype, shape):
        self.need_device()
        return self.allocator(dtype, shape) if self.allocator else DeviceArray(self.context, dtype, shape)

    @property
    def graphs(self):
        return self._graphs

    @graphs.setter
    def graphs(self, on):
        """CUDA-graph replay of runs with the same pointers (on by default)."""
        _check(_lib.fp8rt_program_set_graphs(self._prog, 1 if on else 0))
        self._graphs = bool(on)

    _graphs = True

    def new_state(self):
        """A State of its own (a step in flight: gradient accumulation's
        micro-batches), freed with the program or by .close()."""
        p = ctypes.c_void_p()
        _check(_lib.fp8rt_state_create(self._prog, ctypes.byref(p)))
        return State(self, p.value, True)

    def close(self):
        if self._prog:
            p, self._prog = self._prog, None
            self._plain()
            if self.context is None or self.context._ctx:
                _check(_lib.fp8rt_program_destroy(p))



def _text(source):
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), "<memory>"
    with open(source, "rb") as f:
        return f.read(), str(source)


def load(source, device=0, context=None, externs=None, graphs=True):
    """Load a program (a path, or the PTX as bytes) into `context` (default:
    device's default context). externs: {name: fn} registered first (see
    Context.register_extern; a (fn, graph) pair for graph=False)."""
    ctx = context or default_context(device)
    for name, fn in (externs or {}).items():
        fn, graph = fn if isinstance(fn, tuple) else (fn, True)
        ctx.register_extern(name, fn, graph)
    data, name = _text(source)
    p = ctypes.c_void_p()
    _check(_lib.fp8rt_program_load_data(ctx._ctx, data, len(data), name.encode(), ctypes.byref(p)))
    prog = Program(ctx, p.value, name)
    ctx._programs.add(prog)
    if not graphs:
        prog.graphs = False
    return prog


def read(source):
    """A program's signature without a device (fp8rt_program_read): its
    functions and state, which cannot run."""
    data, name = _text(source)
    p = ctypes.c_void_p()
    _check(_lib.fp8rt_program_read(data, len(data), name.encode(), ctypes.byref(p)))
    return Program(None, p.value, name)
