"""convolve.dask - the package's filters on dask arrays: lazy, chunk by chunk,
and exact on the whole array.

    >>> import dask.array as da
    >>> import convolve.dask as cvd
    >>> x = da.random.random((4096, 4096), chunks=1024)
    >>> y = cvd.gaussian_filter(x, sigma=3, mode="wrap")    # a dask array, nothing computed
    >>> y.compute()                                          # == convolve.gaussian_filter(x)

Each function takes the arguments of the package's function of the same name
(scipy.ndimage's) and a dask array (a numpy array is wrapped as one chunk),
and returns a dask array with the input's chunks whose values are those of
the package's function on the whole array: every boundary mode (reflect,
constant with cval, nearest, mirror, wrap, per axis where scipy allows),
origins, even extents, filters longer than a chunk or than the array.
`output` may be a dtype (not an array). The package's keywords (backend,
strategy, saturate) pass through; `threads` (the CPU threads of each
chunk's call) defaults to 1 here, since dask runs chunks in parallel.

How (docs/python.md, "Dask"): along an axis the filter reads `before`
samples to the left and `after` to the right of each output. On every axis
of more than one chunk,
  * chunks thinner than max(before, after) are merged with their neighbours
    (the result gets the input's chunks back);
  * for reflect, mirror, nearest and wrap the array is extended at its two
    ends by the exact extension (slices of its first or last chunk, or of
    the opposite end for wrap), so the first and last chunks are longer;
  * dask's map_overlap (boundary='none', depth (before, after)) gives each
    chunk its neighbours' samples;
  * each chunk runs the package's function with the user's arguments and
    the result is cut to the chunk: every kept output reads only real data,
    and in constant mode the chunk's own edge at the array's edge is the
    array's, where the function extends by cval as on the whole array.
An axis held in one chunk needs nothing: the function's own mode is the
global one there.
"""
import math
from functools import partial

import numpy as np
import dask.array as da

from . import _ndimage as _nd

__all__ = ["correlate", "convolve", "correlate1d", "convolve1d", "gaussian_filter",
           "gaussian_filter1d", "uniform_filter", "uniform_filter1d", "sobel", "prewitt",
           "laplace", "gaussian_laplace", "gaussian_gradient_magnitude"]


# ---- the machinery: halos, merged chunks, exact extension, map_overlap ---------------------


def _as_dask(x):
    if isinstance(x, da.Array):
        return x
    x = np.asarray(x)
    return da.from_array(x, chunks=x.shape or ())


def _check_output(output):
    if output is None or isinstance(output, (type, np.dtype, str)):
        return
    raise TypeError("output must be None or a dtype for dask arrays (the result is a new "
                    "dask array)")


def _merge_thin(chunks, h):
    """Chunks along one axis, consecutive ones merged so that each is >= h
    (a short last group joins the one before)."""
    out, acc = [], 0
    for c in chunks:
        acc += c
        if acc >= h:
            out.append(acc)
            acc = 0
    if acc:
        if out:
            out[-1] += acc
        else:
            out.append(acc)
    return tuple(out)


def _take(y, axis, sl):
    idx = [slice(None)] * y.ndim
    idx[axis] = sl
    return y[tuple(idx)]


def _extend(y, axis, h, mode):
    """y with h samples before and after it along axis, each side a chunk of
    its own: the exact extension of `mode` (not constant). Needs 1 <= h and
    h <= every chunk along axis, so that n >= 2h when there are 2 chunks."""
    n = y.shape[axis]
    rev = slice(None, None, -1)
    if mode == "reflect":       # d c b a | a b c d | d c b a
        left = _take(_take(y, axis, slice(0, h)), axis, rev)
        right = _take(_take(y, axis, slice(n - h, n)), axis, rev)
    elif mode == "mirror":      # d c b | a b c d | c b a
        left = _take(_take(y, axis, slice(1, h + 1)), axis, rev)
        right = _take(_take(y, axis, slice(n - 1 - h, n - 1)), axis, rev)
    elif mode == "nearest":     # a a a | a b c d | d d d
        left = da.repeat(_take(y, axis, slice(0, 1)), h, axis=axis)
        right = da.repeat(_take(y, axis, slice(n - 1, n)), h, axis=axis)
    else:                       # wrap: b c d | a b c d | a b c
        left = _take(y, axis, slice(n - h, n))
        right = _take(y, axis, slice(0, h))
    left, right = (p.rechunk({axis: h}) for p in (left, right))
    return da.concatenate([left, y, right], axis=axis)


def _call(block, func, args, kwargs):
    return func(block, *args, **kwargs)


def _run_block(block, func, args, kwargs, lefts, sizes, dtype, block_info=None):
    """One chunk: the package's function on the chunk with its halo, cut to
    the chunk's own outputs (a view). lefts[axis][j]: where chunk j's own
    samples start in its block; None for the added extension's chunks,
    whose outputs are dropped (an uninitialised placeholder)."""
    loc = block_info[0]["chunk-location"] if block_info else (0,) * block.ndim
    if any(lefts[a][j] is None for a, j in enumerate(loc)):
        return np.empty_like(block, dtype=dtype,
                             shape=tuple(sizes[a][j] for a, j in enumerate(loc)))
    out = func(block, *args, **kwargs)
    return out[tuple(slice(lefts[a][j], lefts[a][j] + sizes[a][j]) for a, j in enumerate(loc))]


def _probe(func, x, args, kwargs):
    """The package checks the arguments on a tiny array of x's type (scipy's
    errors, raised now rather than at compute time) and says the output's
    element type."""
    if any(isinstance(c, float) and math.isnan(c) for cc in x.chunks for c in cc):
        raise ValueError("convolve.dask needs known chunk sizes (x.compute_chunk_sizes())")
    shape = x.shape if x.size == 0 else (1,) * x.ndim
    return func(np.ones(shape, dtype=x.dtype), *args, **dict(kwargs, threads=1)).dtype


def _lazy(func, x, args, kwargs, dtype, halos, modes):
    """func(x, *args, **kwargs) on the dask array x, chunk by chunk; dtype:
    the output's element type (from _probe).

    halos: {axis: (before, after)}, how far the filter reads on each side of
    an output; modes: {axis: boundary mode name} for the same axes (each
    axis must be read with one mode only)."""
    nd = x.ndim
    kwargs = dict(kwargs)
    kwargs.setdefault("threads", 1)
    meta = da.utils.meta_from_array(x, nd, dtype=dtype)
    if x.size == 0 or nd == 0:
        return x.map_blocks(partial(_call, func=func, args=tuple(args), kwargs=kwargs),
                            dtype=dtype, meta=meta)

    chunks = list(x.chunks)
    deep = {}   # axes of several chunks that the filter reads across
    for a, (before, after) in halos.items():
        h = max(before, after)
        if h == 0 or len(chunks[a]) == 1:
            continue
        chunks[a] = _merge_thin(chunks[a], h)
        if len(chunks[a]) > 1:
            deep[a] = (before, after)
    chunks = tuple(chunks)
    y = x.rechunk(chunks) if chunks != x.chunks else x
    # the extension of reflect, mirror, nearest, wrap: a chunk of h at each end
    out_chunks, lefts, keep = list(chunks), [], [slice(None)] * nd
    for a in range(nd):
        if a not in deep:
            lefts.append((0,) * len(chunks[a]))
            continue
        before, after = deep[a]
        if modes[a] == "constant":  # the edge chunks' own extension is the global one
            lefts.append((0,) + (before,) * (len(chunks[a]) - 1))
            continue
        h = max(before, after)
        y = _extend(y, a, h, modes[a])
        out_chunks[a] = (h,) + chunks[a] + (h,)
        lefts.append((None,) + (before,) * len(chunks[a]) + (None,))
        keep[a] = slice(h, h + x.shape[a])
    depth = {a: deep.get(a, 0) for a in range(nd)}
    block = partial(_run_block, func=func, args=tuple(args), kwargs=kwargs, lefts=tuple(lefts),
                    sizes=tuple(out_chunks), dtype=dtype)
    out = da.map_overlap(block, y, depth=depth, boundary="none", trim=False,
                         chunks=tuple(out_chunks), dtype=dtype, meta=meta, align_arrays=False)
    out = out[tuple(keep)]      # whole chunks: the extension's placeholders go
    return out.rechunk(x.chunks) if chunks != x.chunks else out


def _axis_modes(mode, axes):
    """{axis: mode name} for the axes (mode: one, or one per axis in axes' order)."""
    ms = _nd._normalize_sequence(mode, len(axes))
    return {a: _nd._mode_name(m) for a, m in zip(axes, ms)}


def _radius(sigma, truncate, radius):
    if float(sigma) <= 1e-15:
        return 0
    if radius is not None:
        return int(radius)
    return int(truncate * float(sigma) + 0.5)


# ---- correlate, convolve ----------------------------------------------------------------------


def _dense_halos(weights, origins, convolution):
    halos = {}
    for a, (k, o) in enumerate(zip(weights.shape, origins)):
        if convolution:   # weights reversed, origin negated and moved for even extents
            o = -o - (1 - k % 2)
        before = k // 2 + o
        halos[a] = (before, k - 1 - before)
    return halos


def _dense(fname, input, weights, output, mode, cval, origin, axes, kw):
    _check_output(output)
    x = _as_dask(input)
    w = np.asarray(weights)
    func = getattr(_nd, fname)
    args = (w,)
    kwargs = dict(output=output, mode=mode, cval=cval, origin=origin, axes=axes, **kw)
    dtype = _probe(func, x, args, kwargs)
    if axes is not None:
        wf, origins = _nd._expand_axes(w, origin, x.ndim, axes)
    else:
        wf, origins = w, _nd._normalize_sequence(origin, x.ndim)
    halos = _dense_halos(wf, [int(o) for o in origins], fname == "convolve")
    m = _nd._mode_name(mode)
    return _lazy(func, x, args, kwargs, dtype, halos, {a: m for a in range(x.ndim)})


def correlate(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None,
              **kw):
    """convolve.correlate (scipy.ndimage.correlate) on a dask array: a lazy
    dask array with the input's chunks."""
    return _dense("correlate", input, weights, output, mode, cval, origin, axes, kw)


def convolve(input, weights, output=None, mode="reflect", cval=0.0, origin=0, *, axes=None,
             **kw):
    """convolve.convolve (scipy.ndimage.convolve) on a dask array: a lazy
    dask array with the input's chunks."""
    return _dense("convolve", input, weights, output, mode, cval, origin, axes, kw)


def _line(fname, input, weights, axis, output, mode, cval, origin, kw):
    _check_output(output)
    x = _as_dask(input)
    w = np.asarray(weights)
    func = getattr(_nd, fname)
    kwargs = dict(axis=axis, output=output, mode=mode, cval=cval, origin=origin, **kw)
    dtype = _probe(func, x, (w,), kwargs)
    a = _nd._normalize_axis(axis, x.ndim)
    halos = _dense_halos(w.reshape(-1), [int(origin)], fname == "convolve1d")
    return _lazy(func, x, (w,), kwargs, dtype, {a: halos[0]}, {a: _nd._mode_name(mode)})


def correlate1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, **kw):
    """convolve.correlate1d (scipy.ndimage.correlate1d) on a dask array."""
    return _line("correlate1d", input, weights, axis, output, mode, cval, origin, kw)


def convolve1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0, origin=0, **kw):
    """convolve.convolve1d (scipy.ndimage.convolve1d) on a dask array."""
    return _line("convolve1d", input, weights, axis, output, mode, cval, origin, kw)


# ---- Gaussian and uniform filters ----------------------------------------------------------------


def gaussian_filter1d(input, sigma, axis=-1, order=0, output=None, mode="reflect", cval=0.0,
                      truncate=4.0, *, radius=None, **kw):
    """convolve.gaussian_filter1d (scipy.ndimage.gaussian_filter1d) on a dask
    array; the filter reaches radius = int(truncate * sigma + 0.5) (or
    `radius`) samples on each side."""
    _check_output(output)
    x = _as_dask(input)
    kwargs = dict(axis=axis, order=order, output=output, mode=mode, cval=cval,
                  truncate=truncate, radius=radius, **kw)
    dtype = _probe(_nd.gaussian_filter1d, x, (sigma,), kwargs)
    a = _nd._normalize_axis(axis, x.ndim)
    r = int(radius) if radius is not None else int(truncate * float(sigma) + 0.5)
    return _lazy(_nd.gaussian_filter1d, x, (sigma,), kwargs, dtype, {a: (r, r)},
                 {a: _nd._mode_name(mode)})


def gaussian_filter(input, sigma, order=0, output=None, mode="reflect", cval=0.0, truncate=4.0,
                    *, radius=None, axes=None, **kw):
    """convolve.gaussian_filter (scipy.ndimage.gaussian_filter) on a dask
    array: sigma, order, mode and radius per axis or one for all."""
    _check_output(output)
    x = _as_dask(input)
    kwargs = dict(order=order, output=output, mode=mode, cval=cval, truncate=truncate,
                  radius=radius, axes=axes, **kw)
    dtype = _probe(_nd.gaussian_filter, x, (sigma,), kwargs)
    ax = _nd._axes_arg(axes, x.ndim)
    sigmas = _nd._normalize_sequence(sigma, len(ax))
    radii = _nd._normalize_sequence(radius, len(ax))
    halos = {}
    for a, s, r in zip(ax, sigmas, radii):
        r = _radius(s, truncate, r)
        halos[a] = (r, r)
    return _lazy(_nd.gaussian_filter, x, (sigma,), kwargs, dtype, halos,
                 _axis_modes(mode, ax))


def _uniform_halo(size, origin):
    size, origin = int(size), int(origin)
    if size <= 1:
        return (0, 0)
    before = size // 2 + origin
    return (before, size - 1 - before)


def uniform_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0, origin=0,
                     **kw):
    """convolve.uniform_filter1d (scipy.ndimage.uniform_filter1d) on a dask array."""
    _check_output(output)
    x = _as_dask(input)
    kwargs = dict(axis=axis, output=output, mode=mode, cval=cval, origin=origin, **kw)
    dtype = _probe(_nd.uniform_filter1d, x, (size,), kwargs)
    a = _nd._normalize_axis(axis, x.ndim)
    return _lazy(_nd.uniform_filter1d, x, (size,), kwargs, dtype,
                 {a: _uniform_halo(size, origin)}, {a: _nd._mode_name(mode)})


def uniform_filter(input, size=3, output=None, mode="reflect", cval=0.0, origin=0, *,
                   axes=None, **kw):
    """convolve.uniform_filter (scipy.ndimage.uniform_filter) on a dask
    array: size, mode and origin per axis or one for all."""
    _check_output(output)
    x = _as_dask(input)
    kwargs = dict(output=output, mode=mode, cval=cval, origin=origin, axes=axes, **kw)
    dtype = _probe(_nd.uniform_filter, x, (size,), kwargs)
    ax = _nd._axes_arg(axes, x.ndim)
    sizes = _nd._normalize_sequence(size, len(ax))
    origins = _nd._normalize_sequence(origin, len(ax))
    halos = {a: _uniform_halo(s, o) for a, s, o in zip(ax, sizes, origins)}
    return _lazy(_nd.uniform_filter, x, (size,), kwargs, dtype, halos, _axis_modes(mode, ax))


# ---- edge filters, Laplacians, gradient magnitudes ---------------------------------------------


def _all_axes(fname, input, args, output, mode, kwargs, halo):
    """A filter that reads `halo` samples on each side of every axis, with
    mode per axis (each axis read with its own mode only)."""
    _check_output(output)
    x = _as_dask(input)
    func = getattr(_nd, fname)
    dtype = _probe(func, x, args, kwargs)
    ax = list(range(x.ndim))
    return _lazy(func, x, args, kwargs, dtype, {a: halo(a) for a in ax},
                 _axis_modes(mode, ax))


def sobel(input, axis=-1, output=None, mode="reflect", cval=0.0, **kw):
    """convolve.sobel (scipy.ndimage.sobel) on a dask array."""
    return _all_axes("sobel", input, (), output, mode,
                     dict(axis=axis, output=output, mode=mode, cval=cval, **kw), lambda a: (1, 1))


def prewitt(input, axis=-1, output=None, mode="reflect", cval=0.0, **kw):
    """convolve.prewitt (scipy.ndimage.prewitt) on a dask array."""
    return _all_axes("prewitt", input, (), output, mode,
                     dict(axis=axis, output=output, mode=mode, cval=cval, **kw), lambda a: (1, 1))


def laplace(input, output=None, mode="reflect", cval=0.0, **kw):
    """convolve.laplace (scipy.ndimage.laplace) on a dask array."""
    return _all_axes("laplace", input, (), output, mode,
                     dict(output=output, mode=mode, cval=cval, **kw), lambda a: (1, 1))


def _gaussian_sum(fname, input, sigma, output, mode, cval, kwargs, square):
    """gaussian_laplace (square False) or gaussian_gradient_magnitude (True).

    scipy's term for axis i filters every axis with mode[i]; with one mode
    for all axes that is one filter on the chunks, otherwise each term is a
    lazy gaussian_filter of its own and the terms are combined as scipy
    does, in the output's type."""
    _check_output(output)
    x = _as_dask(input)
    func = getattr(_nd, fname)
    kw = dict(output=output, mode=mode, cval=cval, **kwargs)
    dtype = _probe(func, x, (sigma,), kw)
    nd = x.ndim
    truncate = kwargs.get("truncate", 4.0)
    sigmas = _nd._normalize_sequence(sigma, nd)
    radii = _nd._normalize_sequence(kwargs.get("radius"), nd)
    halos = {}
    for a in range(nd):
        r = _radius(sigmas[a], truncate, radii[a])
        halos[a] = (r, r)
    modes = [_nd._mode_name(m) for m in _nd._normalize_sequence(mode, nd)]
    if len(set(modes)) == 1:
        return _lazy(func, x, (sigma,), kw, dtype, halos, {a: modes[0] for a in range(nd)})
    total = None
    for i in range(nd):
        order = [0] * nd
        order[i] = 1 if square else 2
        out_t = output if total is None else total.dtype
        t = gaussian_filter(x, sigma, order, out_t, modes[i], cval, **kwargs)
        if square:
            t = t * t
        total = t if total is None else total + t
    if square:
        total = da.sqrt(total).astype(total.dtype) if total.dtype.kind not in "fc" else \
            da.sqrt(total)
    return total


def gaussian_laplace(input, sigma, output=None, mode="reflect", cval=0.0, **kwargs):
    """convolve.gaussian_laplace (scipy.ndimage.gaussian_laplace) on a dask
    array (other keywords go to gaussian_filter)."""
    return _gaussian_sum("gaussian_laplace", input, sigma, output, mode, cval, kwargs, False)


def gaussian_gradient_magnitude(input, sigma, output=None, mode="reflect", cval=0.0, **kwargs):
    """convolve.gaussian_gradient_magnitude (scipy.ndimage.
    gaussian_gradient_magnitude) on a dask array (other keywords go to
    gaussian_filter)."""
    return _gaussian_sum("gaussian_gradient_magnitude", input, sigma, output, mode, cval, kwargs,
                         True)
