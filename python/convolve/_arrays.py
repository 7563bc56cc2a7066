"""_arrays.py - the array kinds convolve computes on, behind one small interface.

numpy arrays run on the CPU (or, with backend='cuda', through host copies);
CuPy arrays and PyTorch CUDA tensors run on the GPU on their own memory
(zero copy), on the stream current for their device. Each kind is an `Ops`
object: allocation, casting copies, views, strides in bytes, element
pointers and how a plan runs on them. PyTorch CPU tensors are handled in
_ndimage.py by viewing them as numpy arrays.

Within a call on numpy arrays with backend 'cuda' or 'auto'
(pinned_allocations), the new arrays of 8 MiB or more come from
libconvolve's pool of pinned host memory when it holds a free buffer of
their size: the GPU copies them straight, without staging (docs/python.md,
"Host arrays on the GPU").
"""
import contextlib
import math
import threading

import numpy as np

from . import _core

NATIVE = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float64",
          np.dtype(np.uint8): "uint8", np.dtype(np.uint16): "uint16"}


def _span(shape, strides, itemsize):
    """Lowest and one-past-highest byte offsets from element 0."""
    lo = hi = 0
    for n, s in zip(shape, strides):
        if n > 1:
            if s < 0:
                lo += (n - 1) * s
            else:
                hi += (n - 1) * s
    return lo, hi + itemsize


# src/stream.h's CVI_STREAM_MIN_BYTES: smaller host arrays do not stream on
# the GPU (their copies are not staged), and glibc reuses their memory
_POOL_MIN_BYTES = 8 << 20
_pool_call = threading.local()


@contextlib.contextmanager
def pinned_allocations():
    """Around a public call on host arrays with backend 'cuda' or 'auto':
    NumpyOps.empty takes arrays of _POOL_MIN_BYTES or more from the pinned
    pool when it holds a free buffer of the size (_core.host_alloc), and
    after the call, if a plan of it ran on CUDA, the sizes it did not hold
    are pinned into the pool in the background for the next calls
    (_core.host_reserve). Nested calls run in the outermost one's scope."""
    if getattr(_pool_call, "state", None) is not None:
        yield
        return
    state = _pool_call.state = {"missed": [], "cuda": False}
    try:
        yield
    finally:
        _pool_call.state = None
    if state["cuda"]:
        for n in state["missed"]:
            _core.host_reserve(n)


def note_cuda_host_run():
    """A plan on host arrays ran on CUDA (within pinned_allocations)."""
    state = getattr(_pool_call, "state", None)
    if state is not None:
        state["cuda"] = True


class NumpyOps:
    """numpy arrays, run on host memory through the buffer protocol."""
    kind = "numpy"
    device = False

    @staticmethod
    def dtype(a):
        return a.dtype

    @staticmethod
    def empty(shape, dtype, like=None):
        state = getattr(_pool_call, "state", None)
        if state is not None:
            dt = np.dtype(dtype)
            count = math.prod(shape)
            nbytes = count * dt.itemsize
            if nbytes >= _POOL_MIN_BYTES:
                buf = _core.host_alloc(nbytes)
                if buf is not None:
                    return np.frombuffer(buf, dt, count).reshape(shape)
                state["missed"].append(nbytes)
        return np.empty(shape, dtype)

    @staticmethod
    def zeros(shape, dtype, like=None):
        return np.zeros(shape, dtype)

    @staticmethod
    def astype(a, dtype):
        with np.errstate(invalid="ignore"):
            return np.array(a, dtype=dtype, order="K", copy=True)

    @staticmethod
    def copy_into(dst, src):
        with np.errstate(invalid="ignore"):  # out-of-range casts: as scipy, silently
            np.copyto(dst, src, casting="unsafe")

    @staticmethod
    def strides(a):
        return a.strides

    @staticmethod
    def usable(a):
        """Native type, aligned, strides multiples of the element (numpy's
        aligned flag checks the strides as well as the pointer)."""
        return a.dtype in NATIVE and a.flags.aligned

    @staticmethod
    def writeable(a):
        return a.flags.writeable

    @staticmethod
    def may_share(a, b):
        return np.may_share_memory(a, b)

    @staticmethod
    def take(a, idx, axis):
        return np.take(a, idx, axis=axis)

    @staticmethod
    def round_clip(a, lo, hi):
        np.rint(a, out=a)
        np.clip(a, lo, hi, out=a)

    @staticmethod
    def sqrt_into(a):
        np.sqrt(a, a, casting="unsafe")

    @staticmethod
    def snap_integers(a, rel):
        """a's values within rel * max(|a|, 1) of an integer become it."""
        r = np.rint(a)
        near = np.abs(a - r) <= rel * np.maximum(np.abs(r), 1.0)
        np.copyto(a, r, where=near)

    @staticmethod
    def multiply_into(a, b):
        np.multiply(a, b, a)

    @staticmethod
    def add_into(a, b):
        np.add(a, b, a)

    @staticmethod
    def stream_key(a):
        return None

    @staticmethod
    def scope(a):
        return contextlib.nullcontext()

    @staticmethod
    def execute(plan, inp, out):
        plan.execute(inp, out)

    @staticmethod
    def wrap_host_weights(w):
        return w


class CupyOps:
    """CuPy arrays: device pointers, the current stream of the array's device."""
    kind = "cupy"
    device = True

    def __init__(self, cupy):
        self.cp = cupy

    @staticmethod
    def dtype(a):
        return a.dtype

    def empty(self, shape, dtype, like=None):
        with self.cp.cuda.Device(like.device.id):
            return self.cp.empty(shape, dtype)

    def zeros(self, shape, dtype, like=None):
        with self.cp.cuda.Device(like.device.id):
            return self.cp.zeros(shape, dtype)

    def astype(self, a, dtype):
        with self.cp.cuda.Device(a.device.id):
            return a.astype(dtype, order="K", copy=True)

    def copy_into(self, dst, src):
        with self.cp.cuda.Device(dst.device.id):
            self.cp.copyto(dst, src, casting="unsafe")

    @staticmethod
    def strides(a):
        return a.strides

    @staticmethod
    def usable(a):
        isz = a.dtype.itemsize
        return (a.dtype in NATIVE and a.data.ptr % isz == 0 and
                all(s % isz == 0 for s in a.strides))

    @staticmethod
    def writeable(a):
        return True

    @staticmethod
    def may_share(a, b):
        la, ha = _span(a.shape, a.strides, a.dtype.itemsize)
        lb, hb = _span(b.shape, b.strides, b.dtype.itemsize)
        pa, pb = a.data.ptr, b.data.ptr
        return pa + la < pb + hb and pb + lb < pa + ha

    def take(self, a, idx, axis):
        with self.cp.cuda.Device(a.device.id):
            return self.cp.take(a, self.cp.asarray(idx), axis=axis)

    def round_clip(self, a, lo, hi):
        with self.cp.cuda.Device(a.device.id):
            self.cp.rint(a, out=a)
            self.cp.clip(a, lo, hi, out=a)

    def sqrt_into(self, a):
        with self.cp.cuda.Device(a.device.id):
            if a.dtype.kind in "fc":
                self.cp.sqrt(a, out=a)
            else:
                self.cp.copyto(a, self.cp.sqrt(a.astype(np.float64)), casting="unsafe")

    def multiply_into(self, a, b):
        with self.cp.cuda.Device(a.device.id):
            self.cp.multiply(a, b, out=a)

    def add_into(self, a, b):
        with self.cp.cuda.Device(a.device.id):
            a += b

    def snap_integers(self, a, rel):
        cp = self.cp
        with cp.cuda.Device(a.device.id):
            r = cp.rint(a)
            near = cp.abs(a - r) <= rel * cp.maximum(cp.abs(r), 1.0)
            cp.copyto(a, r, where=near)

    def stream_key(self, a):
        with self.cp.cuda.Device(a.device.id):
            return (a.device.id, self.cp.cuda.get_current_stream().ptr)

    def scope(self, a):
        return self.cp.cuda.Device(a.device.id)

    def execute(self, plan, inp, out):
        dev = inp.device.id
        with self.cp.cuda.Device(dev):
            stream = self.cp.cuda.get_current_stream().ptr
            plan.execute_device(inp.data.ptr, out.data.ptr, stream)


_TORCH_TO_NP = None


class TorchOps:
    """PyTorch CUDA tensors: data_ptr(), strides in elements times the
    element size, torch.cuda.current_stream() of the tensor's device."""
    kind = "torch"
    device = True

    def __init__(self, torch):
        self.torch = torch
        t = torch
        pairs = [(t.float32, np.float32), (t.float64, np.float64), (t.float16, np.float16),
                 (t.uint8, np.uint8), (t.int8, np.int8), (t.int16, np.int16),
                 (t.int32, np.int32), (t.int64, np.int64), (t.bool, np.bool_),
                 (t.complex64, np.complex64), (t.complex128, np.complex128)]
        for name, npt in (("uint16", np.uint16), ("uint32", np.uint32), ("uint64", np.uint64)):
            if hasattr(t, name):
                pairs.append((getattr(t, name), npt))
        self.to_np = {a: np.dtype(b) for a, b in pairs}
        self.to_torch = {np.dtype(b).name: a for a, b in pairs}

    def dtype(self, a):
        try:
            return self.to_np[a.dtype]
        except KeyError:
            raise TypeError("array type %s not supported" % (a.dtype,)) from None

    def tdtype(self, dtype):
        try:
            return self.to_torch[np.dtype(dtype).name]
        except KeyError:
            raise TypeError("array type %s not supported by torch" % (np.dtype(dtype),)) from None

    def empty(self, shape, dtype, like=None):
        return self.torch.empty(tuple(shape), dtype=self.tdtype(dtype), device=like.device)

    def zeros(self, shape, dtype, like=None):
        return self.torch.zeros(tuple(shape), dtype=self.tdtype(dtype), device=like.device)

    def astype(self, a, dtype):
        out = self.torch.empty_like(a, dtype=self.tdtype(dtype),
                                    memory_format=self.torch.preserve_format)
        out.copy_(a)
        return out

    @staticmethod
    def copy_into(dst, src):
        dst.copy_(src)

    @staticmethod
    def strides(a):
        es = a.element_size()
        return tuple(s * es for s in a.stride())

    def usable(self, a):
        npd = self.to_np.get(a.dtype)
        return npd in NATIVE and a.data_ptr() % a.element_size() == 0

    @staticmethod
    def writeable(a):
        return True

    def may_share(self, a, b):
        la, ha = _span(a.shape, self.strides(a), a.element_size())
        lb, hb = _span(b.shape, self.strides(b), b.element_size())
        pa, pb = a.data_ptr(), b.data_ptr()
        return pa + la < pb + hb and pb + lb < pa + ha

    def take(self, a, idx, axis):
        return self.torch.index_select(a, axis, self.torch.as_tensor(idx, device=a.device))

    @staticmethod
    def round_clip(a, lo, hi):
        a.round_()
        a.clamp_(lo, hi)

    def sqrt_into(self, a):
        if a.is_floating_point() or a.is_complex():
            self.torch.sqrt(a, out=a)
        else:
            a.copy_(self.torch.sqrt(a.double()))

    def _signed_twin(self, t):
        """int16/32/64 for torch's uint16/32/64, whose CUDA tensors have no
        add or multiply: modular arithmetic gives the same bits."""
        tt = self.torch
        for u, i in (("uint16", tt.int16), ("uint32", tt.int32), ("uint64", tt.int64)):
            if getattr(tt, u, None) is not None and t == getattr(tt, u):
                return i
        return None

    def multiply_into(self, a, b):
        twin = self._signed_twin(a.dtype)
        if twin is not None and b.dtype == a.dtype:
            a.view(twin).mul_(b.view(twin))
        else:
            a.mul_(b)

    def add_into(self, a, b):
        twin = self._signed_twin(a.dtype)
        if twin is not None and b.dtype == a.dtype:
            a.view(twin).add_(b.view(twin))
        else:
            a.add_(b)

    def snap_integers(self, a, rel):
        r = self.torch.round(a)
        near = (a - r).abs() <= rel * r.abs().clamp(min=1.0)
        a.copy_(self.torch.where(near, r, a))

    def stream_key(self, a):
        return (a.device.index, self.torch.cuda.current_stream(a.device).cuda_stream)

    def scope(self, a):
        return self.torch.cuda.device(a.device)

    def execute(self, plan, inp, out):
        stream = self.torch.cuda.current_stream(inp.device).cuda_stream
        with self.torch.cuda.device(inp.device):
            plan.execute_device(inp.data_ptr(), out.data_ptr(), stream)


NUMPY = NumpyOps()
_cupy_ops = None
_torch_ops = None


def torch_ops():
    """The TorchOps (PyTorch must be importable)."""
    global _torch_ops
    if _torch_ops is None:
        import torch
        _torch_ops = TorchOps(torch)
    return _torch_ops


def ops_for(x):
    """The Ops for x's kind: numpy (anything array-like), CuPy, or a PyTorch
    CUDA tensor. PyTorch CPU tensors are 'torch-cpu' (None here)."""
    global _cupy_ops, _torch_ops
    t = type(x)
    if t is np.ndarray:
        return NUMPY
    mod = t.__module__ or ""
    if mod.startswith("cupy"):
        if _cupy_ops is None:
            import cupy
            _cupy_ops = CupyOps(cupy)
        return _cupy_ops
    if mod.startswith("torch"):
        import torch
        if isinstance(x, torch.Tensor):
            if not x.is_cuda:
                return None
            return torch_ops()
    return NUMPY


def host_array(x):
    """x as a numpy array on the host (weights live on the host)."""
    t = type(x)
    if t is np.ndarray:
        return x
    mod = t.__module__ or ""
    if mod.startswith("cupy"):
        return x.get()
    if mod.startswith("torch"):
        return x.detach().cpu().numpy()
    return np.asarray(x)
