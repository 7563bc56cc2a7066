"""_engine.py - one filter over one array: element types, layouts, the plan cache.

`apply` computes out = filter (x) inp in correlation form (scipy's
correlate semantics, origins per axis, one boundary mode) for arrays of any
dimensionality and element type:

- element types: libconvolve's four (float32, float64, uint8, uint16) run
  as they are; other inputs are converted (float16 to float32, the rest to
  float64). Outputs of those four types are written directly: uint8 and
  uint16 with scipy's cast done by the library (CONVOLVE_CAST_TRUNCATE:
  sums in double, truncation with wrap-around) or, with saturate=True,
  rounded to nearest and clamped (libconvolve's own rule); other outputs
  go through a float64 buffer and the same casts in numpy.
- layouts: the filter's axes of extent > 1 become the plan's spatial axes
  (at most 3; a dense filter with more is split along its first axis); the
  other axes are merged where their strides allow and become further
  spatial axes of filter extent 1, the channel axis, or batch loops run in
  C, so views (non-contiguous, negatively strided, broadcast inputs) are
  never copied.
- plans are cached by shape, strides, element types, filter bytes and
  options; each cache entry holds a small pool of plans so that threads
  never share one (a libconvolve context serves one thread at a time).
"""
import math
import threading

import numpy as np

from . import _core
from ._arrays import NATIVE, note_cuda_host_run

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_U8 = np.dtype(np.uint8)
_U16 = np.dtype(np.uint16)
_DIRECT_FLOAT = (_F32, _F64)
_DIRECT_INT = (_U8, _U16)

# ---- configuration of a call ------------------------------------------------------


class Config:
    """Per-call options beyond scipy's: backend, strategy, threads, saturate."""
    __slots__ = ("backend", "strategy", "threads", "saturate", "autotune", "_key")

    def __init__(self, backend=None, strategy=None, threads=None, saturate=False,
                 autotune=False):
        if backend is not None and backend not in ("auto", "cpu", "cuda"):
            raise ValueError("backend must be 'auto', 'cpu' or 'cuda', not %r" % (backend,))
        if strategy is not None and not isinstance(strategy, str):
            raise TypeError("strategy must be a str")
        if threads is not None and (not isinstance(threads, (int, np.integer)) or threads < 0):
            raise ValueError("threads must be a non-negative integer (0: all)")
        self.backend = backend
        self.strategy = strategy
        self.threads = int(threads or 0)
        self.saturate = bool(saturate)
        self.autotune = bool(autotune)
        self._key = (self.backend, self.strategy, self.threads, self.autotune)

    def key(self):
        return self._key


DEFAULT = Config()

# ---- the plan cache --------------------------------------------------------------

_CACHE_MAX = 256
_POOL_MAX = 4
_cache = {}
_cache_lock = threading.Lock()
stats = {"hits": 0, "misses": 0, "input_copies": 0, "output_buffers": 0}


def clear_plan_cache():
    """Drops every cached plan (and the device memory CUDA plans hold)."""
    with _cache_lock:
        _cache.clear()


def plan_cache_size():
    """Number of distinct cached problems."""
    return len(_cache)


def _take_plan(key):
    pool = _cache.get(key)
    if pool:
        try:
            plan = pool.pop()
            stats["hits"] += 1
            return plan
        except IndexError:
            pass
    return None


def _give_back(key, plan):
    pool = _cache.get(key)
    if pool is None:
        with _cache_lock:
            pool = _cache.get(key)
            if pool is None:
                if len(_cache) >= _CACHE_MAX:
                    try:  # the oldest problem goes
                        del _cache[next(iter(_cache))]
                    except (StopIteration, KeyError, RuntimeError):
                        pass
                pool = _cache[key] = []
    if len(pool) < _POOL_MAX:
        pool.append(plan)


# ---- layouts ------------------------------------------------------------------------


def _map_axes(shape, sin, sout, fext):
    """Chooses the plan's axes for arrays of `shape` (byte strides sin, sout)
    and a filter of extents fext: returns (spatial, channel, batch) where
    spatial is a list of [extent, sin, sout, src] (src: the array axis with
    filter extent > 1, or None), channel is [extent, sin, sout] or None, and
    batch a list of [count, sin, sout] loops."""
    active, inactive = [], []
    for a, n in enumerate(shape):
        if fext[a] > 1:
            active.append([n, sin[a], sout[a], a, a])
        elif n > 1:
            inactive.append([n, sin[a], sout[a], None, a])
    merged = True
    while merged and len(inactive) > 1:  # axes whose strides nest become one
        merged = False
        for p in inactive:
            for q in inactive:
                if p is not q and p[1] == q[1] * q[0] and p[2] == q[2] * q[0]:
                    q[0] *= p[0]
                    inactive.remove(p)
                    merged = True
                    break
            if merged:
                break
    spatial = list(active)
    channel = None
    rest = sorted(inactive, key=lambda v: abs(v[1]) + abs(v[2]))
    if rest:
        small = rest[0]
        amin = min((abs(v[1]) + abs(v[2]) for v in spatial), default=None)
        if amin is None or abs(small[1]) + abs(small[2]) < amin:
            # the most contiguous axis: a few interleaved values are channels,
            # a long run the row every strategy streams along
            if (small[0] <= 4 and spatial) or len(spatial) >= 3:
                channel = small
            else:
                spatial.append(small)
            rest.pop(0)
    rest.sort(key=lambda v: -v[0])
    while rest and len(spatial) < 3:
        spatial.append(rest.pop(0))
    if channel is None and rest:
        channel = rest.pop(0)
    batch = sorted(rest, key=lambda v: -(abs(v[1]) + abs(v[2])))
    spatial.sort(key=lambda v: (-(abs(v[1]) + abs(v[2])), v[4]))
    return spatial, channel, batch


def _sum_preserving_f32(w):
    """w rounded to float32 values whose sum is as close as can be to w's own:
    the float strategies compute with float32 weights, and rounding each to
    nearest alone can move a Gaussian's sum off 1 by 2e-8, a bias every
    output shares (scipy computes in double). A few weights move one ulp
    further, those that rounding had moved most against the residue."""
    w = np.asarray(w, dtype=np.float64)
    f = w.astype(np.float32)
    flat_w = w.reshape(-1)
    flat_f = f.reshape(-1)
    target = math.fsum(flat_w)
    movable = (flat_w != 0) & np.isfinite(flat_w)
    for _ in range(min(flat_w.size, 256)):
        r = target - math.fsum(flat_f.astype(np.float64))
        if r == 0 or not np.isfinite(r):
            break
        toward = np.float32(np.inf if r > 0 else -np.inf)
        moved = np.nextafter(flat_f, toward)
        step = moved.astype(np.float64) - flat_f.astype(np.float64)
        ok = movable & (np.abs(r - step) < abs(r))
        if not ok.any():
            break
        gain = (flat_w - flat_f.astype(np.float64)) * (1.0 if r > 0 else -1.0)
        i = int(np.argmax(np.where(ok, gain, -np.inf)))
        flat_f[i] = moved[i]
    return flat_f.astype(np.float64).reshape(w.shape)


_F32_TAPS_MAX = 64
_f32_taps = {}


def _taps_f32(t):
    """_sum_preserving_f32(t), remembered for the last few taps: it takes
    about 0.15 ms a filter axis, a third of a whole 512x512 gaussian_filter,
    and every new shape needs a plan (the same taps again)."""
    key = t.tobytes()
    got = _f32_taps.get(key)
    if got is None:
        got = _sum_preserving_f32(t)
        got.flags.writeable = False
        if len(_f32_taps) >= _F32_TAPS_MAX:
            _f32_taps.clear()
        _f32_taps[key] = got
    return got


def _make_plan(inp_shape, sin, sout, in_name, out_name, isz, osz, filt, origins, mode, cval,
               cfg, cast, device):
    kind, fdata = filt
    nd = len(inp_shape)
    if kind == "dense":
        fext = fdata.shape
    else:
        fext = tuple(1 if t is None else len(t) for t in fdata)
    spatial, channel, batch = _map_axes(inp_shape, sin, sout, fext)
    if not spatial:
        spatial = [[1, isz, osz, None, 0]]
    srcs = [v[3] for v in spatial]
    if in_name != "float64" and out_name != "float64" and kind != "dense" and cast is None:
        # the library computes in float (dense weights stay: their rank-one
        # test, which picks the separable path, wants them as given; scipy's
        # cast computes in double; all-equal taps, a box, stay so, and so do
        # 128 taps or more: the library sums those in double, folded onto the
        # array where longer)
        fdata = [t if t is None or len(t) >= 128 or (t == t[0]).all() else
                 _taps_f32(t) for t in fdata]
    if kind == "dense":
        act = [a for a in range(nd) if fext[a] > 1]
        w = np.asarray(fdata, dtype=np.float64).reshape([fext[a] for a in act])
        order = [act.index(s) for s in srcs if s is not None]
        w = np.ascontiguousarray(w.transpose(order)).reshape(
            [fext[s] if s is not None else 1 for s in srcs])
        if w.ndim == 0 or w.size == 1:
            w = w.reshape([1] * len(srcs))
        fspec = ("dense", tuple(w.shape), w.tobytes())
    else:
        one = np.ones(1).tobytes()
        fspec = ("separable", tuple(np.ascontiguousarray(fdata[s], dtype=np.float64).tobytes()
                                    if s is not None else one for s in srcs))
    org = tuple(int(origins[s]) if s is not None else 0 for s in srcs)
    ch = channel if channel is not None else [1, isz, osz]
    lin = (in_name, tuple(v[0] for v in spatial), ch[0], tuple(v[1] for v in spatial), ch[1])
    lout = (out_name, tuple(v[0] for v in spatial), ch[0], tuple(v[2] for v in spatial), ch[2])
    backend = "cuda" if device else (cfg.backend or "cpu")
    opts = ("correlate", mode, float(cval), org, backend, cfg.strategy, cfg.threads,
            cfg.autotune)
    if cast is not None:  # ("truncate", divisor): scipy's cast, in the library
        opts += (cast[0], float(cast[1]))
    btup = tuple((v[0], v[1], v[2]) for v in batch)
    return _core.Plan(lin, lout, fspec, opts, (tuple(inp_shape), tuple(sin)),
                      (tuple(inp_shape), tuple(sout)), btup, device)


def _same_host_view(ops, inp, out):
    """True for host arrays that are the same elements (pointer, strides,
    element size): libconvolve filters those in place (output=input, as
    scipy allows) with no buffer; device execution cannot."""
    if ops.device:
        return False
    return (inp.__array_interface__["data"][0] == out.__array_interface__["data"][0] and
            inp.strides == out.strides and inp.dtype.itemsize == out.dtype.itemsize)


def _run(ops, inp, out, filt, origins, mode, cval, cfg, cast=None):
    """Runs one plan: inp and out usable (native types, aligned), same
    shape, at most 3 filter axes of extent > 1; not overlapping, or (host
    arrays) the same elements, filtered in place. cast: None (the
    library's rounding for integer outputs) or ("truncate", divisor):
    scipy's cast, the sums in double (divisor 0: none)."""
    if ops.device and ops.dtype(out) == _F64 and ops.dtype(inp) != _F64:
        # the GPU accumulates in the input's precision (float for float32 and
        # integer inputs), the CPU in double whenever the output is double: a
        # float64 copy of the input gives the GPU the CPU's numbers (float64
        # outputs, and the float64 buffers of integer outputs)
        stats["input_copies"] += 1
        inp = ops.astype(inp, _F64)
    shape = inp.shape
    sin = ops.strides(inp)
    sout = ops.strides(out)
    idt = ops.dtype(inp)
    odt = ops.dtype(out)
    kind, fdata = filt
    if kind == "dense":
        fkey = (fdata.shape, fdata.tobytes())
    else:
        fkey = tuple(None if t is None else t.tobytes() for t in fdata)
    ckey = "nan" if cval != cval else cval
    skey = ops.stream_key(inp) if ops.device else None
    key = (ops.kind, shape, sin, sout, idt.char, odt.char, kind, fkey, tuple(origins), mode,
           ckey, cfg.key(), skey, cast)
    plan = _take_plan(key)
    if plan is None:
        stats["misses"] += 1
        with ops.scope(inp):  # a CUDA plan lives on the array's device
            plan = _make_plan(shape, sin, sout, NATIVE[idt], NATIVE[odt], idt.itemsize,
                              odt.itemsize, filt, origins, mode, cval, cfg, cast, ops.device)
    try:
        ops.execute(plan, inp, out)
        if not ops.device and plan.backend == "cuda":
            note_cuda_host_run()
    finally:
        _give_back(key, plan)


# ---- element types ------------------------------------------------------------------


def _work_input_dtype(dt):
    if dt.kind == "f" and dt.itemsize <= 4:
        return _F32
    if dt.kind in "fiub":
        return _F64
    raise TypeError("array type %s not supported" % (dt,))


_SNAP = 1e-11   # relative distance to an integer taken as rounding noise


def _bytes_of_bool(ops, a):
    """A bool array's bytes as uint8 (numpy and CuPy; others: a itself).
    scipy reads and writes bool data as the C type npy_bool, an unsigned
    char: a byte of 9 (a 3x3 sum of ones stored in a bool output) reads back
    as 9, where numpy's bool casts give 1."""
    if ops.kind in ("numpy", "cupy") and ops.dtype(a).kind == "b":
        return a.view(np.uint8)
    return a


def _store(ops, out, tmp, cfg):
    """out[...] = tmp with scipy's cast (truncation), or rounded and clamped."""
    odt = ops.dtype(out)
    if odt.kind == "b" and ops.kind in ("numpy", "cupy"):
        # scipy's C cast to npy_bool: truncation to a machine integer, then
        # its low byte (0.7 -> 0 (False), 9.0 -> a byte of 9, read as True)
        ops.snap_integers(tmp, _SNAP)
        ops.copy_into(out.view(np.uint8), ops.astype(tmp, np.int64))
        return
    if cfg.saturate and odt.kind in "iu":
        info = np.iinfo(odt)
        ops.round_clip(tmp, float(info.min), float(info.max))
    elif odt.kind in "iu":
        # sums within a few ulps of an integer are that integer: scipy sums
        # symmetric filters in pairs, and an exact integer result (a Gaussian
        # of a ramp) must not truncate to the one below because of the order
        # of summation
        ops.snap_integers(tmp, _SNAP)
        if odt.itemsize < 8:
            # scipy's C cast: truncation to a machine integer, then its low
            # bits (numpy's float-to-small-integer casts may clamp instead)
            tmp = ops.astype(tmp, np.int64)
    ops.copy_into(out, tmp)


# ---- boundary index maps (for splitting filters of more than 3 axes) ------------------


def _boundary_index(j, n, mode):
    """Index of the extended input at j (array), -1 where constant: libconvolve's rule."""
    j = np.asarray(j)
    inside = (j >= 0) & (j < n)
    if mode == "constant":
        return np.where(inside, j, -1)
    if mode == "nearest":
        return np.clip(j, 0, n - 1)
    if mode == "wrap":
        return np.mod(j, n)
    if mode == "mirror":
        if n == 1:
            return np.zeros_like(j)
        p = 2 * n - 2
        m = np.mod(j, p)
        return np.where(m < n, m, p - m)
    p = 2 * n  # reflect
    m = np.mod(j, p)
    return np.where(m < n, m, p - 1 - m)


def _apply_split(ops, inp, out, w, origins, mode, cval, cfg):
    """A dense filter with more than 3 axes of extent > 1: for each tap plane
    k along its first such axis, the filter of one axis fewer, gathered along
    that axis by the mode (any axis outside in constant mode: cval)."""
    nd = inp.ndim
    a0 = next(a for a in range(nd) if w.shape[a] > 1)
    n0, K0 = inp.shape[a0], w.shape[a0]
    off = K0 // 2 + origins[a0]
    acc = ops.zeros(inp.shape, _F64, like=inp)
    tmp = ops.empty(inp.shape, _F64, like=inp)
    org = list(origins)
    org[a0] = 0
    for k in range(K0):
        wk = np.take(w, [k], axis=a0)
        if not wk.any():
            continue
        apply(ops, inp, tmp, ("dense", wk), org, mode, cval, cfg)
        j = np.arange(n0) + k - off
        idx = _boundary_index(j, n0, mode)
        g = ops.take(tmp, np.where(idx < 0, 0, idx), a0)
        if mode == "constant":
            fill = float(cval) * float(wk.sum())
            lo = int(np.count_nonzero(j < 0))
            hi = int(np.count_nonzero(j >= n0))
            pre = (slice(None),) * a0
            if lo:
                g[pre + (slice(0, lo),)] = fill
            if hi:
                g[pre + (slice(n0 - hi, n0),)] = fill
        acc += g
    _store(ops, out, acc, cfg)


# ---- the entry point ----------------------------------------------------------------


def apply(ops, inp, out, filt, origins, mode, cval, cfg=DEFAULT, divide=None):
    """out = filt (x) inp, scipy's correlation, for arrays of ops' kind.

    filt is ("dense", float64 array of inp.ndim axes) or ("sep", [taps or
    None per axis]) (float64 1-D taps, correlation form, at most 3 given);
    origins one int per axis; mode a libconvolve mode name. `divide`: the
    result is divided by it in float64 before the cast (uniform filters on
    integer outputs, summed with weights of one, as scipy's running sums).
    """
    shape = inp.shape
    if 0 in shape:
        return
    if len(shape) == 0:  # a 0-d array: a 1-element line
        inp = inp.reshape(1)
        out = out.reshape(1)
        kind, fdata = filt
        filt = ("dense", np.asarray(fdata, np.float64).reshape(1)) if kind == "dense" else \
            ("dense", np.ones(1))
        origins = [0]
        shape = (1,)
    kind, fdata = filt
    if kind == "dense":
        fdata = np.ascontiguousarray(fdata, dtype=np.float64)
    else:  # taps of one weight scale the others
        taps = []
        scale = 1.0
        for t in fdata:
            if t is not None:
                if not (type(t) is np.ndarray and t.dtype == _F64 and t.ndim == 1 and
                        t.flags.c_contiguous):
                    t = np.ascontiguousarray(t, dtype=np.float64).reshape(-1)
                if t.size == 1:
                    scale *= float(t[0])
                    t = None
            taps.append(t)
        act = [a for a, t in enumerate(taps) if t is not None]
        if len(act) > 3:
            raise ValueError("internal: a separable filter of more than 3 axes")
        if not act:
            kind, fdata = "dense", np.full((1,) * len(shape), scale)
        else:
            if scale != 1.0:
                taps[act[0]] = taps[act[0]] * scale
            fdata = taps
    filt = (kind, fdata)
    if kind == "dense" and sum(1 for e in fdata.shape if e > 1) > 3:
        if not np.all(np.isfinite(fdata)):
            raise ValueError("filter weights must be finite (no NaN or infinity)")
        _apply_split(ops, inp, out, fdata, origins, mode, cval, cfg)
        return
    if not ops.usable(inp):
        stats["input_copies"] += 1
        inp = ops.astype(_bytes_of_bool(ops, inp), _work_input_dtype(ops.dtype(inp)))
    odt = ops.dtype(out)
    if not ops.writeable(out):
        raise ValueError("output array is read-only")
    # uint8 and uint16 outputs: the library casts as scipy (the sums in
    # double, divided by `divide`, snapped, truncated, low bits kept) or,
    # with saturate=True, rounds and clamps; no float64 buffer either way
    cast = ("truncate", divide or 0.0) if odt in _DIRECT_INT and not cfg.saturate else None
    direct = (divide is None and (odt in _DIRECT_FLOAT or (cfg.saturate and odt in _DIRECT_INT))
              or cast is not None)
    if direct and ops.usable(out) and (not ops.may_share(inp, out) or _same_host_view(ops, inp, out)):
        _run(ops, inp, out, filt, origins, mode, cval, cfg, cast)
        return
    if direct and cast is not None:
        # an output the library cannot write (unaligned, overlapping the
        # input): the cast into a buffer of its type, then a copy
        stats["output_buffers"] += 1
        tmp = ops.empty(shape, odt, like=inp)
        _run(ops, inp, tmp, filt, origins, mode, cval, cfg, cast)
        ops.copy_into(out, tmp)
        return
    if direct:
        tdt = odt                       # same type, a buffer apart from the input
    elif odt.kind == "f" and odt.itemsize <= 4 and ops.dtype(inp) != _F64 and divide is None:
        tdt = _F32                      # float16 outputs
    else:
        tdt = _F64
    stats["output_buffers"] += 1
    tmp = ops.empty(shape, tdt, like=inp)
    _run(ops, inp, tmp, filt, origins, mode, cval, cfg)
    if divide is not None:
        tmp /= divide
    _store(ops, out, tmp, cfg)
