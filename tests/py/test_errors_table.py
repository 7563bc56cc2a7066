"""test_errors_table.py - every kind of bad input we know of, to the file
readers, the CLI's options and the API's calls, gets its documented result
(status or exit code) and a message naming the problem, never a crash. A
failing CLI run must leave a pre-existing output byte-identical and no
temporary file behind.

The results form the table in docs/errors.md between the markers
<!-- errors-table:begin --> and <!-- errors-table:end -->; the test fails when
that table differs from what it found. CONVOLVE_UPDATE_DOCS=1 rewrites it:
    CONVOLVE_UPDATE_DOCS=1 ctest -R errors_table
Paths in messages become <tmp> (the scratch folder) and <data> (data/).

The GPU is hidden (CUDA_VISIBLE_DEVICES=""), so that the table is the same on
every machine. A row that cannot be observed here keeps its committed text
(the case itself is still checked where it can be): those of the CUDA
backend in a build without CUDA (their Result says what that build gets),
and the unreadable file when running as root where user nobody cannot run
the CLI (as root the CLI runs as nobody for that case; not when a folder
above the binary is closed to other users: it says so on stderr). Run by CTest;
skipped (77) without numpy/scipy unless CONVOLVE_REQUIRE_PYTHON=1.
"""
import os

os.environ["CUDA_VISIBLE_DEVICES"] = ""  # before the library probes CUDA
os.environ["LC_ALL"] = "C"               # strerror() texts in English

import ctypes as C  # noqa: E402
import difflib  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import unittest  # noqa: E402
import zlib  # noqa: E402

from cli_support import (CLI, DATA_DIR, NOBODY, PHOTO, nobody_cannot_run,  # noqa: E402
                         read_file, write_file)

import numpy as np  # noqa: E402
import scipy.ndimage as ndi  # noqa: E402

import convolve_ctypes as cc  # noqa: E402
import tiff_build as tb  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.normpath(os.path.join(HERE, "..", "..", "docs", "errors.md"))
BEGIN, END = "<!-- errors-table:begin -->", "<!-- errors-table:end -->"
REGEN = "CONVOLVE_UPDATE_DOCS=1 ctest -R errors_table"
OLD = b"old output: must survive a failed run\n"

F32, F64, U8, U16 = 0, 1, 2, 3
FMT_AUTO, FMT_NPY, FMT_PNG, FMT_JPEG, FMT_PNM, FMT_TEXT, FMT_TIFF = range(7)
HAVE_TIFF = os.environ.get("CONVOLVE_HAVE_TIFF", "1") == "1"
CPU, CUDA = 1, 2
vp = C.c_void_p
SZ = C.c_size_t


def load_library():
    lib = cc.load_library()
    sigs = {
        "convolve_array_load_memory": (C.c_int, [vp, C.POINTER(vp), C.c_char_p, SZ, C.c_int]),
        "convolve_array_load": (C.c_int, [vp, C.POINTER(vp), C.c_char_p, C.c_int]),
        "convolve_array_save": (C.c_int, [vp, vp, C.c_char_p, C.c_int, C.c_int]),
        "convolve_array_create": (C.c_int, [vp, C.POINTER(vp), C.c_int, C.c_int,
                                            C.POINTER(SZ), SZ]),
        "convolve_array_convert": (C.c_int, [vp, vp, C.c_int, C.POINTER(vp)]),
        "convolve_array_free": (None, [vp]),
        "convolve_context_set_png_compression": (C.c_int, [vp, C.c_int]),
        "convolve_array_data": (vp, [vp]),
        "convolve_array_bytes": (SZ, [vp]),
        "convolve_array_layout": (C.POINTER(cc.Layout), [vp]),
        "convolve_layout_init": (C.c_int, [C.POINTER(cc.Layout), C.c_int, C.c_int,
                                           C.POINTER(SZ), SZ]),
        "convolve_status_name": (C.c_char_p, [C.c_int]),
        "convolve_dtype_parse": (C.c_int, [C.c_char_p, C.POINTER(C.c_int)]),
        "convolve_plan_backend": (C.c_int, [vp]),
        "convolve_plan_benchmark": (C.c_int, [vp, C.c_int, C.c_int, vp]),
        "convolve_filter_weights": (C.c_int, [vp, C.POINTER(C.c_double), SZ]),
        "convolve_backend_built": (C.c_int, [C.c_int]),
        "convolve_strategy_get": (C.c_int, [SZ, C.POINTER(cc.StrategyInfo)]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    lib.convolve_context_create.restype = C.c_int
    return lib


LIB = load_library()
CUDA_BUILT = bool(LIB.convolve_backend_built(CUDA))


def status_name(st):
    return LIB.convolve_status_name(st).decode()


def sizes(*v):
    return (SZ * len(v))(*v)


def doubles(*v):
    return (C.c_double * len(v))(*v)


def layout(dtype, shape, channels=1, strides=None, cstride=None):
    """A layout; contiguous C order unless strides (bytes) are given."""
    L = cc.Layout()
    L.dtype, L.ndim, L.channels = dtype, len(shape), channels
    esize = {F32: 4, F64: 8, U8: 1, U16: 2}.get(dtype, 1)
    step = esize * channels
    L.channel_stride = esize if cstride is None else cstride
    for a in reversed(range(len(shape))):
        L.shape[a] = shape[a]
        L.strides[a] = step if strides is None else strides[a]
        step *= shape[a]
    return L


def options(**kw):
    o = cc.Options()
    LIB.convolve_options_init_size(C.byref(o), C.sizeof(o))
    for k, v in kw.items():
        if k == "origin":
            for a, x in enumerate(v):
                o.origin[a] = x
        else:
            setattr(o, k, v)
    return o


# ---- file builders ---------------------------------------------------------

def npy(header, body=b"", version=(1, 0), hlen=None):
    """A .npy file with the given header text (padded as numpy pads it)."""
    h = header.encode()
    pre = 10 if version[0] == 1 else 12
    h += b" " * ((64 - (pre + len(h) + 1) % 64) % 64) + b"\n"
    n = len(h) if hlen is None else hlen
    size = struct.pack("<H", n) if version[0] == 1 else struct.pack("<I", n)
    return b"\x93NUMPY" + bytes(version) + size + h + body


def hdr(descr="<f8", fortran="False", shape="(3,)"):
    return "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)


def png_chunk(kind, data, crc=None):
    c = zlib.crc32(kind + data) if crc is None else crc
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", c & 0xFFFFFFFF)


GOOD_IDAT = zlib.compress(b"".join(b"\0" + bytes(range(4)) for _ in range(4)))


def png(w=4, h=4, idat=GOOD_IDAT, ihdr_crc=None):
    """A 4x4 8-bit gray PNG, or one with the given size, IDAT or IHDR CRC."""
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr, ihdr_crc) +
            png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b""))


def zero_png(w, h):
    """A valid w x h 8-bit gray PNG of zeros, compressed row by row (a few
    hundred KB may declare hundreds of megabytes)."""
    z = zlib.compressobj(9)
    row = bytes(w + 1)
    idat = b"".join(z.compress(row) for _ in range(h)) + z.flush()
    return png(w, h, idat=idat)


def patched(data, at, new):
    b = bytearray(data)
    b[at:at + len(new)] = new
    return bytes(b)


def first_line(msg):
    return msg.splitlines()[0] if msg else ""


class ErrorsTable(unittest.TestCase):
    def setUp(self):
        self.tmp = os.path.realpath(tempfile.mkdtemp(prefix="convolve_errors_"))
        self.rows = []
        self.kept = set()   # numbers of rows that could not be checked here
        rng = np.random.default_rng(0)
        np.save(self.p("x1.npy"), rng.standard_normal(20))
        np.save(self.p("x2.npy"), rng.standard_normal((8, 9)))
        np.save(self.p("x3.npy"), rng.standard_normal((4, 5, 6)))
        np.save(self.p("w2.npy"), np.ones((3, 3)))

    def tearDown(self):
        for root, dirs, files in os.walk(self.tmp):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def p(self, name):
        return os.path.join(self.tmp, name)

    def norm(self, msg):
        """The message as the table shows it: no machine-specific paths or reasons."""
        msg = msg.replace(self.tmp, "<tmp>")
        msg = msg.replace(os.path.realpath(DATA_DIR), "<data>").replace(DATA_DIR, "<data>")
        return re.sub(r"no GPU can be used: .*", "no GPU can be used: <reason>", msg)

    def row(self, area, kind, shown, result, message):
        self.rows.append((area, kind, shown, result, message))

    # ---- the three kinds of case ------------------------------------------

    def keep_row(self):
        """The next row cannot be observed here: the table keeps its committed text."""
        self.kept.add(len(self.rows))

    def api(self, area, kind, shown, expected, needle, call, ctxless=False, no_cuda=None,
            note=None):
        """Calls call(ctx) -> status; checks the status and the message.
        ctxless: the function takes no context, so there is no message.
        no_cuda: (status, needle) expected instead in a build without CUDA.
        note: for an accepted input, what it does (checked by call)."""
        ctx = vp()
        self.assertEqual(LIB.convolve_context_create(C.byref(ctx)), 0)
        try:
            st = call(ctx)
            msg = "" if ctxless else LIB.convolve_last_error(ctx).decode()
        finally:
            LIB.convolve_context_free(ctx)
        want, want_needle = no_cuda if no_cuda and not CUDA_BUILT else (expected, needle)
        with self.subTest(kind=kind):
            self.assertEqual(status_name(st), "CONVOLVE_" + ("OK" if want == "OK" else
                                                             "ERROR_" + want),
                             "%s: %s: message %r" % (area, kind, msg))
            if want != "OK" and not ctxless:
                self.assertTrue(msg, "%s: %s: no message" % (area, kind))
                self.assertIn(want_needle, msg, "%s: %s" % (area, kind))
            if want == "OK":
                self.assertEqual(msg, "", "%s: %s: a success leaves no message" % (area, kind))
        result = "`CONVOLVE_%s`" % ("OK" if expected == "OK" else "ERROR_" + expected)
        if no_cuda:
            result += " (built without CUDA: `CONVOLVE_ERROR_%s`, '%s')" % no_cuda
            if not CUDA_BUILT:
                self.keep_row()
        shown_msg = ("(status only: no context)" if ctxless else
                     "(none: %s)" % note if note else
                     "(none)" if expected == "OK" else first_line(msg))
        self.row(area, kind, shown, result, self.norm(shown_msg))

    def run_cli(self, args, cwd=None, user=None):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", LC_ALL="C")
        kw = {}
        if user is not None:
            kw = dict(user=user, group=user, extra_groups=[])
        return subprocess.run([CLI] + [str(a) for a in args], cwd=cwd, env=env, timeout=120,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)

    def check_cli(self, what, args, code, needle, out, cwd=None, user=None):
        """Runs the CLI with a pre-existing output file (when out names one in
        an existing folder); checks code, message, the old file and the
        folder's listing. Returns the message (first line, without 'convolve: ')."""
        out_path = self.p(out) if out else None
        out_dir = os.path.dirname(out_path) if out_path else self.tmp
        if out_path and os.path.isdir(out_dir) and not os.path.isdir(out_path):
            write_file(out_path, OLD)
        before = sorted(os.listdir(out_dir)) if os.path.isdir(out_dir) else None
        r = self.run_cli(args, cwd=cwd, user=user)
        self.assertGreaterEqual(r.returncode, 0, "%s: killed by signal %d\nstderr: %s"
                                % (what, -r.returncode, r.stderr))
        self.assertEqual(r.returncode, code, "%s\nstderr: %s" % (what, r.stderr))
        if code == 0:
            self.assertEqual(r.stderr, "", what)
            if out_path and os.path.isfile(out_path):
                self.assertNotEqual(read_file(out_path), OLD, "%s: output not replaced" % what)
            return ""
        self.assertTrue(r.stderr.startswith("convolve: "), "%s\nstderr: %r" % (what, r.stderr))
        self.assertEqual(r.stderr.count("\n"), 1, "%s: one line expected: %r" % (what, r.stderr))
        self.assertIn(needle, r.stderr, what)
        if out_path and os.path.isfile(out_path):
            self.assertEqual(read_file(out_path), OLD, "%s changed the old output" % what)
        if before is not None:
            self.assertEqual(sorted(os.listdir(out_dir)), before,
                             "%s left files behind (a temporary file?)" % what)
        return r.stderr[len("convolve: "):].rstrip("\n")

    def cli(self, area, kind, shown, args, code, needle, out="out.npy", cwd=None, user=None,
            no_cuda=None, note=None):
        """A CLI case: args run as `convolve ARGS`; shown is what the table shows.
        no_cuda: (code, needle) expected instead in a build without CUDA.
        note: for an accepted input, what it does (checked by the caller)."""
        want_code, want_needle = no_cuda if no_cuda and not CUDA_BUILT else (code, needle)
        msg = ""
        with self.subTest(kind=kind):
            msg = self.check_cli("%s: %s: convolve %s" % (area, kind, " ".join(map(str, args))),
                                 args, want_code, want_needle, out, cwd, user)
        result = "exit %d" % code
        if no_cuda:
            result += " (built without CUDA: exit %d, '%s')" % no_cuda
            if not CUDA_BUILT:
                self.keep_row()
        self.row(area, kind, shown, result, self.norm(msg) if msg else
                 "(none: %s)" % note if note else "(none)")

    def reader(self, area, kind, shown, data, fmt, expected, needle, ext=None, note=None):
        """Parses data in memory (format fmt); with ext, also runs the CLI on a
        file of that extension holding data and checks it exits 1 (0 when
        expected is OK) with the same message."""
        ctx = vp()
        arr = vp()
        self.assertEqual(LIB.convolve_context_create(C.byref(ctx)), 0)
        try:
            st = LIB.convolve_array_load_memory(ctx, C.byref(arr), data, len(data), fmt)
            msg = LIB.convolve_last_error(ctx).decode()
            loaded = None
            if st == 0:
                L = LIB.convolve_array_layout(arr).contents
                n = LIB.convolve_array_bytes(arr)
                loaded = (L.dtype, tuple(L.shape[:L.ndim]), L.channels,
                          C.string_at(LIB.convolve_array_data(arr), n))
            LIB.convolve_array_free(arr)
        finally:
            LIB.convolve_context_free(ctx)
        result = "`CONVOLVE_%s`" % ("OK" if expected == "OK" else "ERROR_" + expected)
        with self.subTest(kind=kind):
            self.assertEqual(status_name(st), result.strip("`"), "%s: %s: %r" % (area, kind, msg))
            if expected != "OK":
                self.assertIn(needle, msg, "%s: %s" % (area, kind))
            if ext:
                name = "bad" + ext
                write_file(self.p(name), data)
                code = 0 if expected == "OK" else 1
                cmsg = self.check_cli("%s: %s via the CLI" % (area, kind),
                                      [self.p(name), self.p("out.npy"), "--filter", "identity"],
                                      code, msg, "out.npy")
                if code:
                    self.assertIn(msg, cmsg)
                os.unlink(self.p(name))
                result += ", CLI exit %d" % code
        self.row(area, kind, shown, result, self.norm(first_line(msg)) if msg else
                 "(none: %s)" % note if note else "(none)")
        return loaded

    # ---- the cases -----------------------------------------------------------

    def readers(self):
        R = self.reader
        # .npy
        R("npy", "bad magic", "`\\x93NUMPX...`", npy(hdr()).replace(b"NUMPY", b"NUMPX") +
          bytes(24), FMT_NPY, "FORMAT", "bad magic", ext=".npy")
        R("npy", "shorter than its preamble", "`\\x93NUMPY\\x01`", b"\x93NUMPY\x01", FMT_NPY,
          "FORMAT", "too short", ext=".npy")
        R("npy", "unknown version", "version 9.0", npy(hdr(), bytes(24), version=(9, 0)),
          FMT_NPY, "FORMAT", "version 9.0", ext=".npy")
        R("npy", "header length past the end", "header length 5000, file 152 bytes",
          npy(hdr(), bytes(24), hlen=5000), FMT_NPY, "FORMAT", "past the end", ext=".npy")
        R("npy", "header not a dict", "`['descr', ...]`",
          npy("['descr', '<f8']", bytes(8)), FMT_NPY, "FORMAT", "not a dict", ext=".npy")
        R("npy", "control character in header", "`\\x01` in the header",
          npy(hdr().replace(" ", "\x01", 1), bytes(24)), FMT_NPY, "FORMAT",
          "control character", ext=".npy")
        R("npy", "unexpected header key", "`'extra': 1`",
          npy(hdr()[:-2] + "'extra': 1, }", bytes(24)), FMT_NPY, "FORMAT",
          "unexpected key 'extra'", ext=".npy")
        R("npy", "missing header key", "no `'shape'`",
          npy("{'descr': '<f8', 'fortran_order': False}", bytes(8)), FMT_NPY, "FORMAT",
          "lacks the key 'shape'", ext=".npy")
        R("npy", "complex dtype", "`'<c8'`", npy(hdr("<c8"), bytes(24)), FMT_NPY, "FORMAT",
          "'<c8' is not supported", ext=".npy")
        R("npy", "integer dtype", "`'<i4'`", npy(hdr("<i4"), bytes(12)), FMT_NPY, "FORMAT",
          "'<i4' is not supported", ext=".npy")
        R("npy", "structured dtype", "`[('a', '<f4')]`",
          npy(hdr().replace("'<f8'", "[('a', '<f4')]"), bytes(12)), FMT_NPY, "FORMAT",
          "structured", ext=".npy")
        x = np.array([1.5, -2.0, 3.25], dtype=">f4")
        got = R("npy", "big-endian float32 (accepted)", "`'>f4'`, 3 values",
                npy(hdr(">f4"), x.tobytes()), FMT_NPY, "OK", None, ext=".npy",
                note="loads as float32, byte-swapped")
        with self.subTest(kind="big-endian values"):
            self.assertEqual(np.frombuffer(got[3], dtype="<f4").tolist(), x.tolist())
        f = np.arange(6, dtype="<f8")
        got = R("npy", "Fortran order (accepted)", "`'fortran_order': True`, shape (2, 3)",
                npy(hdr(fortran="True", shape="(2, 3)"), f.tobytes()), FMT_NPY, "OK", None,
                ext=".npy", note="loads as the same (2, 3) array in C order")
        with self.subTest(kind="Fortran-order values"):
            self.assertEqual(np.frombuffer(got[3], dtype="<f8").tolist(),
                             f.reshape(2, 3, order="F").ravel().tolist())
        R("npy", "negative extent", "`'shape': (-3, 4)`", npy(hdr(shape="(-3, 4)"), bytes(96)),
          FMT_NPY, "FORMAT", "non-negative integers", ext=".npy")
        R("npy", "extent beyond size_t", "`'shape': (99999999999999999999999,)`",
          npy(hdr(shape="(99999999999999999999999,)")), FMT_NPY, "FORMAT", "overflows",
          ext=".npy")
        R("npy", "shape product overflows size_t", "`'shape': (4294967296, 4294967296, 16)`",
          npy(hdr(shape="(4294967296, 4294967296, 16)")), FMT_NPY, "SIZE_OVERFLOW",
          "shape overflows", ext=".npy")
        R("npy", "byte count overflows size_t", "`'<f8'`, `'shape': (4611686018427387904,)`",
          npy(hdr(shape="(4611686018427387904,)")), FMT_NPY, "SIZE_OVERFLOW",
          "byte count overflows", ext=".npy")
        R("npy", "zero extent", "`'shape': (0, 3)`", npy(hdr(shape="(0, 3)")), FMT_NPY,
          "FORMAT", "empty", ext=".npy")
        R("npy", "0-D array", "`'shape': ()`", npy(hdr(shape="()"), bytes(8)), FMT_NPY,
          "FORMAT", "0-dimensional", ext=".npy")
        R("npy", "4-D array", "`'shape': (1, 1, 1, 2)`", npy(hdr(shape="(1, 1, 1, 2)"),
          bytes(16)), FMT_NPY, "FORMAT", "4 dimensions", ext=".npy")
        R("npy", "truncated data", "shape (3,) float64, 16 of 24 data bytes",
          npy(hdr(), bytes(16)), FMT_NPY, "FORMAT", "truncated", ext=".npy")
        R("npy", "bytes after the data", "shape (3,) float64, 32 data bytes",
          npy(hdr(), bytes(32)), FMT_NPY, "FORMAT", "after the array", ext=".npy")
        # PNG
        good = png()
        R("PNG", "bad signature", "`GIF89a...` named .png", b"GIF89a" + bytes(40), FMT_PNG,
          "FORMAT", "not a PNG file", ext=".png")
        R("PNG", "truncated", "first half of a 4x4 PNG", good[:len(good) // 2], FMT_PNG,
          "FORMAT", "truncated", ext=".png")
        R("PNG", "missing IEND", "4x4 PNG without its last 12 bytes", good[:-12], FMT_PNG,
          "FORMAT", "truncated", ext=".png")
        R("PNG", "bad CRC", "IHDR CRC 0x00000001", png(ihdr_crc=1), FMT_PNG, "FORMAT",
          "CRC error", ext=".png")
        R("PNG", "corrupt IDAT (zlib)", "IDAT `78 9c ff ff ...`",
          png(idat=b"\x78\x9c" + b"\xff" * 20), FMT_PNG, "FORMAT", "IDAT", ext=".png")
        R("PNG", "short IDAT", "first half of the IDAT stream", png(idat=GOOD_IDAT[:9]),
          FMT_PNG, "FORMAT", "image data", ext=".png")
        R("PNG", "huge declared size", "IHDR 1000000 x 1000000", png(1000000, 1000000),
          FMT_PNG, "FORMAT", "1000000x1000000 pixels is more than the limit", ext=".png")
        R("PNG", "decompression bomb", "17000 x 17000 zeros in 280 KB (289 million pixels)",
          zero_png(17000, 17000), FMT_PNG, "LIMIT",
          "17000x17000 pixels are more than the limit of 268435456", ext=".png")
        R("PNG", "width beyond libpng's limit", "IHDR width 2147483647",
          png(2147483647, 1), FMT_PNG, "FORMAT", "width exceeds", ext=".png")
        R("PNG", "zero width", "IHDR width 0", png(0, 4), FMT_PNG, "FORMAT", "width is zero",
          ext=".png")
        # JPEG
        jpg = read_file(PHOTO)
        sof = jpg.find(b"\xff\xc0")
        dht = jpg.find(b"\xff\xc4")
        R("JPEG", "bad signature", "`\\xff\\xd8` then text, named .jpg", b"\xff\xd8hello",
          FMT_JPEG, "FORMAT", "not a JPEG file", ext=".jpg")
        R("JPEG", "truncated", "first 2/3 of grace_hopper.jpg", jpg[:len(jpg) * 2 // 3],
          FMT_JPEG, "FORMAT", "Premature end", ext=".jpg")
        R("JPEG", "zero height", "SOF0 height 0", patched(jpg, sof + 5, b"\0\0"), FMT_JPEG,
          "FORMAT", "Empty JPEG image", ext=".jpg")
        R("JPEG", "unsupported precision", "SOF0 precision 12", patched(jpg, sof + 4, b"\x0c"),
          FMT_JPEG, "FORMAT", "precision 12", ext=".jpg")
        R("JPEG", "corrupt Huffman table", "DHT counts all 0xff",
          patched(jpg, dht + 5, b"\xff" * 16), FMT_JPEG, "FORMAT", "Huffman", ext=".jpg")
        R("JPEG", "garbage before a marker", "`\\xff\\x01` after SOI",
          patched(jpg, 2, b"\xff\x01"), FMT_JPEG, "FORMAT", "Corrupt JPEG data", ext=".jpg")
        # PNM
        R("PNM", "bad magic", "`P9 4 4 255`, named .pgm", b"P9 4 4 255\n" + bytes(16),
          FMT_PNM, "FORMAT", "bad magic", ext=".pgm")
        R("PNM", "PBM bitmap", "`P4 8 1`", b"P4\n8 1\n\x00", FMT_PNM, "FORMAT", "PBM",
          ext=".pgm")
        R("PNM", "PAM", "`P7 ...`", b"P7\nWIDTH 1\n", FMT_PNM, "FORMAT", "PAM", ext=".pgm")
        R("PNM", "maxval 0", "`P5 2 2 0`", b"P5\n2 2\n0\n" + bytes(4), FMT_PNM, "FORMAT",
          "maxval is not a positive integer", ext=".pgm")
        R("PNM", "maxval above 65535", "`P5 2 2 70000`", b"P5\n2 2\n70000\n" + bytes(8),
          FMT_PNM, "FORMAT", "maxval is too large", ext=".pgm")
        R("PNM", "width not a number", "`P5 x 2 255`", b"P5\nx 2\n255\n" + bytes(4), FMT_PNM,
          "FORMAT", "width is not a positive integer", ext=".pgm")
        R("PNM", "header truncated", "`P5 4`", b"P5\n4", FMT_PNM, "FORMAT",
          "truncated before its height", ext=".pgm")
        R("PNM", "truncated raster", "`P5 4 4 255` + 10 bytes", b"P5\n4 4\n255\n" + bytes(10),
          FMT_PNM, "FORMAT", "truncated", ext=".pgm")
        R("PNM", "huge declared size", "`P5 100000000 100000000 255`",
          b"P5\n100000000 100000000\n255\n" + bytes(16), FMT_PNM, "FORMAT",
          "more than the limit", ext=".pgm")
        R("PNM", "width beyond the parser's limit", "`P5 99999999999999999999 1 255`",
          b"P5\n99999999999999999999 1\n255\n" + bytes(16), FMT_PNM, "FORMAT",
          "width is too large", ext=".pgm")
        R("PNM", "sample above maxval", "`P2 2 1 10  5 11`", b"P2\n2 1\n10\n5 11\n", FMT_PNM,
          "FORMAT", "above maxval", ext=".pgm")
        R("PNM", "bytes after the raster", "`P5 2 1 255` + 2 + 3 bytes",
          b"P5\n2 1\n255\n\x01\x02xyz", FMT_PNM, "FORMAT", "after its raster", ext=".pgm")
        # text
        R("text", "not a number", "`1 abc 3`", b"1 abc 3\n", FMT_TEXT, "FORMAT",
          "'abc' is not a number", ext=".txt")
        R("text", "ragged rows", "`1 2 3` / `4 5`", b"1 2 3\n4 5\n", FMT_TEXT, "FORMAT",
          "line 2 has 2 numbers", ext=".txt")
        R("text", "ragged planes", "2 rows, blank line, 1 row", b"1 2\n3 4\n\n5 6\n", FMT_TEXT,
          "FORMAT", "plane at line 4 has 1 rows", ext=".txt")
        R("text", "no numbers", "`# only a comment`", b"# only a comment\n\n", FMT_TEXT,
          "FORMAT", "no numbers", ext=".txt")
        R("text", "NUL byte", "`1 2\\0 3`", b"1 2\x00 3\n", FMT_TEXT, "FORMAT", "NUL byte",
          ext=".txt")
        R("text", "overlong token", "a 200-digit token", b"1" * 200 + b"\n", FMT_TEXT,
          "FORMAT", "too long to be a number", ext=".txt")
        # TIFF (cases made byte by byte: tests/py/tiff_build.py)
        self.tiff_readers()
        # data whose kind cannot be told
        R("memory", "no magic number, format AUTO", "`hello`", b"hello", FMT_AUTO, "FORMAT",
          "no known magic number")
        R("memory", "empty data, format AUTO", "0 bytes", b"", FMT_AUTO, "FORMAT",
          "empty data")

    def tiff_readers(self):
        def R(kind, shown, data, expected, needle, note=None):
            if HAVE_TIFF:
                return self.reader("TIFF", kind, shown, data, FMT_TIFF, expected, needle,
                                   ext=".tif", note=note)
            self.keep_row()  # a build without libtiff refuses them all alike
            self.row("TIFF", kind, shown, "", "")
            return None
        rng = np.random.default_rng(1)
        g8 = rng.integers(0, 256, (4, 6)).astype(np.uint8)
        g16 = rng.integers(0, 65536, (4, 6)).astype(np.uint16)
        one = tb.tiff([tb.page(g16)])
        R("bad signature", "`GIF89a...` named .tif", b"GIF89a" + bytes(40), "FORMAT",
          "not a TIFF file")
        R("truncated", "a 4x6 TIFF without its last 20 bytes", one[:-20], "FORMAT",
          "Can not read")
        R("pages that disagree", "page 1 4x6, page 2 3x6 (uint16)",
          tb.tiff([tb.page(g16), tb.page(g16[:3])]), "FORMAT", "must agree")
        R("pages of other types", "page 1 uint16, page 2 uint8",
          tb.tiff([tb.page(g16), tb.page(g8)]), "FORMAT", "must agree")
        R("signed samples", "SampleFormat 2 (int16)",
          tb.tiff([tb.page(g16, tags={339: (3, [2])})]), "FORMAT",
          "signed integer samples are not supported")
        R("12-bit samples", "BitsPerSample 12", tb.tiff([tb.page(g16, tags={258: (3, [12])})]),
          "FORMAT", "12-bit unsigned samples are not supported")
        R("palette image", "Photometric 3 with a ColorMap",
          tb.tiff([tb.page(g8, photometric=3, tags={320: (3, list(range(768)))})]), "FORMAT",
          "palette")
        R("CMYK image", "Photometric 5, 4 samples",
          tb.tiff([tb.page(np.dstack([g8] * 4), photometric=5)]), "FORMAT", "CMYK")
        R("5 samples per pixel", "gray + 4 extra samples",
          tb.tiff([tb.page(np.dstack([g8] * 5), photometric=1, tags={338: (3, [0] * 4)})]),
          "FORMAT", "5 samples per pixel")
        R("compression libtiff cannot decode", "Compression 34712 (JPEG 2000)",
          tb.tiff([tb.page(g8, tags={259: (3, [34712])})]), "FORMAT", "cannot be decoded")
        R("huge declared size", "40000 x 40000 with 33 bytes of Deflate data",
          tb.tiff([tb.page(g8, compression=8, tags={256: (4, [40000]), 257: (4, [40000]),
                                                    278: (4, [40000])})]), "FORMAT",
          "cannot hold 40000x40000 pixels")
        R("strips shorter than the image", "4x6 uint16, 40 of 48 strip bytes",
          tb.tiff([tb.page(g16, tags={279: (4, [40])})]), "FORMAT", "StripByteCounts")
        R("next directory past the end", "next-IFD offset 0x0ffffff0",
          tb.tiff([tb.page(g8)], next_ifd=0x0FFFFFF0), "FORMAT", "directory 2")
        R("directory loop", "next-IFD offset back at the first directory",
          tb.tiff([tb.page(g8)], next_ifd=8 + g8.size), "FORMAT", "looping")
        R("header without a directory", "`II*\\0` and first-directory offset 0 (8 bytes)",
          b"II*\0\0\0\0\0", "FORMAT", "points at no image directory")
        jbig = read_file(os.path.join(HERE, "..", "fuzz", "corpus", "tiff",
                                      "regress-jbig-short-strip"))
        R("JBIG compression", "53x37 uint8 JBIG-compressed (`tiffcp -c jbig`)", jbig,
          "FORMAT", "JBIG compression holds bilevel")
        a = rng.standard_normal((5, 7, 3)).astype(np.float32)
        got = R("big-endian planar tiles, predictor 3 (accepted)",
                "float32 RGB, `MM`, planar, 16x16 tiles, Deflate",
                tb.tiff([tb.page(a, planar=True, tile=(16, 16), compression=8, predictor=3,
                                 order=">")], order=">"), "OK", None,
                note="loads as 5x7 RGB float32")
        if got is not None:
            with self.subTest(kind="big-endian TIFF values"):
                self.assertEqual(np.frombuffer(got[3], dtype=np.float32).tolist(),
                                 a.ravel().tolist())

    def files(self):
        f = ["--filter", "box:1"]
        write_file(self.p("empty.npy"), b"")
        self.cli("file", "empty file", "INPUT of 0 bytes", [self.p("empty.npy"),
                 self.p("out.npy")] + f, 1, "is empty")
        write_file(self.p("data.bin"), b"hello world\n")
        self.cli("file", "unknown extension, no magic number", "INPUT `data.bin`",
                 [self.p("data.bin"), self.p("out.npy")] + f, 1, "cannot tell the format")
        os.mkdir(self.p("adir"))
        self.cli("file", "directory as INPUT", "INPUT a directory",
                 [self.p("adir"), self.p("out.npy")] + f, 1, "is a directory")
        self.cli("file", "device as INPUT", "INPUT `/dev/zero`",
                 ["/dev/zero", self.p("out.npy")] + f, 1, "it is a device")
        self.cli("file", "missing INPUT", "INPUT `nope.npy`",
                 [self.p("nope.npy"), self.p("out.npy")] + f, 1, "No such file or directory")
        self.cli("file", "missing weights file", "`--weights nope.txt`",
                 [self.p("x2.npy"), self.p("out.npy"), "--weights", self.p("nope.txt")], 1,
                 "cannot open weights")
        # unreadable: as root, run the CLI as nobody (root reads any file)
        shutil.copy(self.p("x2.npy"), self.p("secret.npy"))
        os.chmod(self.p("secret.npy"), 0)
        user = None
        if os.geteuid() == 0:
            os.chmod(self.tmp, 0o777)
            os.chmod(self.p("x2.npy"), 0o644)
            why = nobody_cannot_run()
            user = NOBODY if why is None else -1
        if user == -1:  # cannot check here: keep the documented row
            print("test_errors_table: 'unreadable INPUT' keeps its documented row: running as "
                  "root, and %s" % why, file=sys.stderr)
            self.keep_row()
            self.row("file", "unreadable INPUT (mode 000)", "INPUT of mode 000", "exit 1", "")
        else:
            self.cli("file", "unreadable INPUT (mode 000)", "INPUT of mode 000",
                     [self.p("secret.npy"), self.p("out.npy")] + f, 1, "Permission denied",
                     user=user)
        os.chmod(self.tmp, 0o700)

    def cli_options(self):
        x2, out = self.p("x2.npy"), self.p("out.npy")
        base = [x2, out]
        f = ["--filter", "box:1"]
        c = self.cli
        c("CLI", "no arguments", "`convolve`", [], 1, "no arguments; usage", out=None)
        c("CLI", "unknown long option", "`--frobnicate`", base + f + ["--frobnicate"], 1,
          "unknown option '--frobnicate'")
        c("CLI", "unknown short option", "`-x`", base + f + ["-x"], 1, "unknown option '-x'")
        c("CLI", "option missing its value", "`--filter` last", base + ["--filter"], 1,
          "needs a value")
        c("CLI", "value given to a flag", "`--correlate=yes`", base + f + ["--correlate=yes"], 1,
          "takes no value")
        c("CLI", "third positional argument", "`IN OUT extra.npy`", base + f + ["extra.npy"], 1,
          "unexpected argument 'extra.npy'")
        c("CLI", "no OUTPUT", "`IN --filter box:1`", [x2] + f, 1, "no OUTPUT", out=None)
        c("CLI", "no filter", "neither `--filter` nor `--weights`", base, 1, "no filter")
        c("CLI", "two filters", "`--filter` and `--weights`",
          base + f + ["--weights", self.p("w2.npy")], 1, "not both")
        c("CLI", "bad mode", "`--mode reflective`", base + f + ["--mode", "reflective"], 1,
          "unknown mode 'reflective'")
        c("CLI", "bad cval", "`--cval abc`", base + f + ["--cval", "abc"], 1, "--cval 'abc'")
        c("CLI", "NaN cval", "`--cval nan`", base + f + ["--cval", "nan"], 1, "finite")
        c("CLI", "bad backend", "`--backend gpu`", base + f + ["--backend", "gpu"], 1,
          "unknown backend 'gpu'")
        c("CLI", "bad thread count", "`--threads -1`", base + f + ["--threads", "-1"], 1,
          "--threads")
        c("CLI", "bad repeat count", "`--repeat 0`", base + f + ["--repeat", "0"], 1,
          "--repeat")
        c("CLI", "bad JPEG quality", "`--quality 101`", base + f + ["--quality", "101"], 1,
          "--quality")
        c("CLI", "option given twice", "`--mode wrap --mode reflect`",
          base + f + ["--mode", "wrap", "--mode", "reflect"], 1,
          "--mode is given twice ('wrap', then 'reflect')")
        c("CLI", "filter given twice", "`--filter box:1 --filter box:2`",
          base + f + ["--filter", "box:2"], 1, "--filter is given twice")
        c("CLI", "repeat without time", "`--repeat 3`", base + f + ["--repeat", "3"], 1,
          "give --time too")
        c("CLI", "cval too small for a double (accepted)", "`--cval 1e-400`",
          base + f + ["--cval", "1e-400", "--mode", "constant"], 0, None,
          note="the nearest double, 0, as Python's float()")
        c("CLI", "subnormal sigma (accepted)", "`--filter gaussian:1e-320`",
          base + ["--filter", "gaussian:1e-320"], 0, None, note="the identity filter")
        c("CLI", "bad PNG compression", "`--png-compression 10`",
          base + f + ["--png-compression", "10"], 1, "0 (fastest) to 9")
        c("CLI", "bad pixel limit", "`--max-pixels -1`", base + f + ["--max-pixels", "-1"], 1,
          "--max-pixels '-1'")
        c("CLI", "unknown output dtype", "`--output-dtype int32`",
          base + f + ["--output-dtype", "int32"], 1, "unknown output dtype 'int32'")
        c("CLI", "unknown strategy", "`--strategy warp-speed`",
          base + f + ["--strategy", "warp-speed"], 1, "no strategy 'warp-speed'")
        c("CLI", "GPU strategy, no GPU (backend auto)", "`--strategy tiled-in`",
          base + f + ["--strategy", "tiled-in"], 2, "strategy 'tiled-in' runs on the GPU",
          no_cuda=(1, "no strategy 'tiled-in' on the cpu backend"))
        write_file(self.p("wisdom.txt"), b"convolve-wisdom 1\nkey without tabs\n")
        c("CLI", "malformed wisdom file", "`--wisdom` file with a bad line",
          base + f + ["--wisdom", self.p("wisdom.txt")], 1, "line 2")
        c("CLI", "strategy that cannot serve the case", "`--filter laplacian --strategy separable`",
          base + ["--filter", "laplacian", "--strategy", "separable"], 1, "not separable")
        c("CLI", "unknown filter", "`--filter blur:3`", base + ["--filter", "blur:3"], 1,
          "unknown filter 'blur:3'")
        c("CLI", "bad box radius", "`--filter box:1.5`", base + ["--filter", "box:1.5"], 1,
          "radius must be an integer")
        c("CLI", "negative box radius", "`--filter box:-1`", base + ["--filter", "box:-1"], 1,
          "radius must be an integer")
        c("CLI", "missing filter argument", "`--filter gaussian`",
          base + ["--filter", "gaussian"], 1, "needs an argument")
        c("CLI", "bad Gaussian sigma", "`--filter gaussian:0`", base + ["--filter", "gaussian:0"],
          1, "sigma must be a number > 0")
        c("CLI", "huge Gaussian sigma", "`--filter gaussian:1e9`",
          base + ["--filter", "gaussian:1e9"], 1, "exceeds")
        c("CLI", "argument to a fixed filter", "`--filter sobel-x:2`",
          base + ["--filter", "sobel-x:2"], 1, "takes no argument")
        c("CLI", "2-D filter on a 3-D input", "x3.npy `--filter sobel-x`",
          [self.p("x3.npy"), out, "--filter", "sobel-x"], 1, "is 2-D")
        c("CLI", "origin outside the filter", "`--filter box:1 --origin 2`",
          base + f + ["--origin", "2"], 1, "origin 2 on axis 0 is outside")
        c("CLI", "origin outside an even filter", "3x4 weights, `--origin 0,2`",
          base + ["--weights", self.p("w34.txt"), "--origin", "0,2"], 1, "origin 2 on axis 1")
        c("CLI", "origin not an integer", "`--origin 1,x`", base + f + ["--origin", "1,x"], 1,
          "'x' is not an integer")
        c("CLI", "origin beyond the parser's range", "`--origin 99999999999`",
          base + f + ["--origin", "99999999999"], 1, "not an integer from -1000000000")
        c("CLI", "too many origins", "`--origin 1,1,1,1`", base + f + ["--origin", "1,1,1,1"], 1,
          "give 1 to 3 integers")
        c("CLI", "origins not matching the input", "3-D input, `--origin 0,1`",
          [self.p("x3.npy"), out] + f + ["--origin", "0,1"], 1, "--origin has 2 values")
        c("CLI", "--backend cuda without a GPU", "`--backend cuda`",
          base + f + ["--backend", "cuda"], 2, "no GPU can be used",
          no_cuda=(1, "built without CUDA"))
        c("CLI", "bad device count", "`--devices 0`", base + f + ["--devices", "0"], 1,
          "--devices '0': give all, a count from 1")
        c("CLI", "bad device list", "`--devices 0,x`", base + f + ["--devices", "0,x"], 1,
          "'x' is not a device number")
        c("CLI", "device named twice", "`--devices 1,1`", base + f + ["--devices", "1,1"], 1,
          "device 1 is named twice")
        c("CLI", "more devices than the host has", "`--devices 2` (no GPU)",
          base + f + ["--devices", "2"], 1, "this host has 0 CUDA devices")
        c("CLI", "a device the host lacks", "`--devices 0,3` (no GPU)",
          base + f + ["--devices", "0,3"], 1, "there is no device 3")
        c("CLI", "bad --mmap", "`--mmap sometimes`", base + f + ["--mmap", "sometimes"], 1,
          "--mmap 'sometimes': use auto, on or off")
        c("CLI", "--mmap on with another format", "`--mmap on`, OUTPUT `out.png`",
          [self.p("x2.npy"), self.p("out.png")] + f + ["--mmap", "on"], 1,
          "--mmap on maps .npy files: OUTPUT", out="out.png")
        np.save(self.p("xbe.npy"), np.load(self.p("x2.npy")).astype(">f8"))
        c("CLI", "--mmap on, input needing conversion", "`--mmap on`, big-endian INPUT",
          [self.p("xbe.npy"), out] + f + ["--mmap", "on"], 1, "in the other byte order")

    def weights(self):
        x2, out = self.p("x2.npy"), self.p("out.npy")
        cases = [
            ("NaN weight", "`1 nan 1`", "1 nan 1\n", "NaN"),
            ("infinite weight", "`1 inf 1`", "1 inf 1\n", "infinite"),
            ("weight overflowing a double", "`1 1e999 1`", "1 1e999 1\n", "infinite"),
            ("empty weights file", "0 bytes", "", "is empty"),
            ("weights of more dimensions", "3-D text weights, 2-D input",
             "1 2\n3 4\n\n5 6\n7 8\n", "3 dimensions and the input 2"),
        ]
        for i, (kind, shown, text, needle) in enumerate(cases):
            write_file(self.p("w%d.txt" % i), text)
            self.cli("weights", kind, shown, [x2, out, "--weights", self.p("w%d.txt" % i)], 1,
                     needle)
        write_file(self.p("bom.txt"), b"\xef\xbb\xbf1 2 1\n")
        self.cli("weights", "UTF-8 byte-order mark (accepted)", "`EF BB BF` then `1 2 1`",
                 [x2, out, "--weights", self.p("bom.txt")], 0, None,
                 note="the mark is skipped")
        write_file(self.p("nbsp.txt"), b"1 2\xc2\xa01\n")
        self.cli("weights", "no-break space between numbers", "`1 2` U+00A0 `1`",
                 [x2, out, "--weights", self.p("nbsp.txt")], 1, "'2\\xc2\\xa01' is not a number")
        self.cli("weights", "image as weights", "`--weights grace_hopper.jpg`",
                 [x2, out, "--weights", PHOTO], 1, "look like an image")
        self.cli("weights", ".npy weights of other dimensions", "2-D w2.npy, 1-D input",
                 [self.p("x1.npy"), out, "--weights", self.p("w2.npy")], 1,
                 "2 dimensions and the input 1")
        np.save(self.p("wbig.npy"), np.full((3, 3), 1e308))
        self.cli("weights", "weights too large for the FFT", "3x3 weights of 1e308, "
                 "`--strategy fft`", [x2, out, "--weights", self.p("wbig.npy"), "--strategy",
                                      "fft"], 1, "could overflow")

    def outputs(self):
        x2 = self.p("x2.npy")
        x2_bytes = read_file(x2)
        f = ["--filter", "box:1"]
        c = self.cli
        c("output", "OUTPUT is INPUT", "`x2.npy x2.npy`", [x2, x2] + f, 1, "is the input file",
          out=None)
        c("output", "OUTPUT is INPUT by another name", "`x2.npy ./x2.npy`",
          ["x2.npy", "./x2.npy"] + f, 1, "is the input file", out=None, cwd=self.tmp)
        os.link(x2, self.p("hard.npy"))
        c("output", "OUTPUT a hard link to INPUT", "`x2.npy hard.npy`",
          [x2, self.p("hard.npy")] + f, 1, "is the input file", out=None)
        os.symlink("x2.npy", self.p("soft.npy"))
        c("output", "OUTPUT a symbolic link to INPUT", "`x2.npy soft.npy`",
          [x2, self.p("soft.npy")] + f, 1, "is the input file", out=None)
        with self.subTest(kind="input intact"):
            self.assertEqual(read_file(x2), x2_bytes)
        shutil.copy(self.p("w2.npy"), self.p("w.npy"))
        c("output", "OUTPUT is the weights file", "`--weights w.npy` to `w.npy`",
          [x2, self.p("w.npy"), "--weights", self.p("w.npy")], 1, "is the weights file",
          out=None)
        c("output", "unknown OUTPUT extension", "`out.xyz`", [x2, self.p("out.xyz")] + f, 1,
          "cannot tell the output format", out="out.xyz")
        c("output", "OUTPUT names a folder", "`somedir/`", [x2, self.p("somedir") + "/"] + f, 1,
          "is a folder", out=None)
        c("output", "3-D result to PNG", "x3.npy to `out.png`",
          [self.p("x3.npy"), self.p("out.png")] + f, 1, "image files hold 2-D images",
          out="out.png")
        if HAVE_TIFF:
            c("output", "1-D result to TIFF", "x1.npy to `out.tif`",
              [self.p("x1.npy"), self.p("out.tif")] + f, 1, "TIFF holds 2-D images",
              out="out.tif")
        else:
            self.keep_row()
            self.row("output", "1-D result to TIFF", "", "", "")
        c("output", "uint16 result to JPEG", "`--output-dtype uint16` to `out.jpg`",
          [x2, self.p("out.jpg")] + f + ["--output-dtype", "uint16"], 1, "JPEG holds uint8",
          out="out.jpg")
        c("output", "float result to PGM", "`--output-dtype float32` to `out.pgm`",
          [x2, self.p("out.pgm")] + f + ["--output-dtype", "float32"], 1, "uint8 or uint16",
          out="out.pgm")
        c("output", "integer result to text", "`--output-dtype uint8` to `out.txt`",
          [x2, self.p("out.txt")] + f + ["--output-dtype", "uint8"], 1, "text holds float",
          out="out.txt")
        c("output", "OUTPUT in a missing folder", "`no/such/dir/out.npy`",
          [x2, self.p("no/such/dir/out.npy")] + f, 2, "No such file or directory", out=None)
        c("output", "OUTPUT under a regular file", "`x1.npy/out.npy`",
          [x2, self.p("x1.npy") + "/out.npy"] + f, 2, "Not a directory", out=None)
        os.mkdir(self.p("adir.npy"))
        c("output", "OUTPUT is an existing folder", "`adir.npy` (a folder)",
          [x2, self.p("adir.npy")] + f, 1, "is a folder", out="adir.npy")
        os.symlink("nothere.npy", self.p("dangle.npy"))
        c("output", "OUTPUT a dangling symbolic link", "`dangle.npy -> nothere.npy`",
          [x2, self.p("dangle.npy")] + f, 1, "which does not exist; as cp", out=None)
        with self.subTest(kind="dangling link kept"):
            self.assertTrue(os.path.islink(self.p("dangle.npy")))
            self.assertFalse(os.path.lexists(self.p("nothere.npy")))
        # accepted: values beyond the output type saturate; --force replaces the input
        np.save(self.p("big.npy"), np.array([[-5.0, 300.0, 7.4, 7.5]]))
        c("output", "values outside uint8 (accepted)", "[-5, 300, 7.4, 7.5] "
          "`--filter identity --output-dtype uint8`",
          [self.p("big.npy"), self.p("out.npy"), "--filter", "identity", "--output-dtype",
           "uint8"], 0, None, note="writes [[0, 255, 7, 8]]")
        with self.subTest(kind="saturated values"):
            self.assertEqual(np.load(self.p("out.npy")).tolist(), [[0, 255, 7, 8]])
        shutil.copy(x2, self.p("victim.npy"))
        c("output", "OUTPUT is INPUT with --force (accepted)", "`victim.npy victim.npy --force`",
          [self.p("victim.npy"), self.p("victim.npy"), "--filter", "identity", "--force"], 0,
          None, out=None, note="the input file is replaced by the result")
        with self.subTest(kind="--force result"):
            np.testing.assert_array_equal(np.load(self.p("victim.npy")), np.load(x2))

    def batch_member(self, kind, shown, args, code, bad, needle, good_out):
        """A batch of two files, one of them bad: exit code, a line naming the bad
        file, the summary, and the good file's output written."""
        r = self.run_cli(args)
        lines = r.stderr.rstrip("\n").split("\n")
        with self.subTest(kind=kind):
            self.assertEqual(r.returncode, code, r.stderr)
            self.assertEqual(len(lines), 2, r.stderr)
            self.assertTrue(lines[0].startswith("convolve: %s: " % bad), r.stderr)
            self.assertIn(needle, lines[0])
            self.assertRegex(lines[1], r"^convolve: 2 files: 1 done, 1 failed; \d+ plans?; ")
            self.assertTrue(os.path.isfile(good_out), good_out)
        self.row("batch", kind, shown, "exit %d, the other file written" % code,
                 self.norm(lines[0][len("convolve: "):]))

    def batch(self):
        """The batch form: mistakes of the command refused before any work (one
        line, nothing written); a bad file reported, the others written."""
        x2, f = self.p("x2.npy"), ["--filter", "box:1"]
        bout = self.p("bout")
        os.mkdir(bout)
        os.mkdir(self.p("sub"))
        shutil.copy(x2, self.p("sub/x2.npy"))
        shutil.copy(x2, self.p("noext"))
        shutil.copy(x2, self.p("x2_b.npy"))
        c = self.cli
        d = ["--output-dir", bout]
        o = "bout/x2.npy"  # an old output that must survive
        c("batch", "batch option without --output-dir", "`IN OUT --suffix _b`",
          [x2, self.p("out.npy"), "--suffix", "_b"] + f, 1, "--suffix applies to many files")
        c("batch", "missing --output-dir", "`--output-dir nope`",
          [x2, "--output-dir", self.p("nope")] + f, 2, "No such file or directory", out=None)
        c("batch", "--output-dir a file", "`--output-dir x1.npy`",
          [x2, "--output-dir", self.p("x1.npy")] + f, 2, "Not a directory", out=None)
        c("batch", "no INPUT", "`--output-dir DIR` alone", d + f, 1, "no INPUT given", out=o)
        c("batch", "`-` as an INPUT", "`x2.npy -`", [x2, "-"] + d + f, 1,
          "'-' cannot be one of many INPUTs", out=o)
        c("batch", "an INPUT twice", "`x2.npy x2.npy`", [x2, x2] + d + f, 1, "is given twice",
          out=o)
        c("batch", "two INPUTs, one output name", "`x2.npy sub/x2.npy`",
          [x2, self.p("sub/x2.npy")] + d + f, 1, "would both be written", out=o)
        os.symlink("x2.npy", self.p("bout/x2_b.npy"))
        c("batch", "two outputs, one file through a link", "`x2.npy x2_b.npy --output-dir "
          "bout`, `bout/x2_b.npy -> x2.npy`", [x2, self.p("x2_b.npy")] + d + f, 1,
          "are one file, through a symbolic link", out=o)
        os.remove(self.p("bout/x2_b.npy"))
        c("batch", "result replacing its INPUT", "`x2.npy --output-dir <tmp>`",
          [x2, "--output-dir", self.tmp] + f, 1, "would replace it", out=None)
        c("batch", "result replacing another INPUT", "`x2.npy x2_b.npy --suffix _b` into <tmp>",
          [x2, self.p("x2_b.npy"), "--output-dir", self.tmp, "--suffix", "_b"] + f, 1,
          "would replace the INPUT", out=None)
        c("batch", "INPUT without an extension", "`noext`, no `--format`",
          [self.p("noext")] + d + f, 1, "its name has no extension", out=o)
        c("batch", "unknown --format", "`--format gif`", [x2, "--format", "gif"] + d + f, 1,
          "unknown --format 'gif'", out=o)
        c("batch", "--suffix with a folder", "`--suffix a/b`", [x2, "--suffix", "a/b"] + d + f,
          1, "holds a '/'", out=o)
        c("batch", "bad job count", "`--jobs -1`", [x2, "--jobs", "-1"] + d + f, 1, "--jobs",
          out=o)
        c("batch", "--time with --output-dir", "`--time`", [x2, "--time"] + d + f, 1,
          "cannot be used with --output-dir", out=o)
        c("batch", "missing --inputs-from file", "`--inputs-from nope.txt`",
          ["--inputs-from", self.p("nope.txt")] + d + f, 1, "No such file or directory", out=o)
        c("batch", "unknown filter, checked once", "`--filter blur:3`",
          [x2] + d + ["--filter", "blur:3"], 1, "unknown filter 'blur:3'", out=o)
        os.remove(self.p(o))
        write_file(self.p("bad.png"), b"\x89PNG\r\n\x1a\n\0\0")
        self.batch_member("corrupt file among good ones", "`x2.npy bad.png`",
                          [x2, self.p("bad.png")] + d + f, 1, self.p("bad.png"), "malformed PNG",
                          self.p("bout/x2.npy"))
        os.remove(self.p("bout/x2.npy"))
        os.mkdir(self.p("bout/x1.npy"))
        self.batch_member("output that cannot be written", "`bout/x1.npy` is a folder",
                          [x2, self.p("x1.npy")] + d + f, 2, self.p("x1.npy"),
                          "not a regular file", self.p("bout/x2.npy"))

    def api_calls(self):
        A = self.api
        x = np.arange(24, dtype=np.float64).reshape(4, 6)
        y = np.zeros_like(x)
        L2 = layout(F64, (4, 6))
        w9 = doubles(*([1.0 / 9] * 9))

        def filt(ctx, nd=2, shape=(3, 3), w=None):
            f = vp()
            st = LIB.convolve_filter_create(ctx, C.byref(f), nd, sizes(*shape),
                                            w if w is not None else w9)
            assert st == 0, LIB.convolve_last_error(ctx)
            return f

        def plan(ctx, lin=None, lout=None, f=None, o=None, keep=None):
            """plan_create with defaults: 4x6 float64, 3x3 box, default options."""
            f = f if f is not None else filt(ctx)
            pl = vp()
            st = LIB.convolve_plan_create(ctx, C.byref(pl), C.byref(lin or L2),
                                          C.byref(lout or L2), f,
                                          C.byref(o) if o is not None else None)
            if keep is not None:
                keep.append(pl)
            else:
                LIB.convolve_plan_free(pl)
            LIB.convolve_filter_free(f)
            return st

        def with_filter(ctx, fn):
            f = filt(ctx)
            try:
                return fn(f)
            finally:
                LIB.convolve_filter_free(f)

        def with_plan(ctx, fn):
            keep = []
            assert plan(ctx, keep=keep) == 0, LIB.convolve_last_error(ctx)
            try:
                return fn(keep[0])
            finally:
                LIB.convolve_plan_free(keep[0])

        def run_plan(ctx, src, dst, **kw):
            """Plans (kw as plan()) and executes on the given pointers; the status."""
            keep = []
            st = plan(ctx, keep=keep, **kw)
            if st == 0:
                st = LIB.convolve_execute(keep[0], src, dst)
            LIB.convolve_plan_free(keep[0] if keep else None)
            return st

        def nan_cval(ctx):
            z = np.zeros_like(x)
            st = run_plan(ctx, x.ctypes.data, z.ctypes.data, o=options(mode=1, cval=float("nan")))
            edge = np.ones(z.shape, bool)
            edge[1:-1, 1:-1] = False
            return st if (np.isnan(z) == edge).all() else 99

        def flipped(ctx):
            z = np.zeros_like(x)
            last_row = x.ctypes.data + 3 * 48  # element 0 of the flipped view
            st = run_plan(ctx, last_row, z.ctypes.data,
                          lin=layout(F64, (4, 6), strides=(-48, 0)))
            want = ndi.convolve(np.broadcast_to(x[::-1, :1], x.shape), np.full((3, 3), 1 / 9))
            return st if np.allclose(z, want, rtol=1e-12, atol=1e-12) else 99

        ndim4 = layout(F64, (4, 6))
        ndim4.ndim = 4
        timing = (C.c_byte * 64)()  # room for a convolve_timing
        ptr = x.ctypes.data
        out = y.ctypes.data
        # context and names
        A("API context", "NULL out-pointer", "`convolve_context_create(NULL)`",
          "INVALID_ARGUMENT", None, lambda ctx: LIB.convolve_context_create(None), ctxless=True)
        A("API names", "unknown dtype name", "`convolve_dtype_parse(\"int32\")`",
          "INVALID_ARGUMENT", None,
          lambda ctx: LIB.convolve_dtype_parse(b"int32", C.byref(C.c_int())), ctxless=True)
        A("API names", "strategy index out of range", "`convolve_strategy_get(1000)`",
          "INVALID_ARGUMENT", None,
          lambda ctx: LIB.convolve_strategy_get(1000, C.byref(cc.StrategyInfo())), ctxless=True)
        # filters
        fp = vp()
        A("API filter", "NULL weights", "`convolve_filter_create(..., NULL)`", "INVALID_ARGUMENT",
          "NULL argument",
          lambda ctx: LIB.convolve_filter_create(ctx, C.byref(fp), 1, sizes(3), None))
        A("API filter", "0 dimensions", "ndim 0", "BAD_FILTER", "0 dimensions",
          lambda ctx: LIB.convolve_filter_create(ctx, C.byref(fp), 0, sizes(3), w9))
        A("API filter", "4 dimensions", "ndim 4", "BAD_FILTER", "4 dimensions",
          lambda ctx: LIB.convolve_filter_create(ctx, C.byref(fp), 4, sizes(1, 1, 3, 3), w9))
        A("API filter", "empty filter", "shape (3, 0)", "BAD_FILTER", "axis 1 has extent 0",
          lambda ctx: LIB.convolve_filter_create(ctx, C.byref(fp), 2, sizes(3, 0), w9))
        A("API filter", "NaN weight", "`[1, nan, 1]`", "BAD_FILTER", "weight 1 is NaN",
          lambda ctx: LIB.convolve_filter_create(ctx, C.byref(fp), 1, sizes(3),
                                                 doubles(1, float("nan"), 1)))
        A("API filter", "infinite weight", "`[1, 1, -inf]`", "BAD_FILTER",
          "weight 2 is infinite",
          lambda ctx: LIB.convolve_filter_create(ctx, C.byref(fp), 1, sizes(3),
                                                 doubles(1, 1, float("-inf"))))
        A("API filter", "filter size overflows", "shape (2^62,)", "SIZE_OVERFLOW", "too large",
          lambda ctx: LIB.convolve_filter_create(ctx, C.byref(fp), 1, sizes(1 << 62), w9))
        taps = (C.POINTER(C.c_double) * 2)(doubles(1, 2, 1), None)
        A("API filter", "NULL separable taps", "taps[1] NULL", "INVALID_ARGUMENT",
          "taps[1] is NULL",
          lambda ctx: LIB.convolve_filter_create_separable(ctx, C.byref(fp), 2, sizes(3, 3),
                                                           taps))
        taps_nan = (C.POINTER(C.c_double) * 2)(doubles(1, 2, 1), doubles(float("nan"), 1, 1))
        A("API filter", "NaN separable tap", "taps[1][0] NaN", "BAD_FILTER",
          "axis-1 weight 0 is NaN",
          lambda ctx: LIB.convolve_filter_create_separable(ctx, C.byref(fp), 2, sizes(3, 3),
                                                           taps_nan))
        A("API filter", "NULL filter spec", "`convolve_filter_create_named(..., NULL, 2)`",
          "INVALID_ARGUMENT", "NULL argument",
          lambda ctx: LIB.convolve_filter_create_named(ctx, C.byref(fp), None, 2))
        A("API filter", "named filter of 0 dimensions", "`\"box:1\"`, ndim 0", "BAD_FILTER",
          "0 dimensions asked",
          lambda ctx: LIB.convolve_filter_create_named(ctx, C.byref(fp), b"box:1", 0))
        A("API filter", "NaN Gaussian sigma", "`\"gaussian:nan\"`", "BAD_FILTER",
          "sigma must be a number > 0",
          lambda ctx: LIB.convolve_filter_create_named(ctx, C.byref(fp), b"gaussian:nan", 2))
        A("API filter", "weights buffer too small", "`convolve_filter_weights(f, out, 8)` "
          "for 9 weights", "INVALID_ARGUMENT", None, lambda ctx: with_filter(
              ctx, lambda f: LIB.convolve_filter_weights(f, (C.c_double * 9)(), 8)),
          ctxless=True)
        # plans: arguments and options
        A("API plan", "NULL plan pointer", "`convolve_plan_create(ctx, NULL, ...)`",
          "INVALID_ARGUMENT", "plan is NULL",
          lambda ctx: LIB.convolve_plan_create(ctx, None, C.byref(L2), C.byref(L2), None, None))
        A("API plan", "NULL context", "`convolve_plan_create(NULL, ...)`", "INVALID_ARGUMENT",
          None, lambda ctx: LIB.convolve_plan_create(None, C.byref(vp()), C.byref(L2),
                                                     C.byref(L2), None, None), ctxless=True)
        A("API plan", "NULL filter", "filter NULL", "INVALID_ARGUMENT", "filter is NULL",
          lambda ctx: LIB.convolve_plan_create(ctx, C.byref(vp()), C.byref(L2), C.byref(L2),
                                               None, None))
        A("API plan", "NULL layout", "input layout NULL", "INVALID_ARGUMENT",
          "input layout is NULL", lambda ctx: with_filter(
              ctx, lambda f: LIB.convolve_plan_create(ctx, C.byref(vp()), None, C.byref(L2), f,
                                                      None)))
        A("API plan", "unknown operation", "operation 7", "INVALID_ARGUMENT",
          "unknown operation 7", lambda ctx: plan(ctx, o=options(operation=7)))
        A("API plan", "unknown mode", "mode 99", "INVALID_ARGUMENT", "unknown boundary mode 99",
          lambda ctx: plan(ctx, o=options(mode=99)))
        A("API plan", "unknown backend", "backend -1", "INVALID_ARGUMENT", "unknown backend -1",
          lambda ctx: plan(ctx, o=options(backend=-1)))
        A("API plan", "negative thread count", "threads -2", "INVALID_ARGUMENT", "threads is -2",
          lambda ctx: plan(ctx, o=options(threads=-2)))
        A("API plan", "unknown integer cast", "integer_cast 5", "INVALID_ARGUMENT",
          "unknown integer_cast 5", lambda ctx: plan(ctx, o=options(integer_cast=5)))
        A("API plan", "negative divisor", "integer_cast TRUNCATE, divisor -9", "INVALID_ARGUMENT",
          "divisor is -9", lambda ctx: plan(ctx, o=options(integer_cast=1, divisor=-9.0)))
        A("API plan", "divisor without scipy's cast", "divisor 9, float64 output",
          "INVALID_ARGUMENT", "divisor 9 applies to integer outputs",
          lambda ctx: plan(ctx, o=options(divisor=9.0)))
        A("API plan", "NaN cval (accepted)", "mode constant, cval NaN, 3x3 box on 4x6", "OK",
          None, nan_cval, note="the outputs whose window crosses the edge are NaN, the rest not")
        # layouts
        A("API layout", "unknown dtype", "dtype 9", "INVALID_ARGUMENT", "unknown dtype 9",
          lambda ctx: plan(ctx, lin=layout(9, (4, 6))))
        A("API layout", "0 dimensions", "ndim 0", "BAD_LAYOUT", "ndim is 0",
          lambda ctx: plan(ctx, lin=layout(F64, ())))
        A("API layout", "4 dimensions", "ndim 4", "BAD_LAYOUT", "ndim is 4",
          lambda ctx: plan(ctx, lin=ndim4))
        A("API layout", "zero extent", "shape (4, 0)", "BAD_LAYOUT", "axis 1 has extent 0",
          lambda ctx: plan(ctx, lin=layout(F64, (4, 0))))
        A("API layout", "0 channels", "channels 0", "BAD_LAYOUT", "channels is 0",
          lambda ctx: plan(ctx, lin=layout(F64, (4, 6), channels=0)))
        A("API layout", "stride not a multiple of the element", "float64 strides (48, 4)",
          "BAD_LAYOUT", "not a multiple",
          lambda ctx: plan(ctx, lin=layout(F64, (4, 6), strides=(48, 4))))
        A("API layout", "output elements overlap (stride 0)", "output strides (0, 8)",
          "BAD_LAYOUT", "overlap", lambda ctx: plan(ctx, lout=layout(F64, (4, 6),
                                                                      strides=(0, 8))))
        A("API layout", "output rows overlap", "output shape (4, 6), strides (16, 8)",
          "BAD_LAYOUT", "overlap", lambda ctx: plan(ctx, lout=layout(F64, (4, 6),
                                                                      strides=(16, 8))))
        A("API layout", "negative and zero input strides (accepted)",
          "input strides (-48, 0)", "OK", None, flipped,
          note="reads rows bottom up, column 0 repeated, as numpy's x[::-1, :1] broadcast")
        A("API layout", "extent beyond PTRDIFF_MAX", "shape (2^63, 1)", "SIZE_OVERFLOW",
          "too large", lambda ctx: plan(ctx, lin=layout(F64, (1 << 63, 1), strides=(8, 8))))
        A("API layout", "byte count overflows", "float64 shape (2^32, 2^32)", "SIZE_OVERFLOW",
          "byte count overflows", lambda ctx: plan(ctx, lin=layout(F64, (1 << 32, 1 << 32),
                                                                    strides=(8, 8))))
        A("API layout", "strides overflow the address range", "shape (2^20, 2), strides "
          "(2^60, 8)", "SIZE_OVERFLOW", "address range",
          lambda ctx: plan(ctx, lin=layout(F64, (1 << 20, 2), strides=(1 << 60, 8))))
        A("API layout", "layout_init byte count overflow", "`convolve_layout_init` float64 "
          "(2^62, 4)", "SIZE_OVERFLOW", None,
          lambda ctx: LIB.convolve_layout_init(C.byref(cc.Layout()), F64, 2,
                                               sizes(1 << 62, 4), 1), ctxless=True)
        A("API layout", "input and output shapes differ", "(4, 6) to (4, 5)", "BAD_LAYOUT",
          "differ along axis 1", lambda ctx: plan(ctx, lout=layout(F64, (4, 5))))
        A("API layout", "input and output channels differ", "1 channel to 3", "BAD_LAYOUT",
          "differ", lambda ctx: plan(ctx, lout=layout(F64, (4, 6), channels=3)))
        # filter against layout and options
        A("API plan", "filter and input dimensions differ", "3-tap 1-D filter, 2-D input",
          "BAD_FILTER", "the filter has 1 dimension and the input 2",
          lambda ctx: plan(ctx, f=filt(ctx, 1, (3,))))
        A("API plan", "origin outside the filter", "3x3 filter, origin (0, 2)", "BAD_ORIGIN",
          "origin 2 on axis 1", lambda ctx: plan(ctx, o=options(origin=(0, 2))))
        A("API plan", "origin outside an even filter", "4x4 filter, origin (-3, 0)",
          "BAD_ORIGIN", "[-2, 1]",
          lambda ctx: plan(ctx, f=filt(ctx, 2, (4, 4), doubles(*[1.0] * 16)),
                           o=options(origin=(-3, 0))))
        A("API plan", "unknown strategy", "strategy \"warp-speed\"", "INVALID_ARGUMENT",
          "no strategy 'warp-speed'", lambda ctx: plan(ctx, o=options(strategy=b"warp-speed")))
        A("API plan", "strategy that cannot serve the case", "strategy \"separable\", "
          "non-separable filter", "UNSUPPORTED", "not separable",
          lambda ctx: plan(ctx, f=filt(ctx, 2, (3, 3), doubles(0, 1, 0, 1, -4, 1, 0, 1, 0)),
                           o=options(strategy=b"separable")))
        A("API plan", "FFT with weights near the largest double", "strategy \"fft\", 3x3 "
          "weights of 1e308", "UNSUPPORTED", "could overflow",
          lambda ctx: plan(ctx, f=filt(ctx, 2, (3, 3), doubles(*[1e308] * 9)),
                           o=options(backend=CPU, strategy=b"fft")))
        A("API plan", "CUDA backend without a GPU", "backend CUDA", "BACKEND_UNAVAILABLE",
          "no GPU can be used", lambda ctx: plan(ctx, o=options(backend=CUDA)),
          no_cuda=("BACKEND_UNAVAILABLE", "built without CUDA"))

        def auto_is_cpu(ctx):
            keep = []
            st = plan(ctx, keep=keep)
            backend = LIB.convolve_plan_backend(keep[0])
            LIB.convolve_plan_free(keep[0])
            return st if backend == CPU else 99
        A("API plan", "backend AUTO without a GPU (accepted)", "backend AUTO", "OK", None,
          auto_is_cpu, note="the plan runs on the CPU")
        # execution
        A("API execute", "NULL plan", "`convolve_execute(NULL, in, out)`", "INVALID_ARGUMENT",
          None, lambda ctx: LIB.convolve_execute(None, ptr, out), ctxless=True)
        A("API execute", "NULL input", "in NULL", "INVALID_ARGUMENT", "input pointer is NULL",
          lambda ctx: run_plan(ctx, None, out))
        A("API execute", "misaligned output", "out + 1 byte", "INVALID_ARGUMENT", "not aligned",
          lambda ctx: run_plan(ctx, ptr, out + 1))
        def in_place(ctx):
            z, want = x.copy(), np.zeros_like(x)
            st = run_plan(ctx, x.ctypes.data, want.ctypes.data)
            if st == 0:
                st = run_plan(ctx, z.ctypes.data, z.ctypes.data)
            return st if np.array_equal(z, want) else 99

        A("API execute", "output is the input (accepted)", "out == in, the same layout", "OK",
          None, in_place, note="runs in place, equal to the run into another array")
        A("API execute", "output is the input, other strides", "out == in, output rows 96 bytes "
          "apart", "INVALID_ARGUMENT", "overlaps the input",
          lambda ctx: run_plan(ctx, ptr, ptr, lin=layout(F64, (2, 6)),
                               lout=layout(F64, (2, 6), strides=(96, 8))))
        A("API execute", "output overlaps part of the input", "out == in + 8 elements",
          "INVALID_ARGUMENT", "overlaps the input",
          lambda ctx: run_plan(ctx, ptr, ptr + 64, lin=layout(F64, (2, 6)),
                               lout=layout(F64, (2, 6))))
        A("API execute", "device execution of a CPU plan", "`convolve_execute_device`",
          "UNSUPPORTED", "needs a CUDA plan", lambda ctx: with_plan(
              ctx, lambda pl: LIB.convolve_execute_device(pl, ptr, out, None)))
        A("API execute", "benchmark with no runs", "`convolve_plan_benchmark(p, 0, 0, &t)`",
          "INVALID_ARGUMENT", "runs >= 1", lambda ctx: with_plan(
              ctx, lambda pl: LIB.convolve_plan_benchmark(pl, 0, 0, C.addressof(timing))))

        def benchmark_no_timing(ctx, pl):
            LIB.convolve_plan_benchmark(pl, 0, 0, C.addressof(timing))  # leaves a message
            return LIB.convolve_plan_benchmark(pl, 1, 1, None)
        A("API execute", "benchmark without a timing (after another error)",
          "`convolve_plan_benchmark(p, 1, 1, NULL)`", "INVALID_ARGUMENT", "timing is NULL",
          lambda ctx: with_plan(ctx, lambda pl: benchmark_no_timing(ctx, pl)))
        with self.subTest(kind="refused executions wrote nothing"):
            self.assertFalse(y.any())
            self.assertEqual(x.tolist(), np.arange(24, dtype=np.float64).reshape(4, 6).tolist())
        # arrays and files
        ap = vp()
        A("API array", "0 channels", "`convolve_array_create` channels 0", "BAD_LAYOUT",
          "channel count is zero",
          lambda ctx: LIB.convolve_array_create(ctx, C.byref(ap), F32, 2, sizes(2, 2), 0))
        A("API array", "array too large", "float64 (2^40, 2^40)", "SIZE_OVERFLOW", "too large",
          lambda ctx: LIB.convolve_array_create(ctx, C.byref(ap), F64, 2,
                                                sizes(1 << 40, 1 << 40), 1))
        A("API array", "unknown format", "`convolve_array_load_memory(..., format 42)`",
          "INVALID_ARGUMENT", "unknown format 42",
          lambda ctx: LIB.convolve_array_load_memory(ctx, C.byref(ap), b"P5", 2, 42))
        A("API array", "NULL data with a size", "data NULL, size 10", "INVALID_ARGUMENT",
          "data is NULL",
          lambda ctx: LIB.convolve_array_load_memory(ctx, C.byref(ap), None, 10, FMT_NPY))
        A("API array", "NULL path", "`convolve_array_load(ctx, &a, NULL, AUTO)`",
          "INVALID_ARGUMENT", "path is NULL",
          lambda ctx: LIB.convolve_array_load(ctx, C.byref(ap), None, FMT_AUTO))

        def with_array(ctx, dtype, fn):
            a = vp()
            assert LIB.convolve_array_create(ctx, C.byref(a), dtype, 2, sizes(2, 3), 1) == 0
            try:
                return fn(a)
            finally:
                LIB.convolve_array_free(a)
        A("API array", "unknown conversion target", "`convolve_array_convert(..., dtype 9)`",
          "INVALID_ARGUMENT", "unknown element type 9",
          lambda ctx: with_array(ctx, F32, lambda a: LIB.convolve_array_convert(
              ctx, a, 9, C.byref(vp()))))
        A("API array", "save with an unknown extension", "`out.xyz`", "INVALID_ARGUMENT",
          "cannot tell the format",
          lambda ctx: with_array(ctx, U8, lambda a: LIB.convolve_array_save(
              ctx, a, self.p("out.xyz").encode(), FMT_AUTO, 0)))
        A("API array", "save float data as PNG", "float32 to `out.png`", "UNSUPPORTED",
          "PNG holds uint8 or uint16",
          lambda ctx: with_array(ctx, F32, lambda a: LIB.convolve_array_save(
              ctx, a, self.p("out.png").encode(), FMT_AUTO, 0)))
        A("API array", "bad JPEG quality", "quality 101", "INVALID_ARGUMENT", "JPEG quality 101",
          lambda ctx: with_array(ctx, U8, lambda a: LIB.convolve_array_save(
              ctx, a, self.p("out.jpg").encode(), FMT_AUTO, 101)))
        A("API array", "bad PNG compression level", "`convolve_context_set_png_compression(ctx, 10)`",
          "INVALID_ARGUMENT", "PNG compression level 10",
          lambda ctx: LIB.convolve_context_set_png_compression(ctx, 10))
        A("API array", "save into a missing folder", "`no/such/out.npy`", "IO",
          "No such file or directory",
          lambda ctx: with_array(ctx, U8, lambda a: LIB.convolve_array_save(
              ctx, a, self.p("no/such/out.npy").encode(), FMT_AUTO, 0)))
        if not os.path.lexists(self.p("dangling.npy")):
            os.symlink("nothere.npy", self.p("dangling.npy"))
        A("API array", "save through a dangling link", "`dangling.npy -> nothere.npy`", "IO",
          "a dangling link is not written through",
          lambda ctx: with_array(ctx, U8, lambda a: LIB.convolve_array_save(
              ctx, a, self.p("dangling.npy").encode(), FMT_AUTO, 0)))
        A("API array", "load a directory", "`convolve_array_load` of a folder", "IO",
          "is a directory",
          lambda ctx: LIB.convolve_array_load(ctx, C.byref(ap), self.tmp.encode(), FMT_AUTO))

    # ---- the table -------------------------------------------------------------

    def table(self, kept_rows):
        def cell(s):
            return s.replace("|", "\\|").replace("\n", " ")

        def code(s):  # messages in code spans; "(none...)" and "(status only...)" plain
            return s if s.startswith("(") else "`%s`" % s.replace("`", "'")
        lines = ["| # | Area | Kind of bad input | Input | Result | Message (first line) |",
                 "|---|------|-------------------|-------|--------|----------------------|"]
        for i, (area, kind, shown, result, msg) in enumerate(self.rows):
            if i in self.kept and i < len(kept_rows):
                lines.append(kept_rows[i])
                continue
            lines.append("| %d | %s | %s | %s | %s | %s |" % (
                i + 1, area, cell(kind), cell(shown), result, cell(code(msg))))
        return "\n".join(lines) + "\n"

    def test_errors_table(self):
        # a weights file for the even-filter origin case
        write_file(self.p("w34.txt"), "1 1 1 1\n1 1 1 1\n1 1 1 1\n")
        self.readers()
        self.files()
        self.cli_options()
        self.weights()
        self.outputs()
        self.api_calls()
        self.batch()
        self.assertGreaterEqual(len(self.rows), 40)
        kinds = [(r[0], r[1]) for r in self.rows]
        self.assertEqual(len(set(kinds)), len(kinds), "each row must be a distinct kind")

        doc = read_file(DOC).decode() if os.path.exists(DOC) else ""
        if BEGIN not in doc or END not in doc:
            self.fail("%s lacks the markers %s and %s" % (DOC, BEGIN, END))
        head, rest = doc.split(BEGIN, 1)
        old_block, tail = rest.split(END, 1)
        old_rows = [ln for ln in old_block.strip("\n").split("\n")[2:]]
        new_block = self.table(old_rows)
        if old_block.strip("\n") + "\n" == new_block:
            return
        if os.environ.get("CONVOLVE_UPDATE_DOCS") == "1":
            write_file(DOC, head + BEGIN + "\n" + new_block + END + tail)
            print("test_errors_table: rewrote the table in %s (%d rows)" % (DOC, len(self.rows)))
            return
        diff = "".join(difflib.unified_diff((old_block.strip("\n") + "\n").splitlines(True),
                                            new_block.splitlines(True), "docs/errors.md",
                                            "found by this test", n=0))
        self.fail("the table in docs/errors.md is out of date; regenerate it with\n    %s\n"
                  "(from the build folder), check the change and commit it.\n%s" % (REGEN, diff))


if __name__ == "__main__":
    unittest.main(verbosity=1)
