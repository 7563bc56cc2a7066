"""_ndimage.py - scipy.ndimage's convolution-family filters on libconvolve.

Each function takes scipy.ndimage's arguments and gives its results (see
docs/python.md for the few differences), on numpy arrays, CuPy arrays,
PyTorch tensors (CUDA or CPU), returning the same kind of array. Beyond
scipy's arguments each takes, by keyword only:

  backend   'cpu', 'cuda' or 'auto' (default: 'cpu' for host arrays,
            'cuda' for device arrays)
  strategy  a libconvolve strategy name (convolve.strategies()); default auto
  threads   CPU threads (default 0: all)
  saturate  False (scipy: integer outputs truncate and wrap around) or True
            (integer outputs are rounded to nearest and clamped to the type)

Multi-axis filters that scipy runs as 1-D passes one after another
(gaussian_filter, uniform_filter, sobel, prewitt) run as one separable plan
when that means the same thing (one boundary mode on the filtered axes,
not constant mode with a non-zero cval, a float output or saturate=True);
otherwise as scipy does, pass after pass with the intermediate in the
output's type.
"""
import functools
import inspect
import numbers
import warnings
from collections.abc import Iterable

import numpy as np

from . import _engine
from ._arrays import ops_for, host_array, pinned_allocations
from ._engine import Config, apply

__all__ = ["correlate", "convolve", "correlate1d", "convolve1d", "gaussian_filter",
           "gaussian_filter1d", "uniform_filter", "uniform_filter1d", "sobel", "prewitt",
           "laplace", "gaussian_laplace", "gaussian_gradient_magnitude", "generic_laplace",
           "generic_gradient_magnitude"]


_AxisError = getattr(getattr(np, "exceptions", np), "AxisError", None) or np.AxisError


class ArgumentError(ValueError, RuntimeError):
    """A bad argument. Both a ValueError and, where scipy.ndimage raises
    RuntimeError for the same mistake, a RuntimeError, with scipy's words."""


# ---- scipy's argument conventions ------------------------------------------------------

_MODES = {"reflect": "reflect", "grid-mirror": "reflect", "constant": "constant",
          "grid-constant": "constant", "nearest": "nearest", "mirror": "mirror",
          "wrap": "wrap", "grid-wrap": "wrap"}


def _mode_name(mode):
    try:
        return _MODES[mode]
    except (KeyError, TypeError):
        raise ArgumentError("boundary mode not supported") from None


def _normalize_sequence(value, rank):
    if not isinstance(value, str) and isinstance(value, Iterable):
        normalized = list(value)
        if len(normalized) != rank:
            raise ArgumentError("sequence argument must have length equal to input rank")
        return normalized
    return [value] * rank


def _normalize_axis(axis, ndim):
    try:
        axis = int(axis)
    except TypeError:
        raise TypeError("axis must be an integer") from None
    if not -ndim <= axis < ndim:
        raise _AxisError(axis, ndim)
    return axis % ndim if ndim else 0


def _invalid_origin(origin, lenw):
    return (origin < -(lenw // 2)) or (origin > (lenw - 1) // 2)


def _asarray(ops, x):
    return np.asarray(x) if ops is _engine_numpy else x


def _dtype_arg(ops, output):
    """A dtype given as output= (numpy type or dtype, or a torch dtype), else None."""
    if isinstance(output, (type, np.dtype)):
        return np.dtype(output)
    mod = type(output).__module__ or ""
    if mod.startswith("torch") and type(output).__name__ == "dtype":
        from ._arrays import torch_ops
        return torch_ops().to_np[output]
    return None


def _output_dtype(ops, output, input):
    """The element type _get_output would give (None if it cannot tell)."""
    if output is None:
        return ops.dtype(input)
    dt = _dtype_arg(ops, output)
    if dt is not None:
        return dt
    if isinstance(output, str):
        t = np.sctypeDict.get(output)
        return None if t is None else np.dtype(t)
    try:
        return ops.dtype(output)
    except (AttributeError, TypeError):
        return None


def _get_output(ops, output, input, shape=None, complex_output=False):
    """scipy's _ni_support._get_output for arrays of ops' kind (new arrays are
    left uninitialised: every element is written)."""
    if shape is None:
        shape = input.shape
    if output is None:  # native byte order, as scipy's dtype=input.dtype.name
        dt = ops.dtype(input).newbyteorder("=")
        if not complex_output:
            return ops.empty(shape, dt, like=input)
        return ops.empty(shape, np.promote_types(dt, np.complex64), like=input)
    dt = _dtype_arg(ops, output)
    if dt is not None:
        if complex_output and dt.kind != "c":
            warnings.warn("promoting specified output dtype to complex", stacklevel=3)
            dt = np.promote_types(dt, np.complex64)
        return ops.empty(shape, dt, like=input)
    if isinstance(output, str):
        try:
            dt = np.dtype(np.sctypeDict[output])
        except KeyError:
            raise TypeError("data type %r not understood" % (output,)) from None
        if complex_output and dt.kind != "c":
            raise ArgumentError("output must have complex dtype")
        return ops.empty(shape, dt, like=input)
    if ops_for(output) is not ops:
        raise TypeError("output must be an array of the same kind as the input (%s)" % ops.kind)
    if tuple(output.shape) != tuple(shape):
        raise ArgumentError("output shape not correct")
    if complex_output and ops.dtype(output).kind != "c":
        raise ArgumentError("output must have complex dtype")
    return output


def _config(kw):
    if not kw:
        return _engine.DEFAULT
    bad = set(kw) - {"backend", "strategy", "threads", "saturate", "autotune"}
    if bad:
        raise TypeError("unexpected keyword argument %r" % sorted(bad)[0])
    return Config(**kw)


def _check_backend(ops, cfg):
    if ops.device and cfg.backend == "cpu":
        raise ValueError("backend='cpu' needs host (numpy) arrays; this one is on the GPU (%s)"
                         % ops.kind)


def _copy(ops, output, input):
    ops.copy_into(output, input)


# ---- the public functions' wrapper: the array kind, PyTorch CPU tensors ---------------------

_engine_numpy = ops_for(np.empty(0))


def _public(f):
    """Wraps f(input, ..., output, ...): PyTorch CPU tensors run as numpy
    views of themselves and come back as tensors; calls on host arrays
    with backend 'cuda' or 'auto' take their new arrays from the pinned
    pool where it can (_arrays.pinned_allocations)."""
    output_pos = list(inspect.signature(f).parameters).index("output")

    @functools.wraps(f)
    def wrapper(input, *args, **kwargs):
        pooled = kwargs.get("backend") in ("cuda", "auto")
        mod = type(input).__module__ or ""
        if mod.startswith("torch"):
            import torch
            if isinstance(input, torch.Tensor) and not input.is_cuda:
                if not pooled:
                    return _torch_cpu(f, output_pos, input, args, kwargs)
                with pinned_allocations():
                    return _torch_cpu(f, output_pos, input, args, kwargs)
        if pooled and isinstance(input, np.ndarray):
            with pinned_allocations():
                return f(input, *args, **kwargs)
        return f(input, *args, **kwargs)
    return wrapper


def _torch_cpu(f, output_pos, input, args, kwargs):
    import torch
    from ._arrays import torch_ops
    args = list(args)
    given = None
    if "output" in kwargs:
        given = kwargs["output"]
    elif len(args) >= output_pos:
        given = args[output_pos - 1]
    conv = given
    if isinstance(given, torch.Tensor):
        conv = given.numpy()
    elif isinstance(given, torch.dtype):
        conv = torch_ops().to_np[given]
    if "output" in kwargs:
        kwargs["output"] = conv
    elif len(args) >= output_pos:
        args[output_pos - 1] = conv
    res = f(input.detach().numpy(), *args, **kwargs)
    if isinstance(given, torch.Tensor):
        return given
    return torch.from_numpy(res)


# ---- complex data ---------------------------------------------------------------------------


def _complex_via_real_components(ops, func, input, weights, output, cval, **kwargs):
    """A complex correlation as real ones (as scipy: the real and imaginary
    parts of input, weights and cval)."""
    complex_input = ops.dtype(input).kind == "c"
    complex_weights = weights.dtype.kind == "c"
    if complex_input and complex_weights:
        func(input.real, weights.real, output=output.real, cval=np.real(cval), **kwargs)
        output.real -= func(input.imag, weights.imag, output=None, cval=np.imag(cval), **kwargs)
        func(input.real, weights.imag, output=output.imag, cval=np.real(cval), **kwargs)
        output.imag += func(input.imag, weights.real, output=None, cval=np.imag(cval), **kwargs)
    elif complex_input:
        func(input.real, weights, output=output.real, cval=np.real(cval), **kwargs)
        func(input.imag, weights, output=output.imag, cval=np.imag(cval), **kwargs)
    else:
        if np.iscomplexobj(cval):
            raise ValueError("Cannot provide a complex-valued cval when the input is real.")
        func(input, weights.real, output=output.real, cval=cval, **kwargs)
        func(input, weights.imag, output=output.imag, cval=cval, **kwargs)
    return output


def _real_cval(cval):
    if type(cval) is float or type(cval) is int:
        return float(cval)
    if np.iscomplexobj(cval):
        raise ValueError("Cannot provide a complex-valued cval when the input is real.")
    return float(cval)


# ---- correlate, convolve ---------------------------------------------------------------------


def _expand_axes(weights, origin, ndim, axes):
    """scipy >= 1.15's axes= of correlate and convolve: weights of len(axes)
    dimensions for those axes (in that order) become weights of ndim
    dimensions, extent 1 elsewhere; origins likewise."""
    axes = _axes_arg(axes, ndim)
    if weights.ndim != len(axes):
        raise ArgumentError("weights.ndim (%d) must match len(axes) (%d)"
                            % (weights.ndim, len(axes)))
    origins = _normalize_sequence(origin, len(axes))
    order = np.argsort(axes)
    w = weights.transpose(order)
    shape = [1] * ndim
    full_origins = [0] * ndim
    for i, a in enumerate(axes):
        shape[a] = weights.shape[i]
        full_origins[a] = origins[i]
    return w.reshape(shape), full_origins


def _correlate_or_convolve(input, weights, output, mode, cval, origin, convolution, kw,
                           axes=None):
    ops = ops_for(input)
    input = _asarray(ops, input)
    cfg = _config(kw)
    _check_backend(ops, cfg)
    weights = np.asarray(host_array(weights))
    if axes is not None:
        weights, origin = _expand_axes(weights, origin, input.ndim, axes)
    complex_input = ops.dtype(input).kind == "c"
    complex_weights = weights.dtype.kind == "c"
    if complex_input or complex_weights:
        if complex_weights and not convolution:
            weights = weights.conj()  # as numpy.correlate
        kwargs = dict(mode=mode, origin=origin, **kw)
        output = _get_output(ops, output, input, complex_output=True)
        func = convolve if convolution else correlate
        return _complex_via_real_components(ops, func, input, weights, output, cval, **kwargs)

    origins = _normalize_sequence(origin, input.ndim)
    weights = np.asarray(weights, dtype=np.float64)
    wshape = [ii for ii in weights.shape if ii > 0]
    if len(wshape) != input.ndim:
        raise ArgumentError("filter weights array has incorrect shape.")
    if convolution:
        weights = weights[tuple([slice(None, None, -1)] * weights.ndim)]
        for ii in range(len(origins)):
            origins[ii] = -origins[ii]
            if not weights.shape[ii] & 1:
                origins[ii] -= 1
    for org, lenw in zip(origins, wshape):
        if _invalid_origin(org, lenw):
            raise ValueError("Invalid origin; origin must satisfy "
                             "-(weights.shape[k] // 2) <= origin[k] <= "
                             "(weights.shape[k]-1) // 2")
    output = _get_output(ops, output, input)
    if not isinstance(mode, str) and isinstance(mode, Iterable):
        raise ArgumentError("A sequence of modes is not supported")
    mode = _mode_name(mode)
    if weights.size == 0:  # only with an empty input: nothing to compute
        return output
    apply(ops, input, output, ("dense", np.ascontiguousarray(weights)),
          [int(o) for o in origins], mode, _real_cval(cval), cfg)
    return output


@_public
def correlate(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None,
              **kw):
    """Multidimensional correlation, as scipy.ndimage.correlate.

    out[i] = sum over j of weights[j] * input[i + j - center - origin], the
    input extended past its edges by `mode` (reflect, constant, nearest,
    mirror, wrap; also grid-mirror, grid-constant, grid-wrap).

    Parameters: input (array: numpy, CuPy, PyTorch), weights (array of the
    same dimensionality, or of len(axes)), output (array or dtype), mode,
    cval, origin (int or one per axis); keyword-only axes (scipy >= 1.15:
    the axes the weights' axes apply to), backend, strategy, threads,
    saturate (see the package's docstring).

    >>> import numpy as np, convolve
    >>> a = np.arange(25).reshape(5, 5)
    >>> int(convolve.correlate(a, [[0, 1, 0], [1, 1, 1], [0, 1, 0]])[2, 2])
    60
    """
    return _correlate_or_convolve(input, weights, output, mode, cval, origin, False, kw, axes)


@_public
def convolve(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None,
             **kw):
    """Multidimensional convolution, as scipy.ndimage.convolve: correlation
    with the weights reversed along every axis (origin negated, and moved one
    further for even extents).

    >>> import numpy as np, convolve
    >>> a = np.array([[1, 2, 0, 0], [5, 3, 0, 4], [0, 0, 0, 7], [9, 3, 0, 0]])
    >>> k = np.array([[1, 1, 1], [1, 1, 0], [1, 0, 0]])
    >>> convolve.convolve(a, k, mode='constant', cval=0.0)
    array([[11, 10,  7,  4],
           [10,  3, 11, 11],
           [15, 12, 14,  7],
           [12,  3,  7,  0]])
    """
    return _correlate_or_convolve(input, weights, output, mode, cval, origin, True, kw, axes)


# ---- 1-D filters -----------------------------------------------------------------------------


def _line_taps(ndim, axis, w):
    taps = [None] * ndim
    taps[axis] = w
    return taps


@_public
def correlate1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, **kw):
    """1-D correlation along an axis, as scipy.ndimage.correlate1d.

    >>> import convolve
    >>> convolve.correlate1d([2, 8, 0, 4, 1, 9, 9, 0], weights=[1, 3])
    array([ 8, 26,  8, 12,  7, 28, 36,  9])
    """
    ops = ops_for(input)
    input = _asarray(ops, input)
    cfg = _config(kw)
    _check_backend(ops, cfg)
    weights = np.asarray(host_array(weights))
    complex_input = ops.dtype(input).kind == "c"
    complex_weights = weights.dtype.kind == "c"
    if complex_input or complex_weights:
        if complex_weights:
            weights = weights.conj().astype(np.complex128, copy=False)
        kwargs = dict(axis=axis, mode=mode, origin=origin, **kw)
        output = _get_output(ops, output, input, complex_output=True)
        return _complex_via_real_components(ops, correlate1d, input, weights, output, cval,
                                            **kwargs)
    output = _get_output(ops, output, input)
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 1 or weights.shape[0] < 1:
        raise ArgumentError("no filter weights given")
    axis = _normalize_axis(axis, input.ndim)
    if _invalid_origin(origin, len(weights)):
        raise ValueError("Invalid origin; origin must satisfy "
                         "-(len(weights) // 2) <= origin <= (len(weights)-1) // 2")
    mode = _mode_name(mode)
    cval = _real_cval(cval)
    origins = [0] * input.ndim
    origins[axis] = int(origin)
    apply(ops, input, output, ("sep", _line_taps(input.ndim, axis, weights)), origins, mode,
          cval, cfg)
    return output


@_public
def convolve1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, **kw):
    """1-D convolution along an axis, as scipy.ndimage.convolve1d.

    >>> import convolve
    >>> convolve.convolve1d([2, 8, 0, 4, 1, 9, 9, 0], weights=[1, 3])
    array([14, 24,  4, 13, 12, 36, 27,  0])
    """
    weights = np.asarray(host_array(weights))[::-1]
    origin = -origin
    if not len(weights) & 1:
        origin -= 1
    if weights.dtype.kind == "c":
        weights = weights.conj()  # undone by correlate1d's conjugation
    return correlate1d(input, weights, axis, output, mode, cval, origin, **kw)


# ---- passes along several axes -----------------------------------------------------------------


# A group of passes runs as one plan only while the dense filter the plan
# holds beside its taps (the outer product, each axis folded onto the array
# where longer) stays this small; longer passes run one after another.
_FUSE_MAX_WEIGHTS = 1 << 20

# Filters longer than this along an axis are refused before anything is
# allocated: their weights alone would take 512 MiB.
_MAX_TAPS = 1 << 26


def _dense_size(shape, group):
    n = 1
    for axis, taps, _, _ in group:
        n *= min(len(taps), 2 * shape[axis] + 1)
    return n


def _check_taps(what, count):
    """A clear error, before allocating, for a filter of `count` taps along
    an axis that cannot be done."""
    if count > _MAX_TAPS:
        raise ValueError("%s needs a filter of %d weights along an axis (%.3g GB of float64); "
                         "at most %d are supported" % (what, count, count * 8e-9, _MAX_TAPS))


def _passes(ops, input, output, passes, cval, cfg, divide=None):
    """scipy's sequence of 1-D correlations: passes = [(axis, taps, origin,
    mode)], the first reading input, the others the output so far. Runs as
    one separable plan per group of passes when that means the same."""
    if not passes:
        _copy(ops, output, input)
        return output
    odt = ops.dtype(output)
    if ops.dtype(input).kind == "c" or odt.kind == "c":
        if odt.kind != "c":
            raise ArgumentError("output must have complex dtype")
        if ops.dtype(input).kind == "c":
            _passes(ops, input.real, output.real, passes, np.real(cval), cfg, divide)
            _passes(ops, input.imag, output.imag, passes, np.imag(cval), cfg, divide)
        else:
            _passes(ops, input, output.real, passes, _real_cval(cval), cfg, divide)
            imag = output.imag
            imag[...] = 0
        return output
    cval = _real_cval(cval)
    fuse = (odt.kind == "f" or cfg.saturate) and divide is None
    nd = input.ndim
    groups = []
    for p in passes:
        g = groups[-1] if groups else None
        if (fuse and g is not None and len(g) < 3 and p[3] == g[0][3] and
                all(q[0] != p[0] for q in g) and (p[3] != "constant" or cval == 0.0) and
                _dense_size(input.shape, g + [p]) <= _FUSE_MAX_WEIGHTS):
            g.append(p)
        else:
            groups.append([p])
    src = input
    for g in groups:
        taps = [None] * nd
        origins = [0] * nd
        for axis, t, org, _ in g:
            taps[axis] = t
            origins[axis] = org
        apply(ops, src, output, ("sep", taps), origins, g[0][3], cval, cfg,
              divide=divide(g) if divide else None)
        src = output
    return output


def _gaussian_kernel1d(sigma, order, radius):
    """The sampled Gaussian of `sigma` on [-radius, radius], normalised to
    sum 1, or its derivative of `order` (the Gaussian times the polynomial
    q_n: q_0 = 1, q_{n+1}(x) = q_n'(x) - x q_n(x) / sigma^2)."""
    if order < 0:
        raise ValueError("order must be non-negative")
    s2 = sigma * sigma
    x = np.arange(-radius, radius + 1)
    phi = np.exp(-0.5 / s2 * x ** 2)
    phi = phi / phi.sum()
    if order == 0:
        return phi
    q = np.zeros(order + 1)   # coefficients of q, lowest power first
    q[0] = 1.0
    for _ in range(order):
        dq = np.zeros(order + 1)
        dq[:-1] = q[1:] * np.arange(1, order + 1)
        xq = np.zeros(order + 1)
        xq[1:] = q[:-1] / s2
        q = dq - xq
    poly = np.zeros(x.shape)
    for c in q[::-1]:
        poly = poly * x + c
    return poly * phi


def _gaussian_taps(sigma, order, truncate, radius):
    """Correlation taps of gaussian_filter1d (scipy's checks and radius rule)."""
    sd = float(sigma)
    lw = int(truncate * sd + 0.5)
    if radius is not None:
        lw = radius
    if not isinstance(lw, numbers.Integral) or lw < 0:
        raise ValueError("Radius must be a nonnegative integer.")
    _check_taps("a Gaussian of sigma %g (radius %d)" % (sd, lw), 2 * lw + 1)
    return _gaussian_kernel1d(sigma, order, lw)[::-1]


@_public
def gaussian_filter1d(input, sigma, axis=-1, order=0, output=None, mode="reflect", cval=0.0,
                      truncate=4.0, *, radius=None, **kw):
    """1-D Gaussian filter (or its derivative of `order`) along an axis, as
    scipy.ndimage.gaussian_filter1d; radius = int(truncate * sigma + 0.5)
    unless given.

    >>> import convolve
    >>> convolve.gaussian_filter1d([1.0, 2.0, 3.0, 4.0, 5.0], 1).round(6)
    array([1.427041, 2.067822, 3.      , 3.932178, 4.572959])
    """
    weights = _gaussian_taps(sigma, order, truncate, radius)
    return correlate1d(input, weights, axis, output, mode, cval, 0, **kw)


def _axes_arg(axes, ndim):
    if axes is None:
        return list(range(ndim))
    if isinstance(axes, numbers.Integral):
        axes = (axes,)
    axes = [_normalize_axis(a, ndim) for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError("axes must be unique")
    return axes


@_public
def gaussian_filter(input, sigma, order=0, output=None, mode="reflect", cval=0.0, truncate=4.0,
                    *, radius=None, axes=None, **kw):
    """Multidimensional Gaussian filter, as scipy.ndimage.gaussian_filter:
    sigma, order (0..3 and beyond: derivatives), mode and radius per axis or
    one for all; axes (scipy >= 1.11) restricts it to some axes.

    >>> import numpy as np, convolve
    >>> a = np.arange(50, step=2).reshape((5, 5))
    >>> convolve.gaussian_filter(a, sigma=1)
    array([[ 4,  6,  8,  9, 11],
           [10, 12, 14, 15, 17],
           [20, 22, 24, 25, 27],
           [29, 31, 33, 34, 36],
           [35, 37, 39, 40, 42]])
    """
    ops = ops_for(input)
    input = _asarray(ops, input)
    cfg = _config(kw)
    _check_backend(ops, cfg)
    output = _get_output(ops, output, input)
    axes = _axes_arg(axes, input.ndim)
    n = len(axes)
    orders = _normalize_sequence(order, n)
    sigmas = _normalize_sequence(sigma, n)
    modes = _normalize_sequence(mode, n)
    radiuses = _normalize_sequence(radius, n)
    passes = []
    for ii in range(n):
        if sigmas[ii] > 1e-15:
            taps = _gaussian_taps(sigmas[ii], orders[ii], truncate, radiuses[ii])
            passes.append((axes[ii], taps, 0, _mode_name(modes[ii])))
    return _passes(ops, input, output, passes, cval, cfg)


@_public
def uniform_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0,
                     **kw):
    """1-D uniform (moving average) filter of `size` along an axis, as
    scipy.ndimage.uniform_filter1d.

    >>> import convolve
    >>> convolve.uniform_filter1d([2, 8, 0, 4, 1, 9, 9, 0], size=3)
    array([4, 3, 4, 1, 4, 6, 6, 3])
    """
    ops = ops_for(input)
    input = _asarray(ops, input)
    cfg = _config(kw)
    _check_backend(ops, cfg)
    axis = _normalize_axis(axis, input.ndim)
    if size < 1:
        raise ArgumentError("incorrect filter size")
    complex_output = ops.dtype(input).kind == "c"
    output = _get_output(ops, output, input, complex_output=complex_output)
    if (size // 2 + origin < 0) or (size // 2 + origin >= size):
        raise ValueError("invalid origin")
    mode = _mode_name(mode)
    _uniform_passes(ops, input, output, [(axis, int(size), int(origin), mode)], cval, cfg)
    return output


# Uniform filters of at least this size run as 1-D running sums.
_BOX_MIN = 16


def _uniform_passes(ops, input, output, axes, cval, cfg):
    """uniform filters: taps 1/size on float outputs; on integer ones sums
    with weights 1 divided by the size in float64 before the cast, as
    scipy's running sums (exact for integer data)."""
    odt = ops.dtype(output)
    exact = odt.kind not in "fc" and not cfg.saturate
    for axis, size, origin, mode in axes:
        _check_taps("a uniform filter of size %d" % size, size)
    passes = [(axis, np.ones(size) if exact else np.full(size, 1.0 / size), origin, mode)
              for axis, size, origin, mode in axes]
    if not exact and any(size >= _BOX_MIN for _, size, _, _ in axes):
        # long boxes one axis at a time, as scipy: the library sums each as
        # a running sum in double (src/cpu/fast_box.c)
        src = input
        for p in passes:
            _passes(ops, src, output, [p], cval, cfg)
            src = output
        return
    if exact:
        if len(passes) == 0:
            _copy(ops, output, input)
            return
        src = input
        for p in passes:  # one at a time, each truncated, as scipy
            _passes(ops, src, output, [p], cval, cfg, divide=lambda g: float(len(g[0][1])))
            src = output
        return
    _passes(ops, input, output, passes, cval, cfg)


@_public
def uniform_filter(input, size=3, output=None, mode="reflect", cval=0.0, origin=0, *,
                   axes=None, **kw):
    """Multidimensional uniform filter, as scipy.ndimage.uniform_filter:
    size, mode and origin per axis or one for all; axes (scipy >= 1.11).

    >>> import numpy as np, convolve
    >>> convolve.uniform_filter(np.arange(16.0).reshape(4, 4), size=(1, 3), mode='nearest')
    array([[ 0.33333333,  1.        ,  2.        ,  2.66666667],
           [ 4.33333333,  5.        ,  6.        ,  6.66666667],
           [ 8.33333333,  9.        , 10.        , 10.66666667],
           [12.33333333, 13.        , 14.        , 14.66666667]])
    """
    ops = ops_for(input)
    input = _asarray(ops, input)
    cfg = _config(kw)
    _check_backend(ops, cfg)
    output = _get_output(ops, output, input, complex_output=ops.dtype(input).kind == "c")
    axes = _axes_arg(axes, input.ndim)
    n = len(axes)
    sizes = _normalize_sequence(size, n)
    origins = _normalize_sequence(origin, n)
    modes = _normalize_sequence(mode, n)
    todo = []
    for ii in range(n):
        if sizes[ii] > 1:
            s, o = int(sizes[ii]), origins[ii]
            if (s // 2 + o < 0) or (s // 2 + o >= s):
                raise ValueError("invalid origin")
            todo.append((axes[ii], s, int(o), _mode_name(modes[ii])))
    _uniform_passes(ops, input, output, todo, cval, cfg)
    return output


def _edge_filter(input, axis, output, mode, cval, kw, smooth):
    ops = ops_for(input)
    input = _asarray(ops, input)
    cfg = _config(kw)
    _check_backend(ops, cfg)
    axis = _normalize_axis(axis, input.ndim)
    output = _get_output(ops, output, input)
    modes = _normalize_sequence(mode, input.ndim)
    passes = [(axis, np.array([-1.0, 0.0, 1.0]), 0, _mode_name(modes[axis]))]
    passes += [(ii, np.array(smooth), 0, _mode_name(modes[ii]))
               for ii in range(input.ndim) if ii != axis]
    return _passes(ops, input, output, passes, cval, cfg)


@_public
def sobel(input, axis=-1, output=None, mode="reflect", cval=0.0, **kw):
    """Sobel filter: the derivative [-1, 0, 1] along `axis`, smoothed by
    [1, 2, 1] along every other axis, as scipy.ndimage.sobel.

    >>> import numpy as np, convolve
    >>> convolve.sobel(np.array([[0., 0, 1, 1], [0, 0, 1, 1]]), axis=1)
    array([[0., 4., 4., 0.],
           [0., 4., 4., 0.]])
    """
    return _edge_filter(input, axis, output, mode, cval, kw, [1.0, 2.0, 1.0])


@_public
def prewitt(input, axis=-1, output=None, mode="reflect", cval=0.0, **kw):
    """Prewitt filter: the derivative [-1, 0, 1] along `axis`, smoothed by
    [1, 1, 1] along every other axis, as scipy.ndimage.prewitt.

    >>> import numpy as np, convolve
    >>> convolve.prewitt(np.array([[0., 0, 1, 1], [0, 0, 1, 1]]), axis=1)
    array([[0., 3., 3., 0.],
           [0., 3., 3., 0.]])
    """
    return _edge_filter(input, axis, output, mode, cval, kw, [1.0, 1.0, 1.0])


# ---- sums of filters: Laplacians, gradient magnitudes ----------------------------------------------


@_public
def generic_laplace(input, derivative2, output=None, mode="reflect", cval=0.0,
                    extra_arguments=(), extra_keywords=None):
    """Sum over axes of derivative2(input, axis, output, mode, cval, ...), as
    scipy.ndimage.generic_laplace (the first term written to output, the
    others added to it in the output's type).

    >>> import numpy as np, convolve
    >>> d2 = lambda x, axis, out, mode, cval: convolve.correlate1d(x, [1, -2, 1], axis, out,
    ...                                                            mode, cval)
    >>> x = np.random.default_rng(0).random((5, 6))
    >>> bool(np.allclose(convolve.generic_laplace(x, d2), convolve.laplace(x)))
    True
    """
    if extra_keywords is None:
        extra_keywords = {}
    ops = ops_for(input)
    input = _asarray(ops, input)
    output = _get_output(ops, output, input)
    axes = list(range(input.ndim))
    if axes:
        modes = _normalize_sequence(mode, len(axes))
        derivative2(input, axes[0], output, modes[0], cval, *extra_arguments, **extra_keywords)
        for ii in range(1, len(axes)):
            tmp = derivative2(input, axes[ii], output.dtype, modes[ii], cval, *extra_arguments,
                              **extra_keywords)
            ops.add_into(output, tmp)
    else:
        _copy(ops, output, input)
    return output


@_public
def laplace(input, output=None, mode="reflect", cval=0.0, **kw):
    """Laplace filter from second differences [1, -2, 1] along every axis,
    as scipy.ndimage.laplace.

    >>> import numpy as np, convolve
    >>> convolve.laplace(np.array([[0., 0, 0], [0, 1, 0], [0, 0, 0]]), mode='constant')
    array([[ 0.,  1.,  0.],
           [ 1., -4.,  1.],
           [ 0.,  1.,  0.]])
    """
    ops = ops_for(input)
    input = _asarray(ops, input)
    cfg = _config(kw)
    _check_backend(ops, cfg)
    nd = input.ndim
    modes = _normalize_sequence(mode, nd) if nd else []
    names = [_mode_name(m) for m in modes]
    odt = _output_dtype(ops, output, input)
    if (1 <= nd <= 3 and len(set(names)) == 1 and ops.dtype(input).kind != "c" and
            odt is not None and (odt.kind == "f" or (cfg.saturate and odt.kind in "iu"))):
        # one plan: the sum of the 1-D filters is a dense cross of 3^nd weights
        output = _get_output(ops, output, input)
        w = np.zeros((3,) * nd)
        for a in range(nd):
            idx = [1] * nd
            for k, v in ((0, 1.0), (1, -2.0), (2, 1.0)):
                idx[a] = k
                w[tuple(idx)] += v
        apply(ops, input, output, ("dense", w), [0] * nd, names[0], _real_cval(cval), cfg)
        return output

    def derivative2(input, axis, output, mode, cval):
        return correlate1d(input, [1, -2, 1], axis, output, mode, cval, 0, **kw)
    return generic_laplace(input, derivative2, output, mode, cval)


@_public
def gaussian_laplace(input, sigma, output=None, mode="reflect", cval=0.0, **kwargs):
    """Laplace filter from Gaussian second derivatives, as
    scipy.ndimage.gaussian_laplace (other keywords go to gaussian_filter).

    >>> import numpy as np, convolve
    >>> convolve.gaussian_laplace(np.eye(3), 1.0).shape
    (3, 3)
    """
    ops = ops_for(input)
    input = _asarray(ops, input)

    def derivative2(input, axis, output, mode, cval, sigma, **kwargs):
        order = [0] * input.ndim
        order[axis] = 2
        return gaussian_filter(input, sigma, order, output, mode, cval, **kwargs)

    return generic_laplace(input, derivative2, output, mode, cval, extra_arguments=(sigma,),
                           extra_keywords=kwargs)


@_public
def generic_gradient_magnitude(input, derivative, output=None, mode="reflect", cval=0.0,
                               extra_arguments=(), extra_keywords=None):
    """sqrt of the sum over axes of derivative(input, axis, ...)**2, as
    scipy.ndimage.generic_gradient_magnitude.

    >>> import numpy as np, convolve
    >>> x = np.random.default_rng(0).random((5, 6))
    >>> m = convolve.generic_gradient_magnitude(x, lambda *a: convolve.sobel(*a))
    >>> bool(np.allclose(m, np.hypot(convolve.sobel(x, 0), convolve.sobel(x, 1))))
    True
    """
    if extra_keywords is None:
        extra_keywords = {}
    ops = ops_for(input)
    input = _asarray(ops, input)
    output = _get_output(ops, output, input)
    axes = list(range(input.ndim))
    if axes:
        modes = _normalize_sequence(mode, len(axes))
        derivative(input, axes[0], output, modes[0], cval, *extra_arguments, **extra_keywords)
        ops.multiply_into(output, output)
        for ii in range(1, len(axes)):
            tmp = derivative(input, axes[ii], output.dtype, modes[ii], cval, *extra_arguments,
                             **extra_keywords)
            ops.multiply_into(tmp, tmp)
            ops.add_into(output, tmp)
        ops.sqrt_into(output)
    else:
        _copy(ops, output, input)
    return output


@_public
def gaussian_gradient_magnitude(input, sigma, output=None, mode="reflect", cval=0.0, **kwargs):
    """Gradient magnitude from Gaussian first derivatives, as
    scipy.ndimage.gaussian_gradient_magnitude (other keywords go to
    gaussian_filter).

    >>> import numpy as np, convolve
    >>> step = np.repeat([[0.0] * 4 + [1.0] * 4], 3, axis=0)
    >>> convolve.gaussian_gradient_magnitude(step, 1.0)[1].round(3)
    array([0.001, 0.014, 0.122, 0.364, 0.364, 0.122, 0.014, 0.001])
    """
    ops = ops_for(input)
    input = _asarray(ops, input)

    def derivative(input, axis, output, mode, cval, sigma, **kwargs):
        order = [0] * input.ndim
        order[axis] = 1
        return gaussian_filter(input, sigma, order, output, mode, cval, **kwargs)

    return generic_gradient_magnitude(input, derivative, output, mode, cval,
                                      extra_arguments=(sigma,), extra_keywords=kwargs)
