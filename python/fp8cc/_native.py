"""ctypes declarations of libfp8rt (runtime/fp8rt.h): its structs, its
entries, and where the library is found. Everything else in the package
goes through this module."""
import ctypes
import ctypes.util
import os

MAX_RANK = 8

# fp8rt_status
OK, INVALID_ARGUMENT, NO_DEVICE, NO_DRIVER, CUDA_ERROR, CUBLAS_ERROR, BAD_PROGRAM, UNSUPPORTED, \
    OUT_OF_MEMORY, IO_ERROR, NCCL_ERROR = range(11)

# fp8rt_dtype, by the plan's spelling
DTYPES = ["none", "b8", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2"]
DTYPE_CODE = {name: code for code, name in enumerate(DTYPES)}
ITEMSIZE = {"b8": 1, "u8": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f16": 2, "bf16": 2, "f32": 4,
            "f64": 8, "f8e4m3fn": 1, "f8e5m2": 1}

# fp8rt_arg_kind
ARG_TENSOR, ARG_INT, ARG_FLOAT, ARG_BOOL, ARG_NONE, ARG_STRING, ARG_NAME, ARG_TUPLE = range(8)
EXTERN_NO_GRAPH = 1


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_RANK), ("strides", ctypes.c_int64 * MAX_RANK)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * MAX_RANK)]


class Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("key", ctypes.c_char_p), ("i", ctypes.c_int64),
                ("f", ctypes.c_double), ("s", ctypes.c_char_p)]


class ExternCall(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("args", ctypes.POINTER(Arg)), ("nargs", ctypes.c_int),
                ("inputs", ctypes.POINTER(Tensor)), ("ninputs", ctypes.c_int),
                ("outputs", ctypes.POINTER(Tensor)), ("noutputs", ctypes.c_int),
                ("stream", ctypes.c_void_p), ("ctx", ctypes.c_void_p)]


# fp8rt_extern_fn: status (void *user, const fp8rt_extern_call *, char *err, size_t errlen)
EXTERN_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ExternCall), ctypes.c_void_p,
                             ctypes.c_size_t)

_P = ctypes.c_void_p
_I = ctypes.c_int
_SIG = {
    "fp8rt_version": (_I, []),
    "fp8rt_last_error": (ctypes.c_char_p, [_P]),
    "fp8rt_status_name": (ctypes.c_char_p, [_I]),
    "fp8rt_context_create": (_I, [_I, ctypes.POINTER(_P)]),
    "fp8rt_context_destroy": (_I, [_P]),
    "fp8rt_malloc": (_I, [_P, ctypes.c_size_t, ctypes.POINTER(_P)]),
    "fp8rt_free": (_I, [_P, _P]),
    "fp8rt_memcpy_htod": (_I, [_P, _P, _P, ctypes.c_size_t]),
    "fp8rt_memcpy_dtoh": (_I, [_P, _P, _P, ctypes.c_size_t]),
    "fp8rt_synchronize": (_I, [_P, _P]),
    "fp8rt_program_load_data": (_I, [_P, _P, ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(_P)]),
    "fp8rt_program_read": (_I, [_P, ctypes.c_size_t, ctypes.c_char_p, ctypes.POINTER(_P)]),
    "fp8rt_program_destroy": (_I, [_P]),
    "fp8rt_program_target": (ctypes.c_char_p, [_P]),
    "fp8rt_program_plan_version": (_I, [_P]),
    "fp8rt_program_set_graphs": (_I, [_P, _I]),
    "fp8rt_program_function_count": (_I, [_P]),
    "fp8rt_program_function_name": (ctypes.c_char_p, [_P, _I]),
    "fp8rt_program_extern_count": (_I, [_P]),
    "fp8rt_program_extern_name": (ctypes.c_char_p, [_P, _I]),
    "fp8rt_function_io_count": (_I, [_P, _I, ctypes.POINTER(_I), ctypes.POINTER(_I)]),
    "fp8rt_function_input": (_I, [_P, _I, _I, ctypes.POINTER(TensorInfo)]),
    "fp8rt_function_output": (_I, [_P, _I, _I, ctypes.POINTER(TensorInfo)]),
    "fp8rt_function_output_source": (_I, [_P, _I, _I, ctypes.POINTER(ctypes.c_int)]),
    "fp8rt_function_output_updates": (_I, [_P, _I, _I, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]),
    "fp8rt_function_workspace": (_I, [_P, _I, ctypes.POINTER(ctypes.c_size_t)]),
    "fp8rt_function_set_workspace": (_I, [_P, _I, _P, ctypes.c_size_t]),
    "fp8rt_program_state_count": (_I, [_P]),
    "fp8rt_program_state_info": (_I, [_P, _I, ctypes.POINTER(TensorInfo), ctypes.POINTER(_I)]),
    "fp8rt_state_create": (_I, [_P, ctypes.POINTER(_P)]),
    "fp8rt_state_destroy": (_I, [_P]),
    "fp8rt_program_default_state": (_P, [_P]),
    "fp8rt_run_function": (_I, [_P, _I, _P, _P, _I, _P, _I, _P]),
    "fp8rt_prepare": (_I, [_P, _I, ctypes.POINTER(_P)]),
    "fp8rt_prepared_slots": (_P, [_P]),
    "fp8rt_prepared_run": (_I, [_P]),
    "fp8rt_prepared_destroy": (_I, [_P]),
    "fp8rt_time_function": (_I, [_P, _I, _P, _P, _I, _P, _I, _P, _I, _I, ctypes.POINTER(ctypes.c_float)]),
    "fp8rt_register_extern": (_I, [_P, ctypes.c_char_p, EXTERN_FN, _P, ctypes.c_uint]),
    "fp8rt_nccl_unique_id": (_I, [_P, _P]),
    "fp8rt_context_init_comm": (_I, [_P, _P, _I, _I]),
    "fp8rt_context_set_comm": (_I, [_P, _P]),
    "fp8rt_context_comm": (_I, [_P, ctypes.POINTER(_I), ctypes.POINTER(_I)]),
}

NCCL_ID_BYTES = 128


def _candidates():
    env = os.environ.get("FP8RT_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    # installed: PREFIX/lib/python3/dist-packages/fp8cc next to PREFIX/lib/libfp8rt.so.0
    found = [os.path.join(here, *[".."] * up, "libfp8rt.so.0") for up in (2, 3)]
    lib = ctypes.util.find_library("fp8rt")
    return [p for p in found if os.path.exists(p)] + ([lib] if lib else []) + ["libfp8rt.so.0"]


def load_library():
    """libfp8rt, with its entries typed: $FP8RT_LIBRARY, else the one
    installed beside this package, else the loader's search path."""
    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        raise ImportError("fp8cc: libfp8rt not found (set FP8RT_LIBRARY to its path): " + "; ".join(errors))
    for name, (res, args) in _SIG.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            raise ImportError(f"fp8cc: {lib._name} has no {name}: a libfp8rt older than this package") from None
        f.restype, f.argtypes = res, args
    return lib


def holding_gil(lib, name):
    """lib's entry `name`, typed as above, called without releasing the GIL
    (ctypes.PyDLL): for a call that only enqueues work on a stream, as
    torch holds it through its own launches (a binding's quick path; the
    release and the retake cost about 0.1 us a call)"""
    f = getattr(ctypes.PyDLL(lib._name), name)
    f.restype, f.argtypes = _SIG[name]
    return f
