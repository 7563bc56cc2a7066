"""tiff_build.py - writes TIFF files byte by byte for the tests (Debian's
python3 has no tifffile): classic TIFF in either byte order, one or more
pages, chunky or planar samples, strips or tiles, uncompressed or Deflate
(zlib), optionally with the floating-point predictor of TIFF Technical Note 3;
and any tag set to any value, so that malformed files are easy to make.
It writes what the TIFF 6.0 specification says, independently of libtiff,
which the reader under test uses. Used by tests/py and tests/fuzz/make_corpus.py.
"""
import struct
import zlib

import numpy as np

SHORT, LONG = 3, 4
COMPRESSION_NONE, COMPRESSION_DEFLATE = 1, 8


def _fp_predict(rows, dtype, stride):
    """TN3's floating-point predictor: per row, the samples' bytes in
    big-endian order regrouped by significance, then the difference of each
    byte from the one `stride` (samples per pixel) before it."""
    out = []
    size = np.dtype(dtype).itemsize
    for r in rows:
        b = np.frombuffer(r.astype(np.dtype(dtype).newbyteorder(">")).tobytes(), np.uint8)
        planes = b.reshape(-1, size).T.reshape(-1).astype(np.int32)
        d = planes.copy()
        d[stride:] = (planes[stride:] - planes[:-stride]) % 256
        out.append(d.astype(np.uint8).tobytes())
    return b"".join(out)


def page(a, photometric=None, planar=False, tile=None, rows_per_strip=None,
         compression=COMPRESSION_NONE, predictor=None, tags=None, order="<"):
    """One page: a is (h, w) or (h, w, c) of uint8, uint16, float32 or float64.
    Returns (tags, blocks): the tag dict {tag: (type, values)} without the
    data offsets, and the encoded strips or tiles."""
    a = np.asarray(a)
    if a.ndim == 2:
        a = a[:, :, None]
    h, w, c = a.shape
    kind = {"u": 1, "f": 3}[a.dtype.kind]
    bits = a.dtype.itemsize * 8
    fd = a.astype(a.dtype.newbyteorder(order))  # samples in the file's byte order
    planes = [fd[:, :, k] for k in range(c)] if planar and c > 1 else [fd]
    blocks = []
    if tile:
        th, tw = tile
        for p in planes:
            for y in range(0, h, th):
                for x in range(0, w, tw):
                    t = np.zeros((th, tw) + p.shape[2:], p.dtype)
                    part = p[y:y + th, x:x + tw]
                    t[:part.shape[0], :part.shape[1]] = part
                    blocks.append(t)
    else:
        rps = rows_per_strip or h
        for p in planes:
            for y in range(0, h, rps):
                blocks.append(p[y:y + rps])
    enc = []
    for b in blocks:
        if predictor == 3:
            raw = _fp_predict(b.reshape(b.shape[0], -1), a.dtype, 1 if planar else c)
        else:
            raw = b.tobytes()
        enc.append(zlib.compress(raw) if compression == COMPRESSION_DEFLATE else raw)
    if photometric is None:
        photometric = 2 if c >= 3 else 1
    t = {256: (LONG, [w]), 257: (LONG, [h]), 258: (SHORT, [bits] * c),
         259: (SHORT, [compression]), 262: (SHORT, [photometric]), 277: (SHORT, [c]),
         284: (SHORT, [2 if planar and c > 1 else 1]), 339: (SHORT, [kind] * c)}
    if c in (2, 4):
        t[338] = (SHORT, [2])  # unassociated alpha
    if predictor:
        t[317] = (SHORT, [predictor])
    if tile:
        t[322], t[323] = (LONG, [tile[1]]), (LONG, [tile[0]])
    else:
        t[278] = (LONG, [rows_per_strip or h])
    t.update(tags or {})
    return t, enc


def tiff(pages, order="<", next_ifd=None):
    """A classic TIFF of the pages (each from page()); next_ifd replaces the
    last directory's next-IFD offset (0)."""
    e = order
    out = bytearray((b"II*\0" if e == "<" else b"MM\0*") + b"\0\0\0\0")
    prev_link = 4
    for n, (t, blocks) in enumerate(pages):
        offsets = []
        for b in blocks:
            offsets.append(len(out))
            out += b
            if len(out) % 2:
                out += b"\0"
        t = dict(t)
        tiled = 322 in t
        t.setdefault(324 if tiled else 273, (LONG, offsets))
        t.setdefault(325 if tiled else 279, (LONG, [len(b) for b in blocks]))
        # values that do not fit in 4 bytes go before the directory
        entries = []
        for tag in sorted(t):
            typ, vals = t[tag]
            data = struct.pack(e + ("H" if typ == SHORT else "I") * len(vals), *vals)
            if len(data) > 4:
                at = len(out)
                out += data + (b"\0" if len(data) % 2 else b"")
                entries.append((tag, typ, len(vals), struct.pack(e + "I", at)))
            else:
                entries.append((tag, typ, len(vals), data.ljust(4, b"\0")))
        ifd = len(out)
        struct.pack_into(e + "I", out, prev_link, ifd)
        out += struct.pack(e + "H", len(entries))
        for tag, typ, count, val in entries:
            out += struct.pack(e + "HHI", tag, typ, count) + val
        prev_link = len(out)
        out += b"\0\0\0\0"
    if next_ifd is not None:
        struct.pack_into(e + "I", out, prev_link, next_ifd)
    return bytes(out)
