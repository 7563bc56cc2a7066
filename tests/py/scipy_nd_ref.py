"""scipy_nd_ref.py - scipy.ndimage's N-d correlate/convolve as the tests'
reference, with borders extended the way correlate1d (and convolve)
extends a line. Imported by the tests after they checked numpy and scipy.
"""
import numpy as np


def periodic_index(j, n, mode):
    """Where index j of an axis of n samples reads in reflect or mirror mode,
    for any j (as scipy's correlate1d extends a line)."""
    if mode == "reflect":
        m = j % (2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    if n == 1:
        return np.zeros_like(j)
    m = j % (2 * n - 2)
    return np.where(m < n, m, 2 * n - 2 - m)


def scipy_nd(fn, x, w, mode, cval, origin):
    """fn (ndi.correlate or ndi.convolve) of x. scipy's N-d functions extend
    reflect and mirror borders by one reflection only, so where a filter
    reaches further past an edge than the axis is long they disagree with
    scipy's own correlate1d (e.g. n = 2, K = 12: scipy 1.10; docs/semantics.md).
    There the input is first extended, as correlate1d does, far enough that
    the filter never reaches past the extension, and the middle is kept."""
    if mode not in ("reflect", "mirror") or all(k <= n for k, n in zip(w.shape, x.shape)):
        return fn(x, w, mode=mode, cval=cval, origin=list(origin))
    pads = [k + abs(o) + 1 for k, o in zip(w.shape, origin)]
    xp = x
    for a, (n, pw) in enumerate(zip(x.shape, pads)):
        xp = np.take(xp, periodic_index(np.arange(-pw, n + pw), n, mode), axis=a)
    full = fn(xp, w, mode="constant", cval=0.0, origin=list(origin))
    return full[tuple(slice(pw, pw + n) for n, pw in zip(x.shape, pads))]
