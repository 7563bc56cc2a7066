"""convolve_ctypes.py - ctypes bindings of libconvolve's public API (the parts
the Python tests and bench/peers.py use): the structs of include/convolve.h
and load_library(), which finds libconvolve.so in CONVOLVE_BUILD_DIR (or
./build) and declares the functions' signatures.
"""
import ctypes as C
import os

import numpy as np

MAXD = 3


class Layout(C.Structure):
    _fields_ = [("dtype", C.c_int), ("ndim", C.c_int), ("shape", C.c_size_t * MAXD),
                ("channels", C.c_size_t), ("strides", C.c_ssize_t * MAXD),
                ("channel_stride", C.c_ssize_t)]


class Options(C.Structure):
    # convolve_options_init_size(o, sizeof o) fills it: the library reads
    # only these fields, whatever it appends later
    _fields_ = [("size", C.c_size_t), ("operation", C.c_int), ("mode", C.c_int), ("cval", C.c_double),
                ("origin", C.c_ssize_t * MAXD), ("backend", C.c_int),
                ("strategy", C.c_char_p), ("threads", C.c_int), ("autotune", C.c_int),
                ("device_memory_budget", C.c_size_t), ("devices", C.POINTER(C.c_int)),
                ("device_count", C.c_int), ("progress", C.c_void_p),
                ("progress_user", C.c_void_p), ("integer_cast", C.c_int),
                ("divisor", C.c_double)]


class StrategyInfo(C.Structure):
    _fields_ = [("name", C.c_char_p), ("backend", C.c_int), ("dims", C.c_uint),
                ("summary", C.c_char_p), ("tile", C.c_uint * 3)]


class DeviceInfo(C.Structure):
    _fields_ = [("available", C.c_int), ("device_count", C.c_int), ("name", C.c_char * 256),
                ("total_memory", C.c_size_t), ("compute_major", C.c_int),
                ("compute_minor", C.c_int), ("multiprocessors", C.c_int),
                ("reason", C.c_char * 256)]


DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.uint8): 2,
          np.dtype(np.uint16): 3}
MODES = ["reflect", "constant", "nearest", "mirror", "wrap"]
OK, UNSUPPORTED = 0, 7
BACKEND_CPU, BACKEND_CUDA = 1, 2


def load_library():
    build = os.environ.get("CONVOLVE_BUILD_DIR", "build")
    lib = C.CDLL(os.path.join(build, "libconvolve.so"))
    vp = C.c_void_p
    lib.convolve_last_error.restype = C.c_char_p
    lib.convolve_last_error.argtypes = [vp]
    lib.convolve_context_create.argtypes = [C.POINTER(vp)]
    lib.convolve_context_free.argtypes = [vp]
    lib.convolve_filter_create.argtypes = [vp, C.POINTER(vp), C.c_int, C.POINTER(C.c_size_t),
                                           C.POINTER(C.c_double)]
    lib.convolve_filter_free.argtypes = [vp]
    lib.convolve_plan_create.argtypes = [vp, C.POINTER(vp), C.POINTER(Layout), C.POINTER(Layout),
                                         vp, C.POINTER(Options)]
    lib.convolve_plan_free.argtypes = [vp]
    lib.convolve_plan_strategy.restype = C.c_char_p
    lib.convolve_plan_strategy.argtypes = [vp]
    lib.convolve_execute.argtypes = [vp, vp, vp]
    lib.convolve_strategy_count.restype = C.c_size_t
    lib.convolve_strategy_get.argtypes = [C.c_size_t, C.POINTER(StrategyInfo)]
    lib.convolve_device_query.argtypes = [vp, C.POINTER(DeviceInfo)]
    lib.convolve_options_init_size.argtypes = [C.POINTER(Options), C.c_size_t]
    lib.convolve_execute_device.argtypes = [vp, vp, vp, vp]
    lib.convolve_filter_create_named.argtypes = [vp, C.POINTER(vp), C.c_char_p, C.c_int]
    lib.convolve_filter_create_separable.argtypes = [vp, C.POINTER(vp), C.c_int,
                                                     C.POINTER(C.c_size_t),
                                                     C.POINTER(C.POINTER(C.c_double))]
    return lib
