#!/usr/bin/python3
"""make_corpus.py - writes the seed corpora of the fuzz harnesses into
tests/fuzz/corpus/<harness>/ (small valid files of each variant the readers
accept, and a few malformed ones near their checks). Needs numpy and cv2
(Debian: python3-numpy, python3-opencv). The output is committed, so CI does
not run this; rerun it after changing it, and keep each file to a few KB.
Files named regress-* are inputs that once found a bug: this script leaves
them alone.

Usage: /usr/bin/python3 tests/fuzz/make_corpus.py
"""
import io
import os
import struct
import zlib

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
rng = np.random.default_rng(20240611)


def put(harness, name, data):
    d = os.path.join(CORPUS, harness)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    assert len(data) <= 8192, (harness, name, len(data))
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def clear(harness):
    d = os.path.join(CORPUS, harness)
    if os.path.isdir(d):
        for n in os.listdir(d):
            if not n.startswith("regress-"):
                os.remove(os.path.join(d, n))


# ---- .npy -------------------------------------------------------------------

def npy_bytes(a, version=None):
    b = io.BytesIO()
    np.lib.format.write_array(b, a, version=version, allow_pickle=False)
    return b.getvalue()


def npy_raw(header, payload=b"", version=1):
    """A .npy file with a hand-written header dict (padded as numpy pads)."""
    h = header.encode("latin1")
    pre = 10 if version == 1 else 12
    h += b" " * ((-(pre + len(h) + 1)) % 64) + b"\n"
    size = struct.pack("<H", len(h)) if version == 1 else struct.pack("<I", len(h))
    return b"\x93NUMPY" + bytes([version, 0]) + size + h + payload


def make_npy():
    clear("npy")
    put("npy", "f4-1d", npy_bytes(rng.standard_normal(7).astype("<f4")))
    put("npy", "f8-2d", npy_bytes(rng.standard_normal((3, 5)).astype("<f8")))
    put("npy", "u1-3d", npy_bytes(rng.integers(0, 256, (2, 3, 4)).astype("|u1")))
    put("npy", "u2-2d", npy_bytes(rng.integers(0, 65536, (4, 4)).astype("<u2")))
    put("npy", "f4-be-2d", npy_bytes(rng.standard_normal((2, 3)).astype(">f4")))
    put("npy", "f8-be-1d", npy_bytes(rng.standard_normal(4).astype(">f8")))
    put("npy", "u2-be-1d", npy_bytes(np.arange(6, dtype=">u2")))
    put("npy", "v2-f4-2d", npy_bytes(np.ones((2, 2), "<f4"), version=(2, 0)))
    v3 = bytearray(npy_bytes(np.arange(5, dtype="<f8"), version=(2, 0)))
    v3[6] = 3
    put("npy", "v3-f8-1d", bytes(v3))
    put("npy", "py2-long-shape",
        npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 2L), }",
                b"\0" * 16))
    put("npy", "keys-reordered",
        npy_raw('{"shape": (3,), "fortran_order": False, "descr": "|u1"}', b"abc"))
    # refused variants, near the checks
    put("npy", "bad-fortran", npy_bytes(np.asfortranarray(np.ones((2, 3), "<f4"))))
    put("npy", "bad-4d", npy_bytes(np.zeros((1, 2, 1, 2), "|u1")))
    put("npy", "bad-scalar", npy_bytes(np.array(1.5, "<f8")))
    put("npy", "bad-empty", npy_bytes(np.zeros((0, 3), "<f4")))
    put("npy", "bad-int64", npy_bytes(np.arange(3, dtype="<i8")))
    put("npy", "bad-structured",
        npy_bytes(np.zeros(2, dtype=[("a", "<f4"), ("b", "<u2")])))
    put("npy", "bad-truncated", npy_bytes(np.ones((4, 4), "<f8"))[:-5])
    put("npy", "bad-trailing", npy_bytes(np.ones(3, "<f4")) + b"xx")
    put("npy", "bad-huge-shape",
        npy_raw("{'descr': '<f8', 'fortran_order': False, 'shape': (100000, 100000), }"))


# ---- PNG ----------------------------------------------------------------------

def png_chunk(kind, data):
    c = kind + data
    return struct.pack(">I", len(data)) + c + struct.pack(">I", zlib.crc32(c) & 0xFFFFFFFF)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]


def png_rows(samples, depth):
    """Raw scanlines (filter byte 0) of an (h, w, c) array of samples."""
    out = bytearray()
    for row in samples:
        out.append(0)
        flat = row.reshape(-1)
        if depth == 16:
            out += flat.astype(">u2").tobytes()
        elif depth == 8:
            out += flat.astype("u1").tobytes()
        else:
            bits = "".join(format(int(v), "0%db" % depth) for v in flat)
            bits += "0" * (-len(bits) % 8)
            out += bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))
    return bytes(out)


def png_bytes(samples, color, depth, interlace=0, extra=(), idat_split=None):
    """A PNG of samples (h, w, c) with colour type color and bit depth depth;
    extra holds (type, data) chunks placed before IDAT."""
    h, w = samples.shape[:2]
    if interlace:
        raw = b""
        for x0, y0, dx, dy in ADAM7:
            sub = samples[y0::dy, x0::dx]
            if sub.shape[0] and sub.shape[1]:
                raw += png_rows(sub, depth)
    else:
        raw = png_rows(samples, depth)
    z = zlib.compress(raw, 9)
    out = b"\x89PNG\r\n\x1a\n"
    out += png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, interlace))
    for kind, data in extra:
        out += png_chunk(kind, data)
    parts = [z] if not idat_split else [z[:idat_split], z[idat_split:]]
    for p in parts:
        out += png_chunk(b"IDAT", p)
    return out + png_chunk(b"IEND", b"")


def cv_png(a):
    ok, buf = cv2.imencode(".png", a)
    assert ok
    return buf.tobytes()


def make_png():
    clear("png")
    put("png", "gray8", cv_png(rng.integers(0, 256, (9, 7)).astype(np.uint8)))
    put("png", "gray16", cv_png(rng.integers(0, 65536, (5, 6)).astype(np.uint16)))
    put("png", "rgb8", cv_png(rng.integers(0, 256, (6, 5, 3)).astype(np.uint8)))
    put("png", "rgba8", cv_png(rng.integers(0, 256, (4, 4, 4)).astype(np.uint8)))
    put("png", "rgb16", cv_png(rng.integers(0, 65536, (3, 4, 3)).astype(np.uint16)))
    put("png", "rgba16", cv_png(rng.integers(0, 65536, (3, 3, 4)).astype(np.uint16)))
    ga = rng.integers(0, 256, (5, 4, 2))
    put("png", "gray-alpha8", png_bytes(ga, 4, 8))
    put("png", "gray-alpha16", png_bytes(rng.integers(0, 65536, (3, 2, 2)), 4, 16))
    for depth in (1, 2, 4):
        g = rng.integers(0, 1 << depth, (7, 11, 1))
        put("png", "gray%d" % depth, png_bytes(g, 0, depth))
    put("png", "gray2-trns", png_bytes(rng.integers(0, 4, (4, 5, 1)), 0, 2,
                                       extra=[(b"tRNS", struct.pack(">H", 1))]))
    put("png", "rgb8-trns", png_bytes(rng.integers(0, 4, (3, 3, 3)), 2, 8,
                                      extra=[(b"tRNS", struct.pack(">HHH", 1, 2, 3))]))
    pal = bytes(rng.integers(0, 256, 16 * 3).astype(np.uint8))
    for depth in (1, 2, 4, 8):
        p = rng.integers(0, min(16, 1 << depth), (6, 9, 1))
        put("png", "palette%d" % depth, png_bytes(p, 3, depth, extra=[(b"PLTE", pal)]))
    put("png", "palette4-trns",
        png_bytes(rng.integers(0, 16, (5, 5, 1)), 3, 4,
                  extra=[(b"PLTE", pal), (b"tRNS", bytes([0, 128, 255, 7]))]))
    put("png", "interlaced-rgb8",
        png_bytes(rng.integers(0, 256, (11, 10, 3)), 2, 8, interlace=1))
    put("png", "interlaced-gray16",
        png_bytes(rng.integers(0, 65536, (9, 13, 1)), 0, 16, interlace=1))
    put("png", "interlaced-palette2",
        png_bytes(rng.integers(0, 4, (10, 9, 1)), 3, 2, interlace=1, extra=[(b"PLTE", pal)]))
    put("png", "two-idat", png_bytes(rng.integers(0, 256, (8, 8, 3)), 2, 8, idat_split=40))
    put("png", "text-gamma",
        png_bytes(rng.integers(0, 256, (3, 3, 1)), 0, 8,
                  extra=[(b"gAMA", struct.pack(">I", 45455)), (b"tEXt", b"Comment\0seed")]))
    good = cv_png(rng.integers(0, 256, (8, 8)).astype(np.uint8))
    put("png", "bad-truncated", good[:len(good) - 20])
    put("png", "bad-no-iend", good[:-12])
    crc = bytearray(good)
    crc[29] ^= 0xFF   # inside IHDR's CRC
    put("png", "bad-crc", bytes(crc))
    put("png", "bad-huge-no-data",
        b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", 40000, 40000, 8, 2,
                                                               0, 0, 0))
        + png_chunk(b"IDAT", zlib.compress(bytes(100))) + png_chunk(b"IEND", b""))


# ---- JPEG ---------------------------------------------------------------------

def cv_jpeg(a, *params):
    ok, buf = cv2.imencode(".jpg", a, list(params))
    assert ok
    return buf.tobytes()


def make_jpeg():
    clear("jpeg")
    smooth = cv2.GaussianBlur(rng.integers(0, 256, (16, 16, 3)).astype(np.uint8), (5, 5), 0)
    gray = cv2.cvtColor(smooth, cv2.COLOR_BGR2GRAY)
    put("jpeg", "gray-8x8", cv_jpeg(gray[:8, :8], cv2.IMWRITE_JPEG_QUALITY, 50))
    put("jpeg", "gray-13x11", cv_jpeg(gray[:11, :13], cv2.IMWRITE_JPEG_QUALITY, 75))
    put("jpeg", "rgb-16x16", cv_jpeg(smooth, cv2.IMWRITE_JPEG_QUALITY, 60))
    put("jpeg", "rgb-9x7", cv_jpeg(smooth[:7, :9], cv2.IMWRITE_JPEG_QUALITY, 90))
    put("jpeg", "rgb-progressive",
        cv_jpeg(smooth, cv2.IMWRITE_JPEG_PROGRESSIVE, 1, cv2.IMWRITE_JPEG_QUALITY, 50))
    put("jpeg", "gray-progressive",
        cv_jpeg(gray, cv2.IMWRITE_JPEG_PROGRESSIVE, 1, cv2.IMWRITE_JPEG_QUALITY, 50))
    put("jpeg", "rgb-optimized",
        cv_jpeg(smooth[:8], cv2.IMWRITE_JPEG_OPTIMIZE, 1, cv2.IMWRITE_JPEG_QUALITY, 40))
    put("jpeg", "rgb-restart",
        cv_jpeg(smooth, cv2.IMWRITE_JPEG_RST_INTERVAL, 1, cv2.IMWRITE_JPEG_QUALITY, 40))
    good = cv_jpeg(gray, cv2.IMWRITE_JPEG_QUALITY, 50)
    put("jpeg", "bad-truncated", good[:len(good) * 2 // 3])
    put("jpeg", "bad-no-eoi", good[:-2])
    sof = good.find(b"\xff\xc0")
    huge = bytearray(good)
    huge[sof + 5:sof + 9] = struct.pack(">HH", 60000, 60000)   # height, width
    put("jpeg", "bad-huge-claim", bytes(huge))


# ---- PNM ----------------------------------------------------------------------

def make_pnm():
    clear("pnm")
    g = rng.integers(0, 256, (3, 4)).astype(np.uint8)
    put("pnm", "p5-8bit", b"P5\n4 3\n255\n" + g.tobytes())
    put("pnm", "p5-maxval15", b"P5 4 3 15\n" + (g % 16).tobytes())
    w = rng.integers(0, 65536, (2, 3)).astype(">u2")
    put("pnm", "p5-16bit", b"P5\n3 2\n65535\n" + w.tobytes())
    put("pnm", "p5-maxval1000", b"P5\n3 2\n1000\n" + (w % 1001).astype(">u2").tobytes())
    c = rng.integers(0, 256, (2, 3, 3)).astype(np.uint8)
    put("pnm", "p6-8bit", b"P6\n# a comment\n3 2\n255\n" + c.tobytes())
    put("pnm", "p6-16bit",
        b"P6\n2 2\n65535\n" + rng.integers(0, 65536, (2, 2, 3)).astype(">u2").tobytes())
    put("pnm", "p2-ascii", "P2\n3 2\n255\n0 128 255\n1 2 3\n")
    put("pnm", "p2-comments", "P2 # width follows\n2 # height\n2\n# maxval\n9\n0 9\n#x\n4 5\n")
    put("pnm", "p3-ascii", "P3\n2 1\n65535\n0 1 2 65535 4 5\n")
    put("pnm", "p5-trailing-ws", b"P5\n2 1\n255\n\x01\x02\n")
    put("pnm", "bad-p1", "P1\n2 2\n0 1\n1 0\n")
    put("pnm", "bad-p7", "P7\nWIDTH 1\nHEIGHT 1\nDEPTH 1\nMAXVAL 255\nENDHDR\n\x00")
    put("pnm", "bad-sample-above-maxval", "P2\n2 1\n10\n3 11\n")
    put("pnm", "bad-truncated", b"P6\n4 4\n255\n" + bytes(20))
    put("pnm", "bad-huge-ascii", "P2\n46000 46000\n255\n0 1 2\n")


# ---- text ---------------------------------------------------------------------

def make_text():
    clear("text")
    put("text", "row", "1 2 3 2 1\n")
    put("text", "matrix", "# sobel\n-1 0 1\n-2 0 2\n-1 0 1\n")
    put("text", "volume", "1 2\n3 4\n\n5 6\n7 8\n\n\n0.5 0.25\n1e-3 -2E+2\n")
    put("text", "column", "1\n2\n3\n")
    put("text", "floats", "0.1 -0.0 1e308 4.9e-324\r\n0x1.8p1 +7 .5 -inf\r\n")
    put("text", "nan-inf", "nan inf -nan\n")
    put("text", "comments", "# header\n1 2 # trailing\n# only a comment\n3 4\n")
    put("text", "tabs", "\t1\t2 \v3\f\n4 5 6\n")
    put("text", "bad-ragged", "1 2 3\n4 5\n")
    put("text", "bad-planes", "1 2\n3 4\n\n5 6\n")
    put("text", "bad-word", "1 two 3\n")
    put("text", "bad-empty", "# nothing\n\n")
    put("text", "bad-long-token", "1" * 200 + "\n")


# ---- named filters: first byte = dimensions - 1 (mod 3), then the spec -------

def make_filter_named():
    clear("filter_named")
    specs = [(0, "box:1"), (1, "box:3"), (2, "box:0"), (1, "gaussian:2"),
             (0, "gaussian:0.5"), (2, "gaussian:1.25"), (1, "gaussian:1e-3"),
             (1, "identity"), (2, "identity"), (0, "laplacian"), (1, "laplacian"),
             (2, "laplacian"), (1, "sobel-x"), (1, "sobel-y"), (1, "sharpen"), (1, "emboss"),
             (0, "sobel-x"), (1, "box"), (1, "box:-1"), (1, "box:1.5"), (1, "gaussian:0"),
             (1, "gaussian:nan"), (1, "identity:2"), (1, "median:3"), (0, "box:100000"),
             (0, "gaussian:0x1p-3")]
    for i, (d, s) in enumerate(specs):
        name = "%02d-%dd-%s" % (i, d + 1, "".join(ch if ch.isalnum() else "_" for ch in s))
        put("filter_named", name, bytes([d]) + s.encode())


# ---- TIFF ----------------------------------------------------------------------

def make_tiff():
    import sys
    sys.path.insert(0, os.path.join(HERE, "..", "py"))
    import tiff_build as tb
    clear("tiff")

    def cv_tiff(a, **params):
        flags = []
        for k, v in params.items():
            flags += [getattr(cv2, "IMWRITE_TIFF_" + k.upper()), v]
        ok, buf = cv2.imencode(".tif", a, flags)
        assert ok
        return buf.tobytes()

    u8 = rng.integers(0, 256, (9, 7, 3)).astype(np.uint8)
    u16 = rng.integers(0, 65536, (6, 5, 4)).astype(np.uint16)
    f32 = rng.standard_normal((5, 6)).astype(np.float32)
    f64 = rng.standard_normal((4, 5)).astype(np.float64)
    # OpenCV's writer (LZW by default; others by flag)
    put("tiff", "cv-rgb8-lzw", cv_tiff(u8))
    put("tiff", "cv-gray16-none", cv_tiff(u16[:, :, 0], compression=1))
    put("tiff", "cv-rgba16-deflate", cv_tiff(u16, compression=8))
    put("tiff", "cv-float32", cv_tiff(f32))
    put("tiff", "cv-gray8-packbits", cv_tiff(u8[:, :, 0], compression=32773))
    ok, buf = cv2.imencodemulti(".tif", [u8[:, :, 0]] * 3) if hasattr(cv2, "imencodemulti") \
        else (False, None)
    if ok:
        put("tiff", "cv-stack3", buf.tobytes())
    # byte by byte: planar, tiles, big-endian, predictor, stacks, BigTIFF-free
    put("tiff", "tb-planar-strips", tb.tiff([tb.page(u8, planar=True, rows_per_strip=4)]))
    put("tiff", "tb-planar-tiles-be", tb.tiff([tb.page(u16[:, :, :2], planar=True,
                                                       tile=(16, 16), order=">")], order=">"))
    put("tiff", "tb-tiles-deflate", tb.tiff([tb.page(u16, tile=(16, 16), compression=8)]))
    put("tiff", "tb-float-pred3-be", tb.tiff([tb.page(f32, compression=8, predictor=3,
                                                      rows_per_strip=2, order=">")], order=">"))
    put("tiff", "tb-float64", tb.tiff([tb.page(f64, rows_per_strip=3)]))
    put("tiff", "tb-stack", tb.tiff([tb.page(u16[:, :, 0]), tb.page(u16[:, :, 1]),
                                     tb.page(u16[:, :, 2])]))
    put("tiff", "tb-thumbnail", tb.tiff([tb.page(u8), tb.page(u8[:2, :2], tags={254: (4, [1])})]))
    # refused variants, near the checks
    put("tiff", "bad-pages-disagree", tb.tiff([tb.page(u16[:, :, 0]), tb.page(u16[:4, :, 0])]))
    put("tiff", "bad-signed", tb.tiff([tb.page(u16[:, :, 0], tags={339: (3, [2])})]))
    put("tiff", "bad-palette", tb.tiff([tb.page(u8[:, :, 0], photometric=3,
                                                tags={320: (3, list(range(768)))})]))
    put("tiff", "bad-huge-claim", tb.tiff([tb.page(u8[:, :, 0], compression=8,
                                                   tags={256: (4, [40000]), 257: (4, [40000]),
                                                         278: (4, [40000])})]))
    put("tiff", "bad-truncated", tb.tiff([tb.page(u16, rows_per_strip=2)])[:-40])
    put("tiff", "bad-next-ifd", tb.tiff([tb.page(u8)], next_ifd=0x0FFFFFF0))
    put("tiff", "bad-ifd-loop", tb.tiff([tb.page(u8)], next_ifd=8 + u8.size + (u8.size & 1)))


# ---- auto-detected formats ------------------------------------------------------

def make_load_memory():
    clear("load_memory")
    for harness, names in (("npy", ["f4-1d", "u2-be-1d"]), ("png", ["rgb8", "palette2"]),
                           ("jpeg", ["gray-8x8", "rgb-progressive"]),
                           ("pnm", ["p5-8bit", "p3-ascii"]),
                           ("tiff", ["cv-rgb8-lzw", "tb-planar-tiles-be"])):
        for n in names:
            with open(os.path.join(CORPUS, harness, n), "rb") as f:
                put("load_memory", "%s-%s" % (harness, n), f.read())
    put("load_memory", "bad-unknown", "1 2 3\n")


if __name__ == "__main__":
    make_npy()
    make_png()
    make_jpeg()
    make_pnm()
    make_text()
    make_tiff()
    make_filter_named()
    make_load_memory()
