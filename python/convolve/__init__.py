"""convolve: scipy.ndimage's convolution filters on CPUs and NVIDIA GPUs.

A drop-in for scipy.ndimage's correlate, convolve, correlate1d, convolve1d,
gaussian_filter, gaussian_filter1d, uniform_filter, uniform_filter1d,
sobel, prewitt, laplace, gaussian_laplace, gaussian_gradient_magnitude
(and generic_laplace, generic_gradient_magnitude), computed by libconvolve:
same arguments, same results, on numpy arrays (CPU), CuPy arrays and
PyTorch CUDA tensors (GPU, zero copy, on the current stream) and PyTorch
CPU tensors, returning the same kind of array.

    >>> import numpy as np
    >>> import convolve
    >>> image = np.random.default_rng(0).random((480, 640), dtype=np.float32)
    >>> blurred = convolve.gaussian_filter(image, sigma=2)      # as scipy.ndimage
    >>> edges = convolve.sobel(image, axis=0, mode='nearest')

Beyond scipy's arguments every filter takes, by keyword: backend ('cpu',
'cuda', 'auto'), strategy (a name from strategies()), threads (CPU threads,
0 = all) and saturate (True: integer outputs rounded to nearest and clamped
instead of scipy's truncation). docs/python.md has the details and the
differences from scipy.

Import as a replacement: ``import convolve as ndimage``. The same filters
on dask arrays, lazily, chunk by chunk: ``import convolve.dask``
(docs/python.md, "Dask").
"""
import os as _os


def _import_core():
    """Imports the C extension with OpenMP's idle threads sleeping at once
    (OMP_WAIT_POLICY=passive, read once, when the OpenMP runtime loads)
    unless the environment chooses: threads that spin for milliseconds
    after each parallel region lose their core to other processes and hold
    the next region up (512x512 correlate 7x7 with one of 2 cores busy:
    12 ms spinning, 0.35 ms passive, 0.32 ms on one thread). The variable
    is set for the import only."""
    if "OMP_WAIT_POLICY" in _os.environ or "GOMP_SPINCOUNT" in _os.environ:
        from . import _core
        return _core
    _os.environ["OMP_WAIT_POLICY"] = "passive"
    try:
        from . import _core
    finally:
        _os.environ.pop("OMP_WAIT_POLICY", None)
    return _core


_core = _import_core()
from ._core import ConvolveError
from ._engine import clear_plan_cache, plan_cache_size
from ._ndimage import (ArgumentError, convolve, convolve1d, correlate, correlate1d,
                       gaussian_filter, gaussian_filter1d, gaussian_gradient_magnitude,
                       gaussian_laplace, generic_gradient_magnitude, generic_laplace, laplace,
                       prewitt, sobel, uniform_filter, uniform_filter1d)

__version__ = _core.version()

__all__ = ["correlate", "convolve", "correlate1d", "convolve1d", "gaussian_filter",
           "gaussian_filter1d", "uniform_filter", "uniform_filter1d", "sobel", "prewitt",
           "laplace", "gaussian_laplace", "gaussian_gradient_magnitude", "generic_laplace",
           "generic_gradient_magnitude", "ArgumentError", "ConvolveError", "strategies",
           "backend_available", "device_info", "clear_plan_cache", "plan_cache_size"]


def strategies(backend=None):
    """The strategies libconvolve was built with: a list of (name, backend,
    summary), optionally only those of backend 'cpu' or 'cuda'."""
    return [(n, b, s) for n, b, _, s in _core.strategies() if backend in (None, b)]


def backend_available(backend):
    """True if 'cpu' or 'cuda' can run here (CUDA: built in and a GPU usable)."""
    if backend == "cpu":
        return True
    if backend != "cuda":
        raise ValueError("backend must be 'cpu' or 'cuda'")
    return bool(_core.backend_built("cuda")) and bool(_core.device_info()["available"])


def device_info():
    """What libconvolve sees of the CUDA device: a dict with available,
    device_count, name, total_memory, compute_capability, multiprocessors,
    and reason (why not available)."""
    return _core.device_info()
